/* The parts of a Hugging Face tokenizer.json BPE model that both readers
 * share (tokenizer_hf_json.c: the SentencePiece-style Llama files;
 * tokenizer_bytelevel_json.c: the GPT-2 / Qwen byte-level files). Internal
 * to tokenizers/. */
#ifndef SQ_TOKENIZER_HF_JSON_H
#define SQ_TOKENIZER_HF_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"
#include "tokenizer_bpe.h"

typedef struct hfj {
    const char *name;
    char **pieces; /* [n] borrowed from the JSON tree */
    int32_t n;
    int32_t *merges, n_merges;
    int32_t *special, n_special; /* room for the added tokens + 2 */
    bool add_prefix, replace_space, split;
} hfj;

/* model.vocab and added_tokens into h->pieces (ids in [0, 2^22) each used
 * once or by the same piece, no gap; added tokens marked special into
 * h->special). Every message names h->name. */
int sq_hf_read_vocab(json_t *model, json_t *added, hfj *h, sq_err *err);
/* model.merges ("a b" strings or [a, b] arrays) into h->merges as id pairs. */
int sq_hf_read_merges(json_t *model, hfj *h, sq_err *err);
/* 0 when model[key] is absent, null, false or "", else an error naming key. */
int sq_hf_check_absent(json_t *o, const char *key, const char *why, const char *name,
                       sq_err *err);
/* The Llama reader over a parsed tree (sq_bpe_load_hf_json without the load). */
sq_bpe *sq_bpe_from_hf_json_tree(json_t *root, const char *name, int32_t bos, int32_t eos,
                                 sq_err *err);

/* Whether the file is a byte-level BPE (a ByteLevel pre-tokenizer, alone or
 * in a Sequence, or a ByteLevel decoder): tokenizer_bytelevel_json.c reads
 * it, not the Llama reader. */
bool sq_bl_json_is_bytelevel(json_t *root);
struct sq_bl;
struct sq_bl *sq_bl_from_json_tree(json_t *root, const char *name, int32_t bos, int32_t eos,
                                   sq_err *err);

#endif

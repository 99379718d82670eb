/* A causal LM ready to run: the decoder and its tokenizer, opened from a
 * llama2.c checkpoint (.bin) and a llama2.c tokenizer file, or from a
 * Hugging Face LlamaForCausalLM folder (hf_llama.h) and its tokenizer.json.
 * Without an explicit tokenizer: the folder's tokenizer.json; next to a
 * llama2.c checkpoint the files tokenizer.bin then tok512.bin are tried, and
 * the first that exists with the model's vocabulary size is taken. An
 * explicit tokenizer ending in .json is read as a tokenizer.json. */
#ifndef SQ_LLAMA_MODEL_H
#define SQ_LLAMA_MODEL_H

#include "decoder.h"
#include "hf_config.h"
#include "hf_template.h"
#include "tokenizer.h"

/* A causal embedding model's side (Qwen3-Embedding): on when a folder's
 * sentence-transformers Pooling module pools the last token, or a .sqm says
 * pooling: last (formats/SQM.md 10.8). */
typedef struct sq_causal_embedding {
    bool on;
    bool normalize;
    int max_seq;                 /* the truncation (tokens with the special ones) */
    sq_hf_single_template wrap;  /* the special tokens around each text: the
                                    tokenizer.json post-processor's */
} sq_causal_embedding;

typedef struct sq_llama_model {
    sq_decoder dec;
    sq_tokenizer *tok;     /* the BPE kind (tokenizer_bpe.h) */
    char *tokenizer_path; /* the tokenizer file used (malloc'd); a .sqm's own path */
    struct sq_container *sqm; /* a packed model's mapping (dec_sqm.h), NULL for a checkpoint */
    /* A tokenizer.json's post-processor (hf_template.h): what a text starts
     * with (its BOS: Llama's <s>, none for Qwen3) and ends with; has_template
     * false for a llama2.c tokenizer (BOS from the checkpoint). */
    bool has_template;
    sq_hf_single_template tmpl;
    sq_causal_embedding emb;
} sq_llama_model;

/* Make m a causal embedding model with the pooling pc (last-token, as the
 * folder's sentence-transformers modules say), reading the special tokens
 * around a text from m's tokenizer.json. A checkpoint folder holding such
 * modules gets this from sq_llama_model_open itself. */
int sq_llama_embedding_init(sq_llama_model *m, const sq_pooling_config *pc, sq_err *err);

/* True when path names a decoder checkpoint: a llama2.c checkpoint (a
 * regular file whose header implies its size), or a folder whose
 * config.json names a causal LM (the commands' dispatch between encoders
 * and decoders; the readers prove the rest). */
bool sq_llama_is_checkpoint(const char *path);

/* True when path is a causal embedding model: a causal LM folder whose
 * sentence-transformers Pooling module pools the last token, or a causal
 * LM .sqm whose metadata says pooling: last (the commands' dispatch: serve
 * answers embeddings for it, not completions). */
bool sq_llama_is_embedding(const char *path);

/* A llama2.c checkpoint, an HF Llama folder, or a decoder .sqm (dec_sqm.h: tokenizer must be
 * NULL, the file holds it). tokenizer NULL: look next to the checkpoint. */
int sq_llama_model_open(const char *path, const char *tokenizer, sq_llama_model *m, sq_err *err);
/* The same for an assisted generation's draft (its tokenizer option is
 * --draft-tokenizer; messages start "--draft"). */
int sq_llama_draft_open(const char *path, const char *tokenizer, sq_llama_model *m, sq_err *err);
void sq_llama_model_close(sq_llama_model *m);

#endif

/* The one tokenizer interface of squint: every model family's text -> ids
 * (and ids -> text) goes through an sq_tokenizer, whatever its kind:
 *   - WordPiece (BERT family; tokenizer_wordpiece.h), from a spec
 *     (hf_tokenizer.h: tokenizer.json or vocab.txt);
 *   - SentencePiece unigram (USE Lite; tokenizer_unigram.h), from a spec of
 *     type SQ_TOK_UNIGRAM;
 *   - byte-fallback BPE (Llama decoders; tokenizer_bpe.h): llama2.c's
 *     tokenizer.bin or a Hugging Face tokenizer.json of model.type BPE;
 *   - byte-level BPE (GPT-2, RoBERTa, Qwen2 / Qwen3; tokenizer_bytelevel.h):
 *     a tokenizer.json with a ByteLevel pre-tokenizer or decoder; an
 *     encoder's (ModernBERT) from a spec of type SQ_TOK_HF_BYTELEVEL, with
 *     the post-processor's [CLS] / [SEP] (also its bos / eos);
 *   - Hugging Face Unigram (XLM-RoBERTa, e5, bge-m3; tokenizer_hf_unigram.h):
 *     a tokenizer.json of model.type Unigram, from a spec of type
 *     SQ_TOK_HF_UNIGRAM.
 * The kinds differ only behind this header. Texts are UTF-8 (invalid UTF-8
 * is read as U+FFFD per maximal ill-formed subpart). A tokenizer is
 * immutable after creation: any number of threads may use one at once.
 *
 * Sequence templates: an encoder's input is [CLS] tokens [SEP] (WordPiece)
 * or <s> tokens </s> (HF Unigram), or the pieces alone (unigram); a causal LM's is [BOS] tokens [EOS] as
 * asked (sq_tokenizer_encode_all). bos_id / eos_id name the begin and end
 * tokens of every kind: WordPiece's [CLS] / [SEP], BPE's BOS / EOS. */
#ifndef SQ_TOKENIZER_H
#define SQ_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hf_tokenizer.h"
#include "sq_error.h"

typedef struct sq_tokenizer sq_tokenizer;
typedef struct sq_bpe sq_bpe;

typedef enum sq_tokenizer_kind {
    SQ_TOKENIZER_WORDPIECE,
    SQ_TOKENIZER_UNIGRAM,
    SQ_TOKENIZER_BPE,
    SQ_TOKENIZER_BYTELEVEL,
    SQ_TOKENIZER_HF_UNIGRAM,
} sq_tokenizer_kind;

/* Build from a spec (WordPiece, or by its type unigram or HF Unigram; the
 * spec may be freed afterwards). Refuses (NULL, err set) what the kind
 * refuses (tokenizer_wordpiece.h, tokenizer_unigram.h). */
sq_tokenizer *sq_tokenizer_new(const sq_wordpiece_spec *spec, sq_err *err);
/* Convenience: sq_wordpiece_spec_load_dir + sq_tokenizer_new. */
sq_tokenizer *sq_tokenizer_load_dir(const char *dir, sq_err *err);
/* The BPE kind around b (tokenizer_bpe.h), which the tokenizer then owns
 * (freed with it, also when this fails). */
sq_tokenizer *sq_tokenizer_from_bpe(sq_bpe *b, sq_err *err);
/* A causal LM's tokenizer file: a Hugging Face tokenizer.json of model.type
 * BPE when path ends in ".json" (bos / eos: the model's ids, -1 none): the
 * byte-level kind when it has a ByteLevel pre-tokenizer or decoder, else the
 * BPE kind; otherwise a llama2.c tokenizer file (its own BOS 1 / EOS 2). */
sq_tokenizer *sq_tokenizer_load_bpe_file(const char *path, int32_t bos, int32_t eos, sq_err *err);
void sq_tokenizer_free(sq_tokenizer *t);

sq_tokenizer_kind sq_tokenizer_kind_of(const sq_tokenizer *t);
/* The BPE kind's own tokenizer (for writing it into a .sqm), NULL for the
 * others. */
const sq_bpe *sq_tokenizer_bpe(const sq_tokenizer *t);
/* The byte-level kind's own (tokenizer_bytelevel.h; its .sqm form), NULL for
 * the others. */
typedef struct sq_bl sq_bl;
const sq_bl *sq_tokenizer_bl(const sq_tokenizer *t);
/* The byte-level kind around b, which the tokenizer then owns (freed with
 * it, also when this fails). */
sq_tokenizer *sq_tokenizer_from_bl(sq_bl *b, sq_err *err);

/* Tokenize text (len bytes) into ids WITHOUT special tokens. Writes at most
 * cap ids; returns the total count the text produces (may exceed cap), or -1
 * on allocation failure. */
int64_t sq_tokenizer_tokenize(const sq_tokenizer *t, const char *text, size_t len,
                              int32_t *ids, int64_t cap);

/* An encoder's input, truncated so that the total is <= max_len:
 * WordPiece, HF Unigram and an encoder's byte-level BPE [CLS] tokens [SEP]
 * (max_len >= 2), unigram the first max_len
 * ids, BPE [BOS] (when it has one) and the first pieces. Returns the number
 * of ids written (<= max_len), or -1 on error. */
int sq_tokenizer_encode(const sq_tokenizer *t, const char *text, size_t len,
                        int max_len, int32_t *ids);

/* The whole text, not truncated: [BOS] when bos and the tokenizer has one,
 * the tokens, [EOS] when eos and it has one. *ids is malloc'd (free it).
 * Returns the count, or -1 on allocation failure (or a text over 2^28 bytes). */
int64_t sq_tokenizer_encode_all(const sq_tokenizer *t, const char *text, size_t len, bool bos,
                                bool eos, int32_t **ids);

/* The bytes id decodes to after token prev (-1: none); *len gets their count
 * (0 for a special token or an id out of range). BPE: <0xXX> gives its byte,
 * U+2581 a space, the space of the piece after BOS is dropped; byte-level:
 * the bytes the piece's byte-alphabet characters stand for (a piece may end
 * inside a UTF-8 character: concatenate before printing), a non-special
 * added token its text; HF Unigram: U+2581 a space, the space of the piece
 * at the start (prev -1) or after <s> dropped unless prepend_scheme is never;
 * the other kinds give the token string. Valid while t lives. */
const char *sq_tokenizer_decode_piece(const sq_tokenizer *t, int32_t prev, int32_t id,
                                      size_t *len);

/* Vocabulary size. */
int32_t sq_tokenizer_vocab_size(const sq_tokenizer *t);
/* Special ids, -1 when the vocabulary has no such token. */
int32_t sq_tokenizer_pad_id(const sq_tokenizer *t);
int32_t sq_tokenizer_unk_id(const sq_tokenizer *t);
int32_t sq_tokenizer_cls_id(const sq_tokenizer *t);
int32_t sq_tokenizer_sep_id(const sq_tokenizer *t);
int32_t sq_tokenizer_mask_id(const sq_tokenizer *t);
int32_t sq_tokenizer_bos_id(const sq_tokenizer *t);
int32_t sq_tokenizer_eos_id(const sq_tokenizer *t);
/* true when id is a special token (decodes to nothing). */
bool sq_tokenizer_is_special(const sq_tokenizer *t, int32_t id);
/* The most bytes of text one token can stand for, 0 when there is no such
 * bound (WordPiece's and unigram's unknown words, an HF BPE without
 * byte_fallback, whose unknown characters fuse). With a bound, a text of L
 * bytes gives at least L / bound tokens: too long an input can be refused
 * before it is tokenized. */
size_t sq_tokenizer_max_piece_bytes(const sq_tokenizer *t);
/* model_max_length from tokenizer_config.json, 0 if unknown. */
int32_t sq_tokenizer_model_max_length(const sq_tokenizer *t);
/* A pair is [CLS] A [SEP] [SEP] B [SEP], all of token type 0 (RoBERTa,
 * MPNet), not BERT's [CLS] A [SEP] B [SEP] with B of type 1. */
bool sq_tokenizer_pair_double_sep(const sq_tokenizer *t);
/* The token string of an id (BPE, byte-level: the raw piece), or NULL. */
const char *sq_tokenizer_token(const sq_tokenizer *t, int32_t id);
/* The id of an exact token string (len bytes), or -1. */
int32_t sq_tokenizer_lookup(const sq_tokenizer *t, const char *token, size_t len);

#endif

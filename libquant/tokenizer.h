/* The tokenizer interface. Built from a WordPiece spec it is the tokenizer
 * described below; from a unigram spec (hf_tokenizer.h, SQ_TOK_UNIGRAM) every
 * call goes to libquant/tokenizer_unigram.h (USE Lite's SentencePiece).
 *
 * WordPiece tokenizer, behaving exactly as Hugging Face BertTokenizer /
 * tokenizers' BertNormalizer + BertPreTokenizer + WordPiece (checked against
 * transformers.js golden ids, tests/tokenizer/).
 *
 * Pipeline per text: split off added tokens ([CLS], [UNK], ... matched
 * verbatim, leftmost then longest); on each remaining piece: clean text (drop
 * U+0000, U+FFFD and Cc/Cf/Co controls, whitespace -> ' '), pad CJK
 * ideographs with spaces (tokenizers' ranges, astral ones included, which
 * transformers.js misses as it scans UTF-16 units), lowercase (full mapping: U+0130 -> "i\u0307";
 * per code point as tokenizers' Rust code does, so capital sigma always gives
 * U+03C3: no Final_Sigma, which transformers.js and Python's str.lower()
 * apply; sentence-transformers, TEI and the models' own training ran the
 * Rust tokenizer), strip accents (NFD, drop Mn), split on whitespace and
 * punctuation, then greedy longest-match WordPiece with the continuation
 * prefix; a word over max_input_chars_per_word
 * code points, or with a piece that matches nothing, becomes one [UNK].
 * Invalid UTF-8 decodes to U+FFFD per maximal ill-formed subpart (so with
 * clean_text it disappears, like the replacement characters that Python or
 * JavaScript decoding would have produced). A tokenizer is immutable after
 * creation: any number of threads may tokenize with it at once. */
#ifndef SQ_TOKENIZER_H
#define SQ_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "hf_tokenizer.h"
#include "sq_error.h"

typedef struct sq_tokenizer sq_tokenizer;

/* Build from a spec (the spec may be freed afterwards). Refuses (NULL, err
 * set) an empty or oversized vocabulary, NULL/empty/over-long/non-UTF-8 or
 * duplicate tokens, special or added-token ids out of range, a missing unk. */
sq_tokenizer *sq_tokenizer_new(const sq_wordpiece_spec *spec, sq_err *err);
/* Convenience: sq_wordpiece_spec_load_dir + sq_tokenizer_new. */
sq_tokenizer *sq_tokenizer_load_dir(const char *dir, sq_err *err);
void sq_tokenizer_free(sq_tokenizer *t);

/* Tokenize text (UTF-8, len bytes; invalid UTF-8 is replaced by U+FFFD) into
 * ids WITHOUT special tokens. Writes at most cap ids; returns the total count
 * the text produces (may exceed cap), or -1 on allocation failure. */
int64_t sq_tokenizer_tokenize(const sq_tokenizer *t, const char *text, size_t len,
                              int32_t *ids, int64_t cap);

/* [CLS] tokens [SEP], truncated so that the total is <= max_len (max_len >= 2);
 * a unigram tokenizer has no [CLS]/[SEP]: the first max_len ids.
 * Returns the number of ids written (<= max_len), or -1 on error. */
int sq_tokenizer_encode(const sq_tokenizer *t, const char *text, size_t len,
                        int max_len, int32_t *ids);

/* Vocabulary size. */
int32_t sq_tokenizer_vocab_size(const sq_tokenizer *t);
/* Special ids, -1 when the vocabulary has no such token (unk always exists). */
int32_t sq_tokenizer_pad_id(const sq_tokenizer *t);
int32_t sq_tokenizer_unk_id(const sq_tokenizer *t);
int32_t sq_tokenizer_cls_id(const sq_tokenizer *t);
int32_t sq_tokenizer_sep_id(const sq_tokenizer *t);
int32_t sq_tokenizer_mask_id(const sq_tokenizer *t);
/* model_max_length from tokenizer_config.json, 0 if unknown. */
int32_t sq_tokenizer_model_max_length(const sq_tokenizer *t);
/* The token string of an id, or NULL. */
const char *sq_tokenizer_token(const sq_tokenizer *t, int32_t id);
/* The id of an exact token string (len bytes), or -1. */
int32_t sq_tokenizer_lookup(const sq_tokenizer *t, const char *token, size_t len);

#endif

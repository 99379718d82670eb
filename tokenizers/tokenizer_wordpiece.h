/* The WordPiece kind of tokenizer.h, behaving exactly as Hugging Face BertTokenizer /
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
#ifndef SQ_TOKENIZER_WORDPIECE_H
#define SQ_TOKENIZER_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "hf_tokenizer.h"
#include "sq_error.h"

typedef struct sq_wordpiece sq_wordpiece;

/* Build from a WordPiece spec (the spec may be freed afterwards). Refuses
 * (NULL, err set) an empty or oversized vocabulary, NULL/empty/over-long/
 * non-UTF-8 or duplicate tokens, special or added-token ids out of range, a
 * missing unk. */
sq_wordpiece *sq_wordpiece_new(const sq_wordpiece_spec *spec, sq_err *err);
void sq_wordpiece_free(sq_wordpiece *t);
/* Ids of text without special tokens: at most cap written, the total count
 * returned (may exceed cap), -1 on allocation failure. */
int64_t sq_wordpiece_tokenize(const sq_wordpiece *t, const char *text, size_t len, int32_t *ids,
                              int64_t cap);
int32_t sq_wordpiece_vocab_size(const sq_wordpiece *t);
const char *sq_wordpiece_token(const sq_wordpiece *t, int32_t id);
int32_t sq_wordpiece_lookup(const sq_wordpiece *t, const char *token, size_t len);

#endif

/* The Hugging Face Unigram tokenizer (XLM-RoBERTa, multilingual-e5,
 * bge-m3), as the Rust tokenizers library runs a tokenizer.json of
 * model.type Unigram (hf_unigram_json.c reads it into a spec):
 *   1. the added tokens are found in the raw text (leftmost, longest;
 *      lstrip / rstrip take the white space beside a match into it);
 *   2. each stretch of text between them: the Precompiled normalizer
 *      (precompiled_norm.h), then runs of 2+ U+0020 become one
 *      (Replace " {2,}"), then Metaspace: U+0020 -> U+2581, U+2581 put
 *      first when the stretch does not start with one (prepend_scheme
 *      always; first: only the stretch at offset 0), split before each
 *      U+2581 (split true);
 *   3. each word: Viterbi over the pieces (score sums in double, ties keep
 *      the earlier start); a character no piece of its own length starts
 *      with is unknown (score: lowest piece score - 10); consecutive
 *      unknowns fuse into one token (the Rust Unigram always fuses), which
 *      is the piece of that text if there is one, else unk_id.
 * Invalid UTF-8 reads as U+FFFD per maximal ill-formed subpart. */
#ifndef SQ_TOKENIZER_HF_UNIGRAM_H
#define SQ_TOKENIZER_HF_UNIGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hf_tokenizer.h"
#include "sq_error.h"

#define SQ_HFU_MAX_VOCAB (1 << 22)
#define SQ_HFU_MAX_PIECE_BYTES 1024
#define SQ_HFU_MAX_ADDED 4096

typedef struct sq_hfu sq_hfu;

/* From a spec of type SQ_TOK_HF_UNIGRAM. Refuses (NULL, err "<what>:
 * problem") empty, over-long, invalid UTF-8 or duplicate pieces, non-finite
 * scores, ids out of range, a bad charsmap, added tokens that are not their
 * vocab entry. */
sq_hfu *sq_hfu_new(const sq_wordpiece_spec *spec, const char *what, sq_err *err);
void sq_hfu_free(sq_hfu *u);

/* Ids of text (len bytes) without <s> / </s>: writes at most cap, returns
 * the total (may exceed cap), -1 on allocation failure. Thread-safe. */
int64_t sq_hfu_tokenize(const sq_hfu *u, const char *text, size_t len, int32_t *ids,
                        int64_t cap);

int32_t sq_hfu_vocab_size(const sq_hfu *u);
const char *sq_hfu_piece(const sq_hfu *u, int32_t id);
int32_t sq_hfu_lookup(const sq_hfu *u, const char *s, size_t len);
/* An added (special) token's id. */
bool sq_hfu_is_added(const sq_hfu *u, int32_t id);
/* The text of a piece with U+2581 as a space; the first piece of a text
 * (first true) loses a leading space unless prepend_scheme is never (the
 * Metaspace decoder). *len its bytes; "" for an added token. */
const char *sq_hfu_decode_piece(const sq_hfu *u, int32_t id, bool first, size_t *len);

#endif

/* SentencePiece-unigram tokenizer of Universal Sentence Encoder Lite, exactly
 * as its JavaScript runtime does it (the Tokenizer of the npm package
 * @energetic-ai/embeddings 0.2.0, itself from tfjs-models'
 * universal-sentence-encoder), quirks included; tokenizer_unigram.c lists
 * them. Ids are vocabulary indices; no BOS/EOS is added. The first
 * SQ_UNIGRAM_RESERVED pieces (id 0 = unknown, <s>, </s>, extra_token_id_1..3)
 * are never matched; unknown characters give id 0. */
#ifndef SQ_TOKENIZER_UNIGRAM_H
#define SQ_TOKENIZER_UNIGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

#define SQ_UNIGRAM_RESERVED 6
#define SQ_UNIGRAM_MAX_VOCAB (1 << 22)
#define SQ_UNIGRAM_MAX_PIECE_BYTES 1024

typedef struct sq_unigram sq_unigram;

/* pieces[i] UTF-8 NUL-terminated, scores[i] finite; n pieces. Refuses (NULL,
 * err set) a vocabulary with no piece beyond the reserved ones or more than
 * SQ_UNIGRAM_MAX_VOCAB, NULL, empty, over-long or invalid UTF-8 pieces and
 * non-finite scores. A piece that occurs twice is accepted as the JS tokenizer
 * does (the published USE vocab.json has "”5" at 230, 238 and 4464): the
 * last occurrence is the one matched, earlier ids are never produced.
 * The float scores are widened to double; for exact parity with the JS
 * tokenizer (which adds the JSON doubles) use sq_unigram_new_f64. */
sq_unigram *sq_unigram_new(const char *const *pieces, const float *scores, int32_t n, sq_err *err);
sq_unigram *sq_unigram_new_f64(const char *const *pieces, const double *scores, int32_t n,
                               sq_err *err);
/* vocab.json of USE lite (tokenizers/use_vocab.h), scores as doubles. */
sq_unigram *sq_unigram_load_use_vocab(const char *path, sq_err *err);

/* text is UTF-8 of len bytes (invalid UTF-8 -> U+FFFD per maximal ill-formed
 * subpart). Writes at most cap ids, returns the total count the text produces
 * (may exceed cap), -1 on allocation failure. Thread-safe on a shared const
 * tokenizer. Time O(len * longest piece). */
int64_t sq_unigram_tokenize(const sq_unigram *u, const char *text, size_t len, int32_t *ids,
                            int64_t cap);

int32_t sq_unigram_vocab_size(const sq_unigram *u);
/* The piece of an id (NULL when out of range). */
const char *sq_unigram_piece(const sq_unigram *u, int32_t id);

void sq_unigram_free(sq_unigram *u);

#endif

/* vocab.json of Universal Sentence Encoder Lite (TensorFlow.js): a JSON array
 * of [piece, score] pairs, the index being the id (SentencePiece unigram
 * pieces, U+2581 marking word starts, scores log-probabilities). The
 * published file has seven null scores (pieces containing ':'); the JS
 * tokenizer adds null as 0, so a null score reads as 0.0 here. Anything else
 * that is not a number, or not such a pair, is refused with a message naming
 * the file and the entry. Tokenizer: tokenizers/tokenizer_unigram.h. */
#ifndef SQ_USE_VOCAB_H
#define SQ_USE_VOCAB_H

#include <stdint.h>

#include "sq_error.h"

#define SQ_USE_VOCAB_MAX_ENTRIES (1 << 22)
#define SQ_USE_VOCAB_MAX_PIECE 1024 /* bytes of UTF-8 */
#define SQ_USE_VOCAB_MAX_FILE (64u << 20)

/* On success *pieces (n NUL-terminated UTF-8 strings) and *scores are
 * malloc'd; free them with sq_use_vocab_free. Returns 0 or -1 (err set). */
int sq_use_vocab_load(const char *path, char ***pieces, float **scores, int32_t *n, sq_err *err);
void sq_use_vocab_free(char **pieces, float *scores, int32_t n);

/* The same with the scores as the exact doubles of the JSON text (what the
 * JS tokenizer adds; float rounding can change its choices). */
int sq_use_vocab_load_f64(const char *path, char ***pieces, double **scores, int32_t *n,
                          sq_err *err);
void sq_use_vocab_free_f64(char **pieces, double *scores, int32_t n);

#endif

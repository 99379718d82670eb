/* The one ordering of scored items squint uses everywhere it ranks (reranked
 * documents, classes of a prediction, outlier-channel candidates): highest
 * score first, ties by the lower index, NaN last. */
#ifndef SQ_RANK_ORDER_H
#define SQ_RANK_ORDER_H

#include <stdint.h>

/* order[0..n) = 0..n-1 sorted by scores[] that way. 0, or -1 out of memory. */
int sq_rank_scores(const double *scores, int64_t n, int64_t *order);

/* Cosine similarity of two dim-vectors (not assumed normalized). A zero
 * vector gives NaN. */
double sq_cosine(const float *a, const float *b, int dim);

/* Rank n documents D [n][dim] by cosine with the query q (bi-encoder
 * reranking: squint rerank, serve's /rerank): scores[i] = sq_cosine(q, D_i);
 * order[0 .. n) the document indices, highest score first, ties by lower
 * index, NaN (a zero vector) last. Returns 0, or -1 when out of memory. */
int sq_rank_by_cosine(const float *q, const float *D, int64_t n, int dim, double *scores,
                      int64_t *order);

#endif

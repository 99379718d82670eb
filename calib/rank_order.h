/* The one ordering of scored items squint uses everywhere it ranks (reranked
 * documents, classes of a prediction, outlier-channel candidates): highest
 * score first, ties by the lower index, NaN last. */
#ifndef SQ_RANK_ORDER_H
#define SQ_RANK_ORDER_H

#include <stdint.h>

/* order[0..n) = 0..n-1 sorted by scores[] that way. 0, or -1 out of memory. */
int sq_rank_scores(const double *scores, int64_t n, int64_t *order);

#endif

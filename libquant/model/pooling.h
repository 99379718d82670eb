/* Sentence embedding from the last hidden state: CLS, mask-aware mean or
 * last-token pooling (padding never exists in the packed layout), then optional L2
 * normalization as sentence-transformers' Normalize module does. */
#ifndef SQ_POOLING_H
#define SQ_POOLING_H

#include <stdbool.h>
#include <stdint.h>

#include "hf_config.h"

/* hidden: [offsets[n_seq]][H]; out: [n_seq][H]. */
void sq_pool(const float *hidden, const int *offsets, int n_seq, int H, sq_pooling mode,
             bool normalize, float *out);
/* x / max(||x||, 1e-12) per row, as torch.nn.functional.normalize. */
void sq_l2_normalize_rows(float *x, int n, int H);
/* Matryoshka truncation in place: rows [n][H] become [n][dims] (their first
 * dims values), then L2-normalized when normalize (truncate, then
 * normalize: a shortened vector of a normalizing model is unit length
 * again, as OpenAI's `dimensions` returns it). 1 <= dims <= H. */
void sq_truncate_dims(float *x, int64_t n, int H, int dims, bool normalize);

#endif

/* Calibration statistics of one observed tensor (the input of a linear):
 * per channel max|x| and sum of x^2, per tensor min, max and the |x|
 * histogram (histogram.h). Memory is bounded by the channel count; no
 * activation is kept.
 *
 * Determinism: every statistic is the same for any OpenMP thread count. The
 * maxima and the histogram are also independent of how rows are split into
 * observe() calls; sum of x^2 is accumulated per channel in global row order
 * across calls, so it too is split-independent (merge() of two stats adds
 * two partial sums, so merged results depend on the merge order: merge in a
 * fixed order).
 *
 * Non-finite activations: observe() rejects a batch that holds any NaN/Inf.
 * It leaves every statistic untouched, adds the bad values to `nonfinite`,
 * and returns -1 with a message naming the first bad position. The encoder's
 * observer hook returns void, so a caller that ignores the return value can
 * still call sq_act_stats_check() at the end to turn the counter into an
 * error. */
#ifndef SQ_ACT_STATS_H
#define SQ_ACT_STATS_H

#include <stdint.h>

#include "histogram.h"
#include "sq_error.h"

typedef struct sq_act_stats {
    int channels;
    float *ch_max_abs;  /* [channels] max |x| of each channel */
    double *ch_sumsq;   /* [channels] sum of x^2 of each channel */
    uint64_t rows;      /* rows observed: every channel saw each of them */
    float min, max;     /* over all values; +FLT_MAX / -FLT_MAX while rows == 0 */
    uint64_t nonfinite; /* NaN/Inf values seen in rejected batches */
    sq_hist hist;       /* |x| over all values */
    /* scratch for one batch, committed only when the batch is all finite */
    float *tmp_max;
    double *tmp_sumsq;
} sq_act_stats;

/* Empty statistics for a tensor of `channels` columns. On failure (bad count,
 * out of memory) returns -1 and leaves nothing to free. */
int sq_act_stats_init(sq_act_stats *st, int channels, sq_err *err);

/* Add x, row-major [rows][cols] (cols must equal the channel count).
 * Parallel with OpenMP; call it from outside any parallel region. Returns -1
 * for a shape mismatch or a batch with NaN/Inf (see above). */
int sq_act_stats_observe(sq_act_stats *st, const float *x, int rows, int cols, sq_err *err);

/* dst += src (same channel count, else -1). */
int sq_act_stats_merge(sq_act_stats *dst, const sq_act_stats *src, sq_err *err);

/* -1 with "non-finite activation in NAME: ..." when any batch was rejected. */
int sq_act_stats_check(const sq_act_stats *st, const char *name, sq_err *err);

/* Root mean square of channel c (0 before any row). */
double sq_act_stats_rms(const sq_act_stats *st, int c);

/* The k channels with the largest max|x|, largest first (ties: lower index
 * first), written to idx[0..k). k is clamped to the channel count; returns
 * the number written. */
int sq_act_stats_top_channels(const sq_act_stats *st, int k, int *idx);

/* Release the arrays (st may be zeroed or already freed). */
void sq_act_stats_free(sq_act_stats *st);

#endif

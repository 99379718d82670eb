#include "act_stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "par_threads.h"

/* Channels per work item: one thread walks all rows of a 32-channel stripe,
 * so each channel is summed in row order whatever the thread count. */
#define CH_BLOCK 32

int sq_act_stats_init(sq_act_stats *st, int channels, sq_err *err)
{
    memset(st, 0, sizeof *st);
    if (channels <= 0)
        return sq_err_set(err, "act_stats: bad channel count %d", channels);
    size_t c = (size_t)channels;
    st->ch_max_abs = calloc(c, sizeof *st->ch_max_abs);
    st->ch_sumsq = calloc(c, sizeof *st->ch_sumsq);
    st->tmp_max = malloc(c * sizeof *st->tmp_max);
    st->tmp_sumsq = malloc(c * sizeof *st->tmp_sumsq);
    if (!st->ch_max_abs || !st->ch_sumsq || !st->tmp_max || !st->tmp_sumsq) {
        sq_act_stats_free(st);
        return sq_err_set(err, "act_stats: out of memory for %d channels", channels);
    }
    st->channels = channels;
    st->min = FLT_MAX;
    st->max = -FLT_MAX;
    sq_hist_init(&st->hist);
    return 0;
}

void sq_act_stats_free(sq_act_stats *st)
{
    free(st->ch_max_abs);
    free(st->ch_sumsq);
    free(st->tmp_max);
    free(st->tmp_sumsq);
    st->ch_max_abs = NULL;
    st->ch_sumsq = NULL;
    st->tmp_max = NULL;
    st->tmp_sumsq = NULL;
}

static int report_nonfinite(const float *x, int rows, int cols, uint64_t bad, sq_err *err)
{
    size_t n = (size_t)rows * cols;
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(x[i]) <= FLT_MAX))
            return sq_err_set(err,
                              "non-finite activation: %llu NaN/Inf of %zu values, first %s "
                              "at row %zu, column %zu",
                              (unsigned long long)bad, n, isnan(x[i]) ? "NaN" : "Inf",
                              i / cols, i % cols);
    return -1;
}

int sq_act_stats_observe(sq_act_stats *st, const float *x, int rows, int cols, sq_err *err)
{
    if (cols != st->channels)
        return sq_err_set(err, "act_stats: observed %d columns, expected %d", cols,
                          st->channels);
    if (rows < 0)
        return sq_err_set(err, "act_stats: negative row count %d", rows);
    if (rows == 0)
        return 0;
    const int C = cols;
    const int nblk = (C + CH_BLOCK - 1) / CH_BLOCK;
    const size_t n = (size_t)rows * C;
    float vmin = FLT_MAX, vmax = -FLT_MAX;
    uint64_t bad = 0;

    /* Pass 1, per channel stripe: max|x|, sum x^2 continuing the running sum
     * in row order, min, max, NaN/Inf count. Into scratch, so a rejected
     * batch changes nothing. */
#pragma omp parallel for schedule(static) num_threads(sq_par_threads(SQ_WORK_SCALAR, n, nblk)) \
    reduction(min : vmin) reduction(max : vmax) reduction(+ : bad)
    for (int b = 0; b < nblk; b++) {
        const int c0 = b * CH_BLOCK;
        const int w = C - c0 < CH_BLOCK ? C - c0 : CH_BLOCK;
        float mx[CH_BLOCK], lo[CH_BLOCK], hi[CH_BLOCK];
        double ss[CH_BLOCK];
        for (int j = 0; j < w; j++) {
            mx[j] = st->ch_max_abs[c0 + j];
            ss[j] = st->ch_sumsq[c0 + j];
            lo[j] = FLT_MAX;
            hi[j] = -FLT_MAX;
        }
        uint64_t nb = 0;
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * C + c0;
            for (int j = 0; j < w; j++) {
                float v = xr[j];
                float a = fabsf(v);
                nb += !(a <= FLT_MAX);
                mx[j] = a > mx[j] ? a : mx[j];
                lo[j] = v < lo[j] ? v : lo[j];
                hi[j] = v > hi[j] ? v : hi[j];
                ss[j] += (double)v * v;
            }
        }
        for (int j = 0; j < w; j++) {
            st->tmp_max[c0 + j] = mx[j];
            st->tmp_sumsq[c0 + j] = ss[j];
            vmin = lo[j] < vmin ? lo[j] : vmin;
            vmax = hi[j] > vmax ? hi[j] : vmax;
        }
        bad += nb;
    }

    if (bad) {
        st->nonfinite += bad;
        return report_nonfinite(x, rows, cols, bad, err);
    }

    float amax = 0.0f;
    for (int c = 0; c < C; c++) {
        st->ch_max_abs[c] = st->tmp_max[c];
        st->ch_sumsq[c] = st->tmp_sumsq[c];
        amax = st->tmp_max[c] > amax ? st->tmp_max[c] : amax;
    }
    st->min = vmin < st->min ? vmin : st->min;
    st->max = vmax > st->max ? vmax : st->max;
    st->rows += (uint64_t)rows;

    /* Pass 2: the histogram, with the range already grown to this batch. */
    sq_hist_add_finite(&st->hist, x, n, amax);
    return 0;
}

int sq_act_stats_merge(sq_act_stats *dst, const sq_act_stats *src, sq_err *err)
{
    if (dst->channels != src->channels)
        return sq_err_set(err, "act_stats: cannot merge %d channels into %d", src->channels,
                          dst->channels);
    for (int c = 0; c < dst->channels; c++) {
        if (src->ch_max_abs[c] > dst->ch_max_abs[c])
            dst->ch_max_abs[c] = src->ch_max_abs[c];
        dst->ch_sumsq[c] += src->ch_sumsq[c];
    }
    dst->rows += src->rows;
    dst->min = src->min < dst->min ? src->min : dst->min;
    dst->max = src->max > dst->max ? src->max : dst->max;
    dst->nonfinite += src->nonfinite;
    sq_hist_merge(&dst->hist, &src->hist);
    return 0;
}

int sq_act_stats_check(const sq_act_stats *st, const char *name, sq_err *err)
{
    if (st->nonfinite == 0)
        return 0;
    return sq_err_set(err, "non-finite activation in %s: %llu NaN/Inf values rejected", name,
                      (unsigned long long)st->nonfinite);
}

double sq_act_stats_rms(const sq_act_stats *st, int c)
{
    if (st->rows == 0 || c < 0 || c >= st->channels)
        return 0.0;
    return sqrt(st->ch_sumsq[c] / (double)st->rows);
}

int sq_act_stats_top_channels(const sq_act_stats *st, int k, int *idx)
{
    if (k > st->channels)
        k = st->channels;
    if (k < 0)
        k = 0;
    /* Partial insertion sort: k is small (a handful of outlier channels). */
    for (int n = 0, c = 0; c < st->channels; c++) {
        float v = st->ch_max_abs[c];
        int pos = n;
        while (pos > 0 && st->ch_max_abs[idx[pos - 1]] < v)
            pos--;
        if (pos >= k)
            continue;
        int last = n < k ? n : k - 1;
        for (int j = last; j > pos; j--)
            idx[j] = idx[j - 1];
        idx[pos] = c;
        if (n < k)
            n++;
    }
    return k;
}

/* Outlier input channels of a linear (outlier_select.h). */
#include "outlier_select.h"
#include "rank_order.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of the finite values of v [k] (the lower middle one), or 0. */
static float median_finite(const float *v, int k, float *tmp)
{
    int m = 0;
    for (int j = 0; j < k; j++)
        if (isfinite(v[j]))
            tmp[m++] = v[j];
    if (m == 0)
        return 0.0f;
    qsort(tmp, (size_t)m, sizeof *tmp, cmp_float);
    return tmp[(m - 1) / 2];
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int sq_select_outliers(const float *xmax, const float *w, int n, int k, double ratio,
                       int max_out, int32_t *idx)
{
    float *wmax = calloc((size_t)k, sizeof *wmax), *tmp = malloc((size_t)k * sizeof *tmp);
    double *score = malloc((size_t)k * sizeof *score); /* of the candidates */
    int32_t *cj = malloc((size_t)k * sizeof *cj);         /* their channels */
    int64_t *order = malloc((size_t)k * sizeof *order);
    if (!wmax || !tmp || !score || !cj || !order) {
        free(wmax), free(tmp), free(score), free(cj), free(order);
        return -1;
    }
    for (int r = 0; r < n; r++) {
        const float *wr = w + (size_t)r * k;
        for (int j = 0; j < k; j++) {
            float a = fabsf(wr[j]);
            if (!(a <= wmax[j])) /* NaN propagates: such a column is never picked */
                wmax[j] = a;
        }
    }
    const float mx = median_finite(xmax, k, tmp), mw = median_finite(wmax, k, tmp);
    const bool use_x = isfinite(mx) && mx > 0, use_w = isfinite(mw) && mw > 0;
    int nc = 0;
    for (int j = 0; j < k; j++) {
        if (!isfinite(xmax[j]) || !isfinite(wmax[j]))
            continue;
        double sx = use_x ? (double)xmax[j] / mx : 0, sw = use_w ? (double)wmax[j] / mw : 0;
        double s = sx > sw ? sx : sw;
        if (s > ratio)
            score[nc] = s, cj[nc++] = j;
    }
    /* the max_out largest (ties: the lower channel), then in channel order */
    int m = -1;
    if (sq_rank_scores(score, nc, order) == 0) {
        m = nc < max_out ? nc : max_out;
        for (int i = 0; i < m; i++)
            idx[i] = cj[order[i]];
        qsort(idx, (size_t)m, sizeof *idx, cmp_i32);
    }
    free(wmax), free(tmp), free(score), free(cj), free(order);
    return m;
}

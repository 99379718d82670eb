/* Ranking by score (rank_order.h). */
#include "rank_order.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct item {
    double s;
    int64_t i;
} item;

static int cmp_item(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    bool na = isnan(a->s), nb = isnan(b->s);
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->s != b->s)
        return a->s < b->s ? 1 : -1;
    return (a->i > b->i) - (a->i < b->i);
}

int sq_rank_scores(const double *scores, int64_t n, int64_t *order)
{
    item *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r)
        return -1;
    for (int64_t i = 0; i < n; i++)
        r[i] = (item){scores[i], i};
    qsort(r, (size_t)n, sizeof *r, cmp_item);
    for (int64_t i = 0; i < n; i++)
        order[i] = r[i].i;
    free(r);
    return 0;
}

double sq_cosine(const float *a, const float *b, int dim)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < dim; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    if (aa == 0 || bb == 0)
        return NAN;
    return ab / (sqrt(aa) * sqrt(bb));
}

int sq_rank_by_cosine(const float *q, const float *D, int64_t n, int dim, double *scores,
                      int64_t *order)
{
    for (int64_t i = 0; i < n; i++)
        scores[i] = sq_cosine(q, D + (size_t)i * dim, dim);
    return sq_rank_scores(scores, n, order);
}

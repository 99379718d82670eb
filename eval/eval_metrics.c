#include "eval_metrics.h"
#include "rank_order.h"
#include "par_threads.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double sq_percentile_sorted(const double *sorted, int64_t n, double p)
{
    if (n < 1)
        return NAN;
    double pos = p / 100.0 * (double)(n - 1);
    int64_t lo = (int64_t)floor(pos);
    if (lo >= n - 1)
        return sorted[n - 1];
    double f = pos - (double)lo;
    return sorted[lo] + f * (sorted[lo + 1] - sorted[lo]);
}

typedef struct cos_at {
    double v;
    int64_t i;
} cos_at;

static int cmp_cos_at(const void *pa, const void *pb)
{
    const cos_at *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* cos(a[i] - mu, b[i] - mu) in double; NaN for a zero difference. */
static double centred_cosine(const float *a, const float *b, const double *mu, int dim)
{
    double ab = 0, aa = 0, bb = 0;
    for (int j = 0; j < dim; j++) {
        double x = a[j] - mu[j], y = b[j] - mu[j];
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    return aa == 0 || bb == 0 ? NAN : ab / (sqrt(aa) * sqrt(bb));
}

int sq_cos_pair_stats(const float *a, const float *b, int64_t n, int dim, sq_cos_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n < 1)
        return -1;
    cos_at *c = malloc((size_t)n * sizeof *c);
    double *sorted = malloc((size_t)n * sizeof *sorted), *mu = calloc((size_t)dim, sizeof *mu);
    if (!c || !sorted || !mu) {
        free(c);
        free(sorted);
        free(mu);
        return -1;
    }
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = sq_cosine(a + (size_t)i * dim, b + (size_t)i * dim, dim);
        if (isnan(v)) { /* a zero vector: as unlike as it gets without a direction */
            v = 0;
            out->n_nan++;
        }
        c[i] = (cos_at){v, i};
        sum += v;
        out->below_099 += v < 0.99;
        out->below_098 += v < 0.98;
        out->below_095 += v < 0.95;
    }
    out->mean = sum / (double)n;
    qsort(c, (size_t)n, sizeof *c, cmp_cos_at);
    for (int64_t i = 0; i < n; i++)
        sorted[i] = c[i].v;
    out->min = c[0].v;
    out->argmin = c[0].i;
    out->p01 = sq_percentile_sorted(sorted, n, 1.0);
    out->p001 = sq_percentile_sorted(sorted, n, 0.1);
    out->n_worst = n < SQ_COS_WORST ? (int)n : SQ_COS_WORST;
    for (int k = 0; k < out->n_worst; k++) {
        out->worst[k] = c[k].i;
        out->worst_cos[k] = c[k].v;
    }
    /* Centred: the reference's mean embedding removed from both. */
    out->centred_mean = out->centred_min = NAN;
    if (n >= 2) {
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < dim; j++)
                mu[j] += b[(size_t)i * dim + j];
        for (int j = 0; j < dim; j++)
            mu[j] /= (double)n;
        double csum = 0, cmin = INFINITY;
        for (int64_t i = 0; i < n; i++) {
            double v = centred_cosine(a + (size_t)i * dim, b + (size_t)i * dim, mu, dim);
            if (isnan(v))
                v = 0;
            csum += v;
            if (v < cmin) {
                cmin = v;
                out->centred_argmin = i;
            }
        }
        out->centred_mean = csum / (double)n;
        out->centred_min = cmin;
    }
    free(c);
    free(sorted);
    free(mu);
    return 0;
}

/* ---- nearest neighbours ---- */

/* Rows scaled to unit length (zero rows stay zero). */
static float *unit_rows(const float *x, int64_t n, int dim)
{
    float *u = malloc((size_t)n * dim * sizeof *u);
    if (!u)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + (size_t)i * dim;
        double ss = 0;
        for (int c = 0; c < dim; c++)
            ss += (double)r[c] * r[c];
        float s = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.0f;
        for (int c = 0; c < dim; c++)
            u[(size_t)i * dim + c] = r[c] * s;
    }
    return u;
}

static float dot8(const float *a, const float *b, int dim)
{
    /* Eight partial sums: lets the compiler keep several lanes busy while the
     * summation order stays fixed (deterministic). */
    float s[8] = {0};
    int c = 0;
    for (; c + 8 <= dim; c += 8)
        for (int l = 0; l < 8; l++)
            s[l] += a[c + l] * b[c + l];
    float t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; c < dim; c++)
        t += a[c] * b[c];
    return t;
}

/* Is (s, j) ranked ahead of (t, k)? Larger score first, then lower index. */
static int ahead(double s, int64_t j, double t, int64_t k)
{
    return s > t || (s == t && j < k);
}

/* Keep the k best (score, index) pairs in best[]/bidx[] sorted best first. */
static void topk_insert(double *best, int64_t *bidx, int64_t *have, int64_t k, double s, int64_t j)
{
    if (*have == k && !ahead(s, j, best[k - 1], bidx[k - 1]))
        return;
    int64_t p = *have < k ? (*have)++ : k - 1;
    while (p > 0 && ahead(s, j, best[p - 1], bidx[p - 1])) {
        best[p] = best[p - 1];
        bidx[p] = bidx[p - 1];
        p--;
    }
    best[p] = s;
    bidx[p] = j;
}

int64_t sq_top_indices(const double *scores, int64_t n, int64_t k, int64_t *out)
{
    if (k > n)
        k = n;
    if (k <= 0)
        return 0;
    double *best = malloc((size_t)k * sizeof *best);
    if (!best)
        return 0;
    int64_t have = 0;
    for (int64_t j = 0; j < n; j++)
        topk_insert(best, out, &have, k, scores[j], j);
    free(best);
    return have;
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Row i's k nearest other rows of unit matrix u, sorted by index. */
static void neighbours(const float *u, int64_t n, int dim, int64_t i, int64_t k, double *best,
                       int64_t *idx)
{
    int64_t have = 0;
    const float *ri = u + (size_t)i * dim;
    for (int64_t j = 0; j < n; j++)
        if (j != i)
            topk_insert(best, idx, &have, k, dot8(ri, u + (size_t)j * dim, dim), j);
    qsort(idx, (size_t)k, sizeof *idx, cmp_i64);
}

double sq_topk_overlap(const float *a, const float *b, int64_t n, int dim, int k, int *k_used)
{
    if (k_used)
        *k_used = 0;
    if (n < 2 || k < 1)
        return NAN;
    int64_t kk = k > n - 1 ? n - 1 : k;
    if (k_used)
        *k_used = (int)kk;
    float *ua = unit_rows(a, n, dim), *ub = unit_rows(b, n, dim);
    double total = 0;
    int oom = !ua || !ub;
    if (!oom) {
#pragma omp parallel reduction(+ : total) reduction(| : oom) \
    num_threads(sq_par_threads(SQ_WORK_MAC_F32, 2.0 * n * n * dim, n))
        {
            double *best = malloc((size_t)kk * sizeof *best);
            int64_t *ia = malloc((size_t)kk * sizeof *ia), *ib = malloc((size_t)kk * sizeof *ib);
            if (!best || !ia || !ib)
                oom = 1;
#pragma omp for schedule(dynamic, 16)
            for (int64_t i = 0; i < n; i++) {
                if (!best || !ia || !ib)
                    continue;
                neighbours(ua, n, dim, i, kk, best, ia);
                neighbours(ub, n, dim, i, kk, best, ib);
                int64_t common = 0;
                for (int64_t p = 0, q = 0; p < kk && q < kk;) {
                    if (ia[p] == ib[q]) {
                        common++;
                        p++;
                        q++;
                    } else if (ia[p] < ib[q]) {
                        p++;
                    } else {
                        q++;
                    }
                }
                /* Integer counts: the reduction's order cannot change the sum. */
                total += (double)common;
            }
            free(best);
            free(ia);
            free(ib);
        }
    }
    free(ua);
    free(ub);
    return oom ? NAN : total / ((double)kk * (double)n);
}

/* ---- correlation ---- */

typedef struct ranked_value {
    double v;
    int64_t i;
} ranked_value;

static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked_value *a = pa, *b = pb;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

void sq_average_ranks(const double *x, int64_t n, double *ranks)
{
    ranked_value *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r) {
        for (int64_t i = 0; i < n; i++)
            ranks[i] = NAN;
        return;
    }
    for (int64_t i = 0; i < n; i++)
        r[i] = (ranked_value){x[i], i};
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    for (int64_t s = 0; s < n;) {
        int64_t e = s + 1;
        while (e < n && r[e].v == r[s].v)
            e++;
        double avg = (double)(s + 1 + e) / 2.0; /* mean of ranks s+1 .. e */
        for (int64_t t = s; t < e; t++)
            ranks[r[t].i] = avg;
        s = e;
    }
    free(r);
}

double sq_pearson(const double *x, const double *y, int64_t n)
{
    if (n < 2)
        return NAN;
    double mx = 0, my = 0;
    for (int64_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (int64_t i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if (sxx == 0 || syy == 0)
        return NAN;
    return sxy / sqrt(sxx * syy);
}

double sq_spearman(const double *x, const double *y, int64_t n)
{
    if (n < 2)
        return NAN;
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry);
    double r = NAN;
    if (rx && ry) {
        sq_average_ranks(x, n, rx);
        sq_average_ranks(y, n, ry);
        r = sq_pearson(rx, ry, n);
    }
    free(rx);
    free(ry);
    return r;
}

/* ---- retrieval ---- */

static double grade_of(const sq_qrels_view *q, int64_t doc)
{
    for (int64_t i = 0; i < q->n; i++)
        if (q->doc[i] == doc)
            return q->grade[i];
    return 0;
}

static int cmp_desc(const void *pa, const void *pb)
{
    return cmp_double(pb, pa);
}

double sq_ndcg_at_k(const int64_t *ranked, int64_t n_ranked, const sq_qrels_view *q, int k)
{
    double dcg = 0;
    for (int64_t r = 0; r < n_ranked && r < k; r++) {
        double g = grade_of(q, ranked[r]);
        if (g > 0)
            dcg += g / log2((double)r + 2.0);
    }
    double *ideal = malloc((size_t)(q->n > 0 ? q->n : 1) * sizeof *ideal);
    if (!ideal)
        return NAN;
    memcpy(ideal, q->grade, (size_t)q->n * sizeof *ideal);
    qsort(ideal, (size_t)q->n, sizeof *ideal, cmp_desc);
    double idcg = 0;
    for (int64_t r = 0; r < q->n && r < k; r++)
        if (ideal[r] > 0)
            idcg += ideal[r] / log2((double)r + 2.0);
    free(ideal);
    return idcg > 0 ? dcg / idcg : 0.0;
}

double sq_recall_at_k(const int64_t *ranked, int64_t n_ranked, const sq_qrels_view *q, int k)
{
    int64_t relevant = 0, found = 0;
    for (int64_t i = 0; i < q->n; i++)
        relevant += q->grade[i] > 0;
    for (int64_t r = 0; r < n_ranked && r < k; r++)
        found += grade_of(q, ranked[r]) > 0;
    return relevant ? (double)found / (double)relevant : 0.0;
}

int sq_retrieval_eval(const float *Q, int64_t nq, const float *D, int64_t nd, int dim,
                      const int64_t *qrel_off, const int64_t *qrel_doc, const double *qrel_grade,
                      double *ndcg10, double *recall100, double *per_query_ndcg10)
{
    *ndcg10 = *recall100 = NAN;
    if (nq < 1 || nd < 1)
        return -1;
    float *uq = unit_rows(Q, nq, dim), *ud = unit_rows(D, nd, dim);
    double sn = 0, sr = 0;
    int oom = !uq || !ud;
    if (!oom) {
#pragma omp parallel reduction(| : oom) \
    num_threads(sq_par_threads(SQ_WORK_MAC_F32, (double)nq * nd * dim, nq))
        {
            double *scores = malloc((size_t)nd * sizeof *scores);
            int64_t *top = malloc(100 * sizeof *top);
            if (!scores || !top)
                oom = 1;
#pragma omp for schedule(dynamic, 4) ordered
            for (int64_t q = 0; q < nq; q++) {
                double nv = 0, rv = 0;
                if (scores && top) {
                    for (int64_t d = 0; d < nd; d++)
                        scores[d] = dot8(uq + (size_t)q * dim, ud + (size_t)d * dim, dim);
                    int64_t nt = sq_top_indices(scores, nd, 100, top);
                    sq_qrels_view v = {qrel_doc + qrel_off[q], qrel_grade + qrel_off[q],
                                       qrel_off[q + 1] - qrel_off[q]};
                    nv = sq_ndcg_at_k(top, nt, &v, 10);
                    rv = sq_recall_at_k(top, nt, &v, 100);
                }
                if (per_query_ndcg10)
                    per_query_ndcg10[q] = nv;
                /* Summed in query order: the same total at any thread count. */
#pragma omp ordered
                {
                    sn += nv;
                    sr += rv;
                }
            }
            free(scores);
            free(top);
        }
    }
    free(uq);
    free(ud);
    if (oom)
        return -1;
    *ndcg10 = sn / (double)nq;
    *recall100 = sr / (double)nq;
    return 0;
}

double sq_paired_se(const double *a, const double *b, int64_t n)
{
    if (n < 2)
        return NAN;
    double mean = 0;
    for (int64_t i = 0; i < n; i++)
        mean += a[i] - b[i];
    mean /= (double)n;
    double ss = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = a[i] - b[i] - mean;
        ss += d * d;
    }
    return sqrt(ss / (double)(n - 1) / (double)n);
}

double sq_logreg_cv_accuracy(const float *X, const int *y, int64_t n, int dim, int folds,
                             const sq_logreg_opts *opts)
{
    if (folds < 2 || n < folds || dim < 1)
        return NAN;
    int *fold = malloc((size_t)n * sizeof *fold);
    unsigned char *use = malloc((size_t)n);
    double *w = malloc((size_t)dim * sizeof *w);
    double acc = NAN;
    if (!fold || !use || !w)
        goto done;
    int64_t dealt[2] = {0, 0};
    for (int64_t i = 0; i < n; i++) {
        int cls = y[i] == 1;
        fold[i] = (int)(dealt[cls]++ % folds);
    }
    int64_t correct = 0;
    for (int f = 0; f < folds; f++) {
        for (int64_t i = 0; i < n; i++)
            use[i] = fold[i] != f;
        double b;
        if (sq_logreg_train(X, y, n, dim, use, opts, w, &b) < 0)
            goto done;
        for (int64_t i = 0; i < n; i++) {
            if (use[i])
                continue;
            double t = b;
            for (int j = 0; j < dim; j++)
                t += w[j] * X[(size_t)i * dim + j];
            correct += (t > 0) == (y[i] == 1);
        }
    }
    acc = (double)correct / (double)n;
done:
    free(fold);
    free(use);
    free(w);
    return acc;
}

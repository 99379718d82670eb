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

/* ---- logistic regression ---- */

static const sq_logreg_opts default_opts = {.l2 = 1.0, .max_iter = 50, .tol = 1e-8, .lbfgs_iter = 1000};

static double sigmoid(double t)
{
    return t >= 0 ? 1.0 / (1.0 + exp(-t)) : exp(t) / (1.0 + exp(t));
}

/* log(1 + exp(t)) without overflow. */
static double softplus(double t)
{
    return t > 0 ? t + log1p(exp(-t)) : log1p(exp(t));
}

/* Penalized loss of theta over the m rows of Z [m][d1] (last column 1). */
static double objective(const double *Z, const double *yv, int64_t m, int d1, const double *theta,
                        double l2)
{
    double f = 0;
    for (int64_t i = 0; i < m; i++) {
        const double *z = Z + (size_t)i * d1;
        double t = 0;
        for (int j = 0; j < d1; j++)
            t += z[j] * theta[j];
        f += softplus(t) - yv[i] * t;
    }
    for (int j = 0; j < d1 - 1; j++)
        f += 0.5 * l2 * theta[j] * theta[j];
    return f;
}

/* Solve H x = g in place (g -> x) by Cholesky; H [d][d] is overwritten.
 * Returns -1 when H is not positive definite. */
static int cholesky_solve(double *H, double *g, int d)
{
    for (int j = 0; j < d; j++) {
        double s = H[(size_t)j * d + j];
        for (int k = 0; k < j; k++)
            s -= H[(size_t)j * d + k] * H[(size_t)j * d + k];
        if (!(s > 0))
            return -1;
        double ljj = sqrt(s);
        H[(size_t)j * d + j] = ljj;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)(d - j - 1) * j, d - j - 1))
        for (int i = j + 1; i < d; i++) {
            double t = H[(size_t)i * d + j];
            for (int k = 0; k < j; k++)
                t -= H[(size_t)i * d + k] * H[(size_t)j * d + k];
            H[(size_t)i * d + j] = t / ljj;
        }
    }
    for (int i = 0; i < d; i++) { /* L y = g */
        double t = g[i];
        for (int k = 0; k < i; k++)
            t -= H[(size_t)i * d + k] * g[k];
        g[i] = t / H[(size_t)i * d + i];
    }
    for (int i = d - 1; i >= 0; i--) { /* L^T x = y */
        double t = g[i];
        for (int k = i + 1; k < d; k++)
            t -= H[(size_t)k * d + i] * g[k];
        g[i] = t / H[(size_t)i * d + i];
    }
    return 0;
}

/* Rows of the Hessian and gradient are accumulated over blocks of this many
 * rows: each block's rows stay in cache while every (j, k) entry is updated,
 * and each entry is still summed over the rows in order (the same bits as a
 * plain loop over all rows, at any thread count). */
#define NEWTON_BLOCK 64

/* Newton's method with backtracking on standardized rows Z. */
static int newton(const double *Z, const double *yv, int64_t m, int d1, double l2, int max_iter,
                  double tol, double *theta)
{
    size_t dd = (size_t)d1 * d1;
    double *H = malloc(dd * sizeof *H), *g = malloc((size_t)d1 * sizeof *g);
    double *c = malloc((size_t)m * sizeof *c), *r = malloc((size_t)m * sizeof *r);
    double *trial = malloc((size_t)d1 * sizeof *trial);
    int it = -1;
    if (!H || !g || !c || !r || !trial)
        goto done;
    memset(theta, 0, (size_t)d1 * sizeof *theta);
    double f = objective(Z, yv, m, d1, theta, l2);
    for (it = 0; it < max_iter;) {
        for (int64_t i = 0; i < m; i++) {
            const double *z = Z + (size_t)i * d1;
            double t = 0;
            for (int j = 0; j < d1; j++)
                t += z[j] * theta[j];
            double p = sigmoid(t);
            r[i] = p - yv[i];
            c[i] = p * (1 - p);
        }
        memset(H, 0, dd * sizeof *H);
        memset(g, 0, (size_t)d1 * sizeof *g);
        /* Row j of the lower triangle belongs to one thread; within it the
         * innermost loop runs over k (vectorizable), the rows in order. */
        for (int64_t i0 = 0; i0 < m; i0 += NEWTON_BLOCK) {
            int64_t i1 = i0 + NEWTON_BLOCK < m ? i0 + NEWTON_BLOCK : m;
#pragma omp parallel for schedule(dynamic, 8) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, 0.5 * d1 * d1 * (double)(i1 - i0), d1))
            for (int j = 0; j < d1; j++) {
                double *hj = H + (size_t)j * d1;
                for (int64_t i = i0; i < i1; i++) {
                    const double *z = Z + (size_t)i * d1;
                    double a = c[i] * z[j];
                    for (int k = 0; k <= j; k++)
                        hj[k] += a * z[k];
                    g[j] += r[i] * z[j];
                }
            }
        }
        for (int j = 0; j < d1 - 1; j++) {
            H[(size_t)j * d1 + j] += l2;
            g[j] += l2 * theta[j];
        }
        H[dd - 1] += 1e-12; /* the bias is unpenalized; keep the system definite */
        if (cholesky_solve(H, g, d1) != 0) {
            it = -1;
            goto done;
        }
        it++;
        double step = 1, maxstep = 0;
        for (int j = 0; j < d1; j++)
            maxstep = fmax(maxstep, fabs(g[j]));
        for (int tries = 0; tries < 30; tries++, step *= 0.5) {
            for (int j = 0; j < d1; j++)
                trial[j] = theta[j] - step * g[j];
            double ft = objective(Z, yv, m, d1, trial, l2);
            if (ft <= f) {
                f = ft;
                break;
            }
        }
        memcpy(theta, trial, (size_t)d1 * sizeof *theta);
        if (maxstep * step < tol)
            break;
    }
done:
    free(H);
    free(g);
    free(c);
    free(r);
    free(trial);
    return it;
}

/* Count the used rows (use NULL: all). */
static int64_t used_rows(int64_t n, const unsigned char *use)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        m += !use || use[i];
    return m;
}

/* Standardize the m used rows of X into Z [m][dim + 1] (last column 1) with
 * their column mean mu and deviation sd (a constant column gets sd 1, so it
 * stays 0 after centring). */
static void standardize(const float *X, int64_t n, int dim, const unsigned char *use, int64_t m,
                        double *mu, double *sd, double *Z)
{
    int d1 = dim + 1;
    memset(mu, 0, (size_t)dim * sizeof *mu);
    memset(sd, 0, (size_t)dim * sizeof *sd);
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            for (int j = 0; j < dim; j++)
                mu[j] += X[(size_t)i * dim + j];
    for (int j = 0; j < dim; j++)
        mu[j] /= (double)m;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            for (int j = 0; j < dim; j++) {
                double d = X[(size_t)i * dim + j] - mu[j];
                sd[j] += d * d;
            }
    for (int j = 0; j < dim; j++) {
        sd[j] = sqrt(sd[j] / (double)m);
        if (!(sd[j] > 1e-12))
            sd[j] = 1; /* a constant feature: leave it at 0 after centring */
    }
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++) {
        if (use && !use[i])
            continue;
        double *z = Z + (size_t)row++ * d1;
        for (int j = 0; j < dim; j++)
            z[j] = (X[(size_t)i * dim + j] - mu[j]) / sd[j];
        z[dim] = 1;
    }
}

/* Weights theta [dim + 1] over standardized features -> raw features. */
static void unstandardize(const double *theta, const double *mu, const double *sd, int dim,
                          double *w, double *b)
{
    double bias = theta[dim];
    for (int j = 0; j < dim; j++) {
        w[j] = theta[j] / sd[j];
        bias -= theta[j] * mu[j] / sd[j];
    }
    *b = bias;
}

int sq_logreg_train(const float *X, const int *y, int64_t n, int dim, const unsigned char *use,
                    const sq_logreg_opts *opts, double *w, double *b)
{
    if (!opts)
        opts = &default_opts;
    int64_t m = used_rows(n, use), pos = 0;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            pos += y[i] == 1;
    if (m < 2 || pos == 0 || pos == m || dim < 1)
        return -1;
    int d1 = dim + 1;
    double *mu = malloc((size_t)dim * sizeof *mu), *sd = malloc((size_t)dim * sizeof *sd);
    double *Z = malloc((size_t)m * d1 * sizeof *Z), *yv = malloc((size_t)m * sizeof *yv);
    double *theta = malloc((size_t)d1 * sizeof *theta);
    int it = -1;
    if (!mu || !sd || !Z || !yv || !theta)
        goto done;
    standardize(X, n, dim, use, m, mu, sd, Z);
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            yv[row++] = y[i] == 1;
    it = newton(Z, yv, m, d1, opts->l2, opts->max_iter, opts->tol, theta);
    if (it >= 0)
        unstandardize(theta, mu, sd, dim, w, b);
done:
    free(mu);
    free(sd);
    free(Z);
    free(yv);
    free(theta);
    return it;
}

/* ---- multinomial (softmax) logistic regression ---- */

/* Why two optimizers: with two classes the model is the binary one above
 * (one weight vector, class 0's logit fixed at 0), whose Newton system is
 * (dim + 1)^2 and converges to machine precision in a handful of steps; it is
 * also scikit-learn's binary LogisticRegression (what SetFit's head is) and
 * the probe's model, so the probe and a two-class head are one code path.
 * With C >= 3 classes the symmetric softmax has C (dim + 1) parameters, and a
 * Newton system of (C (dim + 1))^2 grows too fast; L-BFGS needs only the
 * gradient, O(m dim C) a step. */

#define LBFGS_MEM 10
#define SOFTMAX_BLOCK 64

/* The penalized softmax loss at theta [C][d1] over the rows of Z [m][d1]
 * with classes yc; with G, also its gradient. Rows are independent
 * (parallel); sums run over the rows in order, so the result has the same
 * bits at any thread count. R [m][C] and loss [m] are scratch. */
static double softmax_objective(const double *Z, const int *yc, int64_t m, int d1, int C,
                                double l2, const double *theta, double *G, double *R,
                                double *loss)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)m * C * (d1 + 20), m))
    for (int64_t i = 0; i < m; i++) {
        const double *z = Z + (size_t)i * d1;
        double *r = R + (size_t)i * C, mx = -INFINITY;
        for (int c = 0; c < C; c++) {
            const double *th = theta + (size_t)c * d1;
            double t = 0;
            for (int j = 0; j < d1; j++)
                t += z[j] * th[j];
            r[c] = t;
            mx = fmax(mx, t);
        }
        double se = 0;
        for (int c = 0; c < C; c++)
            se += exp(r[c] - mx);
        double lse = mx + log(se);
        loss[i] = lse - r[yc[i]];
        for (int c = 0; c < C; c++)
            r[c] = exp(r[c] - lse) - (c == yc[i]);
    }
    double f = 0;
    for (int64_t i = 0; i < m; i++)
        f += loss[i];
    for (int c = 0; c < C; c++)
        for (int j = 0; j < d1 - 1; j++) {
            double t = theta[(size_t)c * d1 + j];
            f += 0.5 * l2 * t * t;
        }
    if (!G)
        return f;
    size_t K = (size_t)C * d1;
    memset(G, 0, K * sizeof *G);
    for (int64_t i0 = 0; i0 < m; i0 += SOFTMAX_BLOCK) {
        int64_t i1 = i0 + SOFTMAX_BLOCK < m ? i0 + SOFTMAX_BLOCK : m;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)d1 * C * (i1 - i0), d1))
        for (int j = 0; j < d1; j++)
            for (int64_t i = i0; i < i1; i++) {
                double zij = Z[(size_t)i * d1 + j];
                for (int c = 0; c < C; c++)
                    G[(size_t)c * d1 + j] += R[(size_t)i * C + c] * zij;
            }
    }
    for (int c = 0; c < C; c++)
        for (int j = 0; j < d1 - 1; j++)
            G[(size_t)c * d1 + j] += l2 * theta[(size_t)c * d1 + j];
    return f;
}

static double dotk(const double *a, const double *b, size_t k)
{
    double s = 0;
    for (size_t i = 0; i < k; i++)
        s += a[i] * b[i];
    return s;
}

static double maxabs(const double *a, size_t k)
{
    double s = 0;
    for (size_t i = 0; i < k; i++)
        s = fmax(s, fabs(a[i]));
    return s;
}

/* L-BFGS (memory LBFGS_MEM, backtracking Armijo line search) from theta = 0.
 * Stops when the largest gradient entry falls below 1e-7 of its start, the
 * loss stops decreasing (relative change < 1e-13, or no step decreases it),
 * or after max_iter steps. Returns the steps taken, or -1 out of memory. */
static int lbfgs(const double *Z, const int *yc, int64_t m, int d1, int C, double l2,
                 int max_iter, double *theta)
{
    size_t K = (size_t)C * d1;
    double *g = malloc(K * sizeof *g), *gn = malloc(K * sizeof *gn), *d = malloc(K * sizeof *d);
    double *tn = malloc(K * sizeof *tn), *S = malloc(LBFGS_MEM * K * sizeof *S);
    double *Y = malloc(LBFGS_MEM * K * sizeof *Y), *R = malloc((size_t)m * C * sizeof *R);
    double *loss = malloc((size_t)m * sizeof *loss);
    double rho[LBFGS_MEM], alpha[LBFGS_MEM];
    int it = -1;
    if (!g || !gn || !d || !tn || !S || !Y || !R || !loss)
        goto done;
    memset(theta, 0, K * sizeof *theta);
    double f = softmax_objective(Z, yc, m, d1, C, l2, theta, g, R, loss);
    double g0 = maxabs(g, K);
    int stored = 0, head = 0; /* pairs kept; the next slot to write */
    for (it = 0; it < max_iter && maxabs(g, K) > 1e-7 * g0;) {
        /* d = -H g by the two-loop recursion, newest pair first. */
        for (size_t k = 0; k < K; k++)
            d[k] = -g[k];
        for (int q = 0; q < stored; q++) {
            int s = (head - 1 - q + LBFGS_MEM) % LBFGS_MEM;
            alpha[s] = rho[s] * dotk(S + s * K, d, K);
            for (size_t k = 0; k < K; k++)
                d[k] -= alpha[s] * Y[s * K + k];
        }
        double step = 1;
        if (stored > 0) {
            int s = (head - 1 + LBFGS_MEM) % LBFGS_MEM;
            double gamma = 1 / (rho[s] * dotk(Y + s * K, Y + s * K, K));
            for (size_t k = 0; k < K; k++)
                d[k] *= gamma;
        } else {
            step = 1 / sqrt(dotk(g, g, K)); /* first step: unit length */
        }
        for (int q = stored - 1; q >= 0; q--) {
            int s = (head - 1 - q + LBFGS_MEM) % LBFGS_MEM;
            double beta = rho[s] * dotk(Y + s * K, d, K);
            for (size_t k = 0; k < K; k++)
                d[k] += (alpha[s] - beta) * S[s * K + k];
        }
        double slope = dotk(g, d, K);
        if (!(slope < 0)) { /* not a descent direction: restart from -g */
            for (size_t k = 0; k < K; k++)
                d[k] = -g[k];
            slope = dotk(g, d, K);
            step = 1 / sqrt(-slope);
            stored = 0;
        }
        double fn = f;
        int tries;
        for (tries = 0; tries < 40; tries++, step *= 0.5) {
            for (size_t k = 0; k < K; k++)
                tn[k] = theta[k] + step * d[k];
            fn = softmax_objective(Z, yc, m, d1, C, l2, tn, NULL, R, loss);
            if (fn <= f + 1e-4 * step * slope)
                break;
        }
        if (tries == 40)
            break; /* no step lowers the loss: as low as it gets */
        it++;
        softmax_objective(Z, yc, m, d1, C, l2, tn, gn, R, loss);
        double *s = S + (size_t)head * K, *y = Y + (size_t)head * K;
        for (size_t k = 0; k < K; k++) {
            s[k] = tn[k] - theta[k];
            y[k] = gn[k] - g[k];
        }
        double sy = dotk(s, y, K);
        if (sy > 1e-12 * sqrt(dotk(s, s, K) * dotk(y, y, K))) {
            rho[head] = 1 / sy;
            head = (head + 1) % LBFGS_MEM;
            stored += stored < LBFGS_MEM;
        }
        memcpy(theta, tn, K * sizeof *theta);
        memcpy(g, gn, K * sizeof *g);
        double df = f - fn;
        f = fn;
        if (df <= 1e-13 * fmax(1, fabs(f)))
            break;
    }
done:
    free(g);
    free(gn);
    free(d);
    free(tn);
    free(S);
    free(Y);
    free(R);
    free(loss);
    return it;
}

int sq_softmax_train(const float *X, const int *y, int64_t n, int dim, int classes,
                     const unsigned char *use, const sq_logreg_opts *opts, double *W, double *b)
{
    if (!opts)
        opts = &default_opts;
    if (classes < 2 || dim < 1 || !(opts->l2 > 0))
        return -1;
    int64_t m = used_rows(n, use);
    int64_t *count = calloc((size_t)classes, sizeof *count);
    if (!count)
        return -1;
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) {
        if (use && !use[i])
            continue;
        if (y[i] < 0 || y[i] >= classes) {
            bad = 1;
            break;
        }
        count[y[i]]++;
        for (int j = 0; j < dim; j++)
            if (!isfinite(X[(size_t)i * dim + j]))
                bad = 1;
    }
    for (int c = 0; c < classes && !bad; c++)
        bad = count[c] == 0; /* a class without rows has no optimum */
    free(count);
    if (bad)
        return -1;
    if (classes == 2) {
        /* Binary form: class 0's logit 0, class 1's w.x + b. */
        memset(W, 0, (size_t)dim * sizeof *W);
        b[0] = 0;
        return sq_logreg_train(X, y, n, dim, use, opts, W + dim, b + 1);
    }
    int d1 = dim + 1;
    size_t K = (size_t)classes * d1;
    double *mu = malloc((size_t)dim * sizeof *mu), *sd = malloc((size_t)dim * sizeof *sd);
    double *Z = malloc((size_t)m * d1 * sizeof *Z), *theta = malloc(K * sizeof *theta);
    int *yc = malloc((size_t)m * sizeof *yc);
    int it = -1;
    if (!mu || !sd || !Z || !theta || !yc)
        goto done;
    standardize(X, n, dim, use, m, mu, sd, Z);
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            yc[row++] = y[i];
    it = lbfgs(Z, yc, m, d1, classes, opts->l2, opts->lbfgs_iter > 0 ? opts->lbfgs_iter : 1000,
               theta);
    if (it >= 0)
        for (int c = 0; c < classes; c++)
            unstandardize(theta + (size_t)c * d1, mu, sd, dim, W + (size_t)c * dim, b + c);
done:
    free(mu);
    free(sd);
    free(Z);
    free(theta);
    free(yc);
    return it;
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

/* tune_search.h: the grid, the exhaustive order and the search. */
#include "tune_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_state {
    const sq_tune_space *sp;
    sq_tune_measure_fn measure;
    sq_tune_progress_fn progress;
    sq_tune_clock_fn clock;
    void *ctx;
    sq_tune_point *pts;
    int n, cap;
    int done, planned;
    double t_start, overhead_sum;
    int overhead_n;
} run_state;

double sq_tune_score(const sq_tune_point *p)
{
    return p->n ? p->sum_score / p->n : 0;
}

sq_tune_fig sq_tune_mean(const sq_tune_point *p)
{
    double k = p->n ? 1.0 / p->n : 0;
    return (sq_tune_fig){p->sum.seq_per_s * k, p->sum.p50_ms * k, p->sum.p95_ms * k};
}

static double fig_score(sq_tune_objective o, const sq_tune_fig *f)
{
    if (o == SQ_TUNE_LATENCY)
        return f->p50_ms > 0 ? 1000.0 / f->p50_ms : 0;
    return f->seq_per_s;
}

static int point_index(run_state *st, int N, int T, int B, sq_err *err)
{
    for (int i = 0; i < st->n; i++)
        if (st->pts[i].instances == N && st->pts[i].threads == T && st->pts[i].batch == B)
            return i;
    if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 64;
        sq_tune_point *p = realloc(st->pts, (size_t)cap * sizeof *p);
        if (!p)
            return sq_err_set(err, "out of memory");
        st->pts = p, st->cap = cap;
    }
    st->pts[st->n] = (sq_tune_point){.instances = N, .threads = T, .batch = B};
    return st->n++;
}

/* The window for the next measurement: the budget left over the
 * measurements left, less the overhead each has shown so far. */
static double next_window(const run_state *st)
{
    const double lo = st->sp->min_window_s;
    if (!st->clock)
        return lo;
    int left = st->planned - st->done;
    if (left < 1)
        left = 1;
    double time_left = st->sp->budget_s - (st->clock(st->ctx) - st->t_start);
    double ovh = st->overhead_n ? st->overhead_sum / st->overhead_n : 0;
    double w = time_left / left - ovh;
    return w > lo ? w : lo;
}

static int measure_point(run_state *st, int N, int T, int B, sq_err *err)
{
    if ((long long)N * T > st->sp->cores)
        return sq_err_set(err, "internal: %d x %d exceeds %d cores", N, T, st->sp->cores);
    int i = point_index(st, N, T, B, err);
    if (i < 0)
        return -1;
    double w = next_window(st);
    double t0 = st->clock ? st->clock(st->ctx) : 0;
    sq_tune_fig f;
    if (st->measure(st->ctx, N, T, B, w, &f, err) != 0)
        return -1;
    if (st->clock) {
        double over = st->clock(st->ctx) - t0 - w;
        st->overhead_sum += over > 0 ? over : 0;
        st->overhead_n++;
    }
    sq_tune_point *p = &st->pts[i];
    p->n++;
    p->sum_score += fig_score(st->sp->objective, &f);
    p->sum.seq_per_s += f.seq_per_s;
    p->sum.p50_ms += f.p50_ms;
    p->sum.p95_ms += f.p95_ms;
    st->done++;
    if (st->done > st->planned)
        st->planned = st->done;
    if (st->progress)
        st->progress(st->ctx, st->done, st->planned, N, T, B, &f);
    return 0;
}

/* Batches: 1, 2, 4, ... <= max_batch, and max_batch (throughput); 1 (latency). */
static int batch_list(const sq_tune_space *sp, int *b)
{
    int n = 0;
    if (sp->objective == SQ_TUNE_LATENCY) {
        b[n++] = 1;
        return n;
    }
    for (int x = 1; x <= sp->max_batch; x *= 2)
        b[n++] = x;
    if (b[n - 1] != sp->max_batch)
        b[n++] = sp->max_batch;
    return n;
}

static int grid_pairs(int cores)
{
    int n = 0;
    for (int N = 1; N <= cores; N++)
        n += cores / N;
    return n;
}

static int cmp_point(const void *a, const void *b)
{
    const sq_tune_point *x = a, *y = b;
    if (x->instances != y->instances)
        return x->instances - y->instances;
    if (x->threads != y->threads)
        return x->threads - y->threads;
    return x->batch - y->batch;
}

/* Indices of points sorted by mean score, best first (ties: fewer
 * instances, threads, batch: the order of the grid). */
static const run_state *g_rank;
static int cmp_rank(const void *a, const void *b)
{
    const sq_tune_point *x = &g_rank->pts[*(const int *)a], *y = &g_rank->pts[*(const int *)b];
    double sx = sq_tune_score(x), sy = sq_tune_score(y);
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return cmp_point(x, y);
}

static void rank(const run_state *st, int *idx, int n)
{
    g_rank = st;
    qsort(idx, (size_t)n, sizeof *idx, cmp_rank);
    g_rank = NULL;
}

static int run_exhaustive(run_state *st, const int *batches, int nb, sq_err *err)
{
    const int C = st->sp->cores, R = st->sp->rounds > 0 ? st->sp->rounds : 1;
    const int G = grid_pairs(C) * nb;
    st->planned = G * R;
    int *order = malloc((size_t)G * 3 * sizeof *order);
    if (!order)
        return sq_err_set(err, "out of memory");
    int k = 0;
    for (int N = 1; N <= C; N++)
        for (int T = 1; N * T <= C; T++)
            for (int b = 0; b < nb; b++)
                order[3 * k] = N, order[3 * k + 1] = T, order[3 * k + 2] = batches[b], k++;
    int rc = 0;
    for (int r = 0; r < R && rc == 0; r++)
        for (int j = 0; j < G && rc == 0; j++) {
            int q = r % 2 ? G - 1 - j : j;
            rc = measure_point(st, order[3 * q], order[3 * q + 1], order[3 * q + 2], err);
        }
    free(order);
    return rc;
}

static int run_search(run_state *st, const int *batches, int nb, double *noise, sq_err *err)
{
    const int C = st->sp->cores;
    /* 1. candidate pairs */
    int pair[2 * 2 * 64], np = 0; /* at most 2 x (11 powers of two + divisors <= 2 x 32) */
    int Ts[64], nt = 0;
    for (int T = 1; T <= C && nt < 64; T++)
        if (C % T == 0 || (T & (T - 1)) == 0)
            Ts[nt++] = T;
    for (int i = 0; i < nt; i++) {
        int cand[2][2] = {{C / Ts[i], Ts[i]}, {1, Ts[i]}};
        for (int c = 0; c < 2; c++) {
            bool dup = false;
            for (int j = 0; j < np; j++)
                dup |= pair[2 * j] == cand[c][0] && pair[2 * j + 1] == cand[c][1];
            if (!dup)
                pair[2 * np] = cand[c][0], pair[2 * np + 1] = cand[c][1], np++;
        }
    }
    const int B0 = batches[nb / 2];
    const int K = 3;
    int surv_est = np < 2 ? np : 2;
    st->planned = np + 1 + surv_est * (nb - 1) + K * 2;
    /* 2. every pair at the middle batch, then the first again: the noise */
    int *idx = malloc((size_t)(np > 0 ? np : 1) * sizeof *idx);
    if (!idx)
        return sq_err_set(err, "out of memory");
    int rc = 0;
    double first = 0;
    for (int j = 0; j < np && rc == 0; j++) {
        rc = measure_point(st, pair[2 * j], pair[2 * j + 1], B0, err);
        if (rc == 0)
            idx[j] = point_index(st, pair[2 * j], pair[2 * j + 1], B0, err);
        if (j == 0)
            first = sq_tune_score(&st->pts[idx[0]]);
    }
    if (rc == 0)
        rc = measure_point(st, pair[0], pair[1], B0, err);
    if (rc != 0) {
        free(idx);
        return -1;
    }
    {
        const sq_tune_point *p0 = &st->pts[idx[0]];
        double second = p0->sum_score - first; /* p0 has exactly two measurements */
        double hi = first > second ? first : second;
        *noise = hi > 0 ? fabs(first - second) / hi : 0;
    }
    const double margin = *noise > 0.02 ? *noise : 0.02;
    /* 3. the best pairs at every batch */
    rank(st, idx, np);
    const double top = sq_tune_score(&st->pts[idx[0]]);
    int ns = 0;
    while (ns < np && ns < 4 && (ns < 2 || sq_tune_score(&st->pts[idx[ns]]) >= top * (1 - margin)))
        ns++;
    int sN[4], sT[4];
    for (int j = 0; j < ns; j++)
        sN[j] = st->pts[idx[j]].instances, sT[j] = st->pts[idx[j]].threads;
    free(idx);
    st->planned = st->done + ns * (nb - 1) + K * 2;
    for (int j = 0; j < ns && rc == 0; j++)
        for (int b = 0; b < nb && rc == 0; b++)
            if (batches[b] != B0)
                rc = measure_point(st, sN[j], sT[j], batches[b], err);
    if (rc != 0)
        return -1;
    /* 4. the finalists, twice, alternating */
    int *all = malloc((size_t)st->n * sizeof *all);
    if (!all)
        return sq_err_set(err, "out of memory");
    for (int i = 0; i < st->n; i++)
        all[i] = i;
    rank(st, all, st->n);
    int k = st->n < K ? st->n : K, fin[3][3];
    for (int j = 0; j < k; j++)
        fin[j][0] = st->pts[all[j]].instances, fin[j][1] = st->pts[all[j]].threads,
        fin[j][2] = st->pts[all[j]].batch;
    free(all);
    st->planned = st->done + 2 * k;
    for (int r = 0; r < 2 && rc == 0; r++)
        for (int j = 0; j < k && rc == 0; j++) {
            int q = r ? k - 1 - j : j;
            rc = measure_point(st, fin[q][0], fin[q][1], fin[q][2], err);
        }
    return rc;
}

int sq_tune_run(const sq_tune_space *sp, sq_tune_measure_fn measure,
                sq_tune_progress_fn progress, sq_tune_clock_fn clock, void *ctx,
                sq_tune_outcome *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    if (sp->cores < 1 || sp->cores > SQ_TUNE_MAX_CORES || sp->max_batch < 1 ||
        sp->max_batch > 4096)
        return sq_err_set(err, "internal: tune space out of range");
    run_state st = {.sp = sp, .measure = measure, .progress = progress, .clock = clock,
                    .ctx = ctx};
    st.t_start = clock ? clock(ctx) : 0;
    int batches[16];
    int nb = batch_list(sp, batches);
    double noise = 0;
    int rc = sp->exhaustive ? run_exhaustive(&st, batches, nb, err)
                            : run_search(&st, batches, nb, &noise, err);
    if (rc != 0 || st.n == 0) {
        free(st.pts);
        return rc != 0 ? -1 : sq_err_set(err, "internal: nothing measured");
    }
    /* The pick: the best mean among points measured at least 3 times (the
     * search's finalists; every point when exhaustive with 3+ rounds), else
     * among all. */
    int min_n = 0;
    for (int i = 0; i < st.n; i++)
        if (st.pts[i].n > min_n)
            min_n = st.pts[i].n;
    if (min_n > 3)
        min_n = 3;
    if (sp->exhaustive)
        min_n = 1;
    int best = -1;
    for (int i = 0; i < st.n; i++)
        if (st.pts[i].n >= min_n &&
            (best < 0 || sq_tune_score(&st.pts[i]) > sq_tune_score(&st.pts[best])))
            best = i;
    sq_tune_point b = st.pts[best];
    qsort(st.pts, (size_t)st.n, sizeof *st.pts, cmp_point);
    for (int i = 0; i < st.n; i++)
        if (cmp_point(&st.pts[i], &b) == 0)
            out->best = i;
    out->points = st.pts;
    out->n_points = st.n;
    out->grid_points = grid_pairs(sp->cores) * nb;
    out->measurements = st.done;
    out->noise = noise;
    return 0;
}

void sq_tune_outcome_free(sq_tune_outcome *o)
{
    free(o->points);
    memset(o, 0, sizeof *o);
}

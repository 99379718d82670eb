/* The search of `squint tune` over (instances, threads per instance, batch),
 * independent of how a point is measured (a callback: the unit test gives
 * it a synthetic surface, the command N pinned processes).
 *
 * The grid: every (instances N, threads T) with N x T <= the usable cores;
 * batches 1, 2, 4, ... up to max_batch (and max_batch) for throughput, batch 1
 * for latency. A point's score is higher-is-better: aggregate seq/s
 * (throughput) or 1000 / p50 ms of one request (latency).
 *
 * exhaustive: every point, `rounds` times, the order reversed every other
 * round (drift hits every point alike); the best mean wins.
 * search (the default): measures a subset:
 *   1. candidate pairs: for each T in (divisors of the cores, powers of two)
 *      the most instances that fit (N = cores / T) and N = 1: the pairs a
 *      throughput or latency optimum lies on (a pair that leaves cores idle
 *      beside a fuller one at the same T seldom wins);
 *   2. every candidate pair at the middle batch, then the first one again:
 *      their difference is the noise margin (at least 2%);
 *   3. the best pairs (within the margin of the best, 2 to 4 of them) at
 *      every batch (throughput);
 *   4. the 3 best points re-measured twice, alternating (a b c, c b a); the
 *      best mean over all its measurements wins.
 * The budget is spread over the planned measurements: each gets the time
 * left divided by the measurements left, less the per-measurement overhead
 * seen so far, and at least min_window_s. */
#ifndef SQ_TUNE_SEARCH_H
#define SQ_TUNE_SEARCH_H

#include <stdbool.h>

#include "sq_error.h"
#include "tune_file.h"

typedef struct sq_tune_fig {
    double seq_per_s, p50_ms, p95_ms;
} sq_tune_fig;

/* Measure one point over a window of window_s seconds. */
typedef int (*sq_tune_measure_fn)(void *ctx, int instances, int threads, int batch,
                                  double window_s, sq_tune_fig *out, sq_err *err);
/* Called after each measurement (progress); may be NULL. */
typedef void (*sq_tune_progress_fn)(void *ctx, int done, int planned, int instances, int threads,
                                    int batch, const sq_tune_fig *fig);
/* Seconds since some fixed time (the budget); NULL: budget ignored. */
typedef double (*sq_tune_clock_fn)(void *ctx);

typedef struct sq_tune_space {
    int cores;
    sq_tune_objective objective;
    int max_batch;
    bool exhaustive;
    int rounds;          /* exhaustive: measurements per point (>= 1) */
    double budget_s;     /* planned total time */
    double min_window_s; /* each measurement's window at least */
} sq_tune_space;

typedef struct sq_tune_point {
    int instances, threads, batch;
    int n;                    /* measurements */
    double sum_score;         /* their scores, summed */
    sq_tune_fig sum;          /* their figures, summed */
} sq_tune_point;

typedef struct sq_tune_outcome {
    sq_tune_point *points; /* measured points, sorted by (instances, threads, batch) */
    int n_points;
    int best;              /* index into points */
    int grid_points;       /* the size of the whole grid */
    int measurements;
    double noise;          /* the search's measured noise margin (0 for exhaustive) */
} sq_tune_outcome;

/* The mean score and figures of a point. */
double sq_tune_score(const sq_tune_point *p);
sq_tune_fig sq_tune_mean(const sq_tune_point *p);

int sq_tune_run(const sq_tune_space *sp, sq_tune_measure_fn measure,
                sq_tune_progress_fn progress, sq_tune_clock_fn clock, void *ctx,
                sq_tune_outcome *out, sq_err *err);
void sq_tune_outcome_free(sq_tune_outcome *o);

#endif

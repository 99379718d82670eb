/* Per-tensor activation statistics against naive loops: per-channel max|x|
 * and sum of x^2, min/max, planted outlier channels, NaN/Inf rejection,
 * merges, and thread-count / batch-split independence. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "act_stats.h"

static uint64_t rng_state;
static void rng_seed(uint64_t s) { rng_state = s; }
static double urand(void) /* uniform in [0, 1) (splitmix64) */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (z >> 11) * (1.0 / 9007199254740992.0);
}

/* rows x C activations, channel c scaled by scale[c] (NULL: 1). */
static float *acts(int rows, int C, const float *scale, uint64_t seed)
{
    rng_seed(seed);
    float *x = malloc((size_t)rows * C * sizeof *x);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < C; c++)
            x[(size_t)r * C + c] = (float)((urand() * 2 - 1) * (scale ? scale[c] : 1.0));
    return x;
}

static void init_ok(sq_act_stats *st, int C)
{
    sq_err err;
    ck_assert_int_eq(sq_act_stats_init(st, C, &err), 0);
}

static void observe_ok(sq_act_stats *st, const float *x, int rows, int C)
{
    sq_err err = {0};
    ck_assert_msg(sq_act_stats_observe(st, x, rows, C, &err) == 0, "%s", err.msg);
}

START_TEST(test_against_naive)
{
    const int rows = 300, C = 100; /* C not a multiple of the 32-channel stripe */
    float *x = acts(rows, C, NULL, 1);
    for (int c = 0; c < C; c++) /* shift some channels to be one-signed */
        for (int r = 0; r < rows; r++)
            x[(size_t)r * C + c] += c % 7 == 0 ? 3.0f : 0.0f;
    sq_act_stats st;
    init_ok(&st, C);
    /* uneven batches: 1, 7, 292 rows */
    observe_ok(&st, x, 1, C);
    observe_ok(&st, x + C, 7, C);
    observe_ok(&st, x + 8 * C, rows - 8, C);
    ck_assert_uint_eq(st.rows, rows);
    float vmin = FLT_MAX, vmax = -FLT_MAX;
    for (int c = 0; c < C; c++) {
        float m = 0;
        double ss = 0;
        for (int r = 0; r < rows; r++) {
            float v = x[(size_t)r * C + c];
            m = fmaxf(m, fabsf(v));
            ss += (double)v * v;
            vmin = fminf(vmin, v);
            vmax = fmaxf(vmax, v);
        }
        ck_assert_float_eq(st.ch_max_abs[c], m);
        ck_assert_double_eq_tol(st.ch_sumsq[c], ss, 1e-12 * ss);
        ck_assert_double_eq_tol(sq_act_stats_rms(&st, c), sqrt(ss / rows), 1e-9);
    }
    ck_assert_float_eq(st.min, vmin);
    ck_assert_float_eq(st.max, vmax);
    ck_assert_uint_eq(st.hist.total, (uint64_t)rows * C);
    ck_assert_float_eq(st.hist.max_abs, fmaxf(-vmin, vmax));
    ck_assert_uint_eq(st.nonfinite, 0);
    sq_err err;
    ck_assert_int_eq(sq_act_stats_check(&st, "t", &err), 0);
    sq_act_stats_free(&st);
    free(x);
}
END_TEST

START_TEST(test_outlier_channels)
{
    const int rows = 512, C = 384;
    float scale[384];
    for (int c = 0; c < C; c++)
        scale[c] = 1.0f;
    scale[77] = 60.0f; /* BERT-like outlier dimensions */
    scale[300] = 40.0f;
    scale[5] = 20.0f;
    float *x = acts(rows, C, scale, 2);
    sq_act_stats st;
    init_ok(&st, C);
    observe_ok(&st, x, rows, C);
    int top[4];
    ck_assert_int_eq(sq_act_stats_top_channels(&st, 4, top), 4);
    ck_assert_int_eq(top[0], 77);
    ck_assert_int_eq(top[1], 300);
    ck_assert_int_eq(top[2], 5);
    ck_assert(st.ch_max_abs[top[3]] <= 1.0f);
    /* uniform(-a, a) has rms a / sqrt(3) */
    ck_assert_double_eq_tol(sq_act_stats_rms(&st, 77), 60.0 / sqrt(3.0), 60.0 / sqrt(3.0) * 0.05);
    ck_assert_double_eq_tol(sq_act_stats_rms(&st, 10), 1.0 / sqrt(3.0), 0.05);
    ck_assert(st.ch_max_abs[77] > 59.0f && st.ch_max_abs[77] <= 60.0f);
    /* k larger than the channel count is clamped */
    int all[400];
    ck_assert_int_eq(sq_act_stats_top_channels(&st, 400, all), C);
    for (int i = 1; i < C; i++)
        ck_assert(st.ch_max_abs[all[i - 1]] >= st.ch_max_abs[all[i]]);
    sq_act_stats_free(&st);
    free(x);
}
END_TEST

START_TEST(test_nonfinite_rejected)
{
    const int rows = 10, C = 40;
    float *x = acts(rows, C, NULL, 3);
    sq_act_stats st;
    init_ok(&st, C);
    observe_ok(&st, x, rows, C);
    sq_act_stats before = st;
    float *ch_max = malloc(C * sizeof *ch_max);
    double *ch_ss = malloc(C * sizeof *ch_ss);
    memcpy(ch_max, st.ch_max_abs, C * sizeof *ch_max);
    memcpy(ch_ss, st.ch_sumsq, C * sizeof *ch_ss);

    x[3 * C + 5] = NAN;
    x[7 * C + 1] = -INFINITY;
    x[2 * C + 0] = 1e30f; /* finite but huge: must not land in the stats either */
    sq_err err = {0};
    ck_assert_int_eq(sq_act_stats_observe(&st, x, rows, C, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "non-finite activation"));
    ck_assert_ptr_nonnull(strstr(err.msg, "2 NaN/Inf"));
    ck_assert_ptr_nonnull(strstr(err.msg, "NaN at row 3, column 5"));
    ck_assert_uint_eq(st.nonfinite, 2);
    /* the batch changed nothing else */
    ck_assert_uint_eq(st.rows, before.rows);
    ck_assert_float_eq(st.max, before.max);
    ck_assert_int_eq(memcmp(&st.hist, &before.hist, sizeof st.hist), 0);
    ck_assert_int_eq(memcmp(st.ch_max_abs, ch_max, C * sizeof *ch_max), 0);
    ck_assert_int_eq(memcmp(st.ch_sumsq, ch_ss, C * sizeof *ch_ss), 0);

    ck_assert_int_eq(sq_act_stats_check(&st, "layer 3 ffn_in", &err), -1);
    ck_assert_str_eq(err.msg, "non-finite activation in layer 3 ffn_in: 2 NaN/Inf values "
                              "rejected");
    /* a later clean batch is still accepted */
    x[3 * C + 5] = 0.5f;
    x[7 * C + 1] = 0.5f;
    observe_ok(&st, x, rows, C);
    ck_assert_uint_eq(st.rows, 2 * rows);
    ck_assert_float_eq(st.max, 1e30f);
    free(ch_max);
    free(ch_ss);
    sq_act_stats_free(&st);
    free(x);
}
END_TEST

START_TEST(test_bad_shape)
{
    sq_act_stats st;
    sq_err err;
    ck_assert_int_eq(sq_act_stats_init(&st, 0, &err), -1);
    init_ok(&st, 16);
    float x[32] = {0};
    ck_assert_int_eq(sq_act_stats_observe(&st, x, 2, 15, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "observed 15 columns, expected 16"));
    ck_assert_int_eq(sq_act_stats_observe(&st, x, 0, 16, &err), 0);
    ck_assert_uint_eq(st.rows, 0);
    sq_act_stats other;
    init_ok(&other, 8);
    ck_assert_int_eq(sq_act_stats_merge(&st, &other, &err), -1);
    sq_act_stats_free(&other);
    sq_act_stats_free(&st);
    sq_act_stats_free(&st); /* twice is harmless */
}
END_TEST

static int stats_equal(const sq_act_stats *a, const sq_act_stats *b)
{
    size_t C = (size_t)a->channels;
    return a->channels == b->channels && a->rows == b->rows && a->min == b->min &&
           a->max == b->max && a->nonfinite == b->nonfinite &&
           memcmp(a->ch_max_abs, b->ch_max_abs, C * sizeof(float)) == 0 &&
           memcmp(a->ch_sumsq, b->ch_sumsq, C * sizeof(double)) == 0 &&
           memcmp(&a->hist, &b->hist, sizeof a->hist) == 0;
}

START_TEST(test_threads_and_batches)
{
    /* 2048 x 384 = 786k values: well above the parallel threshold */
    const int rows = 2048, C = 384;
    float scale[384];
    for (int c = 0; c < C; c++)
        scale[c] = 1.0f + (float)(c % 13);
    float *x = acts(rows, C, scale, 4);
    sq_act_stats s1, s2, sb;
    omp_set_num_threads(1);
    init_ok(&s1, C);
    observe_ok(&s1, x, rows, C);
    omp_set_num_threads(2);
    init_ok(&s2, C);
    observe_ok(&s2, x, rows, C);
    ck_assert(stats_equal(&s1, &s2));
    /* sum x^2 continues in row order across calls: batch splits agree byte for byte */
    init_ok(&sb, C);
    observe_ok(&sb, x, 100, C);
    observe_ok(&sb, x + 100 * C, 1000, C);
    observe_ok(&sb, x + 1100 * C, rows - 1100, C);
    ck_assert(stats_equal(&s1, &sb));
    sq_act_stats_free(&s1);
    sq_act_stats_free(&s2);
    sq_act_stats_free(&sb);
    free(x);
}
END_TEST

START_TEST(test_merge)
{
    const int rows = 600, C = 64;
    float scale[64];
    for (int c = 0; c < C; c++)
        scale[c] = c < 32 ? 1.0f : 9.0f;
    float *x = acts(rows, C, scale, 5);
    sq_act_stats a, b, all;
    init_ok(&a, C);
    init_ok(&b, C);
    init_ok(&all, C);
    /* a sees small values only, b larger ones: different histogram ranges */
    for (int c = 32; c < C; c++)
        for (int r = 0; r < 200; r++)
            x[(size_t)r * C + c] /= 9.0f;
    observe_ok(&a, x, 200, C);
    observe_ok(&b, x + 200 * C, rows - 200, C);
    observe_ok(&all, x, rows, C);
    ck_assert(sq_hist_range(&a.hist) < sq_hist_range(&b.hist));
    sq_err err;
    ck_assert_int_eq(sq_act_stats_merge(&a, &b, &err), 0);
    ck_assert_uint_eq(a.rows, rows);
    ck_assert_float_eq(a.min, all.min);
    ck_assert_float_eq(a.max, all.max);
    ck_assert_int_eq(memcmp(a.ch_max_abs, all.ch_max_abs, C * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(&a.hist, &all.hist, sizeof a.hist), 0);
    for (int c = 0; c < C; c++)
        ck_assert_double_eq_tol(a.ch_sumsq[c], all.ch_sumsq[c], 1e-12 * all.ch_sumsq[c]);
    sq_act_stats_free(&a);
    sq_act_stats_free(&b);
    sq_act_stats_free(&all);
    free(x);
}
END_TEST

/* Not a check: prints observe() throughput on BERT-base-like shapes. */
START_TEST(test_speed_report)
{
    if (!getenv("SQ_BENCH"))
        return;
    const int rows = 512, C = 3072;
    float *x = acts(rows, C, NULL, 6);
    for (size_t i = 0; i < (size_t)rows * C; i++) /* post-GELU like: half near zero */
        if (x[i] < 0)
            x[i] *= 0.05f;
    sq_act_stats st;
    init_ok(&st, C);
    struct timespec t0, t1;
    int reps = 20;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < reps; i++)
        observe_ok(&st, x, rows, C);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr, "observe: %.0f Mvalues/s with %d threads\n",
            reps * (double)rows * C / s / 1e6, omp_get_max_threads());
    sq_act_stats_free(&st);
    free(x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("act_stats");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_against_naive);
    tcase_add_test(tc, test_outlier_channels);
    tcase_add_test(tc, test_nonfinite_rejected);
    tcase_add_test(tc, test_bad_shape);
    tcase_add_test(tc, test_threads_and_batches);
    tcase_add_test(tc, test_merge);
    tcase_add_test(tc, test_speed_report);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* squint tune without timing: the search (cmd/tune_search.h) against
 * synthetic surfaces (its pick is the exhaustive grid's best, or within 5%
 * of it under deterministic noise; every point fits the cores; on a big
 * machine it measures a fraction of the grid), and the tune file
 * (formats/tune_file.h) written and read back, hostile files refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tune_file.h"
#include "tune_search.h"

typedef struct surface {
    int cores;
    int kind;      /* 0: more instances win, 1: threads scale well, 2: memory-bound */
    double noise;  /* relative amplitude of deterministic noise */
    unsigned seed;
    int calls, over_cores;
} surface;

/* The true figure of a point (seq/s). */
static double truth(const surface *s, int N, int T, int B)
{
    double eff = s->kind == 1 ? pow(T, 0.97) : pow(T, 0.75); /* threads per instance */
    double bf = B / (B + 3.0) * (1.0 - 0.015 * log2((double)B));   /* batch: a peak */
    double inst = N * eff;
    if (s->kind == 2) /* the whole machine saturates its memory bandwidth */
        inst = inst / (1.0 + 0.02 * N * T);
    return 100.0 * inst * bf;
}

static int fake_measure(void *ctx, int N, int T, int B, double w, sq_tune_fig *out, sq_err *err)
{
    (void)w, (void)err;
    surface *s = ctx;
    s->calls++;
    if (N * T > s->cores)
        s->over_cores++;
    s->seed = s->seed * 1103515245u + 12345u;
    double u = ((s->seed >> 8) & 0xffff) / 65535.0 * 2 - 1;
    double f = truth(s, N, T, B) * (1 + s->noise * u);
    *out = (sq_tune_fig){f, 1000.0 * B / f * N, 1100.0 * B / f * N};
    return 0;
}

static double grid_best(const surface *s, int max_batch)
{
    double best = 0;
    for (int N = 1; N <= s->cores; N++)
        for (int T = 1; N * T <= s->cores; T++)
            for (int B = 1; B <= max_batch; B *= 2)
                if (truth(s, N, T, B) > best)
                    best = truth(s, N, T, B);
    return best;
}

static void run_case(int cores, int kind, double noise, bool exhaustive, double *ratio, int *calls,
                     int *grid)
{
    surface s = {.cores = cores, .kind = kind, .noise = noise, .seed = 7};
    sq_tune_space sp = {.cores = cores, .objective = SQ_TUNE_THROUGHPUT, .max_batch = 32,
                        .exhaustive = exhaustive, .rounds = 2, .budget_s = 1,
                        .min_window_s = 0.01};
    sq_tune_outcome o;
    sq_err err;
    ck_assert_int_eq(sq_tune_run(&sp, fake_measure, NULL, NULL, &s, &o, &err), 0);
    ck_assert_int_eq(s.over_cores, 0);
    for (int i = 0; i < o.n_points; i++)
        ck_assert_int_le(o.points[i].instances * o.points[i].threads, cores);
    const sq_tune_point *b = &o.points[o.best];
    *ratio = truth(&s, b->instances, b->threads, b->batch) / grid_best(&s, 32);
    *calls = s.calls;
    *grid = o.grid_points;
    sq_tune_outcome_free(&o);
}

START_TEST(search_finds_best_without_noise)
{
    const int cores[] = {1, 2, 3, 4, 8, 12, 16, 64};
    for (size_t c = 0; c < sizeof cores / sizeof cores[0]; c++)
        for (int kind = 0; kind < 3; kind++) {
            double r;
            int calls, grid;
            run_case(cores[c], kind, 0, false, &r, &calls, &grid);
            ck_assert_msg(r > 0.999, "cores %d kind %d: pick at %.4f of the best", cores[c], kind,
                          r);
        }
}
END_TEST

START_TEST(search_within_5_percent_under_noise)
{
    for (int kind = 0; kind < 3; kind++)
        for (int cores = 2; cores <= 32; cores *= 2) {
            double r;
            int calls, grid;
            run_case(cores, kind, 0.03, false, &r, &calls, &grid);
            ck_assert_msg(r >= 0.95, "cores %d kind %d: pick at %.4f of the best", cores, kind, r);
        }
}
END_TEST

START_TEST(search_measures_a_fraction_of_a_big_grid)
{
    double r;
    int calls, grid;
    run_case(64, 0, 0, false, &r, &calls, &grid);
    ck_assert_int_eq(grid, 6 * 280); /* sum of 64 / N over N = 1..64, x 6 batches */
    ck_assert_msg(calls * 10 < grid, "%d measurements for a grid of %d", calls, grid);
    run_case(2, 0, 0, true, &r, &calls, &grid);
    ck_assert_int_eq(grid, 3 * 6);
    ck_assert_int_eq(calls, 2 * 3 * 6); /* exhaustive: every point, 2 rounds */
    ck_assert(r > 0.999);
}
END_TEST

START_TEST(one_core_grid)
{
    double r;
    int calls, grid;
    run_case(1, 0, 0, true, &r, &calls, &grid);
    ck_assert_int_eq(grid, 6);
    run_case(1, 0, 0, false, &r, &calls, &grid);
    ck_assert(r > 0.999);
}
END_TEST

START_TEST(latency_objective)
{
    /* latency: batch 1 only; the score is 1 / p50 */
    surface s = {.cores = 4, .kind = 0, .seed = 3};
    sq_tune_space sp = {.cores = 4, .objective = SQ_TUNE_LATENCY, .max_batch = 32, .rounds = 1,
                        .budget_s = 1, .min_window_s = 0.01};
    sq_tune_outcome o;
    sq_err err;
    ck_assert_int_eq(sq_tune_run(&sp, fake_measure, NULL, NULL, &s, &o, &err), 0);
    for (int i = 0; i < o.n_points; i++)
        ck_assert_int_eq(o.points[i].batch, 1);
    ck_assert_int_eq(o.grid_points, 8); /* (N, T) pairs of 4 cores */
    /* p50 = 1000 N / truth: lowest for N = 1 and the most threads */
    ck_assert_int_eq(o.points[o.best].instances, 1);
    ck_assert_int_eq(o.points[o.best].threads, 4);
    sq_tune_outcome_free(&o);
}
END_TEST

static const char *good =
    "{\"format\": \"squint-tune\", \"version\": 1, \"squint_version\": \"0.1.0\",\n"
    " \"model\": {\"path\": \"m.sqm\", \"size\": 91348, \"xxh64\": \"bec60560c930c2ce\"},\n"
    " \"cpu\": {\"name\": \"AMD EPYC\", \"usable_cores\": 2}, \"objective\": \"throughput\",\n"
    " \"seq\": 16, \"instances\": 2, \"threads\": 1, \"batch\": 4,\n"
    " \"measured\": {\"seq_per_s\": 41550.0, \"p50_ms\": 0.1, \"p95_ms\": 0.12},\n"
    " \"search\": {\"method\": \"search\", \"points_measured\": 7, \"grid_points\": 9, \"budget_s\": 2}}";

START_TEST(tune_file_round_trip)
{
    sq_tune_file t, u;
    sq_err err;
    ck_assert_int_eq(sq_tune_file_parse(good, strlen(good), "t.json", &t, &err), 0);
    ck_assert_int_eq(t.instances, 2);
    ck_assert(t.model_xxh64 == 0xbec60560c930c2ceull);
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/t.json", dir);
    ck_assert_int_eq(sq_tune_file_write(path, &t, &err), 0);
    ck_assert_int_eq(sq_tune_file_read(path, &u, &err), 0);
    ck_assert(memcmp(&t, &u, sizeof t) == 0);
    ck_assert_int_eq(tu_count_files(dir), 1); /* no temp file left */
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* good with `from` replaced by `to`: refused with a message containing `needle`. */
static void refused(const char *from, const char *to, const char *needle)
{
    char buf[4096];
    const char *at = strstr(good, from);
    ck_assert_ptr_nonnull(at);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    sq_tune_file t;
    sq_err err;
    ck_assert_int_eq(sq_tune_file_parse(buf, strlen(buf), "bad.json", &t, &err), -1);
    ck_assert_msg(strstr(err.msg, "bad.json") && strstr(err.msg, needle), "'%s' lacks '%s'",
                  err.msg, needle);
}

START_TEST(tune_file_hostile)
{
    refused("\"squint-tune\"", "\"squint-tuna\"", "not a squint tune file");
    refused("\"version\": 1", "\"version\": 2", "version 2");
    refused("\"instances\": 2", "\"instances\": 3", "exceed its 2 usable cores");
    refused("\"instances\": 2", "\"instances\": \"2\"", "\"instances\" must be an integer");
    refused("\"batch\": 4", "\"batch\": 0", "\"batch\"");
    refused("\"bec60560c930c2ce\"", "\"BEC60560C930C2CE\"", "hex");
    refused("\"AMD EPYC\"", "\"\"", "\"name\" must be a string");
    refused("\"AMD EPYC\"", "\"A\\u0000B\"", "invalid JSON"); /* jansson refuses NUL */
    refused("\"p50_ms\": 0.1", "\"p50_ms\": -1", "p50_ms");
    refused("\"throughput\"", "\"speed\"", "objective");
    refused("\"method\": \"search\"", "\"method\": \"guess\"", "method");
    refused("\"seq\": 16,", "\"seq\": 16, \"seq\": 17,", "invalid JSON");
    refused("\"measured\": {", "\"measured\": [{", "invalid JSON");
    refused(", \"instances\": 2", "", "missing \"instances\"");
    sq_tune_file t;
    sq_err err;
    ck_assert_int_eq(sq_tune_file_parse(good, 40, "cut.json", &t, &err), -1);
    ck_assert(strstr(err.msg, "cut.json") != NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, search_finds_best_without_noise);
    tcase_add_test(tc, search_within_5_percent_under_noise);
    tcase_add_test(tc, search_measures_a_fraction_of_a_big_grid);
    tcase_add_test(tc, one_core_grid);
    tcase_add_test(tc, latency_objective);
    tcase_add_test(tc, tune_file_round_trip);
    tcase_add_test(tc, tune_file_hostile);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

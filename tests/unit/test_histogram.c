/* The |x| histogram: power-of-two ranges, exact range doubling, exact merges
 * across ranges, zeros and non-finite values, and thread-count and
 * batch-split independence (byte-identical results). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"

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

static float *uniform(size_t n, double scale)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)((urand() * 2 - 1) * scale);
    return v;
}

/* The histogram as its definition states it, computed independently: range =
 * smallest power of two above max|x|, bin = floor(|x| * BINS / range). */
static void naive_counts(const float *x, size_t n, uint64_t *count, double *range)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    double r = 1;
    while (r <= m)
        r *= 2;
    while (r / 2 > m)
        r /= 2;
    memset(count, 0, SQ_HIST_BINS * sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[(size_t)floor(fabs(x[i]) * SQ_HIST_BINS / r)]++;
    *range = r;
}

START_TEST(test_initial_range)
{
    sq_hist h;
    sq_hist_init(&h);
    ck_assert_double_eq(sq_hist_range(&h), 0);
    float a[] = {0.5f, -0.75f, 0.1f};
    ck_assert_uint_eq(sq_hist_add(&h, a, 3), 0);
    ck_assert_double_eq(sq_hist_range(&h), 1.0); /* power of two above 0.75 */
    ck_assert_float_eq(h.max_abs, 0.75f);
    ck_assert_uint_eq(h.total, 3);
    ck_assert_uint_eq(h.count[1536], 1); /* 0.75 * 2048 */
    ck_assert_uint_eq(h.count[1024], 1);
    ck_assert_int_eq(sq_hist_used_bins(&h), 1537);
    /* An exact power of two goes into the next range (range > max strictly). */
    float b[] = {2.0f};
    sq_hist_add(&h, b, 1);
    ck_assert_double_eq(sq_hist_range(&h), 4.0);
    ck_assert_uint_eq(h.count[1024], 1); /* 2.0 at range 4 */
    ck_assert_uint_eq(h.count[384], 1);  /* 0.75 -> 1536 >> 2 */
    ck_assert_uint_eq(h.count[256], 1);  /* 0.5 -> 1024 >> 2 */
    ck_assert_uint_eq(h.total, 4);
}
END_TEST

START_TEST(test_grow_merges_pairs)
{
    sq_hist h;
    sq_hist_init(&h);
    float one = 0.9f;
    sq_hist_add(&h, &one, 1);
    for (int k = 0; k < SQ_HIST_BINS; k++)
        h.count[k] = (uint64_t)k * 3 + 1; /* arbitrary known contents */
    uint64_t before[SQ_HIST_BINS], sum = 0;
    memcpy(before, h.count, sizeof before);
    for (int k = 0; k < SQ_HIST_BINS; k++)
        sum += before[k];
    sq_hist_grow(&h, 3.0f); /* range 1 -> 4: two doublings */
    ck_assert_double_eq(sq_hist_range(&h), 4.0);
    uint64_t after = 0;
    for (int j = 0; j < SQ_HIST_BINS; j++) {
        uint64_t want = j < SQ_HIST_BINS / 4 ? before[4 * j] + before[4 * j + 1] +
                                                   before[4 * j + 2] + before[4 * j + 3]
                                             : 0;
        ck_assert_uint_eq(h.count[j], want);
        after += h.count[j];
    }
    ck_assert_uint_eq(after, sum);
    /* Growing by more than 11 doublings folds everything into bin 0. */
    sq_hist_grow(&h, 1e6f);
    ck_assert_uint_eq(h.count[0], sum);
    ck_assert_double_eq(sq_hist_range(&h), 1048576.0);
}
END_TEST

START_TEST(test_doubling_equals_direct)
{
    rng_seed(1);
    /* Batches of growing scale force several range doublings. */
    const size_t nb = 5000;
    const double scales[] = {0.01, 0.3, 1.0, 7.5, 130.0, 2.0};
    size_t n = nb * 6;
    float *all = malloc(n * sizeof *all);
    sq_hist inc, direct;
    sq_hist_init(&inc);
    sq_hist_init(&direct);
    for (int b = 0; b < 6; b++) {
        float *v = uniform(nb, scales[b]);
        memcpy(all + b * nb, v, nb * sizeof *v);
        sq_hist_add(&inc, v, nb);
        free(v);
    }
    sq_hist_add(&direct, all, n);
    ck_assert_int_eq(memcmp(&inc, &direct, sizeof inc), 0);

    uint64_t want[SQ_HIST_BINS];
    double range;
    naive_counts(all, n, want, &range);
    ck_assert_double_eq(sq_hist_range(&inc), range);
    ck_assert_int_eq(memcmp(inc.count, want, sizeof want), 0);
    ck_assert_uint_eq(inc.total, n);
    free(all);
}
END_TEST

START_TEST(test_merge_ranges)
{
    rng_seed(2);
    size_t n1 = 40000, n2 = 30000;
    float *a = uniform(n1, 1.0);
    float *b = uniform(n2, 37.0);
    sq_hist h1, h2, h12, hall;
    sq_hist_init(&h1);
    sq_hist_init(&h2);
    sq_hist_add(&h1, a, n1);
    sq_hist_add(&h2, b, n2);
    ck_assert_double_eq(sq_hist_range(&h1), 1.0);
    ck_assert_double_eq(sq_hist_range(&h2), 64.0);

    /* smaller range into larger, and larger into smaller: same result */
    h12 = h2;
    sq_hist_merge(&h12, &h1);
    sq_hist merged_other = h1;
    sq_hist_merge(&merged_other, &h2);
    ck_assert_int_eq(memcmp(&h12, &merged_other, sizeof h12), 0);
    ck_assert_uint_eq(h12.total, n1 + n2);
    uint64_t s = 0;
    for (int k = 0; k < SQ_HIST_BINS; k++)
        s += h12.count[k];
    ck_assert_uint_eq(s, n1 + n2);

    /* and exactly the histogram of all values at once */
    float *ab = malloc((n1 + n2) * sizeof *ab);
    memcpy(ab, a, n1 * sizeof *a);
    memcpy(ab + n1, b, n2 * sizeof *b);
    sq_hist_init(&hall);
    sq_hist_add(&hall, ab, n1 + n2);
    ck_assert_int_eq(memcmp(&h12, &hall, sizeof h12), 0);

    /* merging an empty histogram changes nothing; into an empty one copies */
    sq_hist empty, copy = h12;
    sq_hist_init(&empty);
    sq_hist_merge(&copy, &empty);
    ck_assert_int_eq(memcmp(&copy, &h12, sizeof copy), 0);
    sq_hist_init(&copy);
    sq_hist_merge(&copy, &h12);
    ck_assert_int_eq(memcmp(&copy, &h12, sizeof copy), 0);
    free(a);
    free(b);
    free(ab);
}
END_TEST

START_TEST(test_zeros)
{
    float z[100] = {0};
    z[7] = -0.0f;
    sq_hist h;
    sq_hist_init(&h);
    sq_hist_add(&h, z, 100); /* zeros only: no range yet */
    ck_assert_double_eq(sq_hist_range(&h), 0);
    ck_assert_uint_eq(h.count[0], 100);
    ck_assert_uint_eq(h.zeros, 100);
    float v[] = {0.0f, 3.0f, 1e-6f};
    sq_hist_add(&h, v, 3);
    ck_assert_double_eq(sq_hist_range(&h), 4.0);
    ck_assert_uint_eq(h.zeros, 101);
    ck_assert_uint_eq(h.count[0], 102); /* zeros plus the tiny value */
    ck_assert_uint_eq(h.count[1536], 1);
    ck_assert_uint_eq(h.total, 103);
    /* a zeros-only histogram merges into bin 0 */
    sq_hist hz;
    sq_hist_init(&hz);
    sq_hist_add(&hz, z, 10);
    sq_hist_merge(&h, &hz);
    ck_assert_uint_eq(h.count[0], 112);
    ck_assert_uint_eq(h.zeros, 111);
    ck_assert_float_eq(h.max_abs, 3.0f);
}
END_TEST

START_TEST(test_nonfinite_skipped)
{
    float v[] = {1.0f, NAN, -INFINITY, 0.25f, INFINITY, -NAN};
    sq_hist h;
    sq_hist_init(&h);
    ck_assert_uint_eq(sq_hist_add(&h, v, 6), 4);
    ck_assert_uint_eq(h.total, 2);
    ck_assert_float_eq(h.max_abs, 1.0f);
    ck_assert_double_eq(sq_hist_range(&h), 2.0);
}
END_TEST

START_TEST(test_extreme_magnitudes)
{
    sq_hist h;
    sq_hist_init(&h);
    float tiny[] = {1e-40f, -1e-42f}; /* subnormal */
    sq_hist_add(&h, tiny, 2);
    ck_assert_uint_eq(h.total, 2);
    ck_assert(sq_hist_range(&h) > 1e-40);
    float big[] = {FLT_MAX, -1.0f};
    sq_hist_add(&h, big, 2);
    ck_assert_double_eq(sq_hist_range(&h), ldexp(1.0, 128));
    ck_assert_uint_eq(h.count[SQ_HIST_BINS - 1], 1);
    ck_assert_uint_eq(h.count[0], 3);
}
END_TEST

START_TEST(test_thread_count_independent)
{
    rng_seed(3);
    size_t n = 1 << 20;
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) /* heavy bin 0 (post-GELU like) plus a long tail */
        v[i] = (float)(urand() < 0.5 ? (urand() - 0.5) * 1e-3 : tan((urand() - 0.5) * 3.1));
    sq_hist h1, h2, hb;
    omp_set_num_threads(1);
    sq_hist_init(&h1);
    sq_hist_add(&h1, v, n);
    omp_set_num_threads(2);
    sq_hist_init(&h2);
    sq_hist_add(&h2, v, n);
    ck_assert_int_eq(memcmp(&h1, &h2, sizeof h1), 0);
    /* and independent of batch splits */
    sq_hist_init(&hb);
    for (size_t lo = 0; lo < n; lo += 100003)
        sq_hist_add(&hb, v + lo, n - lo < 100003 ? n - lo : 100003);
    ck_assert_int_eq(memcmp(&h1, &hb, sizeof h1), 0);
    uint64_t want[SQ_HIST_BINS];
    double range;
    naive_counts(v, n, want, &range);
    ck_assert_int_eq(memcmp(h1.count, want, sizeof want), 0);
    free(v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("histogram");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_initial_range);
    tcase_add_test(tc, test_grow_merges_pairs);
    tcase_add_test(tc, test_doubling_equals_direct);
    tcase_add_test(tc, test_merge_ranges);
    tcase_add_test(tc, test_zeros);
    tcase_add_test(tc, test_nonfinite_skipped);
    tcase_add_test(tc, test_extreme_magnitudes);
    tcase_add_test(tc, test_thread_count_independent);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

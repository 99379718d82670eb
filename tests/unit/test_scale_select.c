/* Scale selection against answers computed independently from the raw
 * samples: minmax = exact max, percentile = exact order statistic, mse =
 * brute-force minimum of the real quantize-dequantize error, entropy =
 * plausible windows for known distributions. Also method-name parsing. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"
#include "scale_select.h"

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
static double gauss(void) /* N(0,1), Box-Muller */
{
    double u = urand(), v = urand();
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}
static double laplace(double b) /* inverse CDF */
{
    double u = urand() - 0.5;
    return (u < 0 ? b : -b) * log(1.0 - 2.0 * fabs(u));
}

enum dist { UNIFORM, GAUSS, LAPLACE_OUTLIERS };

/* n samples; LAPLACE_OUTLIERS: Laplace(b=1) with n_outliers values of
 * magnitude 45..55 planted at random positions. */
static float *sample(enum dist d, size_t n, uint64_t seed, int n_outliers)
{
    rng_seed(seed);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(d == UNIFORM ? urand() * 2 - 1 : d == GAUSS ? gauss() : laplace(1.0));
    if (d == LAPLACE_OUTLIERS)
        for (int k = 0; k < n_outliers; k++)
            x[(size_t)(urand() * n)] = (float)((k & 1 ? -1 : 1) * (45.0 + 10.0 * urand()));
    return x;
}

static sq_hist *hist_of(const float *x, size_t n)
{
    sq_hist *h = malloc(sizeof *h);
    sq_hist_init(h);
    ck_assert_uint_eq(sq_hist_add(h, x, n), 0);
    return h;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* |x| sorted ascending (malloc'd). */
static float *sorted_abs(const float *x, size_t n)
{
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = fabsf(x[i]);
    qsort(a, n, sizeof *a, cmp_float);
    return a;
}

/* The smallest v with #{|x| <= v} >= p% of n: sorted |x| at ceil(p n / 100) - 1. */
static float order_statistic(const float *sorted, size_t n, double p)
{
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return sorted[k > 0 ? k - 1 : 0];
}

static float exact_max(const float *x, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

/* The real mean squared quantize-dequantize error over the raw samples. */
static double real_mse(const float *x, size_t n, double amax, int qmax)
{
    double s = amax / qmax, inv = qmax / amax, sum = 0;
    for (size_t i = 0; i < n; i++) {
        double q = nearbyint(x[i] * inv);
        q = q > qmax ? qmax : q < -qmax ? -qmax : q;
        double d = x[i] - q * s;
        sum += d * d;
    }
    return sum / (double)n;
}

/* Brute-force argmin of real_mse: a grid of 1% of max, then twice a grid 10x
 * finer over +-1 step around the best point (0.01% of max in the end). */
static double brute_mse_clip(const float *x, size_t n, int qmax, double *best_mse)
{
    double m = exact_max(x, n);
    double lo = m * 0.005, hi = m, best = m, best_e = INFINITY;
    for (int round = 0; round < 3; round++) {
        int steps = round == 0 ? 100 : 20;
        double step = (hi - lo) / steps;
        for (int j = 0; j <= steps; j++) {
            double c = lo + j * step;
            double e = real_mse(x, n, c, qmax);
            if (e < best_e) {
                best_e = e;
                best = c;
            }
        }
        lo = fmax(best - step, m * 0.001);
        hi = fmin(best + step, m);
    }
    *best_mse = best_e;
    return best;
}

/* TensorRT's KL calibration written out from its description, level by
 * level: P = first i bins with the tail folded into the last, Q = level j's
 * mass (the bins whose left edge k lies in [j i/L, (j+1) i/L), counted
 * without the tail) spread over the level's bins where P > 0. */
static double naive_kl(const sq_hist *h, int i, int L)
{
    double *P = calloc((size_t)i, sizeof *P), *Q = calloc((size_t)i, sizeof *Q);
    double tail = 0, psum = 0, qsum = 0;
    for (int k = i; k < SQ_HIST_BINS; k++)
        tail += (double)h->count[k];
    for (int k = 0; k < i; k++)
        P[k] = (double)h->count[k];
    P[i - 1] += tail;
    for (int j = 0, k0 = 0; j < L; j++) {
        int k1 = k0; /* level j: bins k0 .. k1-1, those with k * L < (j + 1) * i */
        while (k1 < i && (long)k1 * L < (long)(j + 1) * i)
            k1++;
        double m = 0;
        int nz = 0;
        for (int k = k0; k < k1; k++) {
            m += (double)h->count[k];
            nz += P[k] > 0;
        }
        for (int k = k0; k < k1; k++)
            Q[k] = P[k] > 0 ? m / nz : 0;
        k0 = k1;
    }
    for (int k = 0; k < i; k++) {
        psum += P[k];
        qsum += Q[k];
    }
    double kl = 0;
    for (int k = 0; k < i; k++) {
        if (P[k] == 0)
            continue;
        if (Q[k] == 0) {
            kl = INFINITY;
            break;
        }
        kl += P[k] / psum * log((P[k] / psum) / (Q[k] / qsum));
    }
    free(P);
    free(Q);
    return kl;
}

/* The entropy method's amax is the edge of the naive KL argmin (compared by
 * value, so near-ties in the last digits cannot flip the check). */
static void check_entropy(const sq_hist *h, float got)
{
    int used = sq_hist_used_bins(h);
    double w = sq_hist_bin_width(h), best = INFINITY;
    int best_i = 0;
    for (int i = 128; i <= used; i++) {
        double kl = naive_kl(h, i, 128);
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    /* amax = i * width, or max|x| when that edge lies above it (i = used) */
    int got_i = got == h->max_abs ? used : (int)lround(got / w);
    ck_assert_double_eq_tol(got, fmin(got_i * w, h->max_abs), 1e-6 * w);
    double kl_got = naive_kl(h, got_i, 128);
    fprintf(stderr, "  entropy: i %d (amax %.4f) kl %.6g; naive argmin i %d kl %.6g\n", got_i,
            got, kl_got, best_i, best);
    ck_assert_msg(kl_got <= best * (1 + 1e-9), "entropy picked i=%d (KL %g), naive i=%d (KL %g)",
                  got_i, kl_got, best_i, best);
    ck_assert_double_eq_tol(sq_hist_kl_candidate(h, got_i, 127, 0), kl_got, 1e-9 * kl_got + 1e-15);
}

/* ---- parsing ---- */

START_TEST(test_parse)
{
    sq_err err = {0};
    sq_calib_method m;
    const char *names[] = {"minmax", "percentile", "entropy", "mse"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(sq_calib_method_parse(names[i], &m, &err), 0);
        ck_assert_int_eq(m, i);
        ck_assert_str_eq(sq_calib_method_name(m), names[i]);
    }
    ck_assert_int_eq(sq_calib_method_parse("kl", &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown calibration method 'kl'"));
    ck_assert_ptr_nonnull(strstr(err.msg, "minmax, percentile, entropy, mse"));
    ck_assert_int_eq(sq_calib_method_parse("MSE", &m, &err), -1);

    sq_scale_params p;
    ck_assert_int_eq(sq_scale_params_parse("percentile", &p, &err), 0);
    ck_assert_int_eq(p.method, SQ_CALIB_PERCENTILE);
    ck_assert_double_eq(p.percentile, 99.99);
    ck_assert_int_eq(p.qmax, 127);
    ck_assert_int_eq(sq_scale_params_parse("percentile:99.9", &p, &err), 0);
    ck_assert_double_eq(p.percentile, 99.9);
    ck_assert_int_eq(sq_scale_params_parse("entropy", &p, &err), 0);
    ck_assert_int_eq(p.method, SQ_CALIB_ENTROPY);
    ck_assert_int_eq(sq_scale_params_parse("percentile:101", &p, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad percentile '101'"));
    ck_assert_int_eq(sq_scale_params_parse("percentile:", &p, &err), -1);
    ck_assert_int_eq(sq_scale_params_parse("percentile:9x", &p, &err), -1);
    ck_assert_int_eq(sq_scale_params_parse("mse:3", &p, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "takes no parameter"));
    ck_assert_int_eq(sq_scale_params_parse("histogram:3", &p, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown calibration method 'histogram'"));

    ck_assert_int_eq(sq_qmax_for_bits(8), 127);
    ck_assert_int_eq(sq_qmax_for_bits(4), 7);
    ck_assert_int_eq(sq_qmax_for_bits(1), -1);

    sq_scale_params_default(&p, SQ_CALIB_MSE);
    p.qmax = 0;
    sq_hist h;
    sq_hist_init(&h);
    float amax;
    ck_assert_int_eq(sq_select_amax(&h, &p, &amax, &err), -1);
    sq_scale_params_default(&p, SQ_CALIB_PERCENTILE);
    p.percentile = 0;
    ck_assert_int_eq(sq_select_amax(&h, &p, &amax, &err), -1);
}
END_TEST

START_TEST(test_empty_and_zero)
{
    sq_hist h;
    sq_hist_init(&h);
    float z[10] = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (int m = 0; m < 4; m++) {
            sq_scale_params p;
            sq_scale_params_default(&p, (sq_calib_method)m);
            float amax = -1;
            ck_assert_int_eq(sq_select_amax(&h, &p, &amax, NULL), 0);
            ck_assert_float_eq(amax, 0.0f);
        }
        sq_hist_add(&h, z, 10);
    }
}
END_TEST

/* ---- the methods on known distributions ---- */

/* Percentile: within one bin width above the exact order statistic. */
static void check_percentiles(const float *x, size_t n, const sq_hist *h)
{
    const double ps[] = {50, 99, 99.9, 99.99, 100};
    float *sorted = sorted_abs(x, n);
    for (int i = 0; i < 5; i++) {
        float want = order_statistic(sorted, n, ps[i]);
        float got = sq_amax_percentile(h, ps[i], 0);
        ck_assert_msg(got >= want && got - want <= sq_hist_bin_width(h),
                      "p%g: got %g, order statistic %g, bin width %g", ps[i], got, want,
                      sq_hist_bin_width(h));
    }
    free(sorted);
}

/* MSE: amax within 3% of the brute-force clip and its real error within 1.5%
 * of the brute-force minimum. Returns the brute-force clip. */
static double check_mse(const float *x, size_t n, const sq_hist *h, int qmax, const char *what)
{
    double bf_mse, bf = brute_mse_clip(x, n, qmax, &bf_mse);
    float got = sq_amax_mse(h, qmax);
    double got_mse = real_mse(x, n, got, qmax);
    fprintf(stderr, "%s qmax %d: mse clip %.4f (real mse %.4g), brute force %.4f (%.4g), "
                    "ratio %.4f\n", what, qmax, got, got_mse, bf, bf_mse, got_mse / bf_mse);
    ck_assert_msg(fabs(got - bf) <= 0.03 * bf, "%s: mse clip %g vs brute force %g", what, got,
                  bf);
    ck_assert_msg(got_mse <= 1.015 * bf_mse, "%s: mse %g vs brute-force minimum %g", what,
                  got_mse, bf_mse);
    /* and the histogram's own error estimate tracks the real one */
    double est = sq_hist_quant_sse(h, got, qmax) / (double)n;
    ck_assert_msg(fabs(est - got_mse) <= 0.05 * got_mse, "%s: estimate %g vs real %g", what,
                  est, got_mse);
    return bf;
}

static float select_by_name(const sq_hist *h, const char *spec)
{
    sq_scale_params p;
    sq_err err;
    float amax = -1;
    ck_assert_int_eq(sq_scale_params_parse(spec, &p, &err), 0);
    ck_assert_int_eq(sq_select_amax(h, &p, &amax, &err), 0);
    return amax;
}

START_TEST(test_uniform)
{
    size_t n = 1 << 18;
    float *x = sample(UNIFORM, n, 11, 0);
    sq_hist *h = hist_of(x, n);
    float mx = exact_max(x, n);
    ck_assert_float_eq(select_by_name(h, "minmax"), mx);
    check_percentiles(x, n, h);
    double bf = check_mse(x, n, h, 127, "uniform");
    ck_assert(bf > 0.98);
    ck_assert(select_by_name(h, "mse") > 0.98f);
    float ent = select_by_name(h, "entropy");
    fprintf(stderr, "uniform: max %.5f entropy %.4f\n", mx, ent);
    ck_assert(ent > 0.5f && ent <= mx);
    check_entropy(h, ent);
    free(x);
    free(h);
}
END_TEST

START_TEST(test_gaussian)
{
    size_t n = 1000000;
    float *x = sample(GAUSS, n, 12, 0);
    sq_hist *h = hist_of(x, n);
    float mx = exact_max(x, n);
    ck_assert_float_eq(select_by_name(h, "minmax"), mx);
    check_percentiles(x, n, h);
    /* KL calibration of a Gaussian at int8 clips inside the sample max (~5
     * sigma for 1e6 samples) and beyond the bulk: 2.5..5 sigma. KL does not
     * penalize the sparse far tail (its empty bins get Q = 0 exactly), so
     * it clips where the tail becomes sparse, well past the MSE optimum. */
    float ent = select_by_name(h, "entropy");
    fprintf(stderr, "gaussian: max %.3f entropy %.3f sigma, p99.99 %.3f\n", mx, ent,
            select_by_name(h, "percentile"));
    ck_assert_msg(ent > 2.5f && ent < 5.0f && ent < 0.95f * mx, "entropy clip %g sigma", ent);
    check_entropy(h, ent);
    free(x);
    free(h);
}
END_TEST

START_TEST(test_gaussian_mse)
{
    size_t n = 1 << 18;
    float *x = sample(GAUSS, n, 13, 0);
    sq_hist *h = hist_of(x, n);
    double bf8 = check_mse(x, n, h, 127, "gaussian");
    double bf4 = check_mse(x, n, h, 7, "gaussian");
    /* The int8 optimum sits far out in the tail, the int4 one much closer
     * (about 4 and 2.5 sigma for these sample sizes). */
    ck_assert(bf8 > 3.3 && bf8 < 4.8);
    ck_assert(bf4 > 2.0 && bf4 < 3.0);
    free(x);
    free(h);
}
END_TEST

START_TEST(test_laplace_outliers)
{
    size_t n = 1 << 18;
    float *x = sample(LAPLACE_OUTLIERS, n, 14, 16);
    sq_hist *h = hist_of(x, n);
    float mx = exact_max(x, n);
    ck_assert(mx >= 45.0f);
    ck_assert_float_eq(select_by_name(h, "minmax"), mx);
    check_percentiles(x, n, h);
    float ent = select_by_name(h, "entropy");
    float pct = select_by_name(h, "percentile:99.99");
    double bf = check_mse(x, n, h, 127, "laplace+outliers");
    fprintf(stderr, "laplace+outliers: max %.2f entropy %.3f p99.99 %.3f mse-bf %.3f\n", mx, ent,
            pct, bf);
    /* Both clip far below the outliers: Laplace(1)'s bulk ends near
     * ln(n) = 12.5 and the outliers start at 45. */
    ck_assert_msg(ent > 4.0f && ent < 20.0f, "entropy clip %g", ent);
    check_entropy(h, ent);
    /* 16 outliers in 2^18 values are too many to clip for MSE: cutting them
     * to ~12 costs 16 * 38^2 / 2^18 = 0.09 per value against 0.016 for the
     * coarse step of keeping them, so the MSE optimum covers them. */
    ck_assert(bf > 45.0);
    free(x);
    free(h);
}
END_TEST

START_TEST(test_laplace_two_outliers_mse)
{
    /* With 2 outliers (~50) the optimum is a compromise inside the gap:
     * the rounding error grows like n c^2 / (12 * 127^2) and the outliers'
     * clipping error like sum (o - c)^2; d/dc = 0 at c ~ 30 for n = 2^18. */
    size_t n = 1 << 18;
    float *x = sample(LAPLACE_OUTLIERS, n, 16, 2);
    sq_hist *h = hist_of(x, n);
    ck_assert(exact_max(x, n) >= 45.0f);
    double bf = check_mse(x, n, h, 127, "laplace+2 outliers");
    ck_assert(bf > 20.0 && bf < 40.0);
    free(x);
    free(h);
}
END_TEST

START_TEST(test_skip_zeros)
{
    /* Half exact zeros, half uniform on (0, 1]: the median of the nonzero
     * values is 0.5, of all values 0. */
    size_t n = 200000;
    float *x = malloc(n * sizeof *x);
    rng_seed(15);
    for (size_t i = 0; i < n; i++)
        x[i] = i % 2 ? (float)(1.0 - urand()) : 0.0f;
    sq_hist *h = hist_of(x, n);
    ck_assert(sq_amax_percentile(h, 40, 0) <= sq_hist_bin_width(h));
    float med = sq_amax_percentile(h, 50, 1);
    ck_assert(fabsf(med - 0.5f) < 0.01f);
    /* zeros add no error at any clip: the mse choice ignores them */
    sq_hist *hnz = hist_of(x + 1, n - 1); /* nonzeros and one zero fewer */
    ck_assert_float_eq(sq_amax_mse(h, 127), sq_amax_mse(hnz, 127));
    free(x);
    free(h);
    free(hnz);
}
END_TEST

START_TEST(test_kl_candidate)
{
    /* Mass in fewer bins than levels: quantizing loses nothing, KL = 0. */
    sq_hist h;
    sq_hist_init(&h);
    float v[] = {0.001f, 0.01f, 0.02f, 0.9f};
    sq_hist_add(&h, v, 4);
    ck_assert_double_eq_tol(sq_hist_kl_candidate(&h, 2048, 2047, 0), 0.0, 1e-12);
    /* A tail folded into an otherwise empty last group cannot be matched. */
    ck_assert(isinf(sq_hist_kl_candidate(&h, 1000, 127, 0)));
    ck_assert(isinf(sq_hist_kl_candidate(&h, 0, 127, 0)));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scale_select");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_empty_and_zero);
    tcase_add_test(tc, test_uniform);
    tcase_add_test(tc, test_gaussian);
    tcase_add_test(tc, test_gaussian_mse);
    tcase_add_test(tc, test_laplace_outliers);
    tcase_add_test(tc, test_laplace_two_outliers_mse);
    tcase_add_test(tc, test_skip_zeros);
    tcase_add_test(tc, test_kl_candidate);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

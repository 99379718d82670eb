/* GPTQ rounding (quantize/gptq.h): the factor is the upper Cholesky factor
 * of H^-1, dead inputs are handled, GPTQ lowers the output error over the
 * inputs H came from (where RTN only looks at the weights), and the packed
 * bytes do not depend on the thread count. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gptq.h"
#include "quant_weights.h"

static uint64_t rng_state;
static double gauss(void)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        u[i] = ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2.0 * log(u[0])) * cos(2.0 * M_PI * u[1]);
}

/* rows x k inputs with correlated channels (a random mixing of k latent
 * values, a few channels 10x larger: what real activations look like). */
static float *inputs(int rows, int k, uint64_t seed)
{
    rng_state = seed;
    float *mix = malloc((size_t)k * k * sizeof *mix), *x = malloc((size_t)rows * k * sizeof *x);
    double *z = malloc((size_t)k * sizeof *z);
    ck_assert(mix && x && z);
    for (int i = 0; i < k * k; i++)
        mix[i] = (float)(gauss() / sqrt(k));
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < k; j++)
            z[j] = gauss();
        for (int j = 0; j < k; j++) {
            double s = z[j];
            for (int t = 0; t < k; t++)
                s += 2.0 * mix[(size_t)j * k + t] * z[t];
            x[(size_t)r * k + j] = (float)(j % 17 == 0 ? 10.0 * s : s);
        }
    }
    free(mix);
    free(z);
    return x;
}

static double *gram(const float *x, int rows, int k)
{
    double *h = calloc((size_t)k * k, sizeof *h);
    ck_assert_ptr_nonnull(h);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < k; i++)
            for (int j = i; j < k; j++)
                h[(size_t)i * k + j] += (double)x[(size_t)r * k + i] * x[(size_t)r * k + j];
    return h;
}

START_TEST(factor_is_chol_of_inverse)
{
    const int k = 96, rows = 400;
    float *x = inputs(rows, k, 7);
    double *h = gram(x, rows, k), *u = malloc((size_t)k * k * sizeof *u);
    sq_err err;
    ck_assert_msg(sq_gptq_factor(h, k, 0.0, u, &err) == 0, "%s", err.msg);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++)
            ck_assert(u[(size_t)i * k + j] == 0.0); /* upper triangular */
    /* H (U^T U) = I */
    double worst = 0.0;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
            double s = 0.0;
            for (int t = 0; t < k; t++) {
                double uu = 0.0; /* (U^T U)[t][j] */
                for (int c = 0; c <= (t < j ? t : j); c++)
                    uu += u[(size_t)c * k + t] * u[(size_t)c * k + j];
                const double hit = t >= i ? h[(size_t)i * k + t] : h[(size_t)t * k + i];
                s += hit * uu;
            }
            worst = fmax(worst, fabs(s - (i == j ? 1.0 : 0.0)));
        }
    ck_assert_msg(worst < 1e-8, "|H H^-1 - I| = %g", worst);
    free(x);
    free(h);
    free(u);
}
END_TEST

START_TEST(dead_inputs_and_bad_matrices)
{
    const int k = 40, rows = 100;
    float *x = inputs(rows, k, 3);
    for (int r = 0; r < rows; r++)
        x[(size_t)r * k + 5] = 0.0f; /* a channel that never carries a value */
    double *h = gram(x, rows, k), *u = malloc((size_t)k * k * sizeof *u);
    sq_err err;
    ck_assert_msg(sq_gptq_factor(h, k, SQ_GPTQ_DAMP, u, &err) == 0, "%s", err.msg);
    for (int j = 0; j < k; j++)
        ck_assert(u[5 * k + j] == (j == 5 ? 1.0 : 0.0) && (j == 5 || u[(size_t)j * k + 5] == 0.0));
    h[3 * k + 3] = NAN;
    ck_assert_int_eq(sq_gptq_factor(h, k, SQ_GPTQ_DAMP, u, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "input 3"));
    h[3 * k + 3] = 1.0;
    h[3 * k + 4] = 1e6; /* no longer positive definite, whatever the damping */
    ck_assert_int_eq(sq_gptq_factor(h, k, SQ_GPTQ_DAMP, u, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not positive definite"));
    free(x);
    free(h);
    free(u);
}
END_TEST

/* sum over the rows of x of |x W^T - x Q^T|^2 */
static double output_error(const float *x, int rows, const float *w, const float *q, int n, int k)
{
    double e = 0.0;
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < n; o++) {
            double d = 0.0;
            for (int j = 0; j < k; j++)
                d += (double)x[(size_t)r * k + j] *
                     ((double)w[(size_t)o * k + j] - q[(size_t)o * k + j]);
            e += d * d;
        }
    return e;
}

static void quant_dequant(const float *w, int n, int k, const sq_quant_opts *o, float *d,
                          sq_qweight *keep)
{
    sq_qweight q;
    sq_err err;
    ck_assert_msg(sq_quantize_weights(w, n, k, SQ_QT_S4G128, o, &q, &err) == 0, "%s", err.msg);
    sq_dequantize_weights(&q, d);
    if (keep)
        *keep = q;
    else
        sq_qweight_free(&q);
}

/* K = 172 (a padded last group: the stories260K FFN width) and 256. */
static void lowers_output_error(int k)
{
    const int n = 48, rows = 600;
    float *x = inputs(rows, k, 11 + k), *w = malloc((size_t)n * k * sizeof *w);
    rng_state = 99;
    for (int i = 0; i < n * k; i++)
        w[i] = (float)(0.05 * gauss());
    double *h = gram(x, rows, k), *u = malloc((size_t)k * k * sizeof *u);
    sq_err err;
    ck_assert_msg(sq_gptq_factor(h, k, SQ_GPTQ_DAMP, u, &err) == 0, "%s", err.msg);
    float *d_rtn = malloc((size_t)n * k * sizeof *d_rtn), *d_gptq = malloc((size_t)n * k * sizeof *d_gptq);
    for (int search = 0; search < 2; search++) {
        sq_quant_opts rtn = {.int4_search = search}, g = {.int4_search = search, .gptq_u = u};
        quant_dequant(w, n, k, &rtn, d_rtn, NULL);
        quant_dequant(w, n, k, &g, d_gptq, NULL);
        const double e_rtn = output_error(x, rows, w, d_rtn, n, k);
        const double e_gptq = output_error(x, rows, w, d_gptq, n, k);
        ck_assert_msg(e_gptq < 0.7 * e_rtn, "K %d search %d: GPTQ output error %g vs RTN %g", k,
                      search, e_gptq, e_rtn);
    }
    free(x);
    free(w);
    free(h);
    free(u);
    free(d_rtn);
    free(d_gptq);
}

START_TEST(lowers_output_error_172)
{
    lowers_output_error(172);
}
END_TEST

START_TEST(lowers_output_error_256)
{
    lowers_output_error(256);
}
END_TEST

START_TEST(same_bytes_any_thread_count)
{
    const int n = 70, k = 200, rows = 300;
    float *x = inputs(rows, k, 5), *w = malloc((size_t)n * k * sizeof *w);
    rng_state = 1;
    for (int i = 0; i < n * k; i++)
        w[i] = (float)gauss();
    double *h = gram(x, rows, k), *u1 = malloc((size_t)k * k * sizeof *u1),
           *u2 = malloc((size_t)k * k * sizeof *u2);
    sq_err err;
    sq_qweight a, b;
    float *d = malloc((size_t)n * k * sizeof *d);
    omp_set_num_threads(1);
    ck_assert(sq_gptq_factor(h, k, SQ_GPTQ_DAMP, u1, &err) == 0);
    sq_quant_opts o1 = {.int4_search = true, .gptq_u = u1};
    quant_dequant(w, n, k, &o1, d, &a);
    omp_set_num_threads(3);
    ck_assert(sq_gptq_factor(h, k, SQ_GPTQ_DAMP, u2, &err) == 0);
    ck_assert(memcmp(u1, u2, (size_t)k * k * sizeof *u1) == 0);
    sq_quant_opts o2 = {.int4_search = true, .gptq_u = u2};
    quant_dequant(w, n, k, &o2, d, &b);
    ck_assert(a.data_size == b.data_size && memcmp(a.data, b.data, a.data_size) == 0);
    ck_assert(memcmp(a.scale, b.scale, (size_t)n * 2 * sizeof *a.scale) == 0);
    sq_qweight_free(&a);
    sq_qweight_free(&b);
    free(x);
    free(w);
    free(h);
    free(u1);
    free(u2);
    free(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gptq");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, factor_is_chol_of_inverse);
    tcase_add_test(tc, dead_inputs_and_bad_matrices);
    tcase_add_test(tc, lowers_output_error_172);
    tcase_add_test(tc, lowers_output_error_256);
    tcase_add_test(tc, same_bytes_any_thread_count);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

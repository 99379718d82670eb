/* The int8 linear with an activation zero point (linear.h): the runtime
 * (quantize with z, GEMM of the selected ISA, accumulator offset z * wsum,
 * fused epilogue) equals an independent int64 computation of
 * sum_k (q_k + z) w[n][k] bit for bit, at 1 and 2 threads; on a one-sided
 * (ReLU) input the zero point roughly halves the output error; and z = 0 is
 * the symmetric path unchanged. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "pack.h"
#include "qlinear_ref.h"
#include "quant_weights.h"

static uint32_t rng_state = 12345u;
static uint32_t rng(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static float gauss(void)
{
    float u = ((float)rng() + 1.0f) / 16777217.0f, v = (float)rng() / 16777216.0f;
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

typedef struct fixture {
    int R, K, N;
    float *x, *w, *b;
} fixture;

/* ReLU of a Gaussian with a heavy tail: a one-sided input like an FFN's. */
static void fixture_make(fixture *f, int R, int K, int N)
{
    f->R = R, f->K = K, f->N = N;
    f->x = malloc(sizeof(float) * R * K);
    f->w = malloc(sizeof(float) * N * K);
    f->b = malloc(sizeof(float) * N);
    for (int i = 0; i < R * K; i++) {
        float g = gauss();
        f->x[i] = g > 0 ? g * (i % 97 == 0 ? 4.0f : 1.0f) : 0.0f;
    }
    for (int i = 0; i < N * K; i++)
        f->w[i] = 0.05f * gauss();
    for (int n = 0; n < N; n++)
        f->b[n] = 0.1f * gauss();
}

static void fixture_free(fixture *f)
{
    free(f->x), free(f->w), free(f->b);
}

/* Run the runtime linear with (act_scale, z) into y; the quantized weights
 * come back in lin for the reference. */
static void run_linear(const fixture *f, sq_linear *lin, float act_scale, int z, float *y)
{
    sq_err err = {0};
    memset(lin, 0, sizeof *lin);
    lin->in = f->K, lin->out = f->N, lin->qtype = SQ_QT_S8, lin->b = f->b, lin->borrowed = true;
    ck_assert_msg(sq_quantize_weights(f->w, f->N, f->K, SQ_QT_S8, NULL, &lin->qw, &err) == 0,
                  "%s", err.msg);
    ck_assert_int_eq(sq_linear_prepare_quant(lin, NULL, act_scale, z), 0);
    ck_assert(z == 0 ? lin->acc_off == NULL : lin->acc_off != NULL);
    sq_linear_scratch sc = {.qa = malloc((size_t)f->R * lin->qw.k_pad),
                            .acc = malloc(sizeof(int32_t) * f->R * f->N)};
    sq_linear_forward(lin, f->x, f->R, y, &sc);
    free(sc.qa), free(sc.acc);
}

/* y from the definition, with int64 sums and the epilogue's float order. */
static void reference(const fixture *f, const sq_linear *lin, float act_scale, int z, float *y)
{
    float *m = malloc(sizeof(float) * f->K);
    int8_t *q = malloc((size_t)f->R * f->K);
    sq_ref_act_multipliers(NULL, f->K, act_scale, m);
    sq_ref_quantize_acts_zp(f->x, f->R, f->K, m, z, q);
    for (int r = 0; r < f->R; r++)
        for (int n = 0; n < f->N; n++) {
            int64_t a = 0;
            for (int k = 0; k < f->K; k++)
                a += (int64_t)(q[(size_t)r * f->K + k] + z) * sq_panel_get_s8(&lin->qw, n, k);
            float p = (float)a * (act_scale * lin->qw.scale[n]);
            __asm__("" : "+x"(p)); /* product rounded, then the add: no FMA */
            y[(size_t)r * f->N + n] = p + f->b[n];
        }
    free(m), free(q);
}

static double rel_err_fp32(const fixture *f, const float *y)
{
    double num = 0, den = 0;
    for (int r = 0; r < f->R; r++)
        for (int n = 0; n < f->N; n++) {
            double ref = f->b[n];
            for (int k = 0; k < f->K; k++)
                ref += (double)f->x[(size_t)r * f->K + k] * f->w[(size_t)n * f->K + k];
            double d = y[(size_t)r * f->N + n] - ref;
            num += d * d, den += ref * ref;
        }
    return sqrt(num / den);
}

START_TEST(matches_int64_reference)
{
    static const int shapes[][3] = {{1, 300, 45}, {7, 1536, 64}, {33, 129, 17}, {70, 512, 96}};
    static const int zeros[] = {127, 0, 1, 64, -40};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        fixture f;
        fixture_make(&f, shapes[s][0], shapes[s][1], shapes[s][2]);
        float amax = 0;
        for (int i = 0; i < f.R * f.K; i++)
            amax = fmaxf(amax, f.x[i]);
        for (size_t zi = 0; zi < sizeof zeros / sizeof *zeros; zi++) {
            int z = zeros[zi];
            float act_scale = z ? amax / 254.0f : amax / 127.0f;
            float *want = malloc(sizeof(float) * f.R * f.N), *got = malloc(sizeof(float) * f.R * f.N);
            for (int th = 1; th <= 2; th++) {
                omp_set_num_threads(th);
                sq_linear lin;
                run_linear(&f, &lin, act_scale, z, got);
                reference(&f, &lin, act_scale, z, want);
                ck_assert_msg(memcmp(got, want, sizeof(float) * f.R * f.N) == 0,
                              "[%d x %d x %d] z %d, %d threads: runtime differs from int64 reference",
                              f.R, f.K, f.N, z, th);
                sq_linear_free(&lin);
            }
            free(want), free(got);
        }
        fixture_free(&f);
    }
    sq_isa isa;
    sq_linear_isa(&isa, NULL);
    printf("zero-point linear == int64 reference on %s\n", sq_isa_name(isa));
}
END_TEST

/* Saturated codes on both sides and the largest weights: the int32
 * accumulator plus the offset must not overflow (|q + z| <= 254). */
START_TEST(extremes_do_not_overflow)
{
    fixture f;
    fixture_make(&f, 5, 4096, 16);
    for (int i = 0; i < f.R * f.K; i++)
        f.x[i] = (i / f.K) % 2 ? 1e6f : -1e6f; /* rows clipped high, rows clipped low */
    for (int i = 0; i < f.N * f.K; i++)
        f.w[i] = (i / f.K) % 3 == 0 ? 1.0f : (i / f.K) % 3 == 1 ? -1.0f : (i % 2 ? 1.0f : -1.0f);
    float *want = malloc(sizeof(float) * f.R * f.N), *got = malloc(sizeof(float) * f.R * f.N);
    sq_linear lin;
    run_linear(&f, &lin, 1.0f / 254.0f, 127, got);
    reference(&f, &lin, 1.0f / 254.0f, 127, want);
    ck_assert(memcmp(got, want, sizeof(float) * f.R * f.N) == 0);
    sq_linear_free(&lin);
    free(want), free(got);
    fixture_free(&f);
}
END_TEST

START_TEST(zero_point_halves_relu_error)
{
    fixture f;
    fixture_make(&f, 64, 1024, 64);
    float amax = 0;
    for (int i = 0; i < f.R * f.K; i++)
        amax = fmaxf(amax, f.x[i]);
    float *y = malloc(sizeof(float) * f.R * f.N);
    sq_linear lin;
    run_linear(&f, &lin, amax / 127.0f, 0, y);
    double e_sym = rel_err_fp32(&f, y);
    sq_linear_free(&lin);
    run_linear(&f, &lin, amax / 254.0f, 127, y);
    double e_zp = rel_err_fp32(&f, y);
    sq_linear_free(&lin);
    printf("ReLU input, clip at max: relative error symmetric %.5f, zero point %.5f\n", e_sym, e_zp);
    /* the activation step halves; weight error (unchanged) keeps it above 1/2 */
    ck_assert_msg(e_zp < 0.8 * e_sym, "zero point %.5f vs symmetric %.5f", e_zp, e_sym);
    free(y);
    fixture_free(&f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("linear_zero_point");
    TCase *tc = tcase_create("linear_zero_point");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, matches_int64_reference);
    tcase_add_test(tc, extremes_do_not_overflow);
    tcase_add_test(tc, zero_point_halves_relu_error);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

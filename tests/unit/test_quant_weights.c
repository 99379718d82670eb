/* Weight quantization: the int8 and int4 rules, SQNR on bge-small shapes,
 * the int4 weighted-MSE scale search, input checks and determinism. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "quant_weights.h"

static uint64_t rng_state;
static double uniform01(void) /* (0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static float *gaussian(int n, int k, double sigma, uint64_t seed)
{
    rng_state = seed;
    float *w = malloc((size_t)n * k * sizeof *w);
    ck_assert_ptr_nonnull(w);
    for (size_t i = 0; i < (size_t)n * k; i++) /* Box-Muller */
        w[i] = (float)(sigma * sqrt(-2.0 * log(uniform01())) * cos(2.0 * M_PI * uniform01()));
    return w;
}

static float *quant_dequant(const float *w, int n, int k, sq_qtype qt, const sq_quant_opts *o)
{
    sq_qweight q;
    sq_err err;
    ck_assert_msg(sq_quantize_weights(w, n, k, qt, o, &q, &err) == 0, "%s", err.msg);
    float *d = malloc((size_t)n * k * sizeof *d);
    ck_assert_ptr_nonnull(d);
    sq_dequantize_weights(&q, d);
    sq_qweight_free(&q);
    return d;
}

/* bge-small linears, [N][K]: QKV fused, attention out, FFN1, FFN2. */
static const int bge_small[][2] = {{1152, 384}, {384, 384}, {1536, 384}, {384, 1536}};

START_TEST(int8_sqnr_bge_small)
{
    for (int s = 0; s < 4; s++) {
        int n = bge_small[s][0], k = bge_small[s][1];
        float *w = gaussian(n, k, 0.02, 1000 + (uint64_t)s);
        float *d = quant_dequant(w, n, k, SQ_QT_S8, NULL);
        double db = sq_sqnr_db(w, d, (size_t)n * k);
        printf("int8 per-channel SQNR [%4d x %4d] N(0, 0.02): %.2f dB\n", n, k, db);
        ck_assert_msg(db >= 38.0, "int8 SQNR %.2f dB < 38", db);
        free(w), free(d);
    }
}
END_TEST

/* Expected int4-g128 RTN SQNR on Gaussian weights: the step is amax/7 with
 * amax ~ 2.9 sigma over 128 samples, so uniform rounding noise step^2/12 is
 * ~0.014 sigma^2, about 18.5 dB. The band allows for the amax spread and the
 * clamp-free tails: [16, 21] dB. */
START_TEST(int4_sqnr_bge_small)
{
    for (int s = 0; s < 4; s++) {
        int n = bge_small[s][0], k = bge_small[s][1];
        float *w = gaussian(n, k, 0.02, 2000 + (uint64_t)s);
        float *d = quant_dequant(w, n, k, SQ_QT_S4G128, NULL);
        sq_quant_opts o = {.int4_search = true};
        float *ds = quant_dequant(w, n, k, SQ_QT_S4G128, &o);
        double db = sq_sqnr_db(w, d, (size_t)n * k), dbs = sq_sqnr_db(w, ds, (size_t)n * k);
        printf("int4-g128 RTN SQNR    [%4d x %4d] N(0, 0.02): %.2f dB (MSE search: %.2f dB)\n", n,
               k, db, dbs);
        ck_assert_msg(db >= 16.0 && db <= 21.0, "int4 SQNR %.2f dB outside [16, 21]", db);
        ck_assert_msg(dbs >= db, "search made plain MSE worse: %.2f < %.2f dB", dbs, db);
        free(w), free(d), free(ds);
    }
}
END_TEST

START_TEST(int8_rules)
{
    /* Row 0: scale 1 (amax 127), halves round away from zero. Row 1: zeros.
     * Row 2: negative extreme maps to -127, never -128. */
    enum { K = 7 };
    float w[3 * K] = {127, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -126.5f,
                      0,   0,    0,     0,    0,     0,    0,
                      -31.75f, 0.125f, 0, 0, 0, 0, 31.75f};
    sq_qweight q;
    sq_err err;
    ck_assert_int_eq(sq_quantize_weights(w, 3, K, SQ_QT_S8, NULL, &q, &err), 0);
    int want0[K] = {127, 1, -1, 2, -2, 3, -127};
    for (int c = 0; c < K; c++)
        ck_assert_int_eq(sq_panel_get_s8(&q, 0, c), want0[c]);
    ck_assert_float_eq(q.scale[0], 1.0f);
    ck_assert_float_eq(q.scale[1], 1.0f);
    for (int c = 0; c < K; c++)
        ck_assert_int_eq(sq_panel_get_s8(&q, 1, c), 0);
    ck_assert_float_eq(q.scale[2], 0.25f);
    ck_assert_int_eq(sq_panel_get_s8(&q, 2, 0), -127);
    ck_assert_int_eq(sq_panel_get_s8(&q, 2, 1), 1); /* 0.125 / 0.25 = 0.5 -> 1 */
    ck_assert_int_eq(sq_panel_get_s8(&q, 2, 6), 127);
    ck_assert_int_eq(q.wsum[2], 1);
    for (int r = 3; r < 16; r++)
        ck_assert_float_eq(q.scale[r], 0.0f); /* padding channels */
    sq_qweight_free(&q);

    /* Every row of a random matrix reaches +-127 exactly once at its amax. */
    float *g = gaussian(50, 333, 1.0, 7);
    ck_assert_int_eq(sq_quantize_weights(g, 50, 333, SQ_QT_S8, NULL, &q, &err), 0);
    for (int r = 0; r < 50; r++) {
        int mx = 0;
        for (int c = 0; c < 333; c++) {
            int v = sq_panel_get_s8(&q, r, c);
            ck_assert_int_ge(v, -127);
            mx = abs(v) > mx ? abs(v) : mx;
        }
        ck_assert_int_eq(mx, 127);
    }
    sq_qweight_free(&q);
    free(g);
}
END_TEST

START_TEST(int4_rules)
{
    /* K = 130: group 0 has amax 7 (scale 1), group 1 holds two real inputs
     * (amax 0.875, scale 0.125) and 126 zero padding inputs that must not
     * matter. */
    enum { K = 130 };
    float w[2 * K] = {0};
    w[0] = 7.0f, w[1] = -2.5f, w[2] = 6.49f, w[128] = 0.875f, w[129] = -0.4375f;
    /* Row 1: a zero row. */
    sq_qweight q;
    sq_err err;
    ck_assert_int_eq(sq_quantize_weights(w, 2, K, SQ_QT_S4G128, NULL, &q, &err), 0);
    ck_assert_int_eq(q.k_pad, 256);
    ck_assert_int_eq(sq_qweight_groups(&q), 2);
    ck_assert_float_eq(q.scale[0], 1.0f);
    ck_assert_float_eq(q.scale[1], 0.125f);
    ck_assert_int_eq(sq_panel_get_s4(&q, 0, 0), 7);
    ck_assert_int_eq(sq_panel_get_s4(&q, 0, 1), -3);
    ck_assert_int_eq(sq_panel_get_s4(&q, 0, 2), 6);
    ck_assert_int_eq(sq_panel_get_s4(&q, 0, 128), 7);
    ck_assert_int_eq(sq_panel_get_s4(&q, 0, 129), -4); /* -3.5 rounds away from zero */
    ck_assert_int_eq(q.wsum[0], 7 - 3 + 6);
    ck_assert_int_eq(q.wsum[1], 3);
    ck_assert_float_eq(q.scale[2], 1.0f); /* zero row */
    ck_assert_float_eq(q.scale[3], 1.0f);
    for (int c = 0; c < 256; c++)
        ck_assert_int_eq(sq_panel_get_s4(&q, 1, c), 0);
    sq_qweight_free(&q);

    /* Values stay in [-7, 7], and each non-zero group reaches 7 in magnitude. */
    float *g = gaussian(20, 300, 1.0, 9);
    ck_assert_int_eq(sq_quantize_weights(g, 20, 300, SQ_QT_S4G128, NULL, &q, &err), 0);
    for (int r = 0; r < 20; r++)
        for (int grp = 0; grp < 3; grp++) {
            int mx = 0;
            for (int c = grp * 128; c < 300 && c < grp * 128 + 128; c++) {
                int v = sq_panel_get_s4(&q, r, c);
                ck_assert_int_ge(v, -7);
                ck_assert_int_le(v, 7);
                mx = abs(v) > mx ? abs(v) : mx;
            }
            ck_assert_int_eq(mx, 7);
        }
    sq_qweight_free(&q);
    free(g);
}
END_TEST

/* Importance with a few channels far heavier than the rest, as real
 * calibration sums of x^2 have (outlier hidden dimensions). */
static float *skewed_importance(int k, uint64_t seed)
{
    rng_state = seed;
    float *imp = malloc((size_t)k * sizeof *imp);
    for (int i = 0; i < k; i++) {
        imp[i] = (float)(0.1 + uniform01());
        if (uniform01() < 0.03)
            imp[i] *= 100.0f;
    }
    return imp;
}

START_TEST(int4_search_improves_weighted_error)
{
    for (int s = 0; s < 4; s++) {
        int n = bge_small[s][0], k = bge_small[s][1];
        float *w = gaussian(n, k, 0.02, 3000 + (uint64_t)s);
        float *imp = skewed_importance(k, 4000 + (uint64_t)s);
        sq_quant_opts rtn = {.importance = imp}, srch = {.importance = imp, .int4_search = true};
        float *dr = quant_dequant(w, n, k, SQ_QT_S4G128, &rtn);
        float *ds = quant_dequant(w, n, k, SQ_QT_S4G128, &srch);
        double er = sq_weighted_sq_error(w, dr, n, k, imp);
        double es = sq_weighted_sq_error(w, ds, n, k, imp);
        printf("int4-g128 weighted error [%4d x %4d]: RTN %.4g, search %.4g (%.1f%% lower)\n", n,
               k, er, es, 100.0 * (1.0 - es / er));
        ck_assert_msg(es < 0.95 * er, "search %.6g vs RTN %.6g", es, er);
        /* Never worse: group by group (rows x groups). */
        for (int r = 0; r < n; r++)
            for (int g = 0; g < k / 128; g++) {
                size_t off = (size_t)r * k + (size_t)g * 128;
                double gr = sq_weighted_sq_error(w + off, dr + off, 1, 128, imp + g * 128);
                double gs = sq_weighted_sq_error(w + off, ds + off, 1, 128, imp + g * 128);
                ck_assert_msg(gs <= gr, "row %d group %d: search %.6g > RTN %.6g", r, g, gs, gr);
            }
        free(w), free(imp), free(dr), free(ds);
    }
}
END_TEST

START_TEST(int4_search_ties_keep_rtn)
{
    /* All-zero importance: every candidate ties, so the result is RTN. */
    int n = 33, k = 260;
    float *w = gaussian(n, k, 0.02, 55);
    float *zero = calloc((size_t)k, sizeof *zero);
    sq_quant_opts rtn = {0}, srch = {.importance = zero, .int4_search = true};
    sq_qweight a, b;
    sq_err err;
    ck_assert_int_eq(sq_quantize_weights(w, n, k, SQ_QT_S4G128, &rtn, &a, &err), 0);
    ck_assert_int_eq(sq_quantize_weights(w, n, k, SQ_QT_S4G128, &srch, &b, &err), 0);
    ck_assert_mem_eq(a.data, b.data, (size_t)a.data_size);
    ck_assert_mem_eq(a.scale, b.scale, (size_t)a.n_pad * sq_qweight_groups(&a) * sizeof(float));
    sq_qweight_free(&a), sq_qweight_free(&b);
    /* Search is deterministic run to run. */
    float *imp = skewed_importance(k, 66);
    srch.importance = imp;
    ck_assert_int_eq(sq_quantize_weights(w, n, k, SQ_QT_S4G128, &srch, &a, &err), 0);
    ck_assert_int_eq(sq_quantize_weights(w, n, k, SQ_QT_S4G128, &srch, &b, &err), 0);
    ck_assert_mem_eq(a.data, b.data, (size_t)a.data_size);
    ck_assert_mem_eq(a.scale, b.scale, (size_t)a.n_pad * sq_qweight_groups(&a) * sizeof(float));
    sq_qweight_free(&a), sq_qweight_free(&b);
    free(w), free(zero), free(imp);
}
END_TEST

START_TEST(dequant_is_q_times_scale)
{
    int n = 21, k = 300;
    float *w = gaussian(n, k, 0.5, 77);
    for (int t = 0; t < 2; t++) {
        sq_qtype qt = t ? SQ_QT_S4G128 : SQ_QT_S8;
        sq_qweight q;
        sq_err err;
        ck_assert_int_eq(sq_quantize_weights(w, n, k, qt, NULL, &q, &err), 0);
        float *d = malloc((size_t)n * k * sizeof *d);
        sq_dequantize_weights(&q, d);
        int groups = sq_qweight_groups(&q);
        for (int r = 0; r < n; r++)
            for (int c = 0; c < k; c++) {
                int v = sq_qtype_get(qt)->get(&q, r, c);
                float s = q.scale[r * groups + (t ? c / 128 : 0)];
                ck_assert_float_eq(d[r * k + c], (float)v * s);
                /* RTN error is at most half a step (no clamping in RTN). */
                ck_assert_float_le(fabsf(d[r * k + c] - w[r * k + c]), 0.5f * s * 1.0001f);
            }
        free(d);
        sq_qweight_free(&q);
    }
    free(w);
}
END_TEST

START_TEST(bad_inputs_refused)
{
    float w[4 * 8];
    for (int i = 0; i < 32; i++)
        w[i] = (float)i;
    sq_qweight q;
    sq_err err;
    w[13] = NAN;
    ck_assert_int_ne(sq_quantize_weights(w, 4, 8, SQ_QT_S8, NULL, &q, &err), 0);
    ck_assert_str_eq(err.msg, "weight [1, 5] is not finite (nan)");
    ck_assert_ptr_null(q.data);
    w[13] = INFINITY;
    ck_assert_int_ne(sq_quantize_weights(w, 4, 8, SQ_QT_S4G128, NULL, &q, &err), 0);
    w[13] = 1;
    ck_assert_int_ne(sq_quantize_weights(w, 4, 8, SQ_QT_F32, NULL, &q, &err), 0);
    ck_assert_str_eq(err.msg, "cannot quantize weights to fp32");
    ck_assert_int_ne(sq_quantize_weights(w, 0, 8, SQ_QT_S8, NULL, &q, &err), 0);
    float imp[8] = {1, 1, 1, -1, 1, 1, 1, 1};
    sq_quant_opts o = {.importance = imp, .int4_search = true};
    ck_assert_int_ne(sq_quantize_weights(w, 4, 8, SQ_QT_S4G128, &o, &q, &err), 0);
    ck_assert_msg(strstr(err.msg, "importance of input 3"), "%s", err.msg);
}
END_TEST

START_TEST(sqnr_definition)
{
    float a[2] = {1, 1}, b[2] = {1, 0}, z[2] = {0, 0};
    ck_assert_double_eq_tol(sq_sqnr_db(a, b, 2), 10.0 * log10(2.0), 1e-12);
    ck_assert_double_eq(sq_sqnr_db(a, a, 2), SQ_SQNR_CAP_DB);
    ck_assert_double_eq(sq_sqnr_db(z, z, 2), SQ_SQNR_CAP_DB);
    ck_assert_double_eq(sq_sqnr_db(z, a, 2), -SQ_SQNR_CAP_DB);
    float c[2] = {1, 1.0f + 1e-7f};
    ck_assert_double_le(sq_sqnr_db(a, c, 2), SQ_SQNR_CAP_DB);
    float imp[2] = {3, 0};
    float t[2] = {0, 0};
    ck_assert_double_eq(sq_weighted_sq_error(a, t, 1, 2, imp), 3.0);
    ck_assert_double_eq(sq_weighted_sq_error(a, t, 1, 2, NULL), 2.0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("quant_weights");
    TCase *tc = tcase_create("quant_weights");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, int8_sqnr_bge_small);
    tcase_add_test(tc, int4_sqnr_bge_small);
    tcase_add_test(tc, int8_rules);
    tcase_add_test(tc, int4_rules);
    tcase_add_test(tc, int4_search_improves_weighted_error);
    tcase_add_test(tc, int4_search_ties_keep_rtn);
    tcase_add_test(tc, dequant_is_q_times_scale);
    tcase_add_test(tc, bad_inputs_refused);
    tcase_add_test(tc, sqnr_definition);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

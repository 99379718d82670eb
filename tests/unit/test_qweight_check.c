/* The packed-weight consistency rules the .sqm loader proves
 * (libquant/weights/qweight_check.h), and the int32 bounds they guarantee, shown
 * on every GEMM path this CPU has with the extreme values the rules admit:
 *   - a freshly packed weight passes; each broken rule (a -128 / -8 value,
 *     non-zero padding, a wsum entry off by one, a NaN, 0 or inf scale, an
 *     int8 K above SQ_REF_MAX_K) is reported against the right tensor;
 *   - int8 at K = SQ_REF_MAX_K with every |a| = |w| = 127 gives the exact
 *     +-16129 K (2,147,479,576: 4,071 short of 2^31) on every ISA, the
 *     VNNI compensation 128 * wsum (> 2^31) included;
 *   - int8 with an activation zero point at K = SQ_REF_MAX_K / 2: the fused
 *     epilogue's acc + z * wsum is the exact sum of (q + z) * w;
 *   - int4 with every |w| = 7, |a| = 127 over many groups: same bits as
 *     scalar on every ISA.
 * ISAs this CPU lacks are reported as SKIPPED. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_s8.h"
#include "pack.h"
#include "qlinear_ref.h"
#include "qweight_check.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* A packed [n][k] weight of random values in [-lim, lim], scales 0.01. */
static void make(sq_qweight *q, sq_qtype qt, int n, int k)
{
    sq_err err;
    ck_assert_int_eq(sq_qweight_alloc(q, qt, n, k, &err), 0);
    int lim = qt == SQ_QT_S8 ? 127 : 7;
    int8_t *v = malloc((size_t)n * k);
    for (size_t i = 0; i < (size_t)n * k; i++)
        v[i] = (int8_t)((int)(rng() % (2u * lim + 1)) - lim);
    sq_pack(q, v);
    free(v);
    for (size_t i = 0; i < (size_t)n * sq_qweight_groups(q); i++)
        q->scale[i] = 0.01f;
}

static void expect(const sq_qweight *q, sq_qweight_problem want, const char *what)
{
    char why[256] = "";
    sq_qweight_problem got = sq_qweight_check(q, why, sizeof why);
    ck_assert_msg(got == want, "%s: got %s (%s), want %s", what,
                  got ? sq_qweight_problem_suffix(got) : "ok", why,
                  want ? sq_qweight_problem_suffix(want) : "ok");
    if (want)
        printf("  %-40s -> %s: %s\n", what, sq_qweight_problem_suffix(got), why);
}

/* Byte offset of W[n][k] in int8 panels (pack.h). */
static size_t off_s8(const sq_qweight *q, int n, int k)
{
    return ((size_t)(n / 16) * (q->k_pad / 4) + k / 4) * 64 + (n % 16) * 4 + k % 4;
}

START_TEST(int8_rules)
{
    sq_qweight q;
    make(&q, SQ_QT_S8, 37, 203); /* ragged: padding channels and inputs */
    expect(&q, SQ_QW_OK, "fresh int8");
    int8_t *d = q.data;
    size_t o = off_s8(&q, 5, 17);
    int8_t keep = d[o];
    d[o] = -128;
    q.wsum[5] += -128 - keep; /* even with a matching wsum */
    expect(&q, SQ_QW_BAD_WEIGHT, "int8 value -128");
    d[o] = keep;
    q.wsum[5] -= -128 - keep;
    expect(&q, SQ_QW_OK, "restored");
    q.wsum[36] += 1;
    expect(&q, SQ_QW_BAD_WSUM, "int8 wsum off by one");
    q.wsum[36] -= 1;
    q.wsum[40] = 1; /* a padding channel's sum */
    expect(&q, SQ_QW_BAD_WSUM, "int8 wsum of a padding channel");
    q.wsum[40] = 0;
    d[off_s8(&q, 3, 203)] = 1; /* input padding, wsum kept consistent */
    q.wsum[3] += 1;
    expect(&q, SQ_QW_BAD_WEIGHT, "int8 non-zero input padding");
    d[off_s8(&q, 3, 203)] = 0;
    q.wsum[3] -= 1;
    d[off_s8(&q, 44, 0)] = 2; /* channel padding */
    q.wsum[44] = 2;
    expect(&q, SQ_QW_BAD_WEIGHT, "int8 non-zero channel padding");
    d[off_s8(&q, 44, 0)] = 0;
    q.wsum[44] = 0;
    float bad[] = {NAN, INFINITY, 0.0f, -0.5f};
    for (int i = 0; i < 4; i++) {
        q.scale[36] = bad[i];
        expect(&q, SQ_QW_BAD_SCALE, "int8 scale NaN / inf / 0 / negative");
    }
    q.scale[36] = 0.01f;
    expect(&q, SQ_QW_OK, "restored");
    sq_qweight_free(&q);
    /* K past the int32 accumulator bound. */
    sq_err err;
    ck_assert_int_eq(sq_qweight_alloc(&q, SQ_QT_S8, 16, SQ_REF_MAX_K + 4, &err), 0);
    for (int i = 0; i < 16; i++)
        q.scale[i] = 1;
    expect(&q, SQ_QW_BAD_WEIGHT, "int8 K above SQ_REF_MAX_K");
    sq_qweight_free(&q);
}
END_TEST

START_TEST(int4_rules)
{
    sq_qweight q;
    make(&q, SQ_QT_S4G128, 21, 300); /* 3 groups, padding in both */
    expect(&q, SQ_QW_OK, "fresh int4");
    int G = sq_qweight_groups(&q);
    uint8_t *d = q.data;
    /* W[2][130]: panel 0, k-group 32, lane 2 -> row 32, byte 8 (low nibble). */
    size_t row = 32, b = 4 * 2 + 130 % 4;
    uint8_t keep = d[row * 32 + b];
    int v = ((keep & 15) ^ 8) - 8;
    d[row * 32 + b] = (uint8_t)((keep & 0xf0) | 8);
    q.wsum[2 * G + 1] += -8 - v;
    expect(&q, SQ_QW_BAD_WEIGHT, "int4 nibble 0x8");
    d[row * 32 + b] = keep;
    q.wsum[2 * G + 1] -= -8 - v;
    expect(&q, SQ_QW_OK, "restored");
    q.wsum[20 * G + 2] -= 1;
    expect(&q, SQ_QW_BAD_WSUM, "int4 group wsum off by one");
    q.wsum[20 * G + 2] += 1;
    q.scale[20 * G + 2] = NAN;
    expect(&q, SQ_QW_BAD_SCALE, "int4 group scale NaN");
    q.scale[20 * G + 2] = 0.01f;
    /* W[0][383] lies in the input padding (k >= 300): row 95, byte 3. */
    d[95 * 32 + 3] = 1;
    q.wsum[0 * G + 2] += 1;
    expect(&q, SQ_QW_BAD_WEIGHT, "int4 non-zero input padding");
    sq_qweight_free(&q);
}
END_TEST

/* Every A and W value at +-127 (int8) with K = SQ_REF_MAX_K: the exact
 * extremes of the int32 accumulator, on every ISA. */
START_TEST(int8_accumulator_bound_every_isa)
{
    enum { M = 5, N = 32 };
    const int K = SQ_REF_MAX_K;
    sq_err err;
    sq_qweight q;
    ck_assert_int_eq(sq_qweight_alloc(&q, SQ_QT_S8, N, K, &err), 0);
    int8_t *wv = malloc((size_t)N * K);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) /* channel parity picks the sign, channel 7 alternates */
            wv[(size_t)n * K + k] = n == 7 ? (k % 2 ? 127 : -127) : n % 2 ? -127 : 127;
    sq_pack(&q, wv);
    for (int n = 0; n < N; n++)
        q.scale[n] = 1;
    ck_assert_int_eq(sq_qweight_check(&q, NULL, 0), SQ_QW_OK);
    int8_t *a = calloc((size_t)M * q.k_pad, 1);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            a[(size_t)m * q.k_pad + k] = m == 4 ? (k % 2 ? -127 : 127) : m % 2 ? -127 : 127;
    int32_t c[M * N];
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        const char *missing;
        if (!sq_isa_supported((sq_isa)isa, &missing)) {
            printf("SKIPPED: %s (CPU lacks %s)\n", sq_isa_name((sq_isa)isa), missing);
            continue;
        }
        memset(c, 0, sizeof c);
        ck_assert_int_eq(sq_gemm_s8((sq_isa)isa, a, M, (size_t)q.k_pad, &q, c, N), 0);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t want = 0;
                for (int k = 0; k < K; k++)
                    want += (int64_t)a[(size_t)m * q.k_pad + k] * wv[(size_t)n * K + k];
                ck_assert_msg(c[m * N + n] == want, "%s: C[%d][%d] = %d, want %lld",
                              sq_isa_name((sq_isa)isa), m, n, c[m * N + n], (long long)want);
            }
        printf("%s: int8 K=%d extremes exact (C[0][0] = %d)\n", sq_isa_name((sq_isa)isa), K,
               c[0]);
    }
    free(a);
    free(wv);
    sq_qweight_free(&q);
}
END_TEST

/* Zero point z = 127 at the largest K it is allowed (SQ_REF_MAX_K / 2):
 * the fused epilogue's (acc + z * wsum) is exact on every ISA. */
START_TEST(int8_zero_point_bound_every_isa)
{
    enum { M = 3, N = 16 };
    const int K = SQ_REF_MAX_K / 2, z = SQ_REF_MAX_ZERO;
    ck_assert_ptr_null(sq_ref_act_zero_problem(z, true, K));
    ck_assert_ptr_nonnull(sq_ref_act_zero_problem(z, true, K + 1));
    sq_err err;
    sq_qweight q;
    ck_assert_int_eq(sq_qweight_alloc(&q, SQ_QT_S8, N, K, &err), 0);
    int8_t *wv = malloc((size_t)N * K);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            wv[(size_t)n * K + k] = n % 2 ? -127 : 127;
    sq_pack(&q, wv);
    int32_t off[N];
    float one[N], zero[N], y[M * N];
    for (int n = 0; n < N; n++) {
        q.scale[n] = 1;
        off[n] = z * q.wsum[n];
        one[n] = 1;
        zero[n] = 0;
    }
    int8_t *a = calloc((size_t)M * q.k_pad, 1); /* codes q = 127: q + z = 254 */
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            a[(size_t)m * q.k_pad + k] = 127;
    int32_t *scratch = malloc(sizeof(int32_t) * M * N);
    sq_gemm_epilogue ep = {.out_scale = one, .acc_off = off, .bias = zero, .y = y, .ldy = N};
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        if (!sq_isa_supported((sq_isa)isa, NULL))
            continue; /* reported by the test above */
        ck_assert_int_eq(sq_gemm_s8_fused((sq_isa)isa, a, M, (size_t)q.k_pad, &q, &ep, scratch), 0);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t want = (int64_t)K * (127 + z) * wv[(size_t)n * K];
                ck_assert_msg(y[m * N + n] == (float)want, "%s: y[%d][%d] = %.1f, want %lld",
                              sq_isa_name((sq_isa)isa), m, n, (double)y[m * N + n],
                              (long long)want);
            }
        printf("%s: int8 zero point %d, K=%d exact (y[0][0] = %.0f)\n", sq_isa_name((sq_isa)isa),
               z, K, (double)y[0]);
    }
    free(scratch);
    free(a);
    free(wv);
    sq_qweight_free(&q);
}
END_TEST

/* int4 at its extremes (|w| = 7, |a| = 127) over 40 groups: every ISA gives
 * the scalar bits. */
START_TEST(int4_extremes_every_isa)
{
    enum { M = 6, N = 48, K = 40 * 128 };
    sq_err err;
    sq_qweight q;
    ck_assert_int_eq(sq_qweight_alloc(&q, SQ_QT_S4G128, N, K, &err), 0);
    int8_t *wv = malloc((size_t)N * K);
    for (size_t i = 0; i < (size_t)N * K; i++)
        wv[i] = rng() % 2 ? 7 : -7;
    sq_pack(&q, wv);
    for (size_t i = 0; i < (size_t)N * sq_qweight_groups(&q); i++)
        q.scale[i] = 1.0f + (float)(i % 7) / 8;
    int8_t *a = malloc((size_t)M * K);
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = rng() % 2 ? 127 : -127;
    float ref[M * N], got[M * N];
    ck_assert_int_eq(sq_gemm_s4(SQ_ISA_SCALAR, a, M, K, &q, ref, N), 0);
    for (int isa = 1; isa < SQ_ISA_COUNT; isa++) {
        if (!sq_isa_supported((sq_isa)isa, NULL))
            continue;
        ck_assert_int_eq(sq_gemm_s4((sq_isa)isa, a, M, K, &q, got, N), 0);
        ck_assert_msg(memcmp(ref, got, sizeof ref) == 0, "%s int4 extremes differ from scalar",
                      sq_isa_name((sq_isa)isa));
        printf("%s: int4 extremes = scalar bits\n", sq_isa_name((sq_isa)isa));
    }
    free(a);
    free(wv);
    sq_qweight_free(&q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qweight_check");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, int8_rules);
    tcase_add_test(tc, int4_rules);
    tcase_add_test(tc, int8_accumulator_bound_every_isa);
    tcase_add_test(tc, int8_zero_point_bound_every_isa);
    tcase_add_test(tc, int4_extremes_every_isa);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

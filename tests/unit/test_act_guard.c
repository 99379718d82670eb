/* The out-of-range guard of the activation quantize step
 * (sq_gemm_quantize_acts_guard, gemm_s8.h) and its epilogue:
 *   - rows inside the static range keep the plain step's codes, row_scale 0;
 *   - a row beyond it (either side, with or without a zero point) gets
 *     q_j = round(x_j * (m_j * (127 / a))) and row_scale a / 127, a its
 *     max |x_j m_j|; a row with inf keeps the clipped codes; NaN is ignored;
 *   - rows are independent: one at a time, in any batching, the same bytes;
 *   - the fused epilogue with row_scale gives the same bits on every ISA the
 *     CPU has as the formula in plain C;
 *   - what it is for: one huge value in a row destroys that row's output
 *     when clipped, and costs it only resolution when guarded. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_s8.h"
#include "pack.h"
#include "qlinear_ref.h"

enum { K = 77, KP = 80 };

static uint64_t rng_state = 0x5851f42d4c957f2dull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

/* The guard's codes for one row, from its definition. */
static float ref_row(const float *x, const float *m, int z, int8_t *q)
{
    float lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < K; j++) {
        float v = x[j] * m[j];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    float a = fmaxf(fabsf(lo), fabsf(hi));
    if (!(roundf(hi) - (float)z > 127.0f || roundf(lo) - (float)z < -127.0f) || !isfinite(a)) {
        for (int j = 0; j < K; j++)
            q[j] = sq_ref_round_s8_zp(x[j] * m[j], z);
        return 0;
    }
    float inv = 127.0f / a;
    for (int j = 0; j < K; j++)
        q[j] = sq_ref_round_s8(x[j] * (m[j] * inv));
    return a / 127.0f;
}

START_TEST(codes_and_scales)
{
    enum { R = 150 }; /* more than the function's 64-row chunks */
    static float x[R * K], m[K], rs[R], rs1[R];
    static int8_t qa[R * KP], q1[R * KP], want[K];
    for (int j = 0; j < K; j++)
        m[j] = 20.0f + 10.0f * frand(); /* codes of |x| <= 1 stay well inside */
    for (int z = -100; z <= 100; z += 100) {
        for (int i = 0; i < R * K; i++)
            x[i] = 0.5f * frand(); /* |x m| <= 15: inside the range for every z tried */
        /* Row kinds by r % 10: 0 positive spike, 1 negative spike, 2 just
         * inside, 3 just beyond, 4 inf (stays clipped), 5 NaN + spike,
         * others ordinary. */
        for (int r = 0; r < R; r++) {
            float *xr = x + r * K;
            switch (r % 10) {
            case 0: xr[r % K] = 300.0f / m[r % K]; break;
            case 1: xr[r % K] = -300.0f / m[r % K]; break;
            case 2: xr[5] = (126.4f + (float)z) / m[5]; break;
            case 3: xr[5] = (127.6f + (float)z) / m[5]; break;
            case 4: xr[9] = INFINITY; break;
            case 5: xr[3] = NAN; xr[40] = 500.0f / m[40]; break;
            default: break;
            }
        }
        int n = sq_gemm_quantize_acts_guard(x, R, K, K, m, z, qa, KP, KP, rs);
        int guarded = 0;
        for (int r = 0; r < R; r++) {
            float s = ref_row(x + r * K, m, z, want);
            guarded += s > 0;
            ck_assert_msg(rs[r] == s, "z %d row %d: row_scale %g, want %g", z, r, (double)rs[r],
                          (double)s);
            ck_assert_msg(memcmp(qa + r * KP, want, K) == 0, "z %d row %d: codes differ", z, r);
            for (int j = K; j < KP; j++)
                ck_assert_int_eq(qa[r * KP + j], 0);
            if (r % 10 == 0 || r % 10 == 1 || r % 10 == 5)
                ck_assert_msg(s > 1, "z %d row %d should be guarded", z, r);
            if (r % 10 == 2 || r % 10 == 4)
                ck_assert_msg(s == 0, "z %d row %d should not be guarded", z, r);
        }
        ck_assert_int_eq(n, guarded);
        /* Row by row: the same bytes. */
        for (int r = 0; r < R; r++)
            sq_gemm_quantize_acts_guard(x + r * K, 1, K, K, m, z, q1 + r * KP, KP, KP, rs1 + r);
        ck_assert(memcmp(qa, q1, sizeof qa) == 0 && memcmp(rs, rs1, sizeof rs) == 0);
        printf("z %4d: %d of %d rows guarded, codes and scales as defined\n", z, n, R);
    }
}
END_TEST

/* The epilogue with row_scale, int8 (with acc_off) and int4, every ISA. */
START_TEST(epilogue_every_isa)
{
    enum { M = 37, N = 45, KK = 256 };
    sq_err err;
    for (int qt = 0; qt < 2; qt++) {
        sq_qweight w;
        ck_assert_int_eq(sq_qweight_alloc(&w, qt ? SQ_QT_S4G128 : SQ_QT_S8, N, KK, &err), 0);
        int lim = qt ? 7 : 127;
        int8_t *v = malloc((size_t)N * KK), *a = malloc((size_t)M * w.k_pad);
        for (int i = 0; i < N * KK; i++)
            v[i] = (int8_t)lrintf(frand() * (float)lim);
        sq_pack(&w, v);
        for (int i = 0; i < N * sq_qweight_groups(&w); i++)
            w.scale[i] = 0.01f + 0.001f * (float)(i % 13);
        for (int i = 0; i < M * w.k_pad; i++)
            a[i] = (int8_t)lrintf(frand() * 127.0f);
        float out_scale[N], bias[N], rs[M], ref[M * N], y[M * N];
        int32_t off[N], scratch[M * N];
        for (int n = 0; n < N; n++) {
            out_scale[n] = 0.002f * (1 + n % 5);
            bias[n] = frand();
            off[n] = 3 * w.wsum[n];
        }
        for (int r = 0; r < M; r++)
            rs[r] = r % 3 == 0 ? 1.5f + (float)r : 0;
        sq_gemm_epilogue ep = {.out_scale = out_scale, .acc_off = qt ? NULL : off,
                               .act_scale = 0.03f, .bias = bias, .y = ref, .ldy = N,
                               .row_scale = rs};
        /* The definition in plain C, from the scalar GEMM. */
        if (qt)
            ck_assert_int_eq(sq_gemm_s4(SQ_ISA_SCALAR, a, M, w.k_pad, &w, (float *)scratch, N), 0);
        else
            ck_assert_int_eq(sq_gemm_s8(SQ_ISA_SCALAR, a, M, w.k_pad, &w, scratch, N), 0);
        for (int r = 0; r < M; r++)
            for (int n = 0; n < N; n++) {
                volatile float p;
                if (qt) {
                    float acc = ((float *)scratch)[r * N + n];
                    p = rs[r] > 0 ? acc * rs[r] : acc;
                    p = p * ep.act_scale;
                } else {
                    int32_t acc = scratch[r * N + n];
                    if (rs[r] > 0) {
                        p = (float)acc * rs[r];
                        p = p * out_scale[n];
                    } else {
                        p = (float)(acc + off[n]) * out_scale[n];
                    }
                }
                ref[r * N + n] = p + bias[n];
            }
        for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
            const char *missing;
            if (!sq_isa_supported((sq_isa)isa, &missing)) {
                printf("SKIPPED: %s (CPU lacks %s)\n", sq_isa_name((sq_isa)isa), missing);
                continue;
            }
            ep.y = y;
            int rc = qt ? sq_gemm_s4_fused((sq_isa)isa, a, M, w.k_pad, &w, &ep, (float *)scratch)
                        : sq_gemm_s8_fused((sq_isa)isa, a, M, w.k_pad, &w, &ep, scratch);
            ck_assert_int_eq(rc, 0);
            ck_assert_msg(memcmp(y, ref, sizeof y) == 0, "%s %s: guarded epilogue differs",
                          sq_isa_name((sq_isa)isa), qt ? "int4" : "int8");
            printf("%s %s: guarded and plain rows as defined\n", sq_isa_name((sq_isa)isa),
                   qt ? "int4" : "int8");
        }
        free(v);
        free(a);
        sq_qweight_free(&w);
    }
}
END_TEST

/* A row whose one value is 20x the static range: clipped, its output is
 * wrong; guarded, it is close to fp32. */
START_TEST(guard_keeps_a_spike)
{
    enum { N = 64, KK = 128 };
    float w[N * KK], x[KK], m[KK], wscale[N];
    int8_t qw[N * KK], qa[KK];
    for (int i = 0; i < N * KK; i++)
        w[i] = 0.05f * frand();
    for (int j = 0; j < KK; j++) {
        x[j] = frand();
        m[j] = 127.0f / 1.0f; /* static range [-1, 1] */
    }
    x[17] = 20.0f;
    sq_ref_quantize_weights(w, N, KK, qw, wscale);
    double e_clip = 0, e_guard = 0, norm = 0;
    float rs;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            sq_gemm_quantize_acts(x, 1, KK, KK, m, qa, KK, KK);
            rs = 0;
        } else {
            ck_assert_int_eq(sq_gemm_quantize_acts_guard(x, 1, KK, KK, m, 0, qa, KK, KK, &rs), 1);
        }
        for (int n = 0; n < N; n++) {
            int32_t acc = 0;
            double ref = 0;
            for (int j = 0; j < KK; j++) {
                acc += qa[j] * qw[n * KK + j];
                ref += (double)x[j] * w[n * KK + j];
            }
            double y = (double)acc * (rs > 0 ? rs : 1.0) / 127.0 * wscale[n];
            double *e = pass ? &e_guard : &e_clip;
            *e += (y - ref) * (y - ref);
            if (pass)
                norm += ref * ref;
        }
    }
    e_clip = sqrt(e_clip / norm);
    e_guard = sqrt(e_guard / norm);
    printf("one value at 20x the range: relative error clipped %.3f, guarded %.4f\n", e_clip,
           e_guard);
    ck_assert(e_clip > 0.3 && e_guard < 0.05);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("act_guard");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, codes_and_scales);
    tcase_add_test(tc, epilogue_every_isa);
    tcase_add_test(tc, guard_keeps_a_spike);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

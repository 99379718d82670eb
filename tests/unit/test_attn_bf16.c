/* bf16 attention matmuls (libquant/kernels/attn_bf16.h): the rounding rule, the
 * scalar definition against an f64 reference (bf16-sized tolerance), and
 * the AVX512-BF16 kernels against the scalar code bit for bit at lengths
 * around every block size (skipped, and said so, without AVX512-BF16). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "test_util.h"

static uint64_t rng = 88172645463325252ull;

static float f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

START_TEST(rounding_rule)
{
    ck_assert_uint_eq(sq_bf16_round(1.0f), 0x3f80);
    ck_assert_uint_eq(sq_bf16_round(-2.0f), 0xc000);
    /* ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 */
    ck_assert(f(sq_bf16_round(1.0f + 0x1p-8f)) == 1.0f);
    ck_assert(f(sq_bf16_round(1.0f + 0x1p-7f + 0x1p-8f)) == 1.0f + 0x1p-6f);
    ck_assert(f(sq_bf16_round(1.0f + 0x1p-8f + 0x1p-20f)) == 1.0f + 0x1p-7f);
    ck_assert(f(sq_bf16_round(0x1p-61f)) == 0.0f && !signbit(f(sq_bf16_round(0x1p-61f))));
    ck_assert(f(sq_bf16_round(-0x1p-61f)) == 0.0f && signbit(f(sq_bf16_round(-0x1p-61f))));
    ck_assert(f(sq_bf16_round(0x1p-60f)) == 0x1p-60f);
    ck_assert(isinf(f(sq_bf16_round(3.4e38f))));
    ck_assert(isnan(f(sq_bf16_round(NAN))));
    for (int i = 0; i < 100000; i++) { /* within half a bf16 ulp */
        float x = tu_frand(&rng) * 100.0f;
        if (fabsf(x) < 1e-3f)
            continue;
        ck_assert(fabsf(f(sq_bf16_round(x)) - x) <= fabsf(x) * 0x1p-8f);
    }
}
END_TEST

typedef struct head {
    int L, dh, ld;
    float *qkv, *S, *ctx;
    void *scratch;
} head;

static void make(head *h, int L, int dh)
{
    h->L = L, h->dh = dh, h->ld = 3 * dh + 5;
    h->qkv = malloc(sizeof(float) * (size_t)L * h->ld);
    h->S = malloc(sizeof(float) * (size_t)L * L);
    h->ctx = malloc(sizeof(float) * (size_t)L * (dh + 3));
    ck_assert(posix_memalign(&h->scratch, 64, sq_attn_bf16_scratch_bytes(L, dh)) == 0);
    for (int i = 0; i < L * h->ld; i++)
        h->qkv[i] = 3.0f * tu_frand(&rng) + (i % 29 == 0 ? 20.0f : 0.0f);
}

static void unmake(head *h)
{
    free(h->qkv), free(h->S), free(h->ctx), free(h->scratch);
}

/* S, a softmax in double, then ctx, all at level hw */
static void run(head *h, bool hw, float *S, float *ctx)
{
    const int L = h->L, dh = h->dh;
    const float c = 1.0f / sqrtf((float)dh);
    sq_attn_bf16_scores(h->qkv, h->qkv + dh, h->ld, L, dh, c, S, h->scratch, hw);
    for (int i = 0; i < L; i++) {
        float *r = S + (size_t)i * L, m = r[0];
        for (int j = 1; j < L; j++)
            m = r[j] > m ? r[j] : m;
        double s = 0;
        for (int j = 0; j < L; j++)
            s += exp((double)r[j] - m);
        for (int j = 0; j < L; j++)
            r[j] = (float)(exp((double)r[j] - m) / s);
    }
    sq_attn_bf16_context(S, h->qkv + 2 * dh, h->ld, L, dh, ctx, dh + 3, h->scratch, hw);
}

/* A sum that cancels into the subnormal range is flushed to a zero, as
 * vdpbf16ps does: 2^-120 (1 + 2^-7) - 2^-120 = 2^-127 -> 0. */
static float ftz_case(bool hw)
{
    float q[6] = {0x1p-60f, 0x1p-60f, -0x1p-60f, 0x1p-60f * (1 + 0x1p-7f), 0, 0}, S = 1;
    void *sc;
    ck_assert(posix_memalign(&sc, 64, sq_attn_bf16_scratch_bytes(1, 2)) == 0);
    sq_attn_bf16_scores(q, q + 2, 6, 1, 2, 1.0f, &S, sc, hw);
    free(sc);
    return S;
}

START_TEST(flush_to_zero)
{
    ck_assert(ftz_case(false) == 0.0f && !signbit(ftz_case(false)));
    if (sq_attn_bf16_hw())
        ck_assert(ftz_case(true) == 0.0f && !signbit(ftz_case(true)));
}
END_TEST

START_TEST(scalar_close_to_f64)
{
    head h;
    make(&h, 37, 32);
    run(&h, false, h.S, h.ctx);
    const int L = h.L, dh = h.dh;
    const double c = 1.0 / sqrt((double)(float)dh);
    double worst = 0;
    for (int i = 0; i < L; i++) {
        double s[64], m = -1e300, tot = 0;
        for (int j = 0; j < L; j++) {
            double d = 0;
            for (int t = 0; t < dh; t++)
                d += (double)h.qkv[(size_t)i * h.ld + t] * h.qkv[(size_t)j * h.ld + dh + t];
            s[j] = (float)c * d;
            m = fmax(m, s[j]);
        }
        for (int j = 0; j < L; j++)
            tot += s[j] = exp(s[j] - m);
        for (int d = 0; d < dh; d++) {
            double want = 0;
            for (int j = 0; j < L; j++)
                want += s[j] / tot * h.qkv[(size_t)j * h.ld + 2 * dh + d];
            worst = fmax(worst, fabs(h.ctx[(size_t)i * (dh + 3) + d] - want));
        }
    }
    /* bf16 operands: ~2^-9 relative per value; V values of a few units */
    ck_assert_msg(worst < 0.15, "bf16 ctx vs f64: max |diff| %g", worst);
    ck_assert_msg(worst > 1e-4, "max |diff| %g: the operands were not rounded to bf16", worst);
    unmake(&h);
}
END_TEST

START_TEST(hw_same_bits_as_scalar)
{
    if (!sq_attn_bf16_hw()) {
        printf("SKIPPED: vdpbf16ps path (this CPU lacks AVX512-BF16 or AVX-512)\n");
        return;
    }
    static const int Ls[] = {1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 100, 129, 256};
    static const int dhs[] = {2, 16, 32, 48, 64, 80};
    for (size_t a = 0; a < sizeof Ls / sizeof *Ls; a++)
        for (size_t b = 0; b < sizeof dhs / sizeof *dhs; b++) {
            head h;
            make(&h, Ls[a], dhs[b]);
            const int L = h.L, dh = h.dh;
            float *S2 = malloc(sizeof(float) * (size_t)L * L);
            float *c2 = malloc(sizeof(float) * (size_t)L * (dh + 3));
            for (int i = 0; i < L * (dh + 3); i++)
                h.ctx[i] = c2[i] = 7.0f; /* the padding columns stay untouched */
            run(&h, false, h.S, h.ctx);
            run(&h, true, S2, c2);
            ck_assert_msg(memcmp(h.S, S2, sizeof(float) * (size_t)L * L) == 0,
                          "scores differ at L %d dh %d", L, dh);
            ck_assert_msg(memcmp(h.ctx, c2, sizeof(float) * (size_t)L * (dh + 3)) == 0,
                          "context differs at L %d dh %d", L, dh);
            free(S2), free(c2);
            unmake(&h);
        }
    /* cancellation and tiny values: sums that land below 2^-126 */
    head h;
    make(&h, 20, 32);
    for (int i = 0; i < 20 * h.ld; i++)
        h.qkv[i] = (i % 2 ? 1.0f : -1.0f) * 0x1p-62f * (float)(1 + i % 5);
    float S1[400], S2[400], c1[20 * 35], c2[20 * 35];
    sq_attn_bf16_scores(h.qkv, h.qkv + 32, h.ld, 20, 32, 0.5f, S1, h.scratch, false);
    sq_attn_bf16_scores(h.qkv, h.qkv + 32, h.ld, 20, 32, 0.5f, S2, h.scratch, true);
    ck_assert(memcmp(S1, S2, sizeof S1) == 0);
    for (int i = 0; i < 20 * h.ld; i++)
        h.qkv[i] = tu_frand(&rng) * 0x1p-40f;
    for (int i = 0; i < 400; i++)
        S1[i] = tu_frand(&rng) * 0x1p-50f;
    sq_attn_bf16_context(S1, h.qkv, h.ld, 20, 32, c1, 35, h.scratch, false);
    sq_attn_bf16_context(S1, h.qkv, h.ld, 20, 32, c2, 35, h.scratch, true);
    for (int i = 0; i < 20; i++)
        ck_assert_msg(memcmp(c1 + i * 35, c2 + i * 35, 32 * sizeof(float)) == 0, "tiny row %d", i);
    unmake(&h);
}
END_TEST

/* The rounding of the operands on the vdpbf16ps path (vcvtneps2bf16 plus the
 * 2^-60 flush) against the rule's scalar form, value by value: a P row with
 * one value v and V all ones gives ctx = bf16(v) exactly (one product, no
 * sum), and a Q row (v, 0, ...) against K rows (1, 0, ...) gives S = bf16(v). */
START_TEST(hw_rounding_specials)
{
    if (!sq_attn_bf16_hw()) {
        printf("SKIPPED: vdpbf16ps rounding (this CPU lacks AVX512-BF16 or AVX-512)\n");
        return;
    }
    static const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 1.0f + 0x1p-8f, 1.0f + 0x1p-7f + 0x1p-8f,
                              1.0f + 0x1p-8f + 0x1p-20f, 0x1p-60f, -0x1p-60f, 0x1p-61f,
                              -0x1.fffffep-61f, 0x1p-126f, 0x1p-130f, -0x1p-140f, 0x1.fffffep127f,
                              -0x1.fffffep127f, 3.0e38f, INFINITY, -INFINITY, 0.333333f, 1e-3f,
                              65504.0f, 0x1.ff8p-50f, 0.99999994f};
    enum { N = sizeof v / sizeof *v, L = 32, DH = 16 };
    head h;
    make(&h, L, DH);
    static float P[L * L], c1[L * DH], c2[L * DH], S1[L * L], S2[L * L];
    memset(P, 0, sizeof P);
    for (int i = 0; i < L; i++)
        P[i * L + 0] = v[i % N];
    for (int j = 0; j < L; j++)
        for (int e = 0; e < h.ld; e++)
            h.qkv[j * h.ld + e] = 1.0f;
    sq_attn_bf16_context(P, h.qkv, h.ld, L, DH, c1, DH, h.scratch, false);
    sq_attn_bf16_context(P, h.qkv, h.ld, L, DH, c2, DH, h.scratch, true);
    for (int i = 0; i < L; i++) {
        ck_assert_msg(memcmp(c1 + i * DH, c2 + i * DH, DH * sizeof(float)) == 0,
                      "ctx of P value %a: hw %a, scalar %a", (double)v[i % N], (double)c2[i * DH],
                      (double)c1[i * DH]);
        float want = f(sq_bf16_round(v[i % N]));
        if (fabsf(want) >= 0x1p-126f) /* below that the sum's flush makes it a zero */
            ck_assert_msg(c2[i * DH] == want, "P value %a rounds to %a, not %a",
                          (double)v[i % N], (double)c2[i * DH], (double)want);
    }
    for (int i = 0; i < L; i++)
        for (int d = 0; d < DH; d++) {
            h.qkv[i * h.ld + d] = d == 0 ? v[i % N] : 0.0f;          /* Q */
            h.qkv[i * h.ld + DH + d] = d == 0 ? 1.0f : 0.0f;         /* K */
        }
    sq_attn_bf16_scores(h.qkv, h.qkv + DH, h.ld, L, DH, 1.0f, S1, h.scratch, false);
    sq_attn_bf16_scores(h.qkv, h.qkv + DH, h.ld, L, DH, 1.0f, S2, h.scratch, true);
    ck_assert(memcmp(S1, S2, sizeof S1) == 0);
    unmake(&h);
}
END_TEST

/* M query rows against N keys with their own strides (a decoder's new
 * rows against its cache): each row's bits equal the square problem's
 * (the last M rows of an N x N head) and that row alone (M = 1), on the
 * scalar path and, where the CPU has it, vdpbf16ps. */
START_TEST(rectangular_and_row_independent)
{
    static const int shapes[][3] = {{1, 1, 2}, {1, 17, 8}, {3, 40, 8}, {8, 9, 16}, {9, 33, 64},
                                    {17, 100, 32}, {5, 257, 80}};
    for (int hw = 0; hw <= 1; hw++) {
        if (hw && !sq_attn_bf16_hw()) {
            printf("SKIPPED: rectangular bf16 attention on vdpbf16ps (this CPU lacks "
                   "AVX512-BF16 or the AVX-512 ops level)\n");
            break;
        }
        for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
            const int M = shapes[k][0], N = shapes[k][1], dh = shapes[k][2];
            head h;
            make(&h, N, dh);
            run(&h, hw, h.S, h.ctx); /* the square problem: S is the softmax after */
            const float c = 1.0f / sqrtf((float)dh);
            const int lds = N + 5, ldc = dh + 2;
            float *S = malloc(sizeof(float) * (size_t)M * lds), *C = malloc(sizeof(float) * (size_t)M * ldc);
            void *scr = NULL;
            ck_assert(posix_memalign(&scr, 64, sq_attn_bf16_scratch_bytes_mn(M, N, dh)) == 0);
            const float *Q = h.qkv + (size_t)(N - M) * h.ld;
            sq_attn_bf16_scores_mn(Q, h.ld, M, h.qkv + dh, h.ld, N, dh, c, S, lds, scr, hw);
            /* the square scores again (run() overwrote S with the softmax) */
            float *Sq = malloc(sizeof(float) * (size_t)N * N);
            sq_attn_bf16_scores(h.qkv, h.qkv + dh, h.ld, N, dh, c, Sq, h.scratch, hw);
            for (int r = 0; r < M; r++)
                ck_assert_msg(memcmp(S + (size_t)r * lds, Sq + (size_t)(N - M + r) * N,
                                     sizeof(float) * N) == 0,
                              "hw %d: scores row %d differ at M %d N %d dh %d", hw, r, M, N, dh);
            /* the context of the square softmax's last M rows */
            for (int r = 0; r < M; r++)
                memcpy(S + (size_t)r * lds, h.S + (size_t)(N - M + r) * N, sizeof(float) * N);
            sq_attn_bf16_context_mn(S, lds, M, h.qkv + 2 * dh, h.ld, N, dh, C, ldc, scr, hw);
            for (int r = 0; r < M; r++)
                ck_assert_msg(memcmp(C + (size_t)r * ldc, h.ctx + (size_t)(N - M + r) * (dh + 3),
                                     sizeof(float) * dh) == 0,
                              "hw %d: context row %d differs at M %d N %d dh %d", hw, r, M, N, dh);
            /* the last row alone */
            float S1[300], C1[100];
            sq_attn_bf16_scores_mn(Q + (size_t)(M - 1) * h.ld, h.ld, 1, h.qkv + dh, h.ld, N, dh, c,
                                   S1, N, scr, hw);
            ck_assert(memcmp(S1, Sq + (size_t)(N - 1) * N, sizeof(float) * N) == 0);
            sq_attn_bf16_context_mn(h.S + (size_t)(N - 1) * N, N, 1, h.qkv + 2 * dh, h.ld, N, dh,
                                    C1, dh, scr, hw);
            ck_assert(memcmp(C1, h.ctx + (size_t)(N - 1) * (dh + 3), sizeof(float) * dh) == 0);
            free(S), free(C), free(Sq), free(scr);
            unmake(&h);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_bf16");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rounding_rule);
    tcase_add_test(tc, flush_to_zero);
    tcase_add_test(tc, scalar_close_to_f64);
    tcase_add_test(tc, hw_same_bits_as_scalar);
    tcase_add_test(tc, hw_rounding_specials);
    tcase_add_test(tc, rectangular_and_row_independent);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

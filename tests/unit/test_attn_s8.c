/* int8 attention (libquant/kernels/attn_s8.h): the scalar definition against an
 * f64 attention (an int8-sized tolerance that a broken quantizer fails),
 * the int8 softmax codes at every ops level, and the AVX512-VNNI kernels
 * against the scalar code bit for bit at lengths and head widths around
 * every block size (skipped, and said so, without AVX512-VNNI). The
 * causal form (decoders): against an f64 causal attention, each row's bits
 * alone equal to a prefill's, and the two paths' bits. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_s8.h"
#include "ops.h"
#include "test_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

typedef struct head {
    int L, dh, ld, ldc;
    float *qkv, *ctx;
    void *scratch;
} head;

static void make(head *h, int L, int dh, float spread)
{
    h->L = L, h->dh = dh, h->ld = 3 * dh + 5, h->ldc = dh + 3;
    h->qkv = malloc(sizeof(float) * (size_t)L * h->ld);
    h->ctx = malloc(sizeof(float) * (size_t)L * h->ldc);
    ck_assert(posix_memalign(&h->scratch, 64, sq_attn_s8_scratch_bytes(L, dh)) == 0);
    for (int i = 0; i < L * h->ld; i++)
        h->qkv[i] = tu_frand(&rng) * spread;
    for (int i = 0; i < L * h->ldc; i++)
        h->ctx[i] = 7.0f; /* the padding columns stay untouched */
}

static void unmake(head *h)
{
    free(h->qkv);
    free(h->ctx);
    free(h->scratch);
}

static void run_rel(head *h, bool hw, const float *rel, float *ctx, float *prange)
{
    sq_attn_s8_head(h->qkv, h->qkv + h->dh, h->qkv + 2 * h->dh, h->ld, h->L, h->dh,
                    1.0f / sqrtf((float)h->dh), rel, -1, ctx, h->ldc, h->scratch, hw, prange, NULL);
}

static void run(head *h, bool hw, float *ctx, float *prange)
{
    run_rel(h, hw, NULL, ctx, prange);
}

/* max |ctx - f64 attention| over the head, with the bias rel[j - i] on
 * score (i, j) (NULL: none) */
static double error_vs_f64_rel(const head *h, const float *ctx, const float *rel)
{
    const int L = h->L, dh = h->dh;
    const double c = 1.0f / sqrtf((float)dh);
    double worst = 0, *s = malloc(sizeof(double) * (size_t)L);
    for (int i = 0; i < L; i++) {
        double m = -1e300, tot = 0;
        for (int j = 0; j < L; j++) {
            double d = 0;
            for (int t = 0; t < dh; t++)
                d += (double)h->qkv[(size_t)i * h->ld + t] * h->qkv[(size_t)j * h->ld + dh + t];
            s[j] = c * d + (rel ? rel[j - i] : 0.0);
            m = fmax(m, s[j]);
        }
        for (int j = 0; j < L; j++)
            tot += s[j] = exp(s[j] - m);
        for (int d = 0; d < dh; d++) {
            double want = 0;
            for (int j = 0; j < L; j++)
                want += s[j] / tot * h->qkv[(size_t)j * h->ld + 2 * dh + d];
            worst = fmax(worst, fabs(ctx[(size_t)i * h->ldc + d] - want));
        }
    }
    free(s);
    return worst;
}

static double error_vs_f64(const head *h, const float *ctx)
{
    return error_vs_f64_rel(h, ctx, NULL);
}

START_TEST(scalar_close_to_f64)
{
    head h;
    make(&h, 77, 32, 3.0f); /* peaked scores: |S| up to a few units */
    float pr[2] = {1.0f, 0.0f};
    run(&h, false, h.ctx, pr);
    double worst = error_vs_f64(&h, h.ctx);
    /* V in [-3, 3]: steps of 3/127; P in steps of 1/255 of the row max */
    ck_assert_msg(worst < 0.06, "int8 ctx vs f64: max |diff| %g", worst);
    ck_assert_msg(worst > 1e-4, "max |diff| %g: the operands were not quantized", worst);
    ck_assert(pr[0] >= 0.0f && pr[1] <= 1.0f && pr[0] <= pr[1]);
    /* the bound can fail: V quantized to 4 bits (levels -7..7 of max|V|)
     * before the int8 attention, against the exact attention of the
     * original V, is well outside it */
    head bad = h;
    bad.qkv = malloc(sizeof(float) * (size_t)h.L * h.ld);
    memcpy(bad.qkv, h.qkv, sizeof(float) * (size_t)h.L * h.ld);
    for (int j = 0; j < h.L; j++)
        for (int d = 0; d < h.dh; d++) {
            float *v = &bad.qkv[(size_t)j * h.ld + 2 * h.dh + d];
            *v = roundf(*v * 7.0f / 3.0f) * 3.0f / 7.0f;
        }
    float *ctx_bad = malloc(sizeof(float) * (size_t)h.L * h.ldc);
    memcpy(ctx_bad, h.ctx, sizeof(float) * (size_t)h.L * h.ldc);
    run(&bad, false, ctx_bad, NULL);
    double e_bad = error_vs_f64(&h, ctx_bad);
    ck_assert_msg(e_bad > 0.06, "a 4-bit V passes the int8 bound (%g)", e_bad);
    free(ctx_bad);
    free(bad.qkv);
    unmake(&h);
}
END_TEST

/* MPNet's relative bias (rel[j - i] added to score (i, j) before the
 * softmax): the scalar definition close to an f64 attention with the bias,
 * far from one without it (so the bias is applied), and the VNNI path the
 * same bits. */
START_TEST(relative_bias)
{
    head h;
    const int L = 77;
    make(&h, L, 32, 3.0f);
    float *table = malloc(sizeof(float) * (size_t)(2 * L - 1)), *rel = table + L - 1;
    for (int d = -(L - 1); d <= L - 1; d++) /* self strongly suppressed, as trained MPNet */
        rel[d] = d == 0 ? -8.0f : 2.0f * tu_frand(&rng);
    run_rel(&h, false, rel, h.ctx, NULL);
    double with = error_vs_f64_rel(&h, h.ctx, rel), without = error_vs_f64(&h, h.ctx);
    printf("attn_s8 relative_bias: max |int8 - f64| %.4f with the bias, %.4f against f64 without it\n", with, without);
    ck_assert_msg(with < 0.08, "int8 ctx with bias vs f64 with bias: %g", with);
    ck_assert_msg(without > 0.1, "the bias changes nothing (%g against f64 without it)", without);
    if (sq_attn_s8_hw()) {
        float *hw = malloc(sizeof(float) * (size_t)L * h.ldc);
        memcpy(hw, h.ctx, sizeof(float) * (size_t)L * h.ldc);
        run_rel(&h, true, rel, hw, NULL);
        ck_assert_msg(memcmp(hw, h.ctx, sizeof(float) * (size_t)L * h.ldc) == 0,
                      "vpdpbusd with a relative bias differs from the scalar definition");
        free(hw);
    } else {
        printf("attn_s8 relative_bias: SKIPPED the VNNI comparison (no AVX512-VNNI)\n");
    }
    free(table);
    unmake(&h);
}
END_TEST

START_TEST(zero_and_constant_rows)
{
    head h;
    make(&h, 9, 16, 1.0f);
    for (int t = 0; t < 16; t++) /* Q row 0 and K row 3 all zero, V channel 5 zero */
        h.qkv[t] = 0.0f, h.qkv[(size_t)3 * h.ld + 16 + t] = 0.0f;
    for (int j = 0; j < 9; j++)
        h.qkv[(size_t)j * h.ld + 32 + 5] = 0.0f;
    run(&h, false, h.ctx, NULL);
    for (int i = 0; i < 9; i++)
        ck_assert(h.ctx[(size_t)i * h.ldc + 5] == 0.0f);
    for (int i = 0; i < 9 * h.ldc; i++)
        ck_assert(isfinite(h.ctx[i]));
    /* Q row 0 is zero: its scores are all 0, the probabilities uniform,
     * ctx row 0 the mean of the quantized V */
    float want = 0;
    for (int j = 0; j < 9; j++)
        want += h.qkv[(size_t)j * h.ld + 32];
    ck_assert_msg(fabsf(h.ctx[0] - want / 9) < 0.02f, "uniform row: %g vs %g", h.ctx[0], want / 9);
    unmake(&h);
}
END_TEST

START_TEST(softmax_codes_every_level)
{
    float x[300];
    uint8_t a[300], b[300];
    const sq_ops_level saved = sq_ops_get_level();
    for (int n = 1; n <= 300; n += 7) {
        for (int i = 0; i < n; i++)
            x[i] = tu_frand(&rng) * 12.0f;
        if (n > 3)
            x[2] = NAN;
        int za = sq_softmax_row_u8_scalar(x, n, a);
        int z = 0, top = 0;
        for (int i = 0; i < n; i++)
            z += a[i], top = a[i] > top ? a[i] : top;
        ck_assert_int_eq(z, za);
        ck_assert_int_eq(top, 255); /* the row maximum is exp(0) = 1 */
        for (sq_ops_level lv = SQ_OPS_SCALAR; lv <= SQ_OPS_AVX512; lv++) {
            if (!sq_ops_set_level(lv)) {
                if (n == 1)
                    printf("softmax codes at ops level %d: skipped (not on this CPU)\n", (int)lv);
                continue;
            }
            int zb = sq_softmax_row_u8(x, n, b);
            ck_assert_int_eq(za, zb);
            ck_assert_msg(memcmp(a, b, (size_t)n) == 0, "codes differ at level %d, n %d", (int)lv, n);
        }
    }
    ck_assert(sq_ops_set_level(saved));
}
END_TEST

START_TEST(hw_same_bits_as_scalar)
{
    if (!sq_attn_s8_hw()) {
        printf("SKIPPED: vpdpbusd int8 attention (this CPU lacks AVX512-VNNI or AVX-512)\n");
        return;
    }
    static const int Ls[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 129, 256};
    static const int dhs[] = {1, 3, 16, 20, 32, 48, 64, 80};
    for (size_t a = 0; a < sizeof Ls / sizeof *Ls; a++)
        for (size_t b = 0; b < sizeof dhs / sizeof *dhs; b++) {
            head h;
            make(&h, Ls[a], dhs[b], 2.0f);
            float *c2 = malloc(sizeof(float) * (size_t)h.L * h.ldc);
            memcpy(c2, h.ctx, sizeof(float) * (size_t)h.L * h.ldc);
            float p1[2] = {1, 0}, p2[2] = {1, 0};
            run(&h, false, h.ctx, p1);
            run(&h, true, c2, p2);
            ck_assert_msg(memcmp(h.ctx, c2, sizeof(float) * (size_t)h.L * h.ldc) == 0,
                          "ctx differs at L %d, dh %d", h.L, h.dh);
            ck_assert(p1[0] == p2[0] && p1[1] == p2[1]);
            free(c2);
            unmake(&h);
        }
}
END_TEST

/* ---- the causal form (decoders) ---- */

/* One causal problem: N rows of q|k|v in qkv (stride ld) put into a cache
 * (each key and value quantized once, as a decoder does); the last M rows
 * are the queries, first = N - M + 1 (the first query sees N - M + 1 keys). */
static void run_causal(const head *h, int M, bool hw, float *ctx)
{
    const int N = h->L, dh = h->dh;
    void *mem = NULL, *scr = NULL;
    ck_assert(posix_memalign(&mem, 64, sq_attn_s8_cache_bytes(N, dh)) == 0);
    ck_assert(posix_memalign(&scr, 64, sq_attn_s8_causal_scratch_bytes(M, N, dh)) == 0);
    sq_attn_s8_cache kv;
    sq_attn_s8_cache_init(&kv, mem, N, dh);
    for (int j = 0; j < N; j++)
        sq_attn_s8_cache_put(&kv, j, h->qkv + (size_t)j * h->ld + dh,
                             h->qkv + (size_t)j * h->ld + 2 * dh, hw);
    const float *Q = h->qkv + (size_t)(N - M) * h->ld;
    sq_attn_s8_causal_cached(Q, h->ld, M, &kv, N, N - M + 1, 1.0f / sqrtf((float)dh), ctx,
                             h->ldc, scr, hw);
    free(mem);
    free(scr);
}

/* max |ctx - f64 causal attention| over the last M rows */
static double causal_error(const head *h, int M, const float *ctx)
{
    const int N = h->L, dh = h->dh;
    const double c = 1.0f / sqrtf((float)dh);
    double worst = 0, *s = malloc(sizeof(double) * (size_t)N);
    for (int r = 0; r < M; r++) {
        const int i = N - M + r, n = i + 1;
        double m = -1e300, tot = 0;
        for (int j = 0; j < n; j++) {
            double d = 0;
            for (int t = 0; t < dh; t++)
                d += (double)h->qkv[(size_t)i * h->ld + t] * h->qkv[(size_t)j * h->ld + dh + t];
            s[j] = c * d;
            m = fmax(m, s[j]);
        }
        for (int j = 0; j < n; j++)
            tot += s[j] = exp(s[j] - m);
        for (int d = 0; d < dh; d++) {
            double want = 0;
            for (int j = 0; j < n; j++)
                want += s[j] / tot * h->qkv[(size_t)j * h->ld + 2 * dh + d];
            worst = fmax(worst, fabs(ctx[(size_t)r * h->ldc + d] - want));
        }
    }
    free(s);
    return worst;
}

START_TEST(causal_close_to_f64)
{
    head h;
    make(&h, 77, 32, 3.0f);
    run_causal(&h, 77, false, h.ctx); /* a whole prefill */
    double worst = causal_error(&h, 77, h.ctx);
    ck_assert_msg(worst < 0.06, "causal int8 ctx vs f64: max |diff| %g", worst);
    ck_assert_msg(worst > 1e-4, "max |diff| %g: the operands were not quantized", worst);
    /* row 0 sees key 0 only: its context is V row 0, quantized */
    for (int d = 0; d < 32; d++)
        ck_assert(fabsf(h.ctx[d] - h.qkv[64 + d]) <= 3.0f / 127.0f);
    /* the check can fail: attending to every key (no mask) is far outside it */
    float *full = malloc(sizeof(float) * (size_t)h.L * h.ldc);
    memcpy(full, h.ctx, sizeof(float) * (size_t)h.L * h.ldc);
    run(&h, false, full, NULL);
    ck_assert_msg(causal_error(&h, 77, full) > 0.2, "the mask makes no difference here");
    free(full);
    unmake(&h);
}
END_TEST

START_TEST(causal_row_alone_equals_prefill)
{
    /* each row's bits do not depend on how many rows run with it: the
     * last M rows at once against each of them alone (M = 1), at every
     * path this CPU has */
    static const int Ns[] = {1, 2, 5, 9, 16, 17, 40, 64, 65, 130};
    static const int dhs[] = {3, 4, 8, 16, 64};
    for (int hw = 0; hw <= 1; hw++) {
        if (hw && !sq_attn_s8_hw()) {
            printf("SKIPPED: causal int8 attention on vpdpbusd (this CPU lacks AVX512-VNNI or "
                   "AVX-512)\n");
            break;
        }
        for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
            for (size_t b = 0; b < sizeof dhs / sizeof *dhs; b++) {
                head h;
                make(&h, Ns[a], dhs[b], 2.0f);
                const int N = h.L, M = N < 41 ? N : 41;
                run_causal(&h, M, hw, h.ctx);
                float *one = malloc(sizeof(float) * (size_t)h.ldc);
                for (int r = 0; r < M; r++) {
                    head k = h; /* the first N - M + r + 1 rows: the cache then */
                    k.L = N - M + r + 1;
                    run_causal(&k, 1, hw, one);
                    ck_assert_msg(memcmp(one, h.ctx + (size_t)r * h.ldc, sizeof(float) * h.dh) == 0,
                                  "row %d of %d differs alone (N %d, dh %d, hw %d)", r, M, N, h.dh, hw);
                }
                free(one);
                unmake(&h);
            }
    }
}
END_TEST

START_TEST(causal_hw_same_bits_as_scalar)
{
    if (!sq_attn_s8_hw()) {
        printf("SKIPPED: causal int8 attention on vpdpbusd (this CPU lacks AVX512-VNNI or "
               "AVX-512)\n");
        return;
    }
    static const int Ns[] = {1, 2, 3, 4, 7, 8, 9, 63, 64, 65, 100, 129, 256};
    static const int dhs[] = {1, 3, 8, 16, 20, 32, 48, 64, 80};
    for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
        for (size_t b = 0; b < sizeof dhs / sizeof *dhs; b++)
            for (int M = 1; M <= Ns[a]; M = M < 9 ? M + 4 : M * 3) {
                head h;
                make(&h, Ns[a], dhs[b], 2.0f);
                float *c2 = malloc(sizeof(float) * (size_t)h.L * h.ldc);
                memcpy(c2, h.ctx, sizeof(float) * (size_t)h.L * h.ldc);
                run_causal(&h, M, false, h.ctx);
                run_causal(&h, M, true, c2);
                ck_assert_msg(memcmp(h.ctx, c2, sizeof(float) * (size_t)M * h.ldc) == 0,
                              "causal ctx differs at N %d, M %d, dh %d", h.L, M, h.dh);
                free(c2);
                unmake(&h);
            }
}
END_TEST

START_TEST(causal_cache_decoding_equals_prefill)
{
    /* a decoder's use: one cache, each step puts its key and value and runs
     * its one row; every row equals the prefill's (the same quantize step
     * per row, whatever the path) */
    for (int hw = 0; hw <= 1; hw++) {
        if (hw && !sq_attn_s8_hw()) {
            printf("SKIPPED: the causal int8 cache on vpdpbusd (this CPU lacks AVX512-VNNI or "
                   "AVX-512)\n");
            break;
        }
        head h;
        make(&h, 70, 8, 2.0f);
        run_causal(&h, 70, hw, h.ctx);
        const int cap = 100;
        void *mem = NULL, *scr = NULL;
        ck_assert(posix_memalign(&mem, 64, sq_attn_s8_cache_bytes(cap, 8)) == 0);
        ck_assert(posix_memalign(&scr, 64, sq_attn_s8_causal_scratch_bytes(1, cap, 8)) == 0);
        sq_attn_s8_cache kv;
        sq_attn_s8_cache_init(&kv, mem, cap, 8);
        float one[8];
        for (int i = 0; i < 70; i++) {
            const float *row = h.qkv + (size_t)i * h.ld;
            sq_attn_s8_cache_put(&kv, i, row + 8, row + 16, hw);
            sq_attn_s8_causal_cached(row, h.ld, 1, &kv, i + 1, i + 1, 1.0f / sqrtf(8.0f), one, 8,
                                     scr, hw);
            ck_assert_msg(memcmp(one, h.ctx + (size_t)i * h.ldc, sizeof one) == 0,
                          "step %d differs from the prefill's row (hw %d)", i, hw);
        }
        free(mem);
        free(scr);
        unmake(&h);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_s8");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, scalar_close_to_f64);
    tcase_add_test(tc, relative_bias);
    tcase_add_test(tc, zero_and_constant_rows);
    tcase_add_test(tc, softmax_codes_every_level);
    tcase_add_test(tc, hw_same_bits_as_scalar);
    tcase_add_test(tc, causal_close_to_f64);
    tcase_add_test(tc, causal_row_alone_equals_prefill);
    tcase_add_test(tc, causal_hw_same_bits_as_scalar);
    tcase_add_test(tc, causal_cache_decoding_equals_prefill);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

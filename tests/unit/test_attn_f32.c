/* f32 attention matmuls (libquant/kernels/attn_f32.h): the scalar definition
 * against an f64 reference, and the AVX2 and AVX-512 kernels against the
 * scalar code bit for bit, at lengths and head widths around every tile
 * size, with Q, K, V inside a wider qkv row as the encoder passes them.
 * The levels this CPU lacks are skipped, and said so. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_f32.h"
#include "ops.h"
#include "test_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static const int shapes[][2] = {{1, 1},  {2, 3},   {7, 16},  {8, 32},   {9, 17},  {31, 32},
                                {33, 33}, {64, 64}, {65, 48}, {100, 80}, {257, 32}};
#define LEN(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* aligned_alloc wants a size that is a multiple of the alignment. */
static float *floats64(size_t n)
{
    return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
}

typedef struct run {
    float *S, *ctx;
} run;

/* S and ctx of one (L, dh) problem at the current ops level. */
static run compute(const float *qkv, int ld, int L, int dh, float c)
{
    run r = {floats64((size_t)L * L + 16), floats64((size_t)L * dh + 16)};
    float *scr = floats64(sq_attn_f32_scratch_floats(L, dh) + 16);
    ck_assert(r.S && r.ctx && scr);
    sq_attn_f32_scores(qkv, qkv + dh, ld, L, dh, c, r.S, scr);
    for (int i = 0; i < L; i++) /* a probability-like P from S, as softmax would give */
        for (int j = 0; j < L; j++)
            r.S[(size_t)i * L + j] = fabsf(r.S[(size_t)i * L + j]) / (float)L;
    sq_attn_f32_context(r.S, qkv + 2 * dh, ld, L, dh, r.ctx, dh);
    free(scr);
    return r;
}

START_TEST(levels_agree_and_match_reference)
{
    const sq_ops_level saved = sq_ops_get_level();
    for (int s = 0; s < LEN(shapes); s++) {
        const int L = shapes[s][0], dh = shapes[s][1], ld = 3 * dh + 5; /* rows wider than Q|K|V */
        float *qkv = malloc(sizeof(float) * (size_t)L * ld);
        for (int i = 0; i < L * ld; i++)
            qkv[i] = tu_frand(&rng);
        const float c = 1.0f / sqrtf((float)dh);
        ck_assert(sq_ops_set_level(SQ_OPS_SCALAR));
        run ref = compute(qkv, ld, L, dh, c);
        /* the definition against f64: S before the |.| / L, then ctx */
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) {
                double acc = 0;
                for (int d = 0; d < dh; d++)
                    acc += (double)qkv[(size_t)i * ld + d] * qkv[(size_t)j * ld + dh + d];
                double want = fabs(c * acc) / L;
                ck_assert_msg(fabs(ref.S[(size_t)i * L + j] - want) <= 1e-6 * (1 + fabs(want)) * dh,
                              "L %d dh %d: S[%d][%d] %g vs f64 %g", L, dh, i, j,
                              (double)ref.S[(size_t)i * L + j], want);
            }
        for (int i = 0; i < L; i++)
            for (int e = 0; e < dh; e++) {
                double acc = 0;
                for (int j = 0; j < L; j++)
                    acc += (double)ref.S[(size_t)i * L + j] * qkv[(size_t)j * ld + 2 * dh + e];
                ck_assert_msg(fabs(ref.ctx[(size_t)i * dh + e] - acc) <= 1e-6 * (1 + fabs(acc)) * L,
                              "L %d dh %d: ctx[%d][%d] %g vs f64 %g", L, dh, i, e,
                              (double)ref.ctx[(size_t)i * dh + e], acc);
            }
        for (sq_ops_level lv = SQ_OPS_AVX2; lv <= SQ_OPS_AVX512; lv++) {
            const char *name = lv == SQ_OPS_AVX2 ? "avx2" : "avx512";
            if (!sq_ops_set_level(lv)) {
                if (s == 0)
                    printf("attn_f32 %s: skipped (not on this CPU)\n", name);
                continue;
            }
            run got = compute(qkv, ld, L, dh, c);
            ck_assert_msg(memcmp(got.S, ref.S, sizeof(float) * (size_t)L * L) == 0,
                          "%s: scores differ from the scalar definition at L %d dh %d", name, L, dh);
            ck_assert_msg(memcmp(got.ctx, ref.ctx, sizeof(float) * (size_t)L * dh) == 0,
                          "%s: context differs from the scalar definition at L %d dh %d", name, L,
                          dh);
            if (s == LEN(shapes) - 1)
                printf("attn_f32 %s: the scalar bits at %d shapes\n", name, LEN(shapes));
            free(got.S);
            free(got.ctx);
        }
        free(ref.S);
        free(ref.ctx);
        free(qkv);
    }
    ck_assert(sq_ops_set_level(saved));
}
END_TEST

/* M queries x N keys with their own strides (a causal LM's new rows
 * against its cache; libquant's decoder attention): every level gives the
 * scalar bits, and row i's scores and context do not depend on how many
 * rows were computed with it (prefill == token by token). */
static const int mn_shapes[][3] = {{1, 1, 1},  {1, 17, 8},  {3, 40, 16}, {8, 8, 32},
                                   {9, 33, 17}, {5, 100, 64}, {64, 200, 8}};

static void compute_mn(const float *q, int ldq, int M, const float *kv, int ldk, int N, int dh,
                       float *S, float *ctx)
{
    float *scr = floats64(sq_attn_f32_scratch_floats(N, dh) + 16);
    ck_assert(scr);
    const int lds = N + 3;
    sq_attn_f32_scores_mn(q, ldq, M, kv, ldk, N, dh, 0.25f, S, lds, scr);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            S[(size_t)i * lds + j] = fabsf(S[(size_t)i * lds + j]) / (float)N;
    sq_attn_f32_context_mn(S, lds, M, kv + dh, ldk, N, dh, ctx, dh + 1);
    free(scr);
}

START_TEST(rectangular_and_row_independent)
{
    const sq_ops_level saved = sq_ops_get_level();
    for (int s = 0; s < LEN(mn_shapes); s++) {
        const int M = mn_shapes[s][0], N = mn_shapes[s][1], dh = mn_shapes[s][2];
        const int ldq = dh + 7, ldk = 2 * dh + 3, lds = N + 3, ldc = dh + 1;
        float *q = malloc(sizeof(float) * (size_t)M * ldq);
        float *kv = malloc(sizeof(float) * (size_t)N * ldk);
        for (int i = 0; i < M * ldq; i++)
            q[i] = tu_frand(&rng);
        for (int i = 0; i < N * ldk; i++)
            kv[i] = tu_frand(&rng);
        float *S0 = floats64((size_t)M * lds + 16), *C0 = floats64((size_t)M * ldc + 16);
        float *S1 = floats64((size_t)M * lds + 16), *C1 = floats64((size_t)M * ldc + 16);
        ck_assert(sq_ops_set_level(SQ_OPS_SCALAR));
        compute_mn(q, ldq, M, kv, ldk, N, dh, S0, C0);
        for (sq_ops_level lv = SQ_OPS_SCALAR; lv <= SQ_OPS_AVX512; lv++) {
            if (!sq_ops_set_level(lv))
                continue;
            compute_mn(q, ldq, M, kv, ldk, N, dh, S1, C1);
            for (int i = 0; i < M; i++) {
                ck_assert_msg(memcmp(S1 + (size_t)i * lds, S0 + (size_t)i * lds, sizeof(float) * N) == 0,
                              "level %d: scores row %d differ at M %d N %d dh %d", lv, i, M, N, dh);
                ck_assert_msg(memcmp(C1 + (size_t)i * ldc, C0 + (size_t)i * ldc, sizeof(float) * dh) == 0,
                              "level %d: context row %d differs at M %d N %d dh %d", lv, i, M, N, dh);
            }
            /* the last row alone (M = 1) gives that row's bits */
            float *S2 = floats64((size_t)lds + 16), *C2 = floats64((size_t)ldc + 16);
            compute_mn(q + (size_t)(M - 1) * ldq, ldq, 1, kv, ldk, N, dh, S2, C2);
            ck_assert(memcmp(S2, S0 + (size_t)(M - 1) * lds, sizeof(float) * N) == 0);
            ck_assert(memcmp(C2, C0 + (size_t)(M - 1) * ldc, sizeof(float) * dh) == 0);
            free(S2);
            free(C2);
        }
        /* against f64 */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int d = 0; d < dh; d++)
                    acc += (double)q[(size_t)i * ldq + d] * kv[(size_t)j * ldk + d];
                double want = fabs(0.25 * acc) / N;
                ck_assert(fabs(S0[(size_t)i * lds + j] - want) <= 1e-6 * (1 + fabs(want)) * dh);
            }
        free(q);
        free(kv);
        free(S0);
        free(C0);
        free(S1);
        free(C1);
    }
    ck_assert(sq_ops_set_level(saved));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attn_f32");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, levels_agree_and_match_reference);
    tcase_add_test(tc, rectangular_and_row_independent);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

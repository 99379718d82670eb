/* bf16 attention matmuls (attn_bf16.h): the scalar definition and the
 * AVX512-BF16 kernels. Scratch layout (each part 64-byte aligned):
 *   Qb  [Lq][dh]                 Q rows in bf16, Lq = L rounded up to RB (zero rows)
 *   Kp  [JB][dh/2][16][2]        K in blocks of 16 keys, pairs along dh;
 *                                JB = ceil(L / 16) rounded up to 2 (zero keys)
 *   Vp  [J2][dhp][2]             V pairs along the sequence, J2 = ceil(L / 2),
 *                                dhp = dh rounded up to 32 (zero columns)
 *   Pb  [RB][2 J2]               RB rows of P in bf16 (a zero after an odd L)
 * The scalar code uses Qb and Kp as plain [L][dh] rows. */
#include "attn_bf16.h"

#include "bf16.h"

/* Rows per register block of the kernels: RB rows x 32 columns of f32
 * accumulators (16 zmm) beside the two operand loads. */
enum { RB = 8 };

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu_features.h"
#include "ops.h"

uint16_t sq_bf16_round(float x)
{
    return sq_bf16_of(x);
}

static inline float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float ftz(float x)
{
    return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}

static size_t up64(size_t n)
{
    return (n + 63) / 64 * 64;
}

typedef struct parts {
    uint16_t *qb, *kp, *vp, *pb;
    int lq, jb, j2, dhp;
} parts;

/* M query rows, N keys. */
static parts layout(void *scratch, int M, int N, int dh)
{
    parts p;
    p.lq = (M + RB - 1) / RB * RB;
    p.jb = ((N + 15) / 16 + 1) / 2 * 2;
    p.j2 = (N + 1) / 2;
    p.dhp = (dh + 31) / 32 * 32;
    char *c = scratch;
    p.qb = (uint16_t *)c;
    c += up64((size_t)p.lq * dh * 2);
    p.kp = (uint16_t *)c;
    c += up64((size_t)p.jb * 16 * dh * 2);
    p.vp = (uint16_t *)c;
    c += up64((size_t)p.j2 * p.dhp * 2 * 2);
    p.pb = (uint16_t *)c;
    return p;
}

size_t sq_attn_bf16_scratch_bytes_mn(int max_rows, int max_keys, int dh)
{
    const int lq = (max_rows + RB - 1) / RB * RB, jb = ((max_keys + 15) / 16 + 1) / 2 * 2;
    const int j2 = (max_keys + 1) / 2, dhp = (dh + 31) / 32 * 32;
    return up64((size_t)lq * dh * 2) + up64((size_t)jb * 16 * dh * 2) +
           up64((size_t)j2 * dhp * 2 * 2) + up64((size_t)RB * 2 * j2 * 2) + 64;
}

size_t sq_attn_bf16_scratch_bytes(int max_len, int dh)
{
    return sq_attn_bf16_scratch_bytes_mn(max_len, max_len, dh);
}

bool sq_attn_bf16_hw(void)
{
    return sq_cpu_features_get()->avx512bf16 && sq_ops_get_level() == SQ_OPS_AVX512;
}

/* ---- the definition, in scalar code ---- */

static void round_rows(const float *x, int ld, int rows, int cols, uint16_t *out)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            out[(size_t)r * cols + c] = sq_bf16_round(x[(size_t)r * ld + c]);
}

/* dot over n pairs of a[] and b[] (element stride sb for b). Not loop-
 * vectorized: GCC 12.2 at -O3 vectorizes this two-statement in-order
 * reduction into a wrong sum (found by unit-attn_bf16 with ftz() taken
 * out: 44.08 instead of 39.95 on a 16-element dot). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-vectorize")))
#endif
static float dot_pairs(const uint16_t *a, const uint16_t *b, size_t sb, int n)
{
    float acc = 0.0f;
    for (int t = 0; t < n; t++) {
        acc = ftz(acc + bf16_to_f32(a[2 * t + 1]) * bf16_to_f32(b[(2 * t + 1) * sb]));
        acc = ftz(acc + bf16_to_f32(a[2 * t]) * bf16_to_f32(b[2 * t * sb]));
    }
    return acc;
}

static void scores_scalar(const float *Q, int ldq, int M, const float *K, int ldk, int N, int dh,
                          float c, float *S, int lds, parts *p)
{
    round_rows(Q, ldq, M, dh, p->qb);
    round_rows(K, ldk, N, dh, p->kp);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            S[(size_t)i * lds + j] =
                c * dot_pairs(p->qb + (size_t)i * dh, p->kp + (size_t)j * dh, 1, dh / 2);
}

static void context_scalar(const float *P, int ldp, int M, const float *V, int ldv, int N, int dh,
                           float *ctx, int ldc, parts *p)
{
    const int n2 = 2 * p->j2;
    /* V as [n2][dh] bf16 (a zero row after an odd N), in the Vp space */
    uint16_t *vb = p->vp;
    round_rows(V, ldv, N, dh, vb);
    memset(vb + (size_t)N * dh, 0, (size_t)(n2 - N) * dh * 2);
    for (int i = 0; i < M; i++) {
        uint16_t *pb = p->pb;
        round_rows(P + (size_t)i * ldp, ldp, 1, N, pb);
        if (n2 > N)
            pb[N] = 0;
        for (int d = 0; d < dh; d++)
            ctx[(size_t)i * ldc + d] = dot_pairs(pb, vb + d, (size_t)dh, p->j2);
    }
}

/* ---- AVX512-BF16 ---- */
#define BF16_FN __attribute__((target("avx512f,avx512bw,avx512bf16")))

BF16_FN static void round_row16(const float *x, int n, uint16_t *out)
{
    int c = 0;
    for (; c + 16 <= n; c += 16)
        _mm256_storeu_si256((__m256i *)(out + c), SQ_BF16_ROUND16(_mm512_loadu_ps(x + c)));
    for (; c < n; c++)
        out[c] = sq_bf16_round(x[c]);
}

BF16_FN static void scores_hw(const float *Q, int ldq, int M, const float *K, int ldk, int N,
                              int dh, float c, float *S, int lds, parts *p)
{
    const int h2 = dh / 2;
    for (int i = 0; i < p->lq; i++) {
        if (i < M)
            round_row16(Q + (size_t)i * ldq, dh, p->qb + (size_t)i * dh);
        else
            memset(p->qb + (size_t)i * dh, 0, (size_t)dh * 2);
    }
    /* Kp[jb][t][16][2] */
    memset(p->kp, 0, (size_t)p->jb * 16 * dh * 2);
    uint16_t krow[1024];
    for (int j = 0; j < N; j++) {
        round_row16(K + (size_t)j * ldk, dh, krow);
        uint16_t *dst = p->kp + (size_t)(j / 16) * 16 * dh + (size_t)(j % 16) * 2;
        for (int t = 0; t < h2; t++) {
            dst[(size_t)t * 32] = krow[2 * t];
            dst[(size_t)t * 32 + 1] = krow[2 * t + 1];
        }
    }
    const __m512 vc = _mm512_set1_ps(c);
    const uint32_t *q32 = (const uint32_t *)p->qb;
    for (int i0 = 0; i0 < M; i0 += RB) {
        for (int b = 0; b < p->jb; b += 2) {
            __m512 a[RB][2];
            for (int r = 0; r < RB; r++)
                a[r][0] = a[r][1] = _mm512_setzero_ps();
            const uint16_t *k0 = p->kp + (size_t)b * 16 * dh, *k1 = k0 + (size_t)16 * dh;
            for (int t = 0; t < h2; t++) {
                const __m512bh kv0 = (__m512bh)_mm512_loadu_si512(k0 + (size_t)t * 32);
                const __m512bh kv1 = (__m512bh)_mm512_loadu_si512(k1 + (size_t)t * 32);
                for (int r = 0; r < RB; r++) {
                    const __m512bh qv =
                        (__m512bh)_mm512_set1_epi32((int)q32[(size_t)(i0 + r) * h2 + t]);
                    a[r][0] = _mm512_dpbf16_ps(a[r][0], kv0, qv);
                    a[r][1] = _mm512_dpbf16_ps(a[r][1], kv1, qv);
                }
            }
            for (int r = 0; r < RB && i0 + r < M; r++)
                for (int h = 0; h < 2; h++) {
                    const int j0 = (b + h) * 16;
                    if (j0 >= N)
                        break;
                    const __mmask16 m = N - j0 >= 16 ? 0xffff : (__mmask16)((1u << (N - j0)) - 1);
                    _mm512_mask_storeu_ps(S + (size_t)(i0 + r) * lds + j0, m,
                                          _mm512_mul_ps(vc, a[r][h]));
                }
        }
    }
}

BF16_FN static void context_hw(const float *P, int ldp, int M, const float *V, int ldv, int N,
                               int dh, float *ctx, int ldc, parts *p)
{
    const int dhp = p->dhp, j2n = p->j2;
    /* Vp[j2][dhp][2] */
    memset(p->vp, 0, (size_t)j2n * dhp * 2 * 2);
    uint16_t vrow[1024];
    for (int j = 0; j < N; j++) {
        round_row16(V + (size_t)j * ldv, dh, vrow);
        uint16_t *dst = p->vp + (size_t)(j / 2) * dhp * 2 + (j % 2);
        for (int d = 0; d < dh; d++)
            dst[(size_t)d * 2] = vrow[d];
    }
    const int pw = 2 * j2n; /* a row of Pb */
    for (int i0 = 0; i0 < M; i0 += RB) {
        for (int r = 0; r < RB; r++) {
            uint16_t *pr = p->pb + (size_t)r * pw;
            if (i0 + r < M) {
                round_row16(P + (size_t)(i0 + r) * ldp, N, pr);
                if (pw > N)
                    pr[N] = 0;
            } else
                memset(pr, 0, (size_t)pw * 2);
        }
        const uint32_t *p32 = (const uint32_t *)p->pb;
        for (int db = 0; db < dhp; db += 32) {
            __m512 a[RB][2];
            for (int r = 0; r < RB; r++)
                a[r][0] = a[r][1] = _mm512_setzero_ps();
            for (int t = 0; t < j2n; t++) {
                const uint16_t *vv = p->vp + ((size_t)t * dhp + db) * 2;
                const __m512bh v0 = (__m512bh)_mm512_loadu_si512(vv);
                const __m512bh v1 = (__m512bh)_mm512_loadu_si512(vv + 32);
                for (int r = 0; r < RB; r++) {
                    const __m512bh pv = (__m512bh)_mm512_set1_epi32((int)p32[(size_t)r * j2n + t]);
                    a[r][0] = _mm512_dpbf16_ps(a[r][0], v0, pv);
                    a[r][1] = _mm512_dpbf16_ps(a[r][1], v1, pv);
                }
            }
            for (int r = 0; r < RB && i0 + r < M; r++)
                for (int h = 0; h < 2; h++) {
                    const int d0 = db + 16 * h;
                    if (d0 >= dh)
                        break;
                    const __mmask16 m = dh - d0 >= 16 ? 0xffff : (__mmask16)((1u << (dh - d0)) - 1);
                    _mm512_mask_storeu_ps(ctx + (size_t)(i0 + r) * ldc + d0, m, a[r][h]);
                }
        }
    }
}

void sq_attn_bf16_scores_mn(const float *Q, int ldq, int M, const float *K, int ldk, int N,
                            int dh, float c, float *S, int lds, void *scratch, bool hw)
{
    parts p = layout(scratch, M, N, dh);
    if (hw && dh <= 1024)
        scores_hw(Q, ldq, M, K, ldk, N, dh, c, S, lds, &p);
    else
        scores_scalar(Q, ldq, M, K, ldk, N, dh, c, S, lds, &p);
}

void sq_attn_bf16_context_mn(const float *P, int ldp, int M, const float *V, int ldv, int N,
                             int dh, float *ctx, int ldc, void *scratch, bool hw)
{
    parts p = layout(scratch, M, N, dh);
    if (hw && dh <= 1024)
        context_hw(P, ldp, M, V, ldv, N, dh, ctx, ldc, &p);
    else
        context_scalar(P, ldp, M, V, ldv, N, dh, ctx, ldc, &p);
}

void sq_attn_bf16_scores(const float *Q, const float *K, int ld, int L, int dh, float c,
                         float *S, void *scratch, bool hw)
{
    sq_attn_bf16_scores_mn(Q, ld, L, K, ld, L, dh, c, S, L, scratch, hw);
}

void sq_attn_bf16_context(const float *P, const float *V, int ld, int L, int dh, float *ctx,
                          int ldc, void *scratch, bool hw)
{
    sq_attn_bf16_context_mn(P, L, L, V, ld, L, dh, ctx, ldc, scratch, hw);
}

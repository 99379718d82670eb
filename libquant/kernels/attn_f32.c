/* The f32 attention matmuls (attn_f32.h): a scalar definition and AVX2 /
 * AVX-512 register-blocked kernels that compute the same fma chains.
 *
 * Scores: K is transposed into the scratch (Kt[d][j], rows padded to a
 * multiple of 32 with zeros), so a tile of R query rows x 32 keys is, per
 * d, two (AVX-512) or four (AVX2) loads of Kt and R broadcasts of Q[i][d]
 * into 2R fmas. Context: a tile of R rows x 32 (16) channels reads V's row
 * j as it is and broadcasts P[i][j]. Padding lanes never reach an output,
 * so every output lane runs exactly the chain of the definition.
 *
 * The accumulators are named variables, not an array: GCC 12 spills the
 * array form of such blocks (see gemm_s8_avx512vnni.c). */
#include "attn_f32.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops.h"

#define INLINE static inline __attribute__((always_inline))
#define T_512 __attribute__((target("avx512f")))
#define T_AVX2 __attribute__((target("avx2,fma")))
#define COLS 32 /* key columns per scores tile; Kt rows are padded to it */

static int pad32(int n)
{
    return (n + COLS - 1) / COLS * COLS;
}

size_t sq_attn_f32_scratch_floats(int max_len, int dh)
{
    return (size_t)dh * (size_t)pad32(max_len);
}

static void transpose_k(const float *K, int ldk, int N, int dh, float *Kt)
{
    const int Np = pad32(N);
    for (int d = 0; d < dh; d++) {
        float *row = Kt + (size_t)d * Np;
        for (int j = 0; j < N; j++)
            row[j] = K[(size_t)j * ldk + d];
        memset(row + N, 0, sizeof *row * (size_t)(Np - N));
    }
}

/* ---- the definition ---- */

static void scores_scalar(const float *Q, int ldq, int M, const float *K, int ldk, int N, int dh,
                          float c, float *S, int lds)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0.0f;
            for (int d = 0; d < dh; d++)
                acc = fmaf(Q[(size_t)i * ldq + d], K[(size_t)j * ldk + d], acc);
            S[(size_t)i * lds + j] = c * acc;
        }
}

static void context_scalar(const float *P, int ldp, int M, const float *V, int ldv, int N, int dh,
                           float *ctx, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int e = 0; e < dh; e++) {
            float acc = 0.0f;
            for (int j = 0; j < N; j++)
                acc = fmaf(P[(size_t)i * ldp + j], V[(size_t)j * ldv + e], acc);
            ctx[(size_t)i * ldc + e] = acc;
        }
}

/* ---- AVX-512: tiles of up to 8 rows x 32 columns (16 zmm) ---- */

#define Z8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DECL512(r) __m512 a##r##0 = _mm512_setzero_ps(), a##r##1 = _mm512_setzero_ps();

/* Lanes of a 16-wide half h (0, 1) that hold one of n live columns. */
T_512 INLINE __mmask16 half_mask(int n, int h)
{
    int m = n - 16 * h;
    return m >= 16 ? (__mmask16)0xffff : m <= 0 ? (__mmask16)0 : (__mmask16)((1u << m) - 1);
}

T_512 INLINE void scores_tile512(const float *Q, int ldq, const float *Kt, int Np, int dh,
                                 float c, const int nr, int i0, int j0, int N, float *S, int lds)
{
    Z8(DECL512)
    const float *q = Q + (size_t)i0 * ldq;
    for (int d = 0; d < dh; d++) {
        const __m512 k0 = _mm512_load_ps(Kt + (size_t)d * Np + j0);
        const __m512 k1 = _mm512_load_ps(Kt + (size_t)d * Np + j0 + 16);
#define ROW512(r)                                                                                  \
    if (nr > r) {                                                                                  \
        const __m512 qv = _mm512_set1_ps(q[(size_t)(r) * ldq + d]);                                 \
        a##r##0 = _mm512_fmadd_ps(qv, k0, a##r##0);                                                \
        a##r##1 = _mm512_fmadd_ps(qv, k1, a##r##1);                                                \
    }
        Z8(ROW512)
#undef ROW512
    }
    const __m512 vc = _mm512_set1_ps(c);
    const __mmask16 m0 = half_mask(N - j0, 0), m1 = half_mask(N - j0, 1);
#define STORE512(r)                                                                                \
    if (nr > r) {                                                                                  \
        float *s = S + (size_t)(i0 + r) * lds + j0;                                                  \
        _mm512_mask_storeu_ps(s, m0, _mm512_mul_ps(vc, a##r##0));                                  \
        _mm512_mask_storeu_ps(s + 16, m1, _mm512_mul_ps(vc, a##r##1));                             \
    }
    Z8(STORE512)
#undef STORE512
}

T_512 INLINE void context_tile512(const float *P, int ldp, const float *V, int ldv, int N,
                                  int dh, const int nr, int i0, int e0, float *ctx, int ldc)
{
    Z8(DECL512)
    const __mmask16 m0 = half_mask(dh - e0, 0), m1 = half_mask(dh - e0, 1);
    const float *p = P + (size_t)i0 * ldp;
    for (int j = 0; j < N; j++) {
        const float *v = V + (size_t)j * ldv + e0;
        const __m512 v0 = _mm512_maskz_loadu_ps(m0, v), v1 = _mm512_maskz_loadu_ps(m1, v + 16);
#define ROW512(r)                                                                                  \
    if (nr > r) {                                                                                  \
        const __m512 pv = _mm512_set1_ps(p[(size_t)(r) * ldp + j]);                                  \
        a##r##0 = _mm512_fmadd_ps(pv, v0, a##r##0);                                                \
        a##r##1 = _mm512_fmadd_ps(pv, v1, a##r##1);                                                \
    }
        Z8(ROW512)
#undef ROW512
    }
#define STORE512(r)                                                                                \
    if (nr > r) {                                                                                  \
        float *o = ctx + (size_t)(i0 + r) * ldc + e0;                                              \
        _mm512_mask_storeu_ps(o, m0, a##r##0);                                                     \
        _mm512_mask_storeu_ps(o + 16, m1, a##r##1);                                                \
    }
    Z8(STORE512)
#undef STORE512
}

#define CASES8(CALL)                                                                               \
    switch (nr) {                                                                                  \
    case 8: CALL(8); break;                                                                        \
    case 7: CALL(7); break;                                                                        \
    case 6: CALL(6); break;                                                                        \
    case 5: CALL(5); break;                                                                        \
    case 4: CALL(4); break;                                                                        \
    case 3: CALL(3); break;                                                                        \
    case 2: CALL(2); break;                                                                        \
    default: CALL(1); break;                                                                       \
    }

T_512 static void scores_avx512(const float *Q, int ldq, int M, const float *Kt, int N, int dh,
                                float c, float *S, int lds)
{
    const int Np = pad32(N);
    for (int i0 = 0; i0 < M; i0 += 8) {
        const int nr = M - i0 < 8 ? M - i0 : 8;
        for (int j0 = 0; j0 < N; j0 += COLS) {
#define CALL(n) scores_tile512(Q, ldq, Kt, Np, dh, c, n, i0, j0, N, S, lds)
            CASES8(CALL)
#undef CALL
        }
    }
}

T_512 static void context_avx512(const float *P, int ldp, int M, const float *V, int ldv, int N,
                                 int dh, float *ctx, int ldc)
{
    for (int i0 = 0; i0 < M; i0 += 8) {
        const int nr = M - i0 < 8 ? M - i0 : 8;
        for (int e0 = 0; e0 < dh; e0 += 32) {
#define CALL(n) context_tile512(P, ldp, V, ldv, N, dh, n, i0, e0, ctx, ldc)
            CASES8(CALL)
#undef CALL
        }
    }
}

/* ---- AVX2: tiles of up to 4 rows x 16 columns (8 ymm) ---- */

#define Z4(X) X(0) X(1) X(2) X(3)
#define DECL256(r) __m256 a##r##0 = _mm256_setzero_ps(), a##r##1 = _mm256_setzero_ps();

/* maskload / maskstore lanes of an 8-wide half h that hold one of n live
 * columns. */
T_AVX2 INLINE __m256i half_mask8(int n, int h)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8 * h), lane);
}

T_AVX2 INLINE void scores_tile256(const float *Q, int ldq, const float *Kt, int Np, int dh,
                                 float c, const int nr, int i0, int j0, int N, float *S, int lds)
{
    Z4(DECL256)
    const float *q = Q + (size_t)i0 * ldq;
    for (int d = 0; d < dh; d++) {
        const __m256 k0 = _mm256_load_ps(Kt + (size_t)d * Np + j0);
        const __m256 k1 = _mm256_load_ps(Kt + (size_t)d * Np + j0 + 8);
#define ROW256(r)                                                                                  \
    if (nr > r) {                                                                                  \
        const __m256 qv = _mm256_set1_ps(q[(size_t)(r) * ldq + d]);                                 \
        a##r##0 = _mm256_fmadd_ps(qv, k0, a##r##0);                                                \
        a##r##1 = _mm256_fmadd_ps(qv, k1, a##r##1);                                                \
    }
        Z4(ROW256)
#undef ROW256
    }
    const __m256 vc = _mm256_set1_ps(c);
    const __m256i m0 = half_mask8(N - j0, 0), m1 = half_mask8(N - j0, 1);
#define STORE256(r)                                                                                \
    if (nr > r) {                                                                                  \
        float *s = S + (size_t)(i0 + r) * lds + j0;                                                  \
        _mm256_maskstore_ps(s, m0, _mm256_mul_ps(vc, a##r##0));                                    \
        _mm256_maskstore_ps(s + 8, m1, _mm256_mul_ps(vc, a##r##1));                                \
    }
    Z4(STORE256)
#undef STORE256
}

T_AVX2 INLINE void context_tile256(const float *P, int ldp, const float *V, int ldv, int N,
                                  int dh, const int nr, int i0, int e0, float *ctx, int ldc)
{
    Z4(DECL256)
    const __m256i m0 = half_mask8(dh - e0, 0), m1 = half_mask8(dh - e0, 1);
    const float *p = P + (size_t)i0 * ldp;
    for (int j = 0; j < N; j++) {
        const float *v = V + (size_t)j * ldv + e0;
        const __m256 v0 = _mm256_maskload_ps(v, m0), v1 = _mm256_maskload_ps(v + 8, m1);
#define ROW256(r)                                                                                  \
    if (nr > r) {                                                                                  \
        const __m256 pv = _mm256_set1_ps(p[(size_t)(r) * ldp + j]);                                  \
        a##r##0 = _mm256_fmadd_ps(pv, v0, a##r##0);                                                \
        a##r##1 = _mm256_fmadd_ps(pv, v1, a##r##1);                                                \
    }
        Z4(ROW256)
#undef ROW256
    }
#define STORE256(r)                                                                                \
    if (nr > r) {                                                                                  \
        float *o = ctx + (size_t)(i0 + r) * ldc + e0;                                              \
        _mm256_maskstore_ps(o, m0, a##r##0);                                                       \
        _mm256_maskstore_ps(o + 8, m1, a##r##1);                                                   \
    }
    Z4(STORE256)
#undef STORE256
}

#define CASES4(CALL)                                                                               \
    switch (nr) {                                                                                  \
    case 4: CALL(4); break;                                                                        \
    case 3: CALL(3); break;                                                                        \
    case 2: CALL(2); break;                                                                        \
    default: CALL(1); break;                                                                       \
    }

T_AVX2 static void scores_avx2(const float *Q, int ldq, int M, const float *Kt, int N, int dh,
                               float c, float *S, int lds)
{
    const int Np = pad32(N);
    for (int i0 = 0; i0 < M; i0 += 4) {
        const int nr = M - i0 < 4 ? M - i0 : 4;
        for (int j0 = 0; j0 < N; j0 += 16) {
#define CALL(n) scores_tile256(Q, ldq, Kt, Np, dh, c, n, i0, j0, N, S, lds)
            CASES4(CALL)
#undef CALL
        }
    }
}

T_AVX2 static void context_avx2(const float *P, int ldp, int M, const float *V, int ldv, int N,
                                int dh, float *ctx, int ldc)
{
    for (int i0 = 0; i0 < M; i0 += 4) {
        const int nr = M - i0 < 4 ? M - i0 : 4;
        for (int e0 = 0; e0 < dh; e0 += 16) {
#define CALL(n) context_tile256(P, ldp, V, ldv, N, dh, n, i0, e0, ctx, ldc)
            CASES4(CALL)
#undef CALL
        }
    }
}

/* ---- entry points ---- */

void sq_attn_f32_scores_mn(const float *Q, int ldq, int M, const float *K, int ldk, int N,
                           int dh, float c, float *S, int lds, float *scratch)
{
    const sq_ops_level lv = sq_ops_get_level();
    if (lv == SQ_OPS_SCALAR) {
        scores_scalar(Q, ldq, M, K, ldk, N, dh, c, S, lds);
        return;
    }
    transpose_k(K, ldk, N, dh, scratch);
    if (lv == SQ_OPS_AVX512)
        scores_avx512(Q, ldq, M, scratch, N, dh, c, S, lds);
    else
        scores_avx2(Q, ldq, M, scratch, N, dh, c, S, lds);
}

void sq_attn_f32_context_mn(const float *P, int ldp, int M, const float *V, int ldv, int N,
                            int dh, float *ctx, int ldc)
{
    const sq_ops_level lv = sq_ops_get_level();
    if (lv == SQ_OPS_AVX512)
        context_avx512(P, ldp, M, V, ldv, N, dh, ctx, ldc);
    else if (lv == SQ_OPS_AVX2)
        context_avx2(P, ldp, M, V, ldv, N, dh, ctx, ldc);
    else
        context_scalar(P, ldp, M, V, ldv, N, dh, ctx, ldc);
}

void sq_attn_f32_scores(const float *Q, const float *K, int ld, int L, int dh, float c, float *S,
                        float *scratch)
{
    sq_attn_f32_scores_mn(Q, ld, L, K, ld, L, dh, c, S, L, scratch);
}

void sq_attn_f32_context(const float *P, const float *V, int ld, int L, int dh, float *ctx,
                         int ldc)
{
    sq_attn_f32_context_mn(P, L, L, V, ld, L, dh, ctx, ldc);
}

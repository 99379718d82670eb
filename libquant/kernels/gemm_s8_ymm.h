/* What the two ymm rows of the kernel table share (gemm_s8_avx2.c,
 * gemm_s8_avxvnni.c): broadcast, int4 unpack, vpdpbusd compensation, the
 * int4 group scaling and the 4-row x 1-panel micro-kernels written once as
 * macros over a k-group step function. Included by those two files only;
 * everything is static. */
#ifndef SQ_GEMM_S8_YMM_H
#define SQ_GEMM_S8_YMM_H

#include <immintrin.h>
#include <string.h>

#include "gemm_kernel.h"

#define T_AVX2 __attribute__((target("avx2")))
#define INLINE static inline __attribute__((always_inline))
#define NR 4 /* rows per micro-kernel */
#define ROW_BYTES (SQ_PANEL_N * SQ_PANEL_K)
#define ROWS_PER_GROUP (SQ_INT4_GROUP / SQ_PANEL_K) /* 32 k-groups per int4 group */

/* The 4 A bytes of k-group g of a row, in every 32-bit lane. */
T_AVX2 INLINE __m256i bcast4(const int8_t *row, int g)
{
    int32_t v;
    memcpy(&v, row + (size_t)g * SQ_PANEL_K, sizeof v);
    return _mm256_set1_epi32(v);
}

/* int4 panel row (32 bytes) -> the two ymm halves of the int8 row: low
 * nibbles are bytes 0..31 (lanes 0..7), high nibbles bytes 32..63 (lanes
 * 8..15); vpshufb sign-extends each nibble through a 16-entry table. */
T_AVX2 INLINE void unpack_s4(const uint8_t *row, __m256i *w0, __m256i *w1)
{
    const __m256i table = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2,
                                           -1, 0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3,
                                           -2, -1);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256i x = _mm256_loadu_si256((const __m256i *)row);
    *w0 = _mm256_shuffle_epi8(table, _mm256_and_si256(x, low4));
    *w1 = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(x, 4), low4));
}


/* acc[r] -= 128 * wsum for the 16 channels whose sums start at ws (stride
 * `stride` entries apart: 1 for int8, groups for int4). */
T_AVX2 INLINE void compensate(__m256i acc[][2], const int nr, const int32_t *ws, int stride)
{
    int32_t c[SQ_PANEL_N];
    for (int i = 0; i < SQ_PANEL_N; i++)
        c[i] = (int32_t)((uint32_t)ws[(size_t)i * stride] << 7); /* mod 2^32, as vpdpbusd */
    __m256i c0 = _mm256_loadu_si256((const __m256i *)c);
    __m256i c1 = _mm256_loadu_si256((const __m256i *)(c + 8));
    for (int r = 0; r < nr; r++) {
        acc[r][0] = _mm256_sub_epi32(acc[r][0], c0);
        acc[r][1] = _mm256_sub_epi32(acc[r][1], c1);
    }
}

/* out[r][i] += (float)acc[r][i] * scale of group gr, product rounded first. */
T_AVX2 INLINE void scale_into(__m256 out[][2], __m256i acc[][2], const int nr,
                              const sq_qweight *W, int p, int gr)
{
    int groups = W->k_pad / SQ_INT4_GROUP;
    float s[SQ_PANEL_N];
    for (int i = 0; i < SQ_PANEL_N; i++)
        s[i] = W->scale[(size_t)(p * SQ_PANEL_N + i) * groups + gr];
    __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8);
    for (int r = 0; r < nr; r++) {
        __m256 q0 = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][0]), s0);
        __m256 q1 = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r][1]), s1);
        __asm__("" : "+x"(q0), "+x"(q1)); /* keep mul and add apart: no FMA */
        out[r][0] = _mm256_add_ps(out[r][0], q0);
        out[r][1] = _mm256_add_ps(out[r][1], q1);
    }
}

/* The micro-kernels, written once as macros over the step function
 * (the target attribute must match for the steps to inline). */
#define DEF_S8(NAME, TARGET, STEP, VNNI)                                                       \
    TARGET INLINE void NAME##_n(const int8_t *A, size_t lda, const int nr, const sq_qweight *W, \
                                int p, int32_t *out)                                           \
    {                                                                                          \
        int kg = W->k_pad / SQ_PANEL_K;                                                        \
        const int8_t *w = (const int8_t *)W->data + (size_t)p * kg * ROW_BYTES;                \
        __m256i acc[NR][2];                                                                    \
        for (int r = 0; r < nr; r++)                                                           \
            acc[r][0] = acc[r][1] = _mm256_setzero_si256();                                    \
        for (int g = 0; g < kg; g++, w += ROW_BYTES)                                           \
            STEP(acc, A, lda, nr, g, _mm256_loadu_si256((const __m256i *)w),                   \
                 _mm256_loadu_si256((const __m256i *)(w + 32)));                               \
        if (VNNI)                                                                              \
            compensate(acc, nr, W->wsum + (size_t)p * SQ_PANEL_N, 1);                          \
        for (int r = 0; r < nr; r++) {                                                         \
            _mm256_storeu_si256((__m256i *)(out + r * SQ_PANEL_N), acc[r][0]);                 \
            _mm256_storeu_si256((__m256i *)(out + r * SQ_PANEL_N + 8), acc[r][1]);             \
        }                                                                                      \
    }                                                                                          \
    TARGET static void NAME(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,  \
                            int np, int32_t *out)                                              \
    {                                                                                          \
        (void)np; /* always 1: tiles are one panel wide */                                     \
        switch (nr) {                                                                          \
        case 4: NAME##_n(A, lda, 4, W, p0, out); break;                                        \
        case 3: NAME##_n(A, lda, 3, W, p0, out); break;                                        \
        case 2: NAME##_n(A, lda, 2, W, p0, out); break;                                        \
        default: NAME##_n(A, lda, 1, W, p0, out); break;                                       \
        }                                                                                      \
    }

#define DEF_S4(NAME, TARGET, STEP, VNNI)                                                       \
    TARGET INLINE void NAME##_n(const int8_t *A, size_t lda, const int nr, const sq_qweight *W, \
                                int p, float *out)                                             \
    {                                                                                          \
        int kg = W->k_pad / SQ_PANEL_K, groups = W->k_pad / SQ_INT4_GROUP;                     \
        const uint8_t *w = (const uint8_t *)W->data + (size_t)p * kg * (ROW_BYTES / 2);        \
        __m256 res[NR][2];                                                                     \
        for (int r = 0; r < nr; r++)                                                           \
            res[r][0] = res[r][1] = _mm256_setzero_ps();                                       \
        for (int gr = 0; gr < groups; gr++) {                                                  \
            __m256i acc[NR][2];                                                                \
            for (int r = 0; r < nr; r++)                                                       \
                acc[r][0] = acc[r][1] = _mm256_setzero_si256();                                \
            for (int g = gr * ROWS_PER_GROUP; g < (gr + 1) * ROWS_PER_GROUP;                   \
                 g++, w += ROW_BYTES / 2) {                                                    \
                __m256i w0, w1;                                                                \
                unpack_s4(w, &w0, &w1);                                                        \
                STEP(acc, A, lda, nr, g, w0, w1);                                              \
            }                                                                                  \
            if (VNNI)                                                                          \
                compensate(acc, nr, W->wsum + (size_t)p * SQ_PANEL_N * groups + gr, groups);   \
            scale_into(res, acc, nr, W, p, gr);                                                \
        }                                                                                      \
        for (int r = 0; r < nr; r++) {                                                         \
            _mm256_storeu_ps(out + r * SQ_PANEL_N, res[r][0]);                                 \
            _mm256_storeu_ps(out + r * SQ_PANEL_N + 8, res[r][1]);                             \
        }                                                                                      \
    }                                                                                          \
    TARGET static void NAME(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,  \
                            int np, float *out)                                                \
    {                                                                                          \
        (void)np; /* always 1: tiles are one panel wide */                                     \
        switch (nr) {                                                                          \
        case 4: NAME##_n(A, lda, 4, W, p0, out); break;                                        \
        case 3: NAME##_n(A, lda, 3, W, p0, out); break;                                        \
        case 2: NAME##_n(A, lda, 2, W, p0, out); break;                                        \
        default: NAME##_n(A, lda, 1, W, p0, out); break;                                       \
        }                                                                                      \
    }

#endif

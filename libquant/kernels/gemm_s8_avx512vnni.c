/* The AVX512-VNNI row of the kernel table (gemm_kernel.h): vpdpbusd
 * (u8 x s8 -> s32, 4 products per lane) on zmm, through the shared tile
 * driver (fused epilogue). A 64-byte panel row is exactly one zmm (16
 * channels x 4 k), so a k-group step is one broadcast of 4 A bytes and
 * one vpdpbusd per panel.
 * vpdpbusd wants u8 activations: a + 128 (a XOR 0x80), and the extra
 * 128 * sum_k W[n][k] is subtracted with the wsum stored at pack time.
 * vpdpbusd wraps (no saturation), so the result is exact mod 2^32 and
 * therefore exact, the true sum fitting in int32. Blocking: 4 rows x 4
 * panels = 16 zmm accumulators; the tile driver runs the tiles of a chunk
 * of A rows panel block by panel block (gemm_tiles.c). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "gemm_kernel.h"
#include "qlinear_ref.h"

#ifndef T_512 /* (a test may predefine it to build the file for emulation) */
#define T_512 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#endif
#ifndef NO_FMA_BARRIER /* keep mul and add apart: no FMA (same bits as scalar) */
#define NO_FMA_BARRIER(q) __asm__("" : "+v"(q))
#endif
#define INLINE static inline __attribute__((always_inline))
#include "round_s8_zmm.h" /* after T_512 and INLINE, which it uses */
#define NR 4
#define NP 4
#define ROW_BYTES (SQ_PANEL_N * SQ_PANEL_K)
#define ROWS_PER_GROUP (SQ_INT4_GROUP / SQ_PANEL_K)

/* a + 128 for the 4 A bytes of k-group g, in every lane. */
T_512 INLINE __m512i bcast4_u8(const int8_t *row, int g)
{
    int32_t v;
    memcpy(&v, row + (size_t)g * SQ_PANEL_K, sizeof v);
    return _mm512_xor_si512(_mm512_set1_epi32(v), _mm512_set1_epi8((char)0x80));
}

/* acc[r][j] += (A row r + 128) . w[j] for one k-group. */
T_512 INLINE void step(__m512i acc[][NP], const int8_t *A, size_t lda, const int nr,
                       const int np, int g, const __m512i *w)
{
    for (int r = 0; r < nr; r++) {
        __m512i au = bcast4_u8(A + (size_t)r * lda, g);
        for (int j = 0; j < np; j++)
            acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], au, w[j]);
    }
}

/* acc[r][j] -= 128 * wsum of panel p0 + j; sums at ws[(16 (p0 + j) + i) *
 * stride] (stride 1 for int8, groups for int4, ws already offset to the
 * group). Computed mod 2^32 like vpdpbusd itself: 128 * |wsum| can pass
 * 2^31 for K near SQ_REF_MAX_K while the final sum is exact (the loader
 * proves wsum is the panels' sum, qweight_check.h). */
T_512 INLINE void compensate(__m512i acc[][NP], const int nr, const int np, const int32_t *ws,
                             int p0, int stride)
{
    for (int j = 0; j < np; j++) {
        int32_t c[SQ_PANEL_N];
        for (int i = 0; i < SQ_PANEL_N; i++)
            c[i] = (int32_t)((uint32_t)ws[(size_t)((p0 + j) * SQ_PANEL_N + i) * stride] << 7);
        __m512i cv = _mm512_loadu_si512(c);
        for (int r = 0; r < nr; r++)
            acc[r][j] = _mm512_sub_epi32(acc[r][j], cv);
    }
}

T_512 INLINE void s8_block(const int8_t *A, size_t lda, const int nr, const int np,
                           const sq_qweight *W, int p0, int32_t *out)
{
    size_t kg = (size_t)W->k_pad / SQ_PANEL_K, pstride = kg * ROW_BYTES;
    const int8_t *w = (const int8_t *)W->data + (size_t)p0 * pstride;
    __m512i acc[NR][NP];
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++)
            acc[r][j] = _mm512_setzero_si512();
    for (size_t g = 0; g < kg; g++) {
        __m512i wv[NP];
        for (int j = 0; j < np; j++)
            wv[j] = _mm512_loadu_si512(w + j * pstride + g * ROW_BYTES);
        step(acc, A, lda, nr, np, (int)g, wv);
    }
    compensate(acc, nr, np, W->wsum, p0, 1);
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++)
            _mm512_storeu_si512(out + (r * np + j) * SQ_PANEL_N, acc[r][j]);
}

/* The full 4 x 4 block with named accumulators: GCC 12 compiles the
 * array form above with two register moves and stack spills per vpdpbusd
 * in the k loop (the tied accumulator operand defeats its register
 * allocation); named variables keep all 16 in zmm registers, 1.2-1.4x the
 * GOP/s of the array form (tests/bench/kernel_bench.sh). Same sums. */
#define DP4(c0, c1, c2, c3, au)                                                                \
    c0 = _mm512_dpbusd_epi32(c0, au, w0);                                                      \
    c1 = _mm512_dpbusd_epi32(c1, au, w1);                                                      \
    c2 = _mm512_dpbusd_epi32(c2, au, w2);                                                      \
    c3 = _mm512_dpbusd_epi32(c3, au, w3)

T_512 INLINE void s8_block_4x4(const int8_t *A, size_t lda, const sq_qweight *W, int p0,
                               int32_t *out)
{
    size_t kg = (size_t)W->k_pad / SQ_PANEL_K, pstride = kg * ROW_BYTES;
    const int8_t *w = (const int8_t *)W->data + (size_t)p0 * pstride;
    __m512i c00 = _mm512_setzero_si512(), c01 = c00, c02 = c00, c03 = c00;
    __m512i c10 = c00, c11 = c00, c12 = c00, c13 = c00;
    __m512i c20 = c00, c21 = c00, c22 = c00, c23 = c00;
    __m512i c30 = c00, c31 = c00, c32 = c00, c33 = c00;
    for (size_t g = 0; g < kg; g++) {
        const int8_t *wg = w + g * ROW_BYTES;
        __m512i w0 = _mm512_loadu_si512(wg), w1 = _mm512_loadu_si512(wg + pstride);
        __m512i w2 = _mm512_loadu_si512(wg + 2 * pstride);
        __m512i w3 = _mm512_loadu_si512(wg + 3 * pstride);
        __m512i a0 = bcast4_u8(A, (int)g), a1 = bcast4_u8(A + lda, (int)g);
        DP4(c00, c01, c02, c03, a0);
        DP4(c10, c11, c12, c13, a1);
        __m512i a2 = bcast4_u8(A + 2 * lda, (int)g), a3 = bcast4_u8(A + 3 * lda, (int)g);
        DP4(c20, c21, c22, c23, a2);
        DP4(c30, c31, c32, c33, a3);
    }
    __m512i acc[NR][NP] = {{c00, c01, c02, c03},
                           {c10, c11, c12, c13},
                           {c20, c21, c22, c23},
                           {c30, c31, c32, c33}};
    compensate(acc, NR, NP, W->wsum, p0, 1);
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < NP; j++)
            _mm512_storeu_si512(out + (r * NP + j) * SQ_PANEL_N, acc[r][j]);
}

/* int4 panel row (32 bytes) -> the 64-byte int8 row: low nibbles are bytes
 * 0..31, high nibbles bytes 32..63; vpshufb sign-extends via a table. */
T_512 INLINE __m512i unpack_s4(const uint8_t *row)
{
    const __m512i table = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1));
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256i x = _mm256_loadu_si256((const __m256i *)row);
    __m256i lo = _mm256_and_si256(x, low4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
    return _mm512_shuffle_epi8(table, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
}

T_512 INLINE void s4_block(const int8_t *A, size_t lda, const int nr, const int np,
                           const sq_qweight *W, int p0, float *out)
{
    int groups = W->k_pad / SQ_INT4_GROUP;
    size_t kg = (size_t)W->k_pad / SQ_PANEL_K, pstride = kg * (ROW_BYTES / 2);
    const uint8_t *w = (const uint8_t *)W->data + (size_t)p0 * pstride;
    __m512 res[NR][NP];
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++)
            res[r][j] = _mm512_setzero_ps();
    for (int gr = 0; gr < groups; gr++) {
        __m512i acc[NR][NP];
        for (int r = 0; r < nr; r++)
            for (int j = 0; j < np; j++)
                acc[r][j] = _mm512_setzero_si512();
        for (int g = gr * ROWS_PER_GROUP; g < (gr + 1) * ROWS_PER_GROUP; g++) {
            __m512i wv[NP];
            for (int j = 0; j < np; j++)
                wv[j] = unpack_s4(w + j * pstride + (size_t)g * (ROW_BYTES / 2));
            step(acc, A, lda, nr, np, g, wv);
        }
        compensate(acc, nr, np, W->wsum + gr, p0, groups);
        for (int j = 0; j < np; j++) {
            float s[SQ_PANEL_N];
            for (int i = 0; i < SQ_PANEL_N; i++)
                s[i] = W->scale[(size_t)((p0 + j) * SQ_PANEL_N + i) * groups + gr];
            __m512 sv = _mm512_loadu_ps(s);
            for (int r = 0; r < nr; r++) {
                __m512 q = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][j]), sv);
                NO_FMA_BARRIER(q);
                res[r][j] = _mm512_add_ps(res[r][j], q);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < np; j++)
            _mm512_storeu_ps(out + (r * np + j) * SQ_PANEL_N, res[r][j]);
}

/* Instantiate the blocks for constant nr (1..4) and np (1..4) so that the
 * accumulators live in registers. */
#define CASE_NP(BLOCK, NRC)                                                                    \
    switch (np) {                                                                              \
    case 4: BLOCK(A, lda, NRC, 4, W, p0, out); break;                                          \
    case 3: BLOCK(A, lda, NRC, 3, W, p0, out); break;                                          \
    case 2: BLOCK(A, lda, NRC, 2, W, p0, out); break;                                          \
    default: BLOCK(A, lda, NRC, 1, W, p0, out); break;                                         \
    }
#define CASE_NR(BLOCK)                                                                         \
    switch (nr) {                                                                              \
    case 4: CASE_NP(BLOCK, 4) break;                                                           \
    case 3: CASE_NP(BLOCK, 3) break;                                                           \
    case 2: CASE_NP(BLOCK, 2) break;                                                           \
    default: CASE_NP(BLOCK, 1) break;                                                          \
    }

T_512 static void ukr_s8(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,
                         int np, int32_t *out)
{
    if (nr == NR && np == NP) {
        s8_block_4x4(A, lda, W, p0, out);
        return;
    }
    CASE_NR(s8_block)
}

T_512 static void ukr_s4(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,
                         int np, float *out)
{
    CASE_NR(s4_block)
}

/* ---- the activation quantize step (gemm_s8.h) on zmm: the rounding of
 * round_s8_zmm.h on every 16 values of a row ---- */
T_512 static void quantize(const float *x, int rows, int k, size_t ldx, const float *m,
                           int zero, int8_t *qa, int k_pad, size_t lda, float *range)
{
    const __m512 zf = _mm512_set1_ps((float)zero);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        int8_t *qr = qa + (size_t)r * lda;
        /* min_ps / max_ps return their second operand when the first is
         * NaN: with v first, NaN values never enter the range. */
        __m512 lo = _mm512_set1_ps(INFINITY), hi = _mm512_set1_ps(-INFINITY);
        int j = 0;
        for (; j + 16 <= k; j += 16) {
            __m512 v = _mm512_mul_ps(_mm512_loadu_ps(xr + j), _mm512_loadu_ps(m + j));
            __asm__("" : "+v"(v)); /* v rounded to float, never fused into v - t */
            __m512i q = _mm512_cvtps_epi32(round_s8_ps512(v, zf)); /* integers: exact */
            _mm_storeu_si128((__m128i *)(qr + j), _mm512_cvtsepi32_epi8(q));
            lo = _mm512_min_ps(v, lo);
            hi = _mm512_max_ps(v, hi);
        }
        sq_quantize_row_finish(xr, m, j, k, zero, qr, k_pad, _mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi),
                               range ? range + 2 * r : NULL);
    }
}

static void gemm_s8(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    sq_gemm_tiles_s8(ukr_s8, NR, NP, SQ_WORK_MAC_S8_AVX512VNNI, A, M, lda, W, C, ldc, ep);
}

static void gemm_s4(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    sq_gemm_tiles_s4(ukr_s4, NR, NP, SQ_WORK_MAC_S4, A, M, lda, W, C, ldc, ep);
}

const sq_gemm_kernels sq_gemm_kernels_avx512vnni = {
    .isa = SQ_ISA_AVX512VNNI, .s8 = gemm_s8, .s4 = gemm_s4, .quantize = quantize, .fuses = true};

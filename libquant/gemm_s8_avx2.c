/* The ymm kernels: AVX2 (vpmaddubsw with the sign trick) and AVX-VNNI
 * (VEX vpdpbusd with u8 = a + 128 and the stored compensation), plus the
 * AVX2 activation quantize step. Both GEMMs run 4 rows x 1 panel: a 64-byte
 * panel row (one k-group of 16 channels) is two ymm, and the 4 bytes of one
 * A row for that k-group are broadcast to every 32-bit lane.
 *
 * Exactness of the sign trick (DESIGN.md): vpmaddubsw(|a|, sign(w, a))
 * multiplies u8 |a| <= 127 by s8 w * sgn(a) in [-127, 127]; a pair sum is at
 * most 2 * 127 * 127 = 32258 < 32767, so the s16 saturation never triggers.
 * vpmaddwd with ones then widens to s32 exactly. |a| of -128 would be 128,
 * which A never holds (the quantize step clamps to +-127). */
#include <immintrin.h>
#include <string.h>

#include "gemm_s8.h"
#include "qlinear_ref.h"

#define T_AVX2 __attribute__((target("avx2")))
#define T_AVXVNNI __attribute__((target("avx2,avxvnni")))
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

/* acc[r] += A row r (k-group g) . panel row (w0, w1), sign trick. */
T_AVX2 INLINE void step_avx2(__m256i acc[][2], const int8_t *A, size_t lda, const int nr,
                             int g, __m256i w0, __m256i w1)
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int r = 0; r < nr; r++) {
        __m256i a = bcast4(A + (size_t)r * lda, g);
        __m256i ua = _mm256_abs_epi8(a);
        __m256i p0 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(w0, a));
        __m256i p1 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(w1, a));
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(p0, ones));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(p1, ones));
    }
}

/* acc[r] += (A row r + 128) . panel row as u8 x s8 (vpdpbusd). */
T_AVXVNNI INLINE void step_vnni(__m256i acc[][2], const int8_t *A, size_t lda, const int nr,
                                int g, __m256i w0, __m256i w1)
{
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int r = 0; r < nr; r++) {
        __m256i au = _mm256_xor_si256(bcast4(A + (size_t)r * lda, g), bias); /* a + 128 */
        acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], au, w0);
        acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], au, w1);
    }
}

/* acc[r] -= 128 * wsum for the 16 channels whose sums start at ws (stride
 * `stride` entries apart: 1 for int8, groups for int4). */
T_AVX2 INLINE void compensate(__m256i acc[][2], const int nr, const int32_t *ws, int stride)
{
    int32_t c[SQ_PANEL_N];
    for (int i = 0; i < SQ_PANEL_N; i++)
        c[i] = ws[(size_t)i * stride] * 128;
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

/* The four micro-kernels, written once as macros over the step function
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

DEF_S8(ukr_s8_avx2, T_AVX2, step_avx2, 0)
DEF_S8(ukr_s8_avxvnni, T_AVXVNNI, step_vnni, 1)
DEF_S4(ukr_s4_avx2, T_AVX2, step_avx2, 0)
DEF_S4(ukr_s4_avxvnni, T_AVXVNNI, step_vnni, 1)

void sq_gemm_s8_avx2(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                     size_t ldc)
{
    sq_gemm_tiles_s8(ukr_s8_avx2, NR, 1, A, M, lda, W, C, ldc);
}

void sq_gemm_s4_avx2(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                     size_t ldc)
{
    sq_gemm_tiles_s4(ukr_s4_avx2, NR, 1, A, M, lda, W, C, ldc);
}

void sq_gemm_s8_avxvnni(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                        size_t ldc)
{
    sq_gemm_tiles_s8(ukr_s8_avxvnni, NR, 1, A, M, lda, W, C, ldc);
}

void sq_gemm_s4_avxvnni(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                        size_t ldc)
{
    sq_gemm_tiles_s4(ukr_s4_avxvnni, NR, 1, A, M, lda, W, C, ldc);
}

/* 8 floats -> round half away from zero, clamp to +-127, NaN -> 0, as
 * floats holding integers. Rounds from the exact fraction v - trunc(v)
 * (never trunc(|v| + 0.5), which misrounds 0.49999997f). */
T_AVX2 INLINE __m256 round_s8_ps(__m256 v)
{
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(v, t)); /* exact */
    __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 one = _mm256_or_ps(_mm256_and_ps(v, sign_bit), _mm256_set1_ps(1.0f)); /* +-1 */
    t = _mm256_add_ps(t, _mm256_and_ps(up, one));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_and_ps(t, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN -> 0 */
}

T_AVX2 void sq_quantize_acts_avx2(const float *x, int rows, int k, size_t ldx, const float *m,
                                  int8_t *qa, int k_pad, size_t lda)
{
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        int8_t *qr = qa + (size_t)r * lda;
        int j = 0;
        for (; j + 32 <= k; j += 32) {
            __m256i q[4];
            for (int i = 0; i < 4; i++) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + j + 8 * i),
                                         _mm256_loadu_ps(m + j + 8 * i));
                __asm__("" : "+x"(v)); /* v rounded to float, never fused into v - t */
                q[i] = _mm256_cvtps_epi32(round_s8_ps(v));
            }
            /* packs work per 128-bit lane; the permute restores the order */
            __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                                           _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(qr + j), _mm256_permutevar8x32_epi32(b, order));
        }
        for (; j < k; j++)
            qr[j] = sq_ref_round_s8(xr[j] * m[j]);
        memset(qr + k, 0, (size_t)(k_pad - k));
    }
}

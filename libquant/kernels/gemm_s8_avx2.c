/* The AVX2 row of the kernel table (gemm_kernel.h): the GEMM kernels on
 * the shared tile driver (fused epilogue) and the AVX2 activation quantize
 * step. The AVX-VNNI row (gemm_s8_avxvnni.c) shares the ymm helpers of
 * gemm_s8_ymm.h.
 *
 * From 8 rows up the widened kernels further down run (s8 -> s16 and
 * vpmaddwd alone: two multiply-pipe ops per 32 multiply-adds instead of the
 * sign trick's three, see there). Below 8 rows the kernels run 4 rows x 1
 * panel (gemm_s8_ymm.h): a 64-byte panel row (one k-group of 16
 * channels) is two ymm, and the 4 bytes of one A row for that k-group are
 * broadcast to every 32-bit lane; AVX2 then uses vpmaddubsw with the sign
 * trick.
 *
 * Exactness of the sign trick (DESIGN.md): vpmaddubsw(|a|, sign(w, a))
 * multiplies u8 |a| <= 127 by s8 w * sgn(a) in [-127, 127]; a pair sum is at
 * most 2 * 127 * 127 = 32258 < 32767, so the s16 saturation never triggers.
 * vpmaddwd with ones then widens to s32 exactly. |a| of -128 would be 128,
 * which A never holds (the quantize step clamps to +-127). */
#include <math.h>

#include "gemm_s8_ymm.h"
#include "qlinear_ref.h"

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

DEF_S8(ukr_s8_avx2, T_AVX2, step_avx2, 0)
DEF_S4(ukr_s4_avx2, T_AVX2, step_avx2, 0)

/* ---- The AVX2 widened kernels --------------------------------------------
 * vpsignb shares the two multiply pipes with vpmaddubsw and vpmaddwd on the
 * cores this targets, so the sign trick costs three multiply-pipe ops per 32
 * multiply-adds. Widening both sides to s16 and using vpmaddwd alone costs
 * two (vpmaddwd + vpaddd per 16 multiply-adds) and cannot saturate at all:
 * each s32 lane gets a[k] * w[k] + a[k+1] * w[k+1], |.| <= 2 * 127 * 127.
 *
 * A micro-kernel call covers up to WNR rows x WNP panels. Per chunk of KC
 * inputs it widens its panels' rows (16 bytes -> 16 s16, vpmovsxbw) into w16
 * and its A rows into a16, once, then runs register blocks of RB rows x 1
 * panel over them: a16 gives the 4 s16 of one k-group of a row broadcast to
 * every 64-bit lane (one vpbroadcastq load), w16 the 16 channels x 4 k of
 * the panel row as 4 ymm of 4 channels each. Accumulator j of a row holds,
 * per channel c of 4j .. 4j+3, two s32 lanes: the sums over k = 0,1 and
 * k = 2,3 (mod 4). The end adds each pair (vphaddd, exact in s32) and
 * reorders the channels. The accumulators are plain s32 sums of exact
 * products, so the result equals the scalar reference bit for bit.
 *
 * Measured on Zen 3 (2 threads, shared machine): vpsignb, vpmaddubsw and
 * vpmaddwd each issue 2 per cycle on the same pipes; a pure
 * vpmaddwd + vpaddd loop reaches about 1.65x the multiply-adds per second
 * of a pure vfmadd231ps loop, which bounds this kernel against sgemm. The
 * tile (32 rows x 2 panels, KC 128, 3-row blocks) was the best of 2 or 3
 * row blocks, KC 128 or 256 and 16x4, 32x2 or 64x1 tiles. The buffers are
 * per thread (static __thread, 24 KiB per kernel), not on the stack. The
 * defaults can be overridden with -D for experiments. */
#ifndef KC
#define KC 128 /* inputs per chunk: a multiple of SQ_INT4_GROUP */
#endif
#ifndef WNR
#define WNR 32 /* rows per micro-kernel call */
#endif
#ifndef WNP
#define WNP 2  /* panels per micro-kernel call (WNR * WNP * 16 <= SQ_UKR_MAX_OUT) */
#endif
#ifndef RB
#define RB 3   /* rows per register block: 12 accumulators */
#endif
#define SMALL_M 8 /* below this many rows the widening does not pay: sign trick */

_Static_assert(WNR * WNP * SQ_PANEL_N <= SQ_UKR_MAX_OUT, "tile too large");
_Static_assert(KC % SQ_INT4_GROUP == 0, "KC must hold whole int4 groups");

/* ng int8 panel rows at src -> ng * 64 s16 at dst. */
T_AVX2 INLINE void widen_w_s8(const int8_t *src, int ng, int16_t *dst)
{
    for (int i = 0; i < ng * 4; i++)
        _mm256_store_si256((__m256i *)(dst + 16 * i),
                           _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + 16 * i))));
}

/* ng int4 panel rows (32 bytes each) at src -> ng * 64 s16 at dst. */
T_AVX2 INLINE void widen_w_s4(const uint8_t *src, int ng, int16_t *dst)
{
    for (int g = 0; g < ng; g++, src += ROW_BYTES / 2, dst += ROW_BYTES) {
        __m256i w0, w1;
        unpack_s4(src, &w0, &w1);
        _mm256_store_si256((__m256i *)dst, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w0)));
        _mm256_store_si256((__m256i *)(dst + 16),
                           _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w0, 1)));
        _mm256_store_si256((__m256i *)(dst + 32), _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w1)));
        _mm256_store_si256((__m256i *)(dst + 48),
                           _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w1, 1)));
    }
}

/* nr rows of A, inputs k0 .. k0+kc-1 (kc a multiple of 4) -> a16[r * KC + i]. */
T_AVX2 INLINE void widen_a(const int8_t *A, size_t lda, int nr, int k0, int kc, int16_t *a16)
{
    for (int r = 0; r < nr; r++) {
        const int8_t *src = A + (size_t)r * lda + k0;
        int16_t *dst = a16 + (size_t)r * KC;
        int i = 0;
        for (; i + 16 <= kc; i += 16)
            _mm256_store_si256((__m256i *)(dst + i),
                               _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))));
        for (; i < kc; i += 4) {
            int32_t v;
            memcpy(&v, src + i, sizeof v);
            _mm_storel_epi64((__m128i *)(dst + i), _mm_cvtepi8_epi16(_mm_cvtsi32_si128(v)));
        }
    }
}

/* acc[r][0..3] (+)= rows r < rb of a16 (stride KC) . ng widened panel rows. */
T_AVX2 INLINE void wblock(const int16_t *a16, const int rb, const int16_t *w16, int ng,
                          __m256i *acc, int first)
{
    __m256i c[RB][4], a[RB];
    for (int r = 0; r < rb; r++)
        for (int j = 0; j < 4; j++)
            c[r][j] = first ? _mm256_setzero_si256() : acc[r * 4 + j];
    for (int g = 0; g < ng; g++, w16 += ROW_BYTES) {
        for (int r = 0; r < rb; r++) {
            int64_t v;
            memcpy(&v, a16 + (size_t)r * KC + 4 * g, sizeof v);
            a[r] = _mm256_set1_epi64x(v);
        }
        for (int j = 0; j < 4; j++) {
            __m256i w = _mm256_load_si256((const __m256i *)(w16 + 16 * j));
            for (int r = 0; r < rb; r++)
                c[r][j] = _mm256_add_epi32(c[r][j], _mm256_madd_epi16(a[r], w));
        }
    }
    for (int r = 0; r < rb; r++)
        for (int j = 0; j < 4; j++)
            acc[r * 4 + j] = c[r][j];
}

/* All rows of one panel: register blocks of RB rows. acc is [nr][4].
 * noclone: a copy specialized on first/ng (int4 passes constants) came out
 * with the accumulators spilled to the stack, a third slower. */
T_AVX2 __attribute__((noinline, noclone)) static void wpanel(const int16_t *a16, int nr, const int16_t *w16, int ng, __m256i *acc,
                          int first)
{
    int r = 0;
    for (; r + RB <= nr; r += RB)
        wblock(a16 + (size_t)r * KC, RB, w16, ng, acc + r * 4, first);
    if (nr - r == 2)
        wblock(a16 + (size_t)r * KC, 2, w16, ng, acc + r * 4, first);
    else if (nr - r == 1)
        wblock(a16 + (size_t)r * KC, 1, w16, ng, acc + r * 4, first);
}

/* The 4 pair-layout accumulators of a row -> channels 0..7 and 8..15. */
T_AVX2 INLINE void wfinish(const __m256i *c, __m256i *lo, __m256i *hi)
{
    *lo = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c[0], c[1]), 0xD8);
    *hi = _mm256_permute4x64_epi64(_mm256_hadd_epi32(c[2], c[3]), 0xD8);
}

T_AVX2 static void ukr_s8_avx2_wide(const int8_t *A, size_t lda, int nr, const sq_qweight *W,
                                    int p0, int np, int32_t *out)
{
    static __thread int16_t w16[WNP][KC * SQ_PANEL_N] __attribute__((aligned(64)));
    static __thread int16_t a16[WNR * KC] __attribute__((aligned(64)));
    static __thread __m256i acc[WNP][WNR * 4];
    int kg = W->k_pad / SQ_PANEL_K;
    const int8_t *data = (const int8_t *)W->data;
    for (int k0 = 0; k0 < W->k_pad; k0 += KC) {
        int kc = W->k_pad - k0 < KC ? W->k_pad - k0 : KC, ng = kc / SQ_PANEL_K;
        for (int p = 0; p < np; p++)
            widen_w_s8(data + ((size_t)(p0 + p) * kg + k0 / SQ_PANEL_K) * ROW_BYTES, ng, w16[p]);
        widen_a(A, lda, nr, k0, kc, a16);
        for (int p = 0; p < np; p++)
            wpanel(a16, nr, w16[p], ng, acc[p], k0 == 0);
    }
    int ld = np * SQ_PANEL_N;
    for (int p = 0; p < np; p++)
        for (int r = 0; r < nr; r++) {
            __m256i lo, hi;
            wfinish(acc[p] + r * 4, &lo, &hi);
            _mm256_storeu_si256((__m256i *)(out + r * ld + p * SQ_PANEL_N), lo);
            _mm256_storeu_si256((__m256i *)(out + r * ld + p * SQ_PANEL_N + 8), hi);
        }
}

T_AVX2 static void ukr_s4_avx2_wide(const int8_t *A, size_t lda, int nr, const sq_qweight *W,
                                    int p0, int np, float *out)
{
    static __thread int16_t w16[WNP][SQ_INT4_GROUP * SQ_PANEL_N] __attribute__((aligned(64)));
    static __thread int16_t a16[WNR * KC] __attribute__((aligned(64)));
    static __thread __m256i acc[WNP][WNR * 4];
    int kg = W->k_pad / SQ_PANEL_K, groups = W->k_pad / SQ_INT4_GROUP;
    int ld = np * SQ_PANEL_N;
    const uint8_t *data = (const uint8_t *)W->data;
    for (int r = 0; r < nr; r++)
        memset(out + r * ld, 0, sizeof *out * (size_t)ld);
    for (int gr = 0; gr < groups; gr++) {
        int k0 = gr * SQ_INT4_GROUP;
        for (int p = 0; p < np; p++)
            widen_w_s4(data + ((size_t)(p0 + p) * kg + k0 / SQ_PANEL_K) * (ROW_BYTES / 2),
                       ROWS_PER_GROUP, w16[p]);
        widen_a(A, lda, nr, k0, SQ_INT4_GROUP, a16);
        for (int p = 0; p < np; p++) {
            wpanel(a16, nr, w16[p], ROWS_PER_GROUP, acc[p], 1);
            float s[SQ_PANEL_N];
            for (int i = 0; i < SQ_PANEL_N; i++)
                s[i] = W->scale[(size_t)((p0 + p) * SQ_PANEL_N + i) * groups + gr];
            __m256 s0 = _mm256_loadu_ps(s), s1 = _mm256_loadu_ps(s + 8);
            for (int r = 0; r < nr; r++) {
                __m256i lo, hi;
                wfinish(acc[p] + r * 4, &lo, &hi);
                float *o = out + r * ld + p * SQ_PANEL_N;
                __m256 q0 = _mm256_mul_ps(_mm256_cvtepi32_ps(lo), s0);
                __m256 q1 = _mm256_mul_ps(_mm256_cvtepi32_ps(hi), s1);
                __asm__("" : "+x"(q0), "+x"(q1)); /* keep mul and add apart: no FMA */
                _mm256_storeu_ps(o, _mm256_add_ps(_mm256_loadu_ps(o), q0));
                _mm256_storeu_ps(o + 8, _mm256_add_ps(_mm256_loadu_ps(o + 8), q1));
            }
        }
    }
}

/* 8 floats -> round half away from zero, clamp to +-127, NaN -> 0, as
 * floats holding integers. Rounds from the exact fraction v - trunc(v)
 * (never trunc(|v| + 0.5), which misrounds 0.49999997f). */
T_AVX2 INLINE __m256 round_s8_ps(__m256 v, __m256 zero)
{
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    const __m256 lim = _mm256_set1_ps((float)(SQ_REF_QMAX + SQ_REF_MAX_ZERO));
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(v, t)); /* exact */
    __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 one = _mm256_or_ps(_mm256_and_ps(v, sign_bit), _mm256_set1_ps(1.0f)); /* +-1 */
    t = _mm256_add_ps(t, _mm256_and_ps(up, one));
    /* sq_ref_round_s8_zp: clamp, shift by the zero point (exact), clamp */
    t = _mm256_sub_ps(_mm256_min_ps(_mm256_max_ps(t, _mm256_sub_ps(_mm256_setzero_ps(), lim)), lim),
                      zero);
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_and_ps(t, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN -> 0 */
}

/* Horizontal min / max of 8 floats (no NaN among them). */
T_AVX2 INLINE float hmin8(__m256 v)
{
    __m128 a = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_min_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_min_ss(a, _mm_shuffle_ps(a, a, 1)));
}
T_AVX2 INLINE float hmax8(__m256 v)
{
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    return _mm_cvtss_f32(_mm_max_ss(a, _mm_shuffle_ps(a, a, 1)));
}

T_AVX2 static void quantize(const float *x, int rows, int k, size_t ldx, const float *m,
                            int zero, int8_t *qa, int k_pad, size_t lda, float *range)
{
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256 zf = _mm256_set1_ps((float)zero);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        int8_t *qr = qa + (size_t)r * lda;
        /* min_ps / max_ps return their second operand when the first is
         * NaN: with v first, NaN values never enter the range. */
        __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY);
        int j = 0;
        for (; j + 32 <= k; j += 32) {
            __m256i q[4];
            for (int i = 0; i < 4; i++) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xr + j + 8 * i),
                                         _mm256_loadu_ps(m + j + 8 * i));
                __asm__("" : "+x"(v)); /* v rounded to float, never fused into v - t */
                q[i] = _mm256_cvtps_epi32(round_s8_ps(v, zf));
                lo = _mm256_min_ps(v, lo);
                hi = _mm256_max_ps(v, hi);
            }
            /* packs work per 128-bit lane; the permute restores the order */
            __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                                           _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(qr + j), _mm256_permutevar8x32_epi32(b, order));
        }
        sq_quantize_row_finish(xr, m, j, k, zero, qr, k_pad, hmin8(lo), hmax8(hi),
                               range ? range + 2 * r : NULL);
    }
}

static void gemm_s8(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    if (M < SMALL_M)
        sq_gemm_tiles_s8(ukr_s8_avx2, NR, 1, SQ_WORK_MAC_S8_AVX2, A, M, lda, W, C, ldc, ep);
    else
        sq_gemm_tiles_s8(ukr_s8_avx2_wide, WNR, WNP, SQ_WORK_MAC_S8_AVX2, A, M, lda, W, C, ldc, ep);
}

static void gemm_s4(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    if (M < SMALL_M)
        sq_gemm_tiles_s4(ukr_s4_avx2, NR, 1, SQ_WORK_MAC_S8_AVX2, A, M, lda, W, C, ldc, ep);
    else
        sq_gemm_tiles_s4(ukr_s4_avx2_wide, WNR, WNP, SQ_WORK_MAC_S8_AVX2, A, M, lda, W, C, ldc, ep);
}

const sq_gemm_kernels sq_gemm_kernels_avx2 = {
    .isa = SQ_ISA_AVX2, .s8 = gemm_s8, .s4 = gemm_s4, .quantize = quantize, .fuses = true};

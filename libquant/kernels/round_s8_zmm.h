/* sq_ref_round_s8_zp on 16 float lanes (qlinear_ref.h), exact: the one
 * vector form of the activation rounding, shared by the AVX512-VNNI
 * quantize step (gemm_s8_avx512vnni.c) and the int8 attention (attn_s8.c).
 * The including file defines T_512 (its target attribute) and INLINE.
 *
 * The AVX2 row's arithmetic 16 lanes wide: the same exact operations, so
 * the same codes (unit-gemm_s8 holds every row's step to the reference).
 * AVX-512F has no float AND / OR (that is DQ): the sign-bit operations go
 * through the integer unit. */
#ifndef SQ_ROUND_S8_ZMM_H
#define SQ_ROUND_S8_ZMM_H

#include <immintrin.h>

#include "qlinear_ref.h"

T_512 INLINE __m512 round_s8_ps512(__m512 v, __m512 zero)
{
    const __m512i sign_bit = _mm512_set1_epi32((int)0x80000000u);
    const __m512 lim = _mm512_set1_ps((float)(SQ_REF_QMAX + SQ_REF_MAX_ZERO));
    __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 frac = _mm512_castsi512_ps(
        _mm512_andnot_si512(sign_bit, _mm512_castps_si512(_mm512_sub_ps(v, t)))); /* exact */
    __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    __m512 one = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_and_si512(_mm512_castps_si512(v), sign_bit),
        _mm512_castps_si512(_mm512_set1_ps(1.0f)))); /* +-1 */
    t = _mm512_mask_add_ps(t, up, t, one);
    /* sq_ref_round_s8_zp: clamp, shift by the zero point (exact), clamp */
    t = _mm512_sub_ps(_mm512_min_ps(_mm512_max_ps(t, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim),
                      zero);
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), t); /* NaN -> 0 */
}

#endif

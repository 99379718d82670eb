/* f32 -> bf16 by squint's rule (formats/SQM.md 6.5): NaN -> a quiet NaN;
 * |x| < 2^-60 -> a zero of x's sign; otherwise round to nearest-even at 8
 * significant bits (an overflow rounds to infinity). The one definition,
 * in scalar and AVX512-BF16 form, for the bf16 attention (attn_bf16.c). */
#ifndef SQ_BF16_H
#define SQ_BF16_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t sq_bf16_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    if ((u & 0x7fffffffu) < 0x21800000u) /* 2^-60 */
        return (uint16_t)((u >> 16) & 0x8000u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* 16 at a time (the caller carries target("avx512f,avx512bf16")), through
 * vcvtneps2bf16: it rounds a normal value exactly as the rule does (the
 * same integer add), keeps a NaN's upper bits with the quiet bit set and
 * turns zeros and denormals into a zero of their sign, so only the normal
 * values below 2^-60 must become that zero first. 5 instructions per 16
 * values (the integer form took 12; the round was 12% of an int8 pass with
 * bf16 attention). unit-attn_bf16 holds it to the scalar form, specials
 * included. */
#define SQ_BF16_ROUND16(x)                                                                         \
    __extension__({                                                                                \
        const __m512i u_ = _mm512_castps_si512(x);                                                 \
        const __mmask16 tiny_ = _mm512_cmplt_epu32_mask(                                           \
            _mm512_and_si512(u_, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x21800000));  \
        const __m512i z_ =                                                                         \
            _mm512_mask_and_epi32(u_, tiny_, u_, _mm512_set1_epi32((int)0x80000000u));            \
        (__m256i) _mm512_cvtneps_pbh(_mm512_castsi512_ps(z_));                                     \
    })

#endif

/* f32 -> bf16 by squint's rule (formats/SQM.md 6.5): NaN -> a quiet NaN;
 * |x| < 2^-60 -> a zero of x's sign; otherwise round to nearest-even at 8
 * significant bits (an overflow rounds to infinity). The one definition,
 * in scalar and AVX-512 form, for the bf16 attention (attn_bf16.c) and the
 * softmax that writes its P (ops.c). */
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

/* 16 at a time (the caller carries target("avx512f,avx512bw")). */
#define SQ_BF16_ROUND16(x)                                                                         \
    __extension__({                                                                                \
        const __m512i u_ = _mm512_castps_si512(x);                                                 \
        const __m512i hi_ = _mm512_srli_epi32(u_, 16);                                             \
        const __m512i mag_ = _mm512_and_si512(u_, _mm512_set1_epi32(0x7fffffff));                  \
        __m512i r_ = _mm512_srli_epi32(                                                            \
            _mm512_add_epi32(u_, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),                       \
                                                  _mm512_and_si512(hi_, _mm512_set1_epi32(1)))),   \
            16);                                                                                   \
        r_ = _mm512_mask_mov_epi32(r_, _mm512_cmpgt_epu32_mask(mag_, _mm512_set1_epi32(0x7f800000)), \
                                   _mm512_or_si512(hi_, _mm512_set1_epi32(0x40)));                 \
        r_ = _mm512_mask_mov_epi32(r_, _mm512_cmplt_epu32_mask(mag_, _mm512_set1_epi32(0x21800000)), \
                                   _mm512_and_si512(hi_, _mm512_set1_epi32(0x8000)));              \
        _mm512_cvtepi32_epi16(r_);                                                                 \
    })

#endif

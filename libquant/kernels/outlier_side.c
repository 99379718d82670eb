/* The outlier channels' exact part (outlier_side.h). */
#include "outlier_side.h"

#include "ops.h"

/* The empty asm keeps a product rounded where the compiler could otherwise
 * fuse it into an FMA with the add. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define KEEP_ROUNDED(v) __asm__("" : "+v"(v))
#define SIDE_AVX2_FN __attribute__((target("avx2,fma")))
#define SIDE_AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#define SIDE_VECTOR 1
#include <immintrin.h>
#else
#define KEEP_ROUNDED(v) ((void)0)
#define SIDE_VECTOR 0
#endif

static void side_scalar(const sq_outlier_side *s, const float *xr, int n0, int n1, float *yr)
{
    for (int n = n0; n < n1; n++) {
        float side = 0.0f;
        for (int o = 0; o < s->n; o++) {
            float p = xr[s->idx ? s->idx[o] : o] * s->w[(size_t)o * s->ldw + n];
            KEEP_ROUNDED(p);
            side = o ? side + p : p;
        }
        yr[n] += side;
    }
}

#if SIDE_VECTOR
SIDE_AVX2_FN static int side_avx2(const sq_outlier_side *s, const float *xr, int n, int n1,
                                  float *yr)
{
    for (; n + 8 <= n1; n += 8) {
        __m256 side = _mm256_setzero_ps();
        for (int o = 0; o < s->n; o++) {
            __m256 p = _mm256_mul_ps(_mm256_set1_ps(xr[s->idx ? s->idx[o] : o]),
                                     _mm256_loadu_ps(s->w + (size_t)o * s->ldw + n));
            KEEP_ROUNDED(p);
            side = o ? _mm256_add_ps(side, p) : p;
        }
        _mm256_storeu_ps(yr + n, _mm256_add_ps(_mm256_loadu_ps(yr + n), side));
    }
    return n;
}

SIDE_AVX512_FN static int side_avx512(const sq_outlier_side *s, const float *xr, int n, int n1,
                                      float *yr)
{
    for (; n + 16 <= n1; n += 16) {
        __m512 side = _mm512_setzero_ps();
        for (int o = 0; o < s->n; o++) {
            __m512 p = _mm512_mul_ps(_mm512_set1_ps(xr[s->idx ? s->idx[o] : o]),
                                     _mm512_loadu_ps(s->w + (size_t)o * s->ldw + n));
            KEEP_ROUNDED(p);
            side = o ? _mm512_add_ps(side, p) : p;
        }
        _mm512_storeu_ps(yr + n, _mm512_add_ps(_mm512_loadu_ps(yr + n), side));
    }
    return n;
}
#endif

void sq_outlier_side_row(const sq_outlier_side *s, int r, int n0, int n1, float *yr)
{
    const float *xr = s->x + (size_t)r * s->ldx;
    int n = n0;
#if SIDE_VECTOR
    const sq_ops_level lv = sq_ops_get_level();
    if (lv == SQ_OPS_AVX512)
        n = side_avx512(s, xr, n, n1, yr);
    if (lv >= SQ_OPS_AVX2)
        n = side_avx2(s, xr, n, n1, yr);
#endif
    side_scalar(s, xr, n, n1, yr);
}

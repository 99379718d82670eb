#include "f32_rows.h"

#include <math.h>
#include <stddef.h>

#include "par_threads.h"

/* Columns per task: the weights of one block (16 x K floats) stay in L2
 * while every row passes over them, so W is read from memory once per
 * call whatever the row count. */
#define COL_BLOCK 16

/* ---- scalar: the definition (f32_rows.h) ---- */

static float dot_scalar(const float *x, const float *w, int K)
{
    float a[2][16] = {{0}};
    const int chunks = (K + 15) / 16;
    for (int c = 0; c < chunks; c++)
        for (int j = 0; j < 16; j++) {
            const int k = 16 * c + j;
            const float xv = k < K ? x[k] : 0.0f, wv = k < K ? w[k] : 0.0f;
            a[c & 1][j] = fmaf(xv, wv, a[c & 1][j]);
        }
    float s[16], t[8], u[4], v[2];
    for (int j = 0; j < 16; j++)
        s[j] = a[0][j] + a[1][j];
    for (int j = 0; j < 8; j++)
        t[j] = s[j] + s[j + 8];
    for (int j = 0; j < 4; j++)
        u[j] = t[j] + t[j + 4];
    for (int j = 0; j < 2; j++)
        v[j] = u[j] + u[j + 2];
    return v[0] + v[1];
}

static void block_scalar(const float *x, int rows, int K, const float *W, const float *b, int N,
                         int n0, int n1, float *y)
{
    for (int r = 0; r < rows; r++)
        for (int n = n0; n < n1; n++)
            y[(size_t)r * N + n] =
                dot_scalar(x + (size_t)r * K, W + (size_t)n * K, K) + (b ? b[n] : 0.0f);
}

#if defined(__GNUC__) && defined(__x86_64__)
#define F32_ROWS_VECTOR 1
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX512_FN __attribute__((target("avx512f,avx2,fma")))
#define INLINE inline __attribute__((always_inline))

/* ---- AVX-512: a lane per j; NR rows x NC columns of dots at once ---- */

AVX512_FN static INLINE float reduce512(__m512 a0, __m512 a1)
{
    __m512 s = _mm512_add_ps(a0, a1);
    __m256 t = _mm256_add_ps(_mm512_castps512_ps256(s),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
    __m128 w = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    return _mm_cvtss_f32(w);
}

AVX512_FN static INLINE void tile512(const float *x, int K, const float *W, int NR, int NC,
                                     float out[2][4])
{
    __m512 a[2][4][2];
    for (int r = 0; r < NR; r++)
        for (int n = 0; n < NC; n++)
            a[r][n][0] = a[r][n][1] = _mm512_setzero_ps();
    const int full = K / 16;
    int c = 0;
    for (; c + 2 <= full; c += 2)
        for (int h = 0; h < 2; h++) {
            const int k = 16 * (c + h);
            __m512 xv[2];
            for (int r = 0; r < NR; r++)
                xv[r] = _mm512_loadu_ps(x + (size_t)r * K + k);
            for (int n = 0; n < NC; n++) {
                __m512 wv = _mm512_loadu_ps(W + (size_t)n * K + k);
                for (int r = 0; r < NR; r++)
                    a[r][n][h] = _mm512_fmadd_ps(xv[r], wv, a[r][n][h]);
            }
        }
    for (; c * 16 < K; c++) { /* one full chunk left, then the masked tail */
        const int k = 16 * c, rem = K - k;
        const __mmask16 m = rem >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << rem) - 1);
        __m512 xv[2];
        for (int r = 0; r < NR; r++)
            xv[r] = _mm512_maskz_loadu_ps(m, x + (size_t)r * K + k);
        for (int n = 0; n < NC; n++) {
            __m512 wv = _mm512_maskz_loadu_ps(m, W + (size_t)n * K + k);
            for (int r = 0; r < NR; r++)
                a[r][n][c & 1] = _mm512_fmadd_ps(xv[r], wv, a[r][n][c & 1]);
        }
    }
    for (int r = 0; r < NR; r++)
        for (int n = 0; n < NC; n++)
            out[r][n] = reduce512(a[r][n][0], a[r][n][1]);
}

#define TILE512(NR_, NC_)                                                                     \
    AVX512_FN static void tile512_##NR_##x##NC_(const float *x, int K, const float *W,        \
                                                 float out[2][4])                             \
    {                                                                                         \
        tile512(x, K, W, NR_, NC_, out);                                                      \
    }
TILE512(2, 4)
TILE512(1, 4)
TILE512(2, 1)
TILE512(1, 1)

AVX512_FN static void block_avx512(const float *x, int rows, int K, const float *W,
                                   const float *b, int N, int n0, int n1, float *y)
{
    float out[2][4];
    for (int r = 0; r < rows; r += 2) {
        const int nr = rows - r >= 2 ? 2 : 1;
        const float *xr = x + (size_t)r * K;
        int n = n0;
        for (; n + 4 <= n1; n += 4) {
            (nr == 2 ? tile512_2x4 : tile512_1x4)(xr, K, W + (size_t)n * K, out);
            for (int i = 0; i < nr; i++)
                for (int j = 0; j < 4; j++)
                    y[(size_t)(r + i) * N + n + j] = out[i][j] + (b ? b[n + j] : 0.0f);
        }
        for (; n < n1; n++) {
            (nr == 2 ? tile512_2x1 : tile512_1x1)(xr, K, W + (size_t)n * K, out);
            for (int i = 0; i < nr; i++)
                y[(size_t)(r + i) * N + n] = out[i][0] + (b ? b[n] : 0.0f);
        }
    }
}

/* ---- AVX2: each 16-lane accumulator as two ymm (lanes 0-7, 8-15) ---- */

AVX2_FN static INLINE float reduce256(__m256 a0l, __m256 a0h, __m256 a1l, __m256 a1h)
{
    __m256 sl = _mm256_add_ps(a0l, a1l), sh = _mm256_add_ps(a0h, a1h);
    __m256 t = _mm256_add_ps(sl, sh);
    __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
    __m128 w = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
    return _mm_cvtss_f32(w);
}

AVX2_FN static INLINE __m256i lane_mask(int valid)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), idx);
}

/* NR rows x 1 column; acc[r][h][half] */
AVX2_FN static INLINE void tile256(const float *x, int K, const float *w, int NR, float out[2])
{
    __m256 a[2][2][2];
    for (int r = 0; r < NR; r++)
        a[r][0][0] = a[r][0][1] = a[r][1][0] = a[r][1][1] = _mm256_setzero_ps();
    const int full = K / 16;
    int c = 0;
    for (; c + 2 <= full; c += 2)
        for (int h = 0; h < 2; h++) {
            const int k = 16 * (c + h);
            __m256 wl = _mm256_loadu_ps(w + k), wh = _mm256_loadu_ps(w + k + 8);
            for (int r = 0; r < NR; r++) {
                const float *xr = x + (size_t)r * K + k;
                a[r][h][0] = _mm256_fmadd_ps(_mm256_loadu_ps(xr), wl, a[r][h][0]);
                a[r][h][1] = _mm256_fmadd_ps(_mm256_loadu_ps(xr + 8), wh, a[r][h][1]);
            }
        }
    for (; c * 16 < K; c++) {
        const int k = 16 * c, rem = K - k;
        const __m256i ml = lane_mask(rem), mh = lane_mask(rem - 8);
        __m256 wl = _mm256_maskload_ps(w + k, ml), wh = _mm256_maskload_ps(w + k + 8, mh);
        for (int r = 0; r < NR; r++) {
            const float *xr = x + (size_t)r * K + k;
            a[r][c & 1][0] = _mm256_fmadd_ps(_mm256_maskload_ps(xr, ml), wl, a[r][c & 1][0]);
            a[r][c & 1][1] = _mm256_fmadd_ps(_mm256_maskload_ps(xr + 8, mh), wh, a[r][c & 1][1]);
        }
    }
    for (int r = 0; r < NR; r++)
        out[r] = reduce256(a[r][0][0], a[r][0][1], a[r][1][0], a[r][1][1]);
}

AVX2_FN static void tile256_2(const float *x, int K, const float *w, float out[2])
{
    tile256(x, K, w, 2, out);
}

AVX2_FN static void tile256_1(const float *x, int K, const float *w, float out[2])
{
    tile256(x, K, w, 1, out);
}

AVX2_FN static void block_avx2(const float *x, int rows, int K, const float *W, const float *b,
                               int N, int n0, int n1, float *y)
{
    float out[2];
    for (int r = 0; r < rows; r += 2) {
        const int nr = rows - r >= 2 ? 2 : 1;
        for (int n = n0; n < n1; n++) {
            (nr == 2 ? tile256_2 : tile256_1)(x + (size_t)r * K, K, W + (size_t)n * K, out);
            for (int i = 0; i < nr; i++)
                y[(size_t)(r + i) * N + n] = out[i] + (b ? b[n] : 0.0f);
        }
    }
}
#else
#define F32_ROWS_VECTOR 0
#endif

void sq_f32_rows_at(sq_ops_level lv, const float *x, int rows, int K, const float *W,
                    const float *b, int N, float *y)
{
    const int tasks = (N + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_MAC_F32, (double)rows * N * K, tasks))
    for (int t = 0; t < tasks; t++) {
        const int n0 = t * COL_BLOCK, n1 = n0 + COL_BLOCK < N ? n0 + COL_BLOCK : N;
#if F32_ROWS_VECTOR
        if (lv == SQ_OPS_AVX512)
            block_avx512(x, rows, K, W, b, N, n0, n1, y);
        else if (lv == SQ_OPS_AVX2)
            block_avx2(x, rows, K, W, b, N, n0, n1, y);
        else
#endif
            block_scalar(x, rows, K, W, b, N, n0, n1, y);
    }
    (void)lv;
}

void sq_f32_rows(const float *x, int rows, int K, const float *W, const float *b, int N, float *y)
{
    sq_f32_rows_at(sq_ops_get_level(), x, rows, K, W, b, N, y);
}

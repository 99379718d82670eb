#include "ops.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

/* One row: v = LayerNorm(v) * gamma + beta, written to out (may be v). */
static void layernorm_row(const float *v, float *out, int cols, const float *gamma,
                          const float *beta, float eps)
{
    double s = 0;
    for (int c = 0; c < cols; c++)
        s += v[c];
    float mean = (float)(s / cols);
    double q = 0;
    for (int c = 0; c < cols; c++) {
        float d = v[c] - mean;
        q += (double)d * d;
    }
    float rstd = (float)(1.0 / sqrt(q / cols + eps));
    for (int c = 0; c < cols; c++)
        out[c] = (v[c] - mean) * rstd * gamma[c] + beta[c];
}

void sq_add_layernorm(float *x, const float *add, int rows, int cols, const float *gamma,
                      const float *beta, float eps)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        float *v = x + (int64_t)r * cols;
        if (add) {
            const float *a = add + (int64_t)r * cols;
            for (int c = 0; c < cols; c++)
                v[c] += a[c];
        }
        layernorm_row(v, v, cols, gamma, beta, eps);
    }
}

void sq_layernorm_to(const float *x, float *y, int rows, int cols, const float *gamma,
                     const float *beta, float eps)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++)
        layernorm_row(x + (int64_t)r * cols, y + (int64_t)r * cols, cols, gamma, beta, eps);
}

void sq_add_inplace(float *x, const float *a, int64_t n)
{
#pragma omp parallel for schedule(static) if (n >= 16384)
    for (int64_t i = 0; i < n; i++)
        x[i] += a[i];
}

void sq_relu_inplace(float *x, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* ---- exp and erf: squint's definitions, in AVX2 + FMA and scalar ----
 * exp: x = n ln2 + r, |r| <= ln2/2, e^r by its degree-7 Taylor polynomial
 * (relative error < 1e-8 before rounding), scaled by 2^n through the exponent
 * bits. erf: Abramowitz & Stegun 7.1.26, absolute error <= 1.5e-7, which
 * moves GELU by < 1e-7 |x|: far inside the 1e-4 parity budget. */
#define AVX2_FN __attribute__((target("avx2,fma")))

/* The same two functions in scalar code, operation for operation (fmaf is
 * the fused multiply-add of the vector code, exactly rounded also where
 * the CPU has no FMA): squint's GELU and softmax give the same bits on
 * every CPU, at every position of a batch. */
static inline float exp_f32(float x)
{
    if (x < -87.3f)
        return 0.0f; /* below the float range: exactly 0 */
    x = x > -87.3f ? x : -87.3f; /* vmaxps, vminps: NaN becomes the bound as there */
    x = x < 88.7f ? x : 88.7f;
    float n = nearbyintf(x * 1.44269504088896341f);
    float r = fmaf(-n, 0.693145751953125f, x);
    r = fmaf(-n, 1.42860682030941723212e-6f, r);
    float p = 1.0f / 5040;
    p = fmaf(p, r, 1.0f / 720);
    p = fmaf(p, r, 1.0f / 120);
    p = fmaf(p, r, 1.0f / 24);
    p = fmaf(p, r, 1.0f / 6);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    union { uint32_t u; float f; } e = {.u = (uint32_t)((int32_t)n + 127) << 23};
    return p * e.f;
}

static inline float erf_f32(float x)
{
    float a = fabsf(x);
    float t = 1.0f / fmaf(0.3275911f, a, 1.0f);
    float p = 1.061405429f;
    p = fmaf(p, t, -1.453152027f);
    p = fmaf(p, t, 1.421413741f);
    p = fmaf(p, t, -0.284496736f);
    p = fmaf(p, t, 0.254829592f);
    p = p * t;
    float ex = exp_f32((0.0f - a) * a);
    return copysignf(fmaf(-p, ex, 1.0f), x);
}

static inline float gelu_f32(float v)
{
    float e = erf_f32(v * (float)M_SQRT1_2);
    float h = 0.5f * v;
    return fmaf(h, e, h);
}

AVX2_FN static inline __m256 exp_avx2(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.7f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723212e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 res = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, res); /* below the float range: exactly 0 */
}

AVX2_FN static inline __m256 erf_avx2(__m256 x)
{
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    __m256 sign = _mm256_and_ps(x, sign_mask);
    __m256 a = _mm256_andnot_ps(sign_mask, x);
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                             _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, _mm256_set1_ps(1.0f)));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    p = _mm256_mul_ps(p, t);
    __m256 ex = exp_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), a), a));
    __m256 y = _mm256_fnmadd_ps(p, ex, _mm256_set1_ps(1.0f));
    return _mm256_or_ps(y, sign);
}

/* GELU of x[i0, i1), i1 - i0 a multiple of 8. */
AVX2_FN static void gelu_avx2_block(float *x, int64_t i0, int64_t i1)
{
    for (int64_t i = i0; i < i1; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = erf_avx2(_mm256_mul_ps(v, _mm256_set1_ps((float)M_SQRT1_2)));
        __m256 h = _mm256_mul_ps(_mm256_set1_ps(0.5f), v);
        _mm256_storeu_ps(x + i, _mm256_fmadd_ps(h, e, h));
    }
}

/* The OpenMP loop only hands out blocks: the vector code stays inside a
 * function that carries the avx2 target (clang refuses vector code in the
 * outlined parallel body otherwise). Elementwise, so any split gives the
 * same bits. */
static void gelu_avx2(float *x, int64_t n)
{
    enum { BLOCK = 4096 };
    int64_t nv = n / 8 * 8, nb = (nv + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t i0 = b * BLOCK, i1 = i0 + BLOCK < nv ? i0 + BLOCK : nv;
        gelu_avx2_block(x, i0, i1);
    }
    for (int64_t i = nv; i < n; i++)
        x[i] = gelu_f32(x[i]);
}

AVX2_FN static void softmax_avx2(float *x, int cols)
{
    float m = x[0];
    for (int c = 1; c < cols; c++)
        m = x[c] > m ? x[c] : m;
    __m256 vm = _mm256_set1_ps(m), vs = _mm256_setzero_ps();
    int c = 0;
    for (; c + 8 <= cols; c += 8) {
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + c), vm));
        _mm256_storeu_ps(x + c, e);
        vs = _mm256_add_ps(vs, e);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vs);
    float s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; c < cols; c++) {
        x[c] = exp_f32(x[c] - m);
        s += x[c];
    }
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++)
        x[c] *= inv;
}

static int have_avx2(void)
{
    static int cached = -1;
    if (cached < 0)
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return cached;
}

void sq_gelu_inplace_scalar(float *x, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        x[i] = gelu_f32(x[i]);
}

/* The vector version's order: 8 running sums over the whole blocks of 8,
 * added pairwise, then the tail one by one. */
void sq_softmax_row_scalar(float *x, int cols)
{
    float m = x[0];
    for (int c = 1; c < cols; c++)
        m = x[c] > m ? x[c] : m;
    float lanes[8] = {0};
    int c = 0;
    for (; c + 8 <= cols; c += 8)
        for (int j = 0; j < 8; j++) {
            x[c + j] = exp_f32(x[c + j] - m);
            lanes[j] += x[c + j];
        }
    float s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
              ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; c < cols; c++) {
        x[c] = exp_f32(x[c] - m);
        s += x[c];
    }
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++)
        x[c] *= inv;
}

void sq_gelu_inplace(float *x, int64_t n)
{
    if (have_avx2())
        gelu_avx2(x, n);
    else
        sq_gelu_inplace_scalar(x, n);
}

void sq_softmax_row(float *x, int cols)
{
    if (have_avx2())
        softmax_avx2(x, cols);
    else
        sq_softmax_row_scalar(x, cols);
}

static void rmsnorm_row(const float *x, float *y, int cols, const float *w, float eps)
{
    double ss = 0;
    for (int c = 0; c < cols; c++)
        ss += (double)x[c] * x[c];
    float scale = (float)(1.0 / sqrt(ss / cols + eps));
    for (int c = 0; c < cols; c++)
        y[c] = w[c] * (x[c] * scale);
}

void sq_rmsnorm_to(const float *x, float *y, int rows, int cols, const float *w, float eps)
{
#pragma omp parallel for schedule(static) if (rows > 1)
    for (int r = 0; r < rows; r++)
        rmsnorm_row(x + (int64_t)r * cols, y + (int64_t)r * cols, cols, w, eps);
}

void sq_swiglu(const float *gu, float *h, int rows, int hidden)
{
#pragma omp parallel for schedule(static) if (rows > 1)
    for (int r = 0; r < rows; r++) {
        const float *g = gu + (int64_t)r * 2 * hidden, *u = g + hidden;
        float *o = h + (int64_t)r * hidden;
        for (int j = 0; j < hidden; j++)
            o[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
    }
}

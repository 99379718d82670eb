#include "ops.h"

#include <immintrin.h>
#include <stdbool.h>

#include "cpu_features.h"
#include "par_threads.h"
#include <math.h>
#include <stdint.h>

/* ---- which vector code runs ----
 * The side ops follow the instruction set chosen for the GEMMs
 * (cpu_features.h: SQUINT_ISA, else the best the CPU has): scalar; avx2 or
 * avxvnni -> AVX2 + FMA; avx512vnni or amx -> AVX-512 (F, BW). Every level
 * computes the same operations in the same order (formats/SQM.md 6.2, 6.5,
 * 6.7), so the choice changes the speed, never the bits. */
static int ops_level = -1;

static int level_for(sq_isa isa)
{
    const sq_cpu_features *f = sq_cpu_features_get();
    if (isa >= SQ_ISA_AVX512VNNI && f->avx512f && f->avx512bw && f->avx2 && f->fma)
        return SQ_OPS_AVX512;
    if (isa >= SQ_ISA_AVX2 && f->avx2 && f->fma)
        return SQ_OPS_AVX2;
    return SQ_OPS_SCALAR;
}

static int level(void)
{
    int l = __atomic_load_n(&ops_level, __ATOMIC_RELAXED);
    if (l < 0) {
        sq_isa isa;
        sq_err err;
        if (sq_isa_select(&isa, &err) != 0) /* the GEMM reports a bad SQUINT_ISA */
            isa = sq_isa_best();
        l = level_for(isa);
        __atomic_store_n(&ops_level, l, __ATOMIC_RELAXED);
    }
    return l;
}

bool sq_ops_set_level(sq_ops_level l)
{
    if (l != SQ_OPS_SCALAR &&
        level_for(l == SQ_OPS_AVX512 ? SQ_ISA_AVX512VNNI : SQ_ISA_AVX2) != (int)l)
        return false;
    __atomic_store_n(&ops_level, (int)l, __ATOMIC_RELAXED);
    return true;
}

sq_ops_level sq_ops_get_level(void)
{
    return (sq_ops_level)level();
}

#define AVX2_FN __attribute__((target("avx2,fma")))
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx2,fma")))

/* ---- LayerNorm (SQM.md 6.2): the sums in 8 double lanes ----
 * Lane j sums the elements c = j (mod 8) below C8 = C - C mod 8 in
 * increasing c; the lanes are added ((0+1)+(2+3))+((4+5)+(6+7)), then the
 * last C mod 8 elements in order. The square of a widened f32 difference is
 * exact in double, so a vector FMA and a multiply-then-add agree. Each level
 * gives the lanes' totals and writes the row; the tails are shared. */

static inline double lanes_total(const double l[8])
{
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

static double sum_lanes_scalar(const float *v, int c8)
{
    double l[8] = {0};
    for (int c = 0; c < c8; c += 8)
        for (int j = 0; j < 8; j++)
            l[j] += v[c + j];
    return lanes_total(l);
}

static double sqdev_lanes_scalar(const float *v, int c8, float mean)
{
    double l[8] = {0};
    for (int c = 0; c < c8; c += 8)
        for (int j = 0; j < 8; j++) {
            const double d = v[c + j] - mean;
            l[j] += d * d;
        }
    return lanes_total(l);
}

static void ln_write_scalar(const float *v, float *out, int from, int cols, float mean,
                            float rstd, const float *gamma, const float *beta)
{
    for (int c = from; c < cols; c++)
        out[c] = fmaf((v[c] - mean) * rstd, gamma[c], beta[c]);
}

AVX2_FN static double sum_lanes_avx2(const float *v, int c8)
{
    __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
    for (int c = 0; c < c8; c += 8) {
        a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm_loadu_ps(v + c)));
        b = _mm256_add_pd(b, _mm256_cvtps_pd(_mm_loadu_ps(v + c + 4)));
    }
    double l[8];
    _mm256_storeu_pd(l, a);
    _mm256_storeu_pd(l + 4, b);
    return lanes_total(l);
}

AVX2_FN static double sqdev_lanes_avx2(const float *v, int c8, float mean)
{
    const __m128 m = _mm_set1_ps(mean);
    __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
    for (int c = 0; c < c8; c += 8) {
        __m256d d0 = _mm256_cvtps_pd(_mm_sub_ps(_mm_loadu_ps(v + c), m));
        __m256d d1 = _mm256_cvtps_pd(_mm_sub_ps(_mm_loadu_ps(v + c + 4), m));
        a = _mm256_fmadd_pd(d0, d0, a);
        b = _mm256_fmadd_pd(d1, d1, b);
    }
    double l[8];
    _mm256_storeu_pd(l, a);
    _mm256_storeu_pd(l + 4, b);
    return lanes_total(l);
}

AVX2_FN static void ln_write_avx2(const float *v, float *out, int cols, float mean, float rstd,
                                  const float *gamma, const float *beta)
{
    const __m256 m = _mm256_set1_ps(mean), r = _mm256_set1_ps(rstd);
    int c = 0;
    for (; c + 8 <= cols; c += 8) {
        __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + c), m), r);
        _mm256_storeu_ps(out + c,
                         _mm256_fmadd_ps(t, _mm256_loadu_ps(gamma + c), _mm256_loadu_ps(beta + c)));
    }
    ln_write_scalar(v, out, c, cols, mean, rstd, gamma, beta);
}

AVX512_FN static double sum_lanes_avx512(const float *v, int c8)
{
    __m512d a = _mm512_setzero_pd();
    for (int c = 0; c < c8; c += 8)
        a = _mm512_add_pd(a, _mm512_cvtps_pd(_mm256_loadu_ps(v + c)));
    double l[8];
    _mm512_storeu_pd(l, a);
    return lanes_total(l);
}

AVX512_FN static double sqdev_lanes_avx512(const float *v, int c8, float mean)
{
    const __m256 m = _mm256_set1_ps(mean);
    __m512d a = _mm512_setzero_pd();
    for (int c = 0; c < c8; c += 8) {
        __m512d d = _mm512_cvtps_pd(_mm256_sub_ps(_mm256_loadu_ps(v + c), m));
        a = _mm512_fmadd_pd(d, d, a);
    }
    double l[8];
    _mm512_storeu_pd(l, a);
    return lanes_total(l);
}

AVX512_FN static void ln_write_avx512(const float *v, float *out, int cols, float mean,
                                      float rstd, const float *gamma, const float *beta)
{
    const __m512 m = _mm512_set1_ps(mean), r = _mm512_set1_ps(rstd);
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + c), m), r);
        _mm512_storeu_ps(out + c,
                         _mm512_fmadd_ps(t, _mm512_loadu_ps(gamma + c), _mm512_loadu_ps(beta + c)));
    }
    ln_write_scalar(v, out, c, cols, mean, rstd, gamma, beta);
}

/* One row: out = LayerNorm(v) * gamma + beta (out may be v). */
static void layernorm_row(int lv, const float *v, float *out, int cols, const float *gamma,
                          const float *beta, float eps)
{
    const int c8 = cols / 8 * 8;
    double s = lv == SQ_OPS_AVX512 ? sum_lanes_avx512(v, c8)
               : lv == SQ_OPS_AVX2 ? sum_lanes_avx2(v, c8)
                                   : sum_lanes_scalar(v, c8);
    for (int c = c8; c < cols; c++)
        s += v[c];
    const float mean = (float)(s / cols);
    double var = lv == SQ_OPS_AVX512 ? sqdev_lanes_avx512(v, c8, mean)
                 : lv == SQ_OPS_AVX2 ? sqdev_lanes_avx2(v, c8, mean)
                                     : sqdev_lanes_scalar(v, c8, mean);
    for (int c = c8; c < cols; c++) {
        const double d = v[c] - mean;
        var += d * d;
    }
    const float rstd = (float)(1.0 / sqrt(var / cols + eps));
    if (lv == SQ_OPS_AVX512)
        ln_write_avx512(v, out, cols, mean, rstd, gamma, beta);
    else if (lv == SQ_OPS_AVX2)
        ln_write_avx2(v, out, cols, mean, rstd, gamma, beta);
    else
        ln_write_scalar(v, out, 0, cols, mean, rstd, gamma, beta);
}

void sq_add_layernorm(float *x, const float *add, int rows, int cols, const float *gamma,
                      const float *beta, float eps)
{
    const int lv = level();
    /* three passes over a row: the add with the mean, the variance, the write */
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, 3.0 * rows * cols, rows))
    for (int r = 0; r < rows; r++) {
        float *v = x + (int64_t)r * cols;
        if (add) {
            const float *a = add + (int64_t)r * cols;
            for (int c = 0; c < cols; c++)
                v[c] += a[c];
        }
        layernorm_row(lv, v, v, cols, gamma, beta, eps);
    }
}

void sq_layernorm_to(const float *x, float *y, int rows, int cols, const float *gamma,
                     const float *beta, float eps)
{
    const int lv = level();
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, 3.0 * rows * cols, rows))
    for (int r = 0; r < rows; r++)
        layernorm_row(lv, x + (int64_t)r * cols, y + (int64_t)r * cols, cols, gamma, beta, eps);
}

void sq_add_inplace(float *x, const float *a, int64_t n)
{
#pragma omp parallel for schedule(static) num_threads(sq_par_threads(SQ_WORK_ELEM, (double)n, n))
    for (int64_t i = 0; i < n; i++)
        x[i] += a[i];
}

void sq_relu_inplace(float *x, int64_t n)
{
#pragma omp parallel for schedule(static) num_threads(sq_par_threads(SQ_WORK_ELEM, (double)n, n))
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* ---- exp and erf: squint's definitions, in AVX2 + FMA and scalar ----
 * exp: x = n ln2 + r, |r| <= ln2/2, e^r by its degree-7 Taylor polynomial
 * (relative error < 1e-8 before rounding), scaled by 2^n through the exponent
 * bits. erf: Abramowitz & Stegun 7.1.26, absolute error <= 1.5e-7, which
 * moves GELU by < 1e-7 |x|: far inside the 1e-4 parity budget. */
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

/* y = GELU(x) on [i0, i1), i1 - i0 a multiple of 8; y may be x. */
AVX2_FN static void gelu_avx2_block(const float *x, float *y, int64_t i0, int64_t i1)
{
    for (int64_t i = i0; i < i1; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = erf_avx2(_mm256_mul_ps(v, _mm256_set1_ps((float)M_SQRT1_2)));
        __m256 h = _mm256_mul_ps(_mm256_set1_ps(0.5f), v);
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(h, e, h));
    }
}

static void gelu_avx512_block(const float *x, float *y, int64_t i0, int64_t i1);

/* max(x[0..cols)) with the scalar rule m = x > m ? x : m: vmaxps(x, m)
 * keeps m for a NaN x as the rule does, and max is exact in any order. */
AVX2_FN static float row_max_avx2(const float *x, int cols)
{
    __m256 vm = _mm256_set1_ps(x[0]);
    int c = 0;
    for (; c + 8 <= cols; c += 8)
        vm = _mm256_max_ps(_mm256_loadu_ps(x + c), vm);
    float l[8], m = x[0];
    _mm256_storeu_ps(l, vm);
    for (int j = 0; j < 8; j++)
        m = l[j] > m ? l[j] : m;
    for (; c < cols; c++)
        m = x[c] > m ? x[c] : m;
    return m;
}

AVX2_FN static void softmax_avx2(float *x, int cols)
{
    const float m = row_max_avx2(x, cols);
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
    const __m256 vi = _mm256_set1_ps(inv);
    for (c = 0; c + 8 <= cols; c += 8)
        _mm256_storeu_ps(x + c, _mm256_mul_ps(_mm256_loadu_ps(x + c), vi));
    for (; c < cols; c++)
        x[c] *= inv;
}

/* ---- the same in AVX-512: operation for operation the AVX2 code on 16
 * lanes (the bits follow); softmax's sum still runs in 8 lanes, each
 * 16-wide block added as its low then its high half. ---- */
AVX512_FN static inline __m512 exp_avx512(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(-87.3f), hi = _mm512_set1_ps(88.7f);
    const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    __m512 res = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
    return _mm512_maskz_mov_ps((__mmask16)~under, res); /* below the float range: exactly 0 */
}

AVX512_FN static inline __m512 erf_avx512(__m512 x)
{
    const __m512i sign_mask = _mm512_set1_epi32((int)0x80000000u);
    const __m512i xi = _mm512_castps_si512(x);
    const __m512i sign = _mm512_and_si512(xi, sign_mask);
    const __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign_mask, xi));
    __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                             _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, _mm512_set1_ps(1.0f)));
    __m512 p = _mm512_set1_ps(1.061405429f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
    p = _mm512_mul_ps(p, t);
    __m512 ex = exp_avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
    __m512 y = _mm512_fnmadd_ps(p, ex, _mm512_set1_ps(1.0f));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(y), sign));
}

/* GELU of x[i0, i1), i1 - i0 a multiple of 8: blocks of 16, then one of 8. */
AVX512_FN static void gelu_avx512_block(const float *x, float *y, int64_t i0, int64_t i1)
{
    int64_t i = i0;
    for (; i + 16 <= i1; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 e = erf_avx512(_mm512_mul_ps(v, _mm512_set1_ps((float)M_SQRT1_2)));
        __m512 h = _mm512_mul_ps(_mm512_set1_ps(0.5f), v);
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(h, e, h));
    }
    if (i < i1)
        gelu_avx2_block(x, y, i, i1);
}

AVX512_FN static float row_max_avx512(const float *x, int cols)
{
    __m512 vm = _mm512_set1_ps(x[0]);
    int c = 0;
    for (; c + 16 <= cols; c += 16)
        vm = _mm512_max_ps(_mm512_loadu_ps(x + c), vm);
    float l[16], m = x[0];
    _mm512_storeu_ps(l, vm);
    for (int j = 0; j < 16; j++)
        m = l[j] > m ? l[j] : m;
    for (; c < cols; c++)
        m = x[c] > m ? x[c] : m;
    return m;
}

AVX512_FN static void softmax_avx512(float *x, int cols)
{
    const float m = row_max_avx512(x, cols);
    const __m512 vm = _mm512_set1_ps(m);
    __m256 vs = _mm256_setzero_ps();
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + c), vm));
        _mm512_storeu_ps(x + c, e);
        vs = _mm256_add_ps(vs, _mm512_castps512_ps256(e));
        vs = _mm256_add_ps(vs, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    }
    if (c + 8 <= cols) {
        __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + c), _mm256_set1_ps(m)));
        _mm256_storeu_ps(x + c, e);
        vs = _mm256_add_ps(vs, e);
        c += 8;
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vs);
    float s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; c < cols; c++) {
        x[c] = exp_f32(x[c] - m);
        s += x[c];
    }
    const float inv = 1.0f / s;
    const __m512 vi = _mm512_set1_ps(inv);
    for (c = 0; c + 16 <= cols; c += 16)
        _mm512_storeu_ps(x + c, _mm512_mul_ps(_mm512_loadu_ps(x + c), vi));
    for (; c < cols; c++)
        x[c] *= inv;
}

/* max(x[0..cols)) by the rule m = x > m ? x : m (the vector versions'). */
static float row_max_scalar(const float *x, int cols)
{
    float m = x[0];
    for (int c = 1; c < cols; c++)
        m = x[c] > m ? x[c] : m;
    return m;
}

/* One code of sq_softmax_row_u8: the clamp is vmaxps(v, 0) then
 * vminps(v, 255) (a NaN v becomes 0 at the first), the rounding vcvtps2dq's
 * (nearest even, as lrintf in the default mode). */
static inline uint8_t prob_code(float e)
{
    float v = 255.0f * e;
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (uint8_t)lrintf(v);
}

AVX512_FN static int softmax_u8_avx512(const float *x, int cols, uint8_t *codes)
{
    const float m = row_max_avx512(x, cols);
    const __m512 vm = _mm512_set1_ps(m), k255 = _mm512_set1_ps(255.0f);
    __m512i vz = _mm512_setzero_si512();
    int c = 0, z = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 v = _mm512_mul_ps(k255, exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(x + c), vm)));
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), k255);
        __m512i q = _mm512_cvtps_epi32(v);
        vz = _mm512_add_epi32(vz, q);
        _mm_storeu_si128((__m128i *)(codes + c), _mm512_cvtepi32_epi8(q));
    }
    z = _mm512_reduce_add_epi32(vz);
    for (; c < cols; c++) {
        codes[c] = prob_code(exp_f32(x[c] - m));
        z += codes[c];
    }
    return z;
}

int sq_softmax_row_u8_scalar(const float *x, int cols, uint8_t *codes)
{
    const float m = row_max_scalar(x, cols);
    int z = 0;
    for (int c = 0; c < cols; c++) {
        codes[c] = prob_code(exp_f32(x[c] - m));
        z += codes[c];
    }
    return z;
}

int sq_softmax_row_u8(const float *x, int cols, uint8_t *codes)
{
    if (level() == SQ_OPS_AVX512)
        return softmax_u8_avx512(x, cols, codes);
    return sq_softmax_row_u8_scalar(x, cols, codes);
}

void sq_gelu_inplace_scalar(float *x, int64_t n)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM_MATH, (double)n, n))
    for (int64_t i = 0; i < n; i++)
        x[i] = gelu_f32(x[i]);
}

/* The vector version's order: 8 running sums over the whole blocks of 8,
 * added pairwise, then the tail one by one. */
void sq_softmax_row_scalar(float *x, int cols)
{
    const float m = row_max_scalar(x, cols);
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

/* The OpenMP loop only hands out blocks: the vector code stays inside
 * functions that carry their target (clang refuses vector code in the
 * outlined parallel body otherwise). Elementwise, so any split gives the
 * same bits. */
void sq_gelu_inplace(float *x, int64_t n)
{
    enum { BLOCK = 4096 };
    const int64_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM_MATH, (double)n, nb))
    for (int64_t b = 0; b < nb; b++) {
        const int64_t i0 = b * BLOCK;
        sq_gelu_row(x + i0, x + i0, (int)(n - i0 < BLOCK ? n - i0 : BLOCK));
    }
}

void sq_gelu_row(const float *x, float *y, int n)
{
    const int lv = level();
    int nv = 0;
    if (lv != SQ_OPS_SCALAR) {
        nv = n / 8 * 8;
        if (lv == SQ_OPS_AVX512)
            gelu_avx512_block(x, y, 0, nv);
        else
            gelu_avx2_block(x, y, 0, nv);
    }
    for (int i = nv; i < n; i++)
        y[i] = gelu_f32(x[i]);
}

void sq_relu_row(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void sq_softmax_row(float *x, int cols)
{
    const int lv = level();
    if (lv == SQ_OPS_AVX512)
        softmax_avx512(x, cols);
    else if (lv == SQ_OPS_AVX2)
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
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, 2.0 * rows * cols, rows))
    for (int r = 0; r < rows; r++)
        rmsnorm_row(x + (int64_t)r * cols, y + (int64_t)r * cols, cols, w, eps);
}

void sq_swiglu_row(const float *gu, float *h, int hidden)
{
    const float *u = gu + hidden;
    for (int j = 0; j < hidden; j++)
        h[j] = gu[j] / (1.0f + expf(-gu[j])) * u[j];
}

void sq_geglu_row(const float *gu, float *h, int hidden)
{
    sq_gelu_row(gu, h, hidden); /* GELU's own row: the bits of the plain GELU */
    const float *u = gu + hidden;
    for (int j = 0; j < hidden; j++)
        h[j] = h[j] * u[j];
}

void sq_geglu(const float *gu, float *h, int rows, int hidden)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM_MATH, (double)rows * hidden, rows))
    for (int r = 0; r < rows; r++)
        sq_geglu_row(gu + (int64_t)r * 2 * hidden, h + (int64_t)r * hidden, hidden);
}

void sq_swiglu(const float *gu, float *h, int rows, int hidden)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM_MATH, (double)rows * hidden, rows))
    for (int r = 0; r < rows; r++)
        sq_swiglu_row(gu + (int64_t)r * 2 * hidden, h + (int64_t)r * hidden, hidden);
}

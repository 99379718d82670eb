#include "qlinear_ref.h"
#include "par_threads.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sq_ref_act_multipliers(const float *s, int k, float act_scale, float *m)
{
    for (int j = 0; j < k; j++)
        m[j] = 1.0f / ((s ? s[j] : 1.0f) * act_scale);
}

void sq_ref_quantize_acts(const float *x, int rows, int k, const float *m, int8_t *qx)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * k;
        int8_t *qr = qx + (size_t)r * k;
        for (int j = 0; j < k; j++)
            qr[j] = sq_ref_round_s8(xr[j] * m[j]);
    }
}

void sq_ref_quantize_acts_zp(const float *x, int rows, int k, const float *m, int z, int8_t *qx)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * k;
        int8_t *qr = qx + (size_t)r * k;
        for (int j = 0; j < k; j++)
            qr[j] = sq_ref_round_s8_zp(xr[j] * m[j], z);
    }
}

void sq_ref_quantize_weights(const float *w, int n, int k, int8_t *qw, float *scale)
{
    for (int c = 0; c < n; c++) {
        const float *wr = w + (size_t)c * k;
        int8_t *qr = qw + (size_t)c * k;
        float amax = 0.0f;
        for (int j = 0; j < k; j++)
            amax = fmaxf(amax, fabsf(wr[j]));
        if (!(amax > 0.0f)) {
            memset(qr, 0, (size_t)k);
            scale[c] = 1.0f;
            continue;
        }
        float sc = amax / (float)SQ_REF_QMAX;
        for (int j = 0; j < k; j++)
            qr[j] = sq_ref_round_s8(wr[j] / sc);
        scale[c] = sc;
    }
}

void sq_ref_gemm_s8(const int8_t *qx, int rows, int k, const int8_t *qw, int n, int32_t *acc)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)rows * n * k, rows))
    for (int r = 0; r < rows; r++) {
        const int8_t *xr = qx + (size_t)r * k;
        for (int c = 0; c < n; c++) {
            const int8_t *wr = qw + (size_t)c * k;
            int32_t s = 0; /* exact: |s| <= 16129 k < 2^31 for k <= SQ_REF_MAX_K */
            for (int j = 0; j < k; j++)
                s += (int32_t)xr[j] * (int32_t)wr[j];
            acc[(size_t)r * n + c] = s;
        }
    }
}

void sq_ref_dequant(const int32_t *acc, int rows, int n, float act_scale, const float *w_scale,
                    const float *bias, float *y)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < n; c++) {
            float sc = act_scale * w_scale[c];
            size_t i = (size_t)r * n + c;
            y[i] = (float)acc[i] * sc + (bias ? bias[c] : 0.0f);
        }
}

int sq_ref_linear(const float *x, int rows, int k, const float *m, float act_scale,
                  const int8_t *qw, const float *w_scale, int n, const float *bias, float *y,
                  sq_err *err)
{
    if (k > SQ_REF_MAX_K)
        return sq_err_set(err, "int8 linear: K = %d exceeds %d, the int32 accumulator could "
                               "overflow", k, SQ_REF_MAX_K);
    int8_t *qx = malloc((size_t)rows * k);
    int32_t *acc = malloc((size_t)rows * n * sizeof *acc);
    if (!qx || !acc) {
        free(qx);
        free(acc);
        return sq_err_set(err, "int8 linear: out of memory for %d x %d", rows, n);
    }
    sq_ref_quantize_acts(x, rows, k, m, qx);
    sq_ref_gemm_s8(qx, rows, k, qw, n, acc);
    sq_ref_dequant(acc, rows, n, act_scale, w_scale, bias, y);
    free(qx);
    free(acc);
    return 0;
}

void sq_fp32_linear(const float *x, int rows, int k, const float *w, int n, const float *bias,
                    float *y)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < n; c++)
            y[(size_t)r * n + c] = bias ? bias[c] : 0.0f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n, k, 1.0f, x, k, w, k, 1.0f, y,
                n);
}

double sq_rel_error(const float *y, const float *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)y[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

#include "ops.h"

#include <math.h>

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
            v[c] = (v[c] - mean) * rstd * gamma[c] + beta[c];
    }
}

void sq_gelu_inplace(float *x, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
}

void sq_softmax_row(float *x, int cols)
{
    float m = x[0];
    for (int c = 1; c < cols; c++)
        m = x[c] > m ? x[c] : m;
    float s = 0;
    for (int c = 0; c < cols; c++) {
        x[c] = expf(x[c] - m);
        s += x[c];
    }
    float inv = 1.0f / s;
    for (int c = 0; c < cols; c++)
        x[c] *= inv;
}

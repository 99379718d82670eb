/* Embedding tables to int8 / int4 (the layout is libquant/weights/quant_embed.h). */
#include "embed_quant.h"
#include "par_threads.h"
#include "quant_embed.h"

#include <math.h>

static int round_away(float v)
{
    return (int)(v < 0 ? -floorf(-v + 0.5f) : floorf(v + 0.5f));
}

static float absmax(const float *x, int n)
{
    float m = 0;
    for (int i = 0; i < n; i++)
        m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

void sq_embed_quant_s8(const float *x, int rows, int cols, int8_t *q, float *scale)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, 2.0 * rows * cols, rows))
    for (int r = 0; r < rows; r++) {
        const float *v = x + (int64_t)r * cols;
        float m = absmax(v, cols);
        float s = m > 0 ? m / 127.0f : 1.0f;
        scale[r] = s;
        for (int c = 0; c < cols; c++) {
            int t = round_away(v[c] / s);
            q[(int64_t)r * cols + c] = (int8_t)(t > 127 ? 127 : t < -127 ? -127 : t);
        }
    }
}

void sq_embed_quant_s4(const float *x, int rows, int cols, uint8_t *q, float *scale)
{
    const int G = sq_embed_s4_groups(cols);
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, 2.0 * rows * cols, rows))
    for (int r = 0; r < rows; r++) {
        const float *v = x + (int64_t)r * cols;
        uint8_t *qr = q + (int64_t)r * (cols / 2);
        for (int g = 0; g < G; g++) {
            int c0 = g * 128, c1 = c0 + 128 < cols ? c0 + 128 : cols;
            float m = absmax(v + c0, c1 - c0);
            float s = m > 0 ? m / 7.0f : 1.0f;
            scale[(int64_t)r * G + g] = s;
            for (int c = c0; c < c1; c++) {
                int t = round_away(v[c] / s);
                t = t > 7 ? 7 : t < -7 ? -7 : t;
                uint8_t nib = (uint8_t)(t & 0xf);
                if (c % 2 == 0)
                    qr[c / 2] = nib;
                else
                    qr[c / 2] |= (uint8_t)(nib << 4);
            }
        }
    }
}

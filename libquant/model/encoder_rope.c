#include "encoder_rope.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "par_threads.h"

/* The libm functions run in double and round once to float: the float32
 * result rounded correctly (but for cases far rarer than any input), so the
 * bits do not depend on a libm's float variants (SQM.md 6.12). */
float sq_rope_inv_freq(double base, int i, int d)
{
    const float e = (float)(2 * i) / (float)d;
    const float p = (float)pow((double)(float)base, (double)e);
    return 1.0f / p;
}

void sq_rope_rotate_row(float *x, int heads, int d, int pos, double base)
{
    const int half = d / 2;
    for (int i = 0; i < half; i++) {
        const float ang = (float)pos * sq_rope_inv_freq(base, i, d);
        const float c = (float)cos((double)ang), s = (float)sin((double)ang);
        for (int h = 0; h < heads; h++) {
            float *a = x + (size_t)h * d + i, *b = a + half;
            const float x0 = *a, x1 = *b;
            *a = x0 * c + -x1 * s;
            *b = x1 * c + x0 * s;
        }
    }
}

void sq_rope_batch(float *qkv, int D, int heads, const int *offsets, int n_seq, double base)
{
    const int T = offsets[n_seq], d = D / heads;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM_MATH, (double)T * d, T))
    for (int s = 0; s < n_seq; s++)
        for (int t = offsets[s]; t < offsets[s + 1]; t++) {
            float *row = qkv + (size_t)t * 3 * D;
            sq_rope_rotate_row(row, heads, d, t - offsets[s], base);     /* q */
            sq_rope_rotate_row(row + D, heads, d, t - offsets[s], base); /* k */
        }
}

/* The activation quantize step of the integer GEMM (gemm_s8.h), with and
 * without the out-of-range guard. The per-row loop is the one of the
 * fastest kernel table row that has its own (gemm_s8_dispatch.c); every
 * one gives the bits of sq_ref_round_s8_zp. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "gemm_s8.h"

void sq_gemm_quantize_acts(const float *x, int rows, int k, size_t ldx, const float *m,
                           int8_t *qa, int k_pad, size_t lda)
{
    sq_gemm_quantize_acts_zp(x, rows, k, ldx, m, 0, qa, k_pad, lda);
}

/* Rows go in chunks of CHUNK, the chunks OpenMP-parallel from PAR_MIN
 * values up (below, the fork costs more than it saves). Rows are
 * independent, so the codes do not depend on the thread count. */
enum { CHUNK = 64 };
#define PAR_MIN (1L << 16)

/* The quantize step, and with range != NULL the min and max of x_j * m_j
 * per row (NaN ignored). */
static void quantize_rows(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                          int8_t *qa, int k_pad, size_t lda, float *range)
{
    sq_gemm_quantizer()(x, rows, k, ldx, m, z, qa, k_pad, lda, range);
}
void sq_gemm_quantize_acts_zp(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                              int8_t *qa, int k_pad, size_t lda)
{
    const int chunks = (rows + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) if ((long)rows * k >= PAR_MIN)
    for (int c = 0; c < chunks; c++) {
        int r0 = c * CHUNK, n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        quantize_rows(x + (size_t)r0 * ldx, n, k, ldx, m, z, qa + (size_t)r0 * lda, k_pad, lda,
                      NULL);
    }
}

static int quantize_guarded(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                            int8_t *qa, int k_pad, size_t lda, float *row_scale, bool every_row)
{
    const int chunks = (rows + CHUNK - 1) / CHUNK;
    int guarded = 0;
#pragma omp parallel for schedule(static) reduction(+ : guarded) if ((long)rows * k >= PAR_MIN)
    for (int c = 0; c < chunks; c++) {
        const int r0 = c * CHUNK, n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        float range[2 * CHUNK]; /* the chunk's per-row ranges */
        float *mrow = NULL;     /* a guarded row's multipliers, allocated on the first one */
        quantize_rows(x + (size_t)r0 * ldx, n, k, ldx, m, z, qa + (size_t)r0 * lda, k_pad, lda,
                      range);
        for (int i = 0; i < n; i++) {
            float lo = range[2 * i], hi = range[2 * i + 1];
            float a = fmaxf(fabsf(lo), fabsf(hi));
            row_scale[r0 + i] = 0;
            /* round is monotonic: the extremes decide whether any code clips */
            if (!(every_row ? a > 0.0f
                            : roundf(hi) - (float)z > 127.0f || roundf(lo) - (float)z < -127.0f) ||
                !isfinite(a))
                continue;
            if (!mrow && !(mrow = malloc((size_t)k * sizeof *mrow)))
                continue; /* out of memory: this row stays clipped */
            /* The row's own multipliers m_j * (127 / a), rounded to float,
             * then the ordinary (vectorized) quantize step without zero
             * point: |x_j m'_j| <= 127 up to rounding, which the clamp takes. */
            const float inv = 127.0f / a;
            for (int j = 0; j < k; j++)
                mrow[j] = m[j] * inv;
            quantize_rows(x + (size_t)(r0 + i) * ldx, 1, k, ldx, mrow, 0,
                          qa + (size_t)(r0 + i) * lda, k_pad, lda, NULL);
            row_scale[r0 + i] = a / 127.0f;
            guarded++;
        }
        free(mrow);
    }
    return guarded;
}

int sq_gemm_quantize_acts_guard(const float *x, int rows, int k, size_t ldx, const float *m,
                                int z, int8_t *qa, int k_pad, size_t lda, float *row_scale)
{
    return quantize_guarded(x, rows, k, ldx, m, z, qa, k_pad, lda, row_scale, false);
}

int sq_gemm_quantize_acts_rows(const float *x, int rows, int k, size_t ldx, const float *m,
                               int8_t *qa, int k_pad, size_t lda, float *row_scale)
{
    return quantize_guarded(x, rows, k, ldx, m, 0, qa, k_pad, lda, row_scale, true);
}

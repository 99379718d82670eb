/* The activation quantize step of the integer GEMM (gemm_s8.h), with and
 * without the out-of-range guard. The per-row loop is the one of the
 * fastest kernel table row that has its own (gemm_s8_dispatch.c); every
 * one gives the bits of sq_ref_round_s8_zp. */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>

#include "gemm_s8.h"
#include "par_threads.h"

void sq_gemm_quantize_acts(const float *x, int rows, int k, size_t ldx, const float *m,
                           int8_t *qa, int k_pad, size_t lda)
{
    sq_gemm_quantize_acts_zp(x, rows, k, ldx, m, 0, qa, k_pad, lda);
}

/* Rows go in chunks of CHUNK, the chunks shared among the threads the
 * work is worth (par_threads.h). Rows are independent, so the codes do not
 * depend on the thread count. */
enum { CHUNK = 64 };

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
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, (double)rows * k, chunks))
    for (int c = 0; c < chunks; c++) {
        int r0 = c * CHUNK, n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        quantize_rows(x + (size_t)r0 * ldx, n, k, ldx, m, z, qa + (size_t)r0 * lda, k_pad, lda,
                      NULL);
    }
}

/* The guard's decision for one row quantized from xr with its range, and
 * when it fires the row quantized again with its own step (*mrow: the
 * row's multipliers, allocated on first use). Returns 1 when guarded. */
static int guard_row(const float *xr, int k, const float *m, int z, const float *range,
                     bool every_row, float **mrow, int8_t *qr, int k_pad, size_t lda,
                     float *row_scale)
{
    float lo = range[0], hi = range[1];
    float a = fmaxf(fabsf(lo), fabsf(hi));
    *row_scale = 0;
    /* round is monotonic: the extremes decide whether any code clips */
    if (!(every_row ? a > 0.0f : roundf(hi) - (float)z > 127.0f || roundf(lo) - (float)z < -127.0f) ||
        !isfinite(a))
        return 0;
    if (!*mrow && !(*mrow = malloc((size_t)k * sizeof **mrow)))
        return 0; /* out of memory: this row stays clipped */
    /* The row's own multipliers m_j * (127 / a), rounded to float, then the
     * ordinary (vectorized) quantize step without zero point: |x_j m'_j| <=
     * 127 up to rounding, which the clamp takes. */
    const float inv = 127.0f / a;
    for (int j = 0; j < k; j++)
        (*mrow)[j] = m[j] * inv;
    quantize_rows(xr, 1, k, (size_t)k, *mrow, 0, qr, k_pad, lda, NULL);
    *row_scale = a / 127.0f;
    return 1;
}

static int quantize_guarded(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                            int8_t *qa, int k_pad, size_t lda, float *row_scale, bool every_row)
{
    const int chunks = (rows + CHUNK - 1) / CHUNK;
    int guarded = 0;
#pragma omp parallel for schedule(static) reduction(+ : guarded) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, (double)rows * k, chunks))
    for (int c = 0; c < chunks; c++) {
        const int r0 = c * CHUNK, n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        float range[2 * CHUNK]; /* the chunk's per-row ranges */
        float *mrow = NULL;     /* a guarded row's multipliers, allocated on the first one */
        quantize_rows(x + (size_t)r0 * ldx, n, k, ldx, m, z, qa + (size_t)r0 * lda, k_pad, lda,
                      range);
        for (int i = 0; i < n; i++)
            guarded += guard_row(x + (size_t)(r0 + i) * ldx, k, m, z, &range[2 * i], every_row,
                                 &mrow, qa + (size_t)(r0 + i) * lda, k_pad, lda,
                                 &row_scale[r0 + i]);
        free(mrow);
    }
    return guarded;
}

int sq_gemm_quantize_acts_mapped(const float *x, int rows, int k, size_t ldx, sq_row_map map,
                                 const float *m, int z, sq_qa_mode mode, int8_t *qa, int k_pad,
                                 size_t lda, float *row_scale, const int32_t *keep_idx,
                                 int n_keep, float *keep)
{
    const int chunks = (rows + CHUNK - 1) / CHUNK;
    /* the row map is GELU / SwiGLU: exp or erf per element */
    const int nt = sq_par_threads(SQ_WORK_ELEM_MATH, (double)rows * k, chunks);
    /* one mapped row per thread: k floats, in L1 / L2 while it is quantized */
    float *bufs = malloc((size_t)nt * k * sizeof *bufs);
    if (!bufs)
        return -1;
    int guarded = 0;
#pragma omp parallel for schedule(static) reduction(+ : guarded) num_threads(nt)
    for (int c = 0; c < chunks; c++) {
        const int r0 = c * CHUNK, n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        float *buf = bufs + (size_t)omp_get_thread_num() * k;
        float *mrow = NULL, range[2];
        const int zz = mode == SQ_QA_ROWS ? 0 : z;
        for (int i = 0; i < n; i++) {
            const int r = r0 + i;
            int8_t *qr = qa + (size_t)r * lda;
            map(x + (size_t)r * ldx, buf, k);
            for (int o = 0; o < n_keep; o++)
                keep[(size_t)r * n_keep + o] = buf[keep_idx[o]];
            quantize_rows(buf, 1, k, (size_t)k, m, zz, qr, k_pad, lda,
                          mode == SQ_QA_STATIC ? NULL : range);
            if (mode != SQ_QA_STATIC)
                guarded += guard_row(buf, k, m, zz, range, mode == SQ_QA_ROWS, &mrow, qr, k_pad,
                                     lda, &row_scale[r]);
        }
        free(mrow);
    }
    free(bufs);
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

/* The scalar row of the kernel table (gemm_kernel.h): plain loops over the
 * packed panels, the definition every SIMD kernel is tested against
 * (gemm_s8.h), and the portable activation quantize step. They write C
 * with their own loops (no fused epilogue). */
#include <math.h>
#include <string.h>

#include "gemm_kernel.h"
#include "pack.h"
#include "qlinear_ref.h"
#include "par_threads.h"

#define ROW_BYTES (SQ_PANEL_N * SQ_PANEL_K) /* one k-group of a panel */

/* Every multiply-add here is a scalar step; each (row, panel) a task. */
static int scalar_threads(int M, const sq_qweight *W)
{
    return sq_par_threads(SQ_WORK_SCALAR, (double)M * W->n_pad * W->k_pad,
                          (int64_t)M * (W->n_pad / SQ_PANEL_N));
}

static void gemm_s8(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    (void)ep; /* never fused: the dispatcher runs the epilogue over C */
    int kg = W->k_pad / SQ_PANEL_K, panels = W->n_pad / SQ_PANEL_N;
#pragma omp parallel for collapse(2) schedule(static) num_threads(scalar_threads(M, W))
    for (int m = 0; m < M; m++)
        for (int p = 0; p < panels; p++) {
            const int8_t *a = A + (size_t)m * lda;
            const int8_t *w = (const int8_t *)W->data + (size_t)p * kg * ROW_BYTES;
            int32_t acc[SQ_PANEL_N] = {0};
            for (int g = 0; g < kg; g++, w += ROW_BYTES)
                for (int i = 0; i < SQ_PANEL_N; i++)
                    for (int j = 0; j < SQ_PANEL_K; j++)
                        acc[i] += (int32_t)a[g * SQ_PANEL_K + j] * w[i * SQ_PANEL_K + j];
            int live = W->n - p * SQ_PANEL_N;
            memcpy(C + (size_t)m * ldc + (size_t)p * SQ_PANEL_N, acc,
                   sizeof(int32_t) * (size_t)(live < SQ_PANEL_N ? live : SQ_PANEL_N));
        }
}

/* Byte b (0..63) of the int8 row that int4 row `row` (32 bytes) unpacks to. */
static int s4_byte(const uint8_t *row, int b)
{
    int nib = b < 32 ? row[b] & 0x0f : row[b - 32] >> 4;
    return (nib ^ 8) - 8; /* two's complement nibble -> int */
}

static void gemm_s4(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    (void)ep;
    int kg = W->k_pad / SQ_PANEL_K, panels = W->n_pad / SQ_PANEL_N;
    int groups = W->k_pad / SQ_INT4_GROUP, rows_per_group = SQ_INT4_GROUP / SQ_PANEL_K;
#pragma omp parallel for collapse(2) schedule(static) num_threads(scalar_threads(M, W))
    for (int m = 0; m < M; m++)
        for (int p = 0; p < panels; p++) {
            const int8_t *a = A + (size_t)m * lda;
            const uint8_t *w = (const uint8_t *)W->data + (size_t)p * kg * (ROW_BYTES / 2);
            float out[SQ_PANEL_N] = {0};
            for (int gr = 0; gr < groups; gr++) {
                int32_t acc[SQ_PANEL_N] = {0};
                for (int r = 0; r < rows_per_group; r++, w += ROW_BYTES / 2) {
                    int g = gr * rows_per_group + r;
                    for (int i = 0; i < SQ_PANEL_N; i++)
                        for (int j = 0; j < SQ_PANEL_K; j++)
                            acc[i] += (int32_t)a[g * SQ_PANEL_K + j] *
                                      s4_byte(w, i * SQ_PANEL_K + j);
                }
                for (int i = 0; i < SQ_PANEL_N; i++)
                    out[i] = sq_gemm_add_scaled(
                        out[i], acc[i],
                        W->scale[(size_t)(p * SQ_PANEL_N + i) * groups + gr]);
            }
            int live = W->n - p * SQ_PANEL_N;
            memcpy(C + (size_t)m * ldc + (size_t)p * SQ_PANEL_N, out,
                   sizeof(float) * (size_t)(live < SQ_PANEL_N ? live : SQ_PANEL_N));
        }
}

static void quantize(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                     int8_t *qa, int k_pad, size_t lda, float *range)
{
    for (int r = 0; r < rows; r++)
        sq_quantize_row_finish(x + (size_t)r * ldx, m, 0, k, z, qa + (size_t)r * lda, k_pad,
                               INFINITY, -INFINITY, range ? range + 2 * r : NULL);
}

const sq_gemm_kernels sq_gemm_kernels_scalar = {
    .isa = SQ_ISA_SCALAR, .s8 = gemm_s8, .s4 = gemm_s4, .quantize = quantize, .fuses = false};

/* Integer GEMM of quantized activations against packed weights, one kernel
 * per instruction set, all bit-identical to the scalar reference.
 *
 *   A  s8 activations [M][lda], row-major, lda >= W->k_pad; columns
 *      k .. k_pad-1 of every row must be 0 (sq_gemm_quantize_acts writes
 *      them so). Values in [-127, 127] (-128 would break the AVX2 sign
 *      trick and is never produced by the quantize step).
 *   W  an sq_qweight (qweight.h / pack.h): SQ_QT_S8 panels with wsum, or
 *      SQ_QT_S4G128 nibble panels with wsum and scale per 128-group.
 *
 * int8:  C[m][n] = sum_{k < k_pad} A[m][k] * W[n][k]   (s32, exact), n < W->n.
 * int4:  acc_g[m][n] = sum_{k in group g} A[m][k] * W[n][k]   (s32, exact),
 *        C[m][n] = sum over g = 0, 1, ... in order of
 *                  (float)acc_g[m][n] * W->scale[n * groups + g],
 *        starting from 0.0f, each product rounded to float before the add
 *        (no fused multiply-add), so every ISA gives the same bits.
 *
 * Work is split among OpenMP threads over a fixed grid of (row block,
 * panel block) tiles; each output is computed by one tile in one fixed
 * order, so results do not depend on the thread count. */
#ifndef SQ_GEMM_S8_H
#define SQ_GEMM_S8_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_features.h"
#include "gemm_kernel.h"
#include "qweight.h"

/* int8 GEMM with the kernel of isa. Returns 0, or -1 (nothing written)
 * when W is not SQ_QT_S8, M < 0, lda < W->k_pad, ldc < W->n, or this CPU
 * cannot run isa (see sq_isa_supported). M == 0 is a no-op. */
int sq_gemm_s8(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
               int32_t *C, size_t ldc);

/* int4 group-128 GEMM into f32 (definition above). Same contract as
 * sq_gemm_s8 with W of SQ_QT_S4G128. */
int sq_gemm_s4(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
               size_t ldc);

/* The epilogue (sq_gemm_epilogue) is defined in gemm_kernel.h. */

/* C = A W^T, then the epilogue into ep->y; for the ISAs whose kernels run
 * on the shared tile driver (sq_gemm_fuses) each finished tile goes
 * straight to y and no C matrix exists. The others compute C into scratch
 * ([M][W->n], int32 (int8) or float (int4)) and then run the epilogue over it; scratch
 * may be NULL when sq_gemm_fuses(isa). Same bits either way, at any
 * thread count. Returns 0, or -1 (nothing written) on the sq_gemm_s8 /
 * sq_gemm_s4 argument checks, a missing out_scale (int8) / bias / y,
 * ldy < W->n, or a NULL scratch that is needed. */
int sq_gemm_s8_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, void *scratch);
int sq_gemm_s4_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, void *scratch);

/* 1 when isa's kernel table row fuses the epilogue (tile by tile, no
 * scratch): avx2, avxvnni, avx512vnni. scalar and amx have their own loops. */
int sq_gemm_fuses(sq_isa isa);

/* The activation quantize step with K padding: qa[r][j] =
 * sq_ref_round_s8(x[r][j] * m[j]) for j < k (bit for bit the reference
 * sq_ref_quantize_acts), and 0 for k <= j < k_pad. x is [rows][ldx],
 * qa is [rows][lda] with lda >= k_pad >= k. Runs sq_gemm_quantizer(). */
void sq_gemm_quantize_acts(const float *x, int rows, int k, size_t ldx, const float *m,
                           int8_t *qa, int k_pad, size_t lda);
/* The same with an activation zero point z (|z| <= SQ_REF_MAX_ZERO):
 * qa[r][j] = sq_ref_round_s8_zp(x[r][j] * m[j], z); padding stays 0. */
void sq_gemm_quantize_acts_zp(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                              int8_t *qa, int k_pad, size_t lda);

/* The activation quantize step with the out-of-range guard. Each row is
 * first quantized as sq_gemm_quantize_acts_zp does; a row where that would
 * clip a value (round(x_j m_j) - z outside [-127, 127]) is instead
 * quantized symmetrically with its own step: with a = max_j |x_j * m_j|
 * (finite) and the row's multipliers m'_j = m_j * (127.0f / a) (each
 * rounded to float), qa[r][j] = sq_ref_round_s8(x_j * m'_j) and
 * row_scale[r] = a / 127.0f (> 1); every other row gets row_scale[r] = 0.
 * Rows are independent: the result does not depend on how rows are batched
 * or on the thread count. A row whose a is inf keeps the clipped codes.
 * Returns the number of guarded rows. */
int sq_gemm_quantize_acts_guard(const float *x, int rows, int k, size_t ldx, const float *m,
                                int z, int8_t *qa, int k_pad, size_t lda, float *row_scale);
/* Dynamic per-row (per-token) quantization: the guard's per-row step for
 * every row with a > 0 (symmetric, no zero point), whatever m's scale; an
 * all-zero row gets row_scale 0 and zero codes. With m_j = 1 / s_j and a
 * static act_scale of 1 the epilogue's step is the row's own a / 127. */
int sq_gemm_quantize_acts_rows(const float *x, int rows, int k, size_t ldx, const float *m,
                               int8_t *qa, int k_pad, size_t lda, float *row_scale);

/* The op that produces a linear's input, applied row by row inside its
 * quantize step (linear.h, sq_linear_forward_mapped): dst [k] = f(src
 * row), src holding whatever the op reads (ldx floats per row). */
typedef void (*sq_row_map)(const float *src, float *dst, int k);
typedef enum sq_qa_mode {
    SQ_QA_STATIC, /* sq_gemm_quantize_acts_zp */
    SQ_QA_GUARD,  /* sq_gemm_quantize_acts_guard */
    SQ_QA_ROWS    /* sq_gemm_quantize_acts_rows (z ignored) */
} sq_qa_mode;
/* The quantize step of mode on the rows map(x[r]) (x [rows][ldx]), each
 * mapped into a k-float buffer of the thread and quantized from there, so
 * the mapped rows never go to memory: the same codes and row_scale as
 * mapping every row first and then calling the mode's function; keep
 * [rows][n_keep] gets the mapped values of the channels keep_idx (the
 * linear's outlier channels, computed in fp32 beside the GEMM). Returns
 * the guarded rows, or -1 (nothing written) when the buffers cannot be
 * allocated. */
int sq_gemm_quantize_acts_mapped(const float *x, int rows, int k, size_t ldx, sq_row_map map,
                                 const float *m, int z, sq_qa_mode mode, int8_t *qa, int k_pad,
                                 size_t lda, float *row_scale, const int32_t *keep_idx,
                                 int n_keep, float *keep);

/* ---- the kernel table (gemm_kernel.h, gemm_s8_dispatch.c) ----
 * The row of isa, or NULL when isa is out of range or this CPU cannot run
 * it. */
const sq_gemm_kernels *sq_gemm_kernels_for(sq_isa isa);
/* The quantize loop of the fastest row this CPU runs that has its own
 * (the scalar row always does). */
sq_quantize_fn sq_gemm_quantizer(void);

#endif

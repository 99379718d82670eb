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

/* ---- the fused epilogue (the quantized linear's last step) ----
 * int8:  y[m][n] = (float)C[m][n] * out_scale[n] + bias[n]
 * int4:  y[m][n] = C[m][n] * act_scale + bias[n]
 * with C the sq_gemm_s8 / sq_gemm_s4 result, for n < W->n only (y's
 * columns W->n .. ldy-1 are never written). The product is rounded to
 * float before the add (never an FMA), so y has the bits of running
 * sq_gemm_s8 / sq_gemm_s4 and then that loop in plain C. */
typedef struct sq_gemm_epilogue {
    const float *out_scale; /* int8: [W->n]; unused for int4 */
    const int32_t *acc_off; /* int8: [W->n] added to acc first (z * wsum[n] of an
                               activation zero point), or NULL; unused for int4 */
    float act_scale;        /* int4; unused for int8 */
    const float *bias;      /* [W->n] */
    float *y;               /* [M][ldy] */
    size_t ldy;             /* >= W->n */
    /* [M] or NULL (all 0). Row r with row_scale[r] = f > 0 was quantized
     * with its own step (sq_gemm_quantize_acts_guard: symmetric, no zero
     * point) and its acc is first scaled by f, product rounded:
     *   int8:  y = ((float)acc * f) * out_scale[n] + bias[n]   (no acc_off)
     *   int4:  y = (acc * f) * act_scale + bias[n]
     * Rows with 0 take the formulas above unchanged (same bits). */
    const float *row_scale;
} sq_gemm_epilogue;

/* C = A W^T, then the epilogue into ep->y; for the ISAs whose kernels run
 * on the shared tile driver (sq_gemm_fuses) each finished tile goes
 * straight to y and no C matrix exists. The others compute C into scratch
 * ([M][W->n], int32 or float) and then run the epilogue over it; scratch
 * may be NULL when sq_gemm_fuses(isa). Same bits either way, at any
 * thread count. Returns 0, or -1 (nothing written) on the sq_gemm_s8 /
 * sq_gemm_s4 argument checks, a missing out_scale (int8) / bias / y,
 * ldy < W->n, or a NULL scratch that is needed. */
int sq_gemm_s8_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, int32_t *scratch);
int sq_gemm_s4_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, float *scratch);

/* 1 when isa's kernels apply the epilogue tile by tile (no scratch):
 * avx2, avxvnni, avx512vnni. scalar and amx have their own loops. */
int sq_gemm_fuses(sq_isa isa);

/* The activation quantize step with K padding: qa[r][j] =
 * sq_ref_round_s8(x[r][j] * m[j]) for j < k (bit for bit the reference
 * sq_ref_quantize_acts), and 0 for k <= j < k_pad. x is [rows][ldx],
 * qa is [rows][lda] with lda >= k_pad >= k. Uses AVX2 when the CPU has it. */
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

/* ---- per-ISA kernels, for the dispatcher and the tests ----
 * Preconditions checked by sq_gemm_s8 / sq_gemm_s4: valid shapes and a
 * CPU that runs the ISA. Each computes the full M x W->n result. */
void sq_gemm_s8_scalar(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                       size_t ldc);
void sq_gemm_s4_scalar(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                       size_t ldc);
void sq_gemm_s8_avx2(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                     size_t ldc);
void sq_gemm_s4_avx2(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                     size_t ldc);
void sq_gemm_s8_avxvnni(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                        size_t ldc);
void sq_gemm_s4_avxvnni(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                        size_t ldc);
void sq_gemm_s8_avx512vnni(const int8_t *A, int M, size_t lda, const sq_qweight *W,
                           int32_t *C, size_t ldc);
void sq_gemm_s4_avx512vnni(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                           size_t ldc);
void sq_gemm_s8_amx(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc);
void sq_gemm_s4_amx(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc);
/* range: NULL, or [rows][2] receiving min and max of x_j * m_j over each
 * row (NaN ignored; +inf / -inf for a row of NaNs). */
void sq_quantize_acts_avx2(const float *x, int rows, int k, size_t ldx, const float *m, int zero,
                           int8_t *qa, int k_pad, size_t lda, float *range);

/* ---- the shared tile driver (gemm_s8_dispatch.c) ----
 * A micro-kernel computes an nr x (np * 16) block: rows r0 .. r0+nr-1 of A
 * (A points at row r0) against panels p0 .. p0+np-1 of W, over all of
 * k_pad, into out[nr][np * 16] (padding channels included). */
typedef void (*sq_ukr_s8)(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,
                          int np, int32_t *out);
typedef void (*sq_ukr_s4)(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,
                          int np, float *out);

/* Largest nr * np * 16 a micro-kernel may use (AVX2 widened: 32 rows x 2
 * panels; the AMX kernel has its own driver, gemm_s8_amx.inc). */
#define SQ_UKR_MAX_OUT (16 * 4 * SQ_PANEL_N)

/* Run ukr over the fixed grid of (nr_max rows, np_max panels) tiles,
 * panel-block-major, OpenMP-parallel over tiles, copying the live columns
 * (n < W->n) into C. The grid depends only on the shapes, never on the
 * thread count. Under sq_gemm_s8_fused / sq_gemm_s4_fused (which hand the
 * epilogue to the driver through a thread-local the driver takes on entry,
 * since the per-ISA entry points have no parameter for it) the live
 * columns go through the epilogue into y instead and C is not touched. */
void sq_gemm_tiles_s8(sq_ukr_s8 ukr, int nr_max, int np_max, const int8_t *A, int M,
                      size_t lda, const sq_qweight *W, int32_t *C, size_t ldc);
void sq_gemm_tiles_s4(sq_ukr_s4 ukr, int nr_max, int np_max, const int8_t *A, int M,
                      size_t lda, const sq_qweight *W, float *C, size_t ldc);

/* Adds p to acc as two roundings (p already rounded to float), never
 * contracted into an FMA by the compiler: the int4 epilogue must give the
 * same bits on every ISA. */
static inline float sq_gemm_add_scaled(float acc, int32_t v, float scale)
{
    float p = (float)v * scale;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__("" : "+x"(p)); /* opaque to the optimizer: no fma(v, scale, acc) */
#endif
    return acc + p;
}

#endif

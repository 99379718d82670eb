/* A linear layer y = x W^T + b with a qtype: the one place where the
 * executor branches on precision.
 *   f32:       OpenBLAS sgemm on fixed output tiles shared by threads; up to
 *              16 rows, f32_rows.h (each row alone: a verify pass of draft
 *              tokens equals token-by-token decoding).
 *   int8/int4: the activation quantize step q_j = round(x_j * m_j) - z with
 *              m_j = 1 / (s_j * act_scale) (SmoothQuant's 1/s fused in)
 *              and z the int8 zero point of a one-sided input (else 0),
 *              the integer GEMM of the selected ISA (gemm_s8.h) on the
 *              packed panels, and the epilogue
 *              y = (float)(acc + z * wsum[n]) * (act_scale * w_scale[n]) + b[n]
 *              (int4: the per-group f32 sum times act_scale, plus b),
 *              applied by the GEMM's tile driver as each tile finishes
 *              (sq_gemm_s8_fused / sq_gemm_s4_fused). */
#ifndef SQ_LINEAR_H
#define SQ_LINEAR_H

#include <stdbool.h>
#include <stdint.h>

#include "qtype.h"
#include "op_profile.h"
#include "qweight.h"

typedef struct sq_linear {
    int in, out;
    sq_qtype qtype;
    float *w;        /* f32: [out][in] row-major as Hugging Face stores it */
    float *b;        /* [out] */
    sq_qweight qw;   /* int8 / int4 panels (usually a view into a mapped .sqm) */
    float *act_mult; /* [in] m_j; owned */
    float act_scale;
    int act_zero;     /* int8 activation zero point (0: symmetric) */
    int32_t *acc_off; /* [out] act_zero * wsum[n], NULL when act_zero == 0; owned */
    float *out_scale; /* int8: [out] act_scale * w_scale[n]; owned */
    float *scale_pad; /* weight scales padded to n_pad rows for the kernels; owned */
    /* Out-of-range guard: a row whose input would clip at the static scale
     * is quantized with its own step instead (sq_gemm_quantize_acts_guard).
     * Set from the .sqm's activation_guard. */
    bool guard;
    /* Dynamic per-row activation steps (a stored act_scale of 0, SQM.md
     * 10.4): act_scale is 1, act_mult 1 / s, and every row is quantized
     * with its own step max_j |x_j / s_j| / 127 (sq_gemm_quantize_acts_rows):
     * int8 per-token activations, no calibrated range. */
    bool dynamic;
    /* Outlier input channels (LLM.int8-style decomposition, SQM.md 6.4):
     * n_outliers channels outlier_idx[] (strictly increasing, < in) bypass
     * the integer GEMM (their act_mult is 0, so they neither clip nor set a
     * guarded row's step) and add their exact product afterwards:
     *   y[r][n] += sum over o, in order, of x[r][idx[o]] * outlier_w[o][n]
     * (outlier_w [n_outliers][out]: column idx[o] of W diag(s)). Borrowed. */
    int n_outliers;
    const int32_t *outlier_idx;
    const float *outlier_w;
    bool borrowed;   /* w and b point into memory owned elsewhere */
} sq_linear;

/* Scratch of the quantized path, sized by the caller (encoder workspace):
 * qa holds rows x k_pad int8, acc rows x out int32 (or float for int4),
 * row_scale rows floats (used when the linear guards). acc is only touched
 * on the ISAs whose kernels do not fuse the epilogue into the GEMM
 * (sq_gemm_fuses: scalar and amx); avx2 / avxvnni / avx512vnni write y tile
 * by tile and never read or write it. */
typedef struct sq_linear_scratch {
    int8_t *qa;
    int32_t *acc;
    float *row_scale; /* [rows]: the guard's per-row steps (0 = static) */
    /* bench --profile: where the quantize step, the GEMM (under gemm_op)
     * and the outlier side path add their time; NULL: not timed. */
    sq_op_profile *prof;
    sq_op gemm_op;
} sq_linear_scratch;

/* Prepare a quantized linear: act_mult from the SmoothQuant factors s (NULL:
 * none) and act_scale (0 for the outlier channels, set before the call), out_scale from the weight scales, and for a nonzero
 * act_zero (int8 only; the caller checks its range) the accumulator offsets
 * from the weight sums. */
int sq_linear_prepare_quant(sq_linear *l, const float *s, float act_scale, int act_zero);

/* y[rows][out] = x[rows][in] W^T + b. Call from outside a parallel region.
 * scratch may be NULL for f32 linears. */
void sq_linear_forward(const sq_linear *l, const float *x, int rows, float *y,
                       const sq_linear_scratch *scratch);
void sq_linear_free(sq_linear *l);

/* y = l(map(x)) for the rows of x [rows][ldx] (map: the op that produces
 * the linear's input, e.g. sq_gelu_row; gemm_s8.h): for a quantized linear
 * without outlier channels the op runs inside the quantize step, row by
 * row through a buffer in cache, and the GEMM reads the int8 codes (the
 * op's fp32 output never goes to memory; profile op "act+quantize").
 * Otherwise, or with SQUINT_FUSE=0, mapped [rows][in] receives map(x) and
 * the linear runs on it (it may be x when ldx == in: the op is in place).
 * The same bits either way. */
#include "gemm_s8.h"
void sq_linear_forward_mapped(const sq_linear *l, const float *x, size_t ldx, int rows,
                              sq_row_map map, float *mapped, float *y,
                              const sq_linear_scratch *scratch);
/* False when SQUINT_FUSE=0 is set (read once). */
bool sq_linear_fusion(void);

/* How many of the rows x in input values of a quantized linear the quantize
 * step clips: the code round(x_j * m_j) - z lies outside [-127, 127] (the
 * value is beyond the statically calibrated range; NaN is not counted).
 * The same float operations as the quantize step. 0 for f32 linears.
 * *rows_beyond (optional) gets the rows holding at least one such value:
 * the rows the guard (sq_linear.guard) quantizes with their own step. */
int64_t sq_linear_count_clipped(const sq_linear *l, const float *x, int rows,
                                int64_t *rows_beyond);

/* The integer GEMM path the quantized linears use (SQUINT_ISA or the best
 * this CPU has); selected on first use. -1 with err when SQUINT_ISA names a
 * path this CPU lacks. */
#include "cpu_features.h"
int sq_linear_isa(sq_isa *isa, sq_err *err);

#endif

/* The scalar reference int8 linear: the numerics every SIMD kernel must
 * reproduce, and the "fake-quant" simulation used to measure a layer's
 * output error (SmoothQuant alpha search, recipe checks).
 *
 *   activations  per-tensor symmetric s8: q_j = clamp(round(x_j * m_j)),
 *                m_j = 1 / (s_j * act_scale), s = SmoothQuant factors (all 1
 *                without smoothing). round = half away from zero, clamp to
 *                [-127, 127]; NaN -> 0.
 *   weights      per-output-channel symmetric s8 in [-127, 127] on a plain
 *                row-major [N][K] matrix (no packing here).
 *   accumulate   acc[r][n] = sum_k qx[r][k] * qw[n][k] in int32, exactly.
 *                |acc| <= 127 * 127 * K = 16129 K, which fits in int32
 *                (2^31 - 1) for K <= 133,144 (SQ_REF_MAX_K). BERT's largest
 *                K is 4096 (bge-large FFN down).
 *   dequantize   y = (float)acc * (act_scale * w_scale[n]) + bias[n], the
 *                product act_scale * w_scale[n] rounded to float first (a
 *                kernel precomputes it per output channel).
 *
 * Float operation order is spelled out where it decides an integer: m_j is
 * 1.0f / (s_j * act_scale) in float, then x_j * m_j in float, then rounded.
 * A SIMD kernel must not round with "trunc(|v| + 0.5)": for v = 0.49999997f
 * the float sum rounds up to 1.0 while roundf gives 0. */
#ifndef SQ_QLINEAR_REF_H
#define SQ_QLINEAR_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

#define SQ_REF_QMAX 127
/* Largest K whose worst-case accumulator 127 * 127 * K fits in int32. */
#define SQ_REF_MAX_K 133144

/* clamp(round_half_away_from_zero(v), -127, 127); NaN -> 0, +-inf -> +-127. */
int8_t sq_ref_round_s8(float v);

/* Activation zero points. A one-sided input (ReLU / GELU output) spends
 * half of a symmetric code range on values that never occur; shifting the
 * codes by an integer zero point z gives it all 255 codes:
 *   q = clamp(round_half_away_from_zero(v) - z, -127, 127)
 * (rounded before the shift: rounding half away from zero is not
 * translation invariant), and the GEMM adds z * wsum[n] back to the int32
 * accumulator, which is then exactly sum_k round(v_k) * w[n][k] for every
 * unclipped v. |z| <= SQ_REF_MAX_ZERO; NaN -> q = 0. z = 0 is
 * sq_ref_round_s8. */
#define SQ_REF_MAX_ZERO 127
int8_t sq_ref_round_s8_zp(float v, int z);
/* Why zero point z cannot serve a linear with k inputs (int8: its weights
 * are int8; int4 linears stay symmetric), or NULL when it can: |z| <=
 * SQ_REF_MAX_ZERO and k <= SQ_REF_MAX_K / 2 (|q + z| <= 254 halves the int32
 * bound). The one rule the loader and `verify` apply to a stored act_zero. */
const char *sq_ref_act_zero_problem(int64_t z, bool int8, int64_t k);

/* The activation multipliers the runtime stores: m[j] = 1.0f / (s[j] *
 * act_scale) for j < k; s == NULL means s_j = 1 (no smoothing). act_scale
 * must be > 0. */
void sq_ref_act_multipliers(const float *s, int k, float act_scale, float *m);

/* Quantize activation rows: qx[r][j] = sq_ref_round_s8(x[r][j] * m[j]). */
void sq_ref_quantize_acts(const float *x, int rows, int k, const float *m, int8_t *qx);
/* The same with a zero point: qx[r][j] = sq_ref_round_s8_zp(x[r][j] * m[j], z). */
void sq_ref_quantize_acts_zp(const float *x, int rows, int k, const float *m, int z, int8_t *qx);

/* Per-output-channel symmetric weights: scale[n] = max_j |w[n][j]| / 127
 * (float division), qw[n][j] = sq_ref_round_s8(w[n][j] / scale[n]). An
 * all-zero row gets qw = 0 and scale 1 (so every scale is positive). */
void sq_ref_quantize_weights(const float *w, int n, int k, int8_t *qw, float *scale);

/* acc[r][c] = sum_j qx[r][j] * qw[c][j] for r < rows, c < n, in int32.
 * Requires k <= SQ_REF_MAX_K (the caller checks; see sq_ref_linear). Rows
 * are split among OpenMP threads; the result does not depend on that. */
void sq_ref_gemm_s8(const int8_t *qx, int rows, int k, const int8_t *qw, int n, int32_t *acc);

/* y[r][c] = (float)acc[r][c] * (act_scale * w_scale[c]) + bias[c];
 * bias may be NULL (zero). */
void sq_ref_dequant(const int32_t *acc, int rows, int n, float act_scale, const float *w_scale,
                    const float *bias, float *y);

/* The whole int8 linear on float input: quantize x with m (sq_ref_act_
 * multipliers), s8 GEMM against qw/w_scale, dequantize with act_scale.
 * y is [rows][n]. Returns 0, or -1 with err set when k > SQ_REF_MAX_K or
 * memory runs out. */
int sq_ref_linear(const float *x, int rows, int k, const float *m, float act_scale,
                  const int8_t *qw, const float *w_scale, int n, const float *bias, float *y,
                  sq_err *err);

/* The fp32 linear y = x w^T + bias (OpenBLAS sgemm); bias may be NULL. */
void sq_fp32_linear(const float *x, int rows, int k, const float *w, int n, const float *bias,
                    float *y);

/* Relative Frobenius error ||y - ref|| / ||ref|| over n values, in double.
 * When ||ref|| is 0 the absolute error ||y - ref|| is returned. */
double sq_rel_error(const float *y, const float *ref, size_t n);

#endif

/* Elementwise and row operations of the encoder and the decoder, in f32. */
#ifndef SQ_OPS_H
#define SQ_OPS_H

#include <stdbool.h>
#include <stdint.h>

/* The vector code the side ops run (ops.c): set by the instruction set the
 * GEMMs use (SQUINT_ISA or the CPU's best); every level gives the same bits. */
typedef enum sq_ops_level { SQ_OPS_SCALAR = 0, SQ_OPS_AVX2, SQ_OPS_AVX512 } sq_ops_level;
sq_ops_level sq_ops_get_level(void);
/* Tests: run every later op at level l; false (nothing changed) when the
 * CPU lacks it. */
bool sq_ops_set_level(sq_ops_level l);

/* x[r] = LayerNorm(x[r] + add[r]) * gamma + beta for rows [0, rows);
 * add may be NULL. Two-pass mean / variance with the sums in 8 double
 * lanes, the output by one FMA per value (SQM.md 6.2). */
void sq_add_layernorm(float *x, const float *add, int rows, int cols, const float *gamma,
                      const float *beta, float eps);
/* y[r] = LayerNorm(x[r]) * gamma + beta (pre-LN blocks: x stays the
 * residual stream). Same arithmetic as sq_add_layernorm. */
void sq_layernorm_to(const float *x, float *y, int rows, int cols, const float *gamma,
                     const float *beta, float eps);
/* x[i] += a[i], and x[i] = max(x[i], 0). */
void sq_add_inplace(float *x, const float *a, int64_t n);
void sq_relu_inplace(float *x, int64_t n);
/* erf GELU, 0.5 x (1 + erf(x / sqrt 2)), in place, with erf by Abramowitz &
 * Stegun 7.1.26 (absolute error <= 1.5e-7) in a fixed float operation order
 * (formats/SQM.md 6.7): AVX2+FMA when the CPU has it, the same operations
 * in scalar code otherwise, the same bits either way. */
void sq_gelu_inplace(float *x, int64_t n);
/* One row of n values, y = GELU(x) / ReLU(x) (y may be x), in the calling
 * thread: the same bits as the in-place versions (an op fused into a
 * linear's quantize step, linear.h). */
void sq_gelu_row(const float *x, float *y, int n);
void sq_relu_row(const float *x, float *y, int n);
/* Row-wise softmax over `cols` values, in place; exp as in ops.c, the sum
 * in 8 lanes then the tail (SQM.md 6.5). Same bits on every CPU. */
void sq_softmax_row(float *x, int cols);
/* The int8 attention's softmax (attn_s8.h, SQM.md 6.5): with m = max_j
 * x[j] (the rule of sq_softmax_row) and e_j = exp(x[j] - m) (ops.c's exp),
 * codes[j] = rint(clamp(fl(255 e_j), 0, 255)) (round half to even; NaN
 * gives 0); returns the sum of the codes (the row's normaliser, exact).
 * Same bits at every level. */
int sq_softmax_row_u8(const float *x, int cols, uint8_t *codes);
/* The scalar versions, always available (tests compare them bit for bit). */
void sq_gelu_inplace_scalar(float *x, int64_t n);
void sq_softmax_row_scalar(float *x, int cols);
int sq_softmax_row_u8_scalar(const float *x, int cols, uint8_t *codes);

/* Decoder (Llama-family) operations.
 * y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for rows [0, rows): RMSNorm,
 * the sum of squares in a double accumulator, the scale rounded to float
 * once per row. y may be x. */
void sq_rmsnorm_to(const float *x, float *y, int rows, int cols, const float *w, float eps);
/* SwiGLU on the fused gate/up rows: gu [rows][2 * hidden] holds the gate
 * (w1) then the up projection (w3) of each row;
 * h[r][j] = silu(gate[r][j]) * up[r][j], silu(g) = g / (1 + exp(-g)). */
void sq_swiglu(const float *gu, float *h, int rows, int hidden);
/* GeGLU (ModernBERT): h = gelu(gu[0..hidden)) * gu[hidden..2 hidden), the
 * GELU of sq_gelu_row; rows of 2 * hidden in, hidden out. */
void sq_geglu(const float *gu, float *h, int rows, int hidden);
void sq_geglu_row(const float *gu, float *h, int hidden);
/* One row of it: gu [2 * hidden] -> h [hidden], in the calling thread. */
void sq_swiglu_row(const float *gu, float *h, int hidden);

#endif

/* GPTQ rounding for int4-g128 weights (Frantar et al., "GPTQ: Accurate
 * Post-Training Quantization for Generative Pre-trained Transformers", 2022):
 * the columns of a row are rounded one at a time, left to right, and each
 * rounding error is pushed onto the columns not yet rounded, weighted by the
 * inverse of H = sum over calibration rows of x x^T (the Gram matrix of the
 * linear's input), so the output error ||x W^T - x Q^T|| over the
 * calibration inputs is what gets minimized, not ||W - Q||. The values and
 * the file format are those of RTN (quant_weights.h): only the choice of the
 * integers differs, so the kernels and the .sqm are unchanged.
 *
 * With U the upper triangular factor of H^-1 = U^T U, rounding column i of a
 * row w to q_i moves the columns j > i by
 *     w_j -= (w_i - q_i) / U[i][i] * U[i][j],
 * which is the least-squares optimal update of the remaining columns. Every
 * group's scale is chosen (RTN, or the importance-weighted search) on the
 * row's values as they stand when the group is reached. */
#ifndef SQ_GPTQ_H
#define SQ_GPTQ_H

#include "sq_error.h"

/* Relative damping added to H's diagonal before it is factored: damp times
 * the mean diagonal of the live inputs (GPTQ's default 1%). */
#define SQ_GPTQ_DAMP 0.01

/* U (K x K doubles, row-major, upper triangle; the strictly lower part set
 * to 0) from H (K x K, row-major; only its upper triangle j >= i is read).
 * An input that never carried a value (H[j][j] == 0: a zero channel, or an
 * outlier channel observed as 0) is dead: its row and column are taken as
 * those of the identity, so its weight, zeroed by the caller, stays 0.
 * H gets damp * mean(diag) on the diagonal; when it is still not positive
 * definite in double precision the damping is raised tenfold, up to three
 * times, before failing. Deterministic: the same bits for any thread count.
 * Work is ~2/3 K^3 multiply-adds. */
int sq_gptq_factor(const double *h, int k, double damp, double *u, sq_err *err);

#endif

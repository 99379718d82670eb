/* The f32 linear for a few rows, each row computed on its own: row r of a
 * call gives the same bits whatever the other rows and however many there
 * are (1 .. SQ_F32_ROWS_MAX), at every thread count and at every ops level
 * (scalar, AVX2, AVX-512: ops.h). OpenBLAS's sgemm rounds a 1-row product
 * differently from a many-row one, so a decoder that verifies K draft
 * tokens in one forward would not reproduce token-by-token decoding; with
 * this kernel it does, bit for bit (decoder/speculative.c).
 *
 * The order, defined once (every level follows it):
 *   dot(x, w) over K inputs: 16 lanes and two accumulators a0, a1; chunk c
 *   (inputs 16c .. 16c + 15, zero beyond K) goes to a_(c mod 2), lane j by
 *   one fused multiply-add a[j] = fma(x[16c + j], w[16c + j], a[j]);
 *   then s[j] = a0[j] + a1[j], t[j] = s[j] + s[j + 8] (j < 8),
 *   u[j] = t[j] + t[j + 4] (j < 4), v[j] = u[j] + u[j + 2] (j < 2),
 *   dot = v[0] + v[1];   y[r][n] = dot(x[r], W[n]) + b[n]. */
#ifndef SQ_F32_ROWS_H
#define SQ_F32_ROWS_H

#include "ops.h"

#define SQ_F32_ROWS_MAX 16

/* y[r][n] = x[r] . W[n] + b[n] for r < rows (1 .. SQ_F32_ROWS_MAX), n < N;
 * W [N][K] row-major; b may be NULL (zeros). Call from outside a parallel
 * region. */
void sq_f32_rows(const float *x, int rows, int K, const float *W, const float *b, int N,
                 float *y);
/* The same at a given level (tests; the level must be one the CPU has). */
void sq_f32_rows_at(sq_ops_level lv, const float *x, int rows, int K, const float *W,
                    const float *b, int N, float *y);

#endif

/* The outlier channels' exact fp32 part of a quantized linear (SQM.md 6.4,
 * sq_linear.outlier_idx): for output n of a row x,
 *     side = ((x[idx[0]] w[0][n] + x[idx[1]] w[1][n]) + ...)
 * in channel order, each product rounded to float before its add, then
 * y[n] += side. Every column is computed alone by the same operations, so
 * the vector levels (ops.h) and any column range give the bits of the
 * scalar loop. The GEMM epilogue applies it tile by tile (gemm_kernel.h). */
#ifndef SQ_OUTLIER_SIDE_H
#define SQ_OUTLIER_SIDE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sq_outlier_side {
    int n;              /* channels (> 0) */
    const int32_t *idx; /* [n]: where each channel is in a row of x; NULL: at o */
    const float *w;     /* [n][ldw]: the channels' weight columns, by output */
    int ldw;            /* outputs (the linear's N) */
    const float *x;     /* the rows holding the channels, ldx floats apart */
    size_t ldx;
} sq_outlier_side;

/* y[n] += side for n in [n0, n1) of row r. */
void sq_outlier_side_row(const sq_outlier_side *s, int r, int n0, int n1, float *yr);

#endif

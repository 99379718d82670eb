/* Which input channels of a linear bypass the integer GEMM (recipe
 * `outliers`, sq_linear.outlier_idx): the LLM.int8-style decomposition for
 * the two outlier mechanisms of trained BERTs. LayerNorm outlier dims make a
 * few input channels far larger than the rest (one of them sets the static
 * step of every other channel, or SmoothQuant moves it into the weights and
 * coarsens their per-row scales); token-specific massive activations come
 * from a few FFN units whose weight columns are far larger than the rest
 * (one large weight sets its output row's int8 step, and that row's other
 * products round to nothing). Such channels are computed in fp32 beside the
 * GEMM instead. */
#ifndef SQ_OUTLIER_SELECT_H
#define SQ_OUTLIER_SELECT_H

#include <stdint.h>

/* Channel j of a linear with weights w [n][k] and calibrated per-channel
 * input maxima xmax [k] (max|x_j| over the calibration) is an outlier when
 *   xmax_j > ratio * median_j(xmax)   or   wmax_j > ratio * median_j(wmax)
 * with wmax_j = max_n |w_nj| (a criterion whose median is 0 or not finite
 * is not used; a channel with a non-finite max is not picked). Of those,
 * the max_out with the largest score max(xmax_j / median, wmax_j / median)
 * (ties: the lower j) are written to idx in increasing order. Returns their
 * number (0 .. max_out), or -1 when out of memory. */
int sq_select_outliers(const float *xmax, const float *w, int n, int k, double ratio,
                       int max_out, int32_t *idx);

#endif

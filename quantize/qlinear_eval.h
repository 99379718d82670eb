/* The output error of a quantized linear as the runtime computes it: the
 * linear.c path (activation quantize step, the qtype's integer GEMM and
 * epilogue), not a dequantize simulation, so calibration tunes and reports
 * what ships. Every ISA gives the same bits (gemm_s8.h), so the result
 * does not depend on the CPU or the thread count. */
#ifndef SQ_QLINEAR_EVAL_H
#define SQ_QLINEAR_EVAL_H

#include <stdint.h>

#include "qweight.h"
#include "sq_error.h"

/* Relative error (sq_rel_error) of the runtime linear with packed weights
 * qw (the weights already times diag(s)), bias [qw->n] (NULL: 0), SmoothQuant
 * factors s [qw->k] (NULL: none), act_scale and act_zero, n_outliers outlier
 * channels idx with their fp32 columns ow [n_outliers][qw->n] (sq_linear),
 * on x [rows][qw->k], against ref [rows][qw->n] (the fp32 output). Returns
 * 0, or -1 with err. */
int sq_qlinear_error(const float *x, int rows, const sq_qweight *qw, const float *bias,
                     const float *s, float act_scale, int act_zero, int n_outliers,
                     const int32_t *idx, const float *ow, const float *ref, double *rel_err,
                     sq_err *err);

/* The same for fp32 weights w [n][k]: w diag(s) quantized to qt (default
 * options, quant_weights.h) first. */
int sq_qlinear_error_fp32(const float *x, int rows, int k, const float *w, int n,
                          const float *bias, const float *s, float act_scale, sq_qtype qt,
                          const float *ref, double *rel_err, sq_err *err);

/* Fake-quant error of one linear: the relative error of the int8 linear
 * (weights w * diag(s) quantized per channel, activations quantized with
 * m_j = 1 / (s_j * act_scale)) against the fp32 linear x w^T + bias.
 * s == NULL: no smoothing. ref (optional, [rows][n]) is the fp32 output if
 * the caller already has it. Returns 0 and *rel_err, or -1 with err set. */
int sq_ref_linear_error(const float *x, int rows, int k, const float *w, int n,
                        const float *bias, const float *s, float act_scale, const float *ref,
                        double *rel_err, sq_err *err);

#endif

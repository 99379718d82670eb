/* Weight quantization of a float [N][K] matrix (Hugging Face layout: row n is
 * output channel n) into a packed sq_qweight, dequantization back, and the
 * error measures used to judge it.
 *
 * int8 (SQ_QT_S8): symmetric per output channel. scale[n] = max_k |W[n][k]|
 *   / 127; q = clamp(round(W / scale), -127, 127), rounding half away from
 *   zero; -128 is never produced (the AVX2 sign trick needs |q| <= 127). A
 *   row of zeros gets scale 1 and all-zero values (any positive scale would
 *   do; 1 keeps dequantization exact and the scale finite).
 *
 * int4 (SQ_QT_S4G128): symmetric round-to-nearest per group of 128 inputs
 *   along K, 15 levels q in [-7, 7] (not -8: symmetric keeps the sign trick
 *   and |q| <= 7 valid). RTN scale = amax / 7 over the group's real inputs
 *   (the zero padding of the last group past K cannot raise amax). A group of
 *   zeros gets scale 1 and zeros.
 *   With search (llama.cpp-imatrix style), each group also tries candidate
 *   scales s = rtn * f for f = 0.80, 0.81, .. 1.20, quantizes with each, and
 *   for each candidate's values also the weighted least-squares scale
 *   sum(imp w q) / sum(imp q^2); it keeps the pair (values, scale) with the
 *   smallest sum_k imp[k] (W - q s)^2, starting from RTN and replacing only on
 *   a strictly smaller error (so ties keep RTN and the weighted error is
 *   never worse than RTN's, group by group). imp is the calibration sum of
 *   x^2 per input channel; NULL means uniform (plain MSE).
 *
 * All arithmetic is per output channel in a fixed order; the work is split
 * over panels of 16 channels with OpenMP, so the output bytes are identical
 * for any thread count. */
#ifndef SQ_QUANT_WEIGHTS_H
#define SQ_QUANT_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>

#include "qweight.h"
#include "sq_error.h"

/* What sq_sqnr_db returns for an exact match (and the bound of its result):
 * a finite number that prints and serializes as one. */
#define SQ_SQNR_CAP_DB 200.0

typedef struct sq_quant_opts {
    /* Per-input-channel importance, K entries, finite and >= 0 (the
     * calibration sum of x^2); NULL = uniform. Used only by int4 search. */
    const float *importance;
    /* int4: weighted-MSE scale search (the --int4-search flag). */
    bool int4_search;
    /* int4: GPTQ rounding with this factor (gptq.h: K x K, from the
     * calibration Gram matrix of the input); NULL = round to nearest. */
    const double *gptq_u;
} sq_quant_opts;

/* Quantize w ([n][k] row-major, finite) to qt (SQ_QT_S8 or SQ_QT_S4G128) and
 * pack it into out (allocated here; free with sq_qweight_free). opts may be
 * NULL (RTN, no importance). Fails, with out empty, on a bad shape or qtype,
 * a non-finite weight or importance (named by index), or out of memory. */
int sq_quantize_weights(const float *w, int n, int k, sq_qtype qt, const sq_quant_opts *opts,
                        sq_qweight *out, sq_err *err);

/* Dequantize q into out ([q->n][q->k] row-major floats): q * scale. */
void sq_dequantize_weights(const sq_qweight *q, float *out);

/* Signal-to-quantization-noise ratio in dB of test against ref (n values):
 * 10 log10(sum ref^2 / sum (ref - test)^2), computed in double. Exactly equal
 * inputs (including all-zero ones) give SQ_SQNR_CAP_DB; the result is
 * clamped to [-SQ_SQNR_CAP_DB, SQ_SQNR_CAP_DB] (an all-zero ref against a
 * non-zero test gives the lower bound). */
double sq_sqnr_db(const float *ref, const float *test, size_t n);

/* Importance-weighted squared error of an [n][k] approximation:
 * sum_{n,k} imp[k] (ref - test)^2 in double; imp NULL = weights of 1. */
double sq_weighted_sq_error(const float *ref, const float *test, int n, int k, const float *imp);

#endif

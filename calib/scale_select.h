/* Choosing the clip value amax of a symmetric activation quantizer from an
 * |x| histogram (histogram.h). The scale is amax / qmax: values are rounded
 * to integers in [-qmax, qmax] (qmax = 127 for int8; every method takes qmax
 * as a parameter). Every method returns amax in (0, max|x|]; an empty or
 * all-zero histogram gives amax = 0.
 *
 *   minmax      amax = max|x|.
 *   percentile  the smallest bin upper edge whose cumulative count reaches p%
 *               of all counted values (default p = 99.99); so amax is at most
 *               one bin width above the exact order statistic.
 *   entropy     TensorRT's KL-divergence calibration. Candidates: the first i
 *               bins, i = qmax+1 (128 levels for int8: |q| in 0..127) up to the
 *               last non-empty bin. Reference P = bins [0, i) with the mass of
 *               all later bins added to bin i-1. Candidate Q = bins [0, i)
 *               (without the tail) merged into L = qmax+1 levels (bin k is in
 *               level floor(k*L/i), as TensorRT's digitize over linspace(0, i,
 *               L+1) does), each level's mass spread evenly over its bins that
 *               are non-empty in P. The i minimizing KL(P||Q) (both
 *               normalized; P(b) > 0 with Q(b) = 0 makes a candidate
 *               infinite) wins, ties to the smaller i; amax = i * bin width,
 *               the upper edge of the bins P keeps (pytorch-quantization's
 *               edge; TensorRT's (i + 0.5) * width is half a bin more). Like
 *               TensorRT's, the result depends on the bin resolution: here
 *               the data spans 1025..2048 bins (power-of-two range).
 *   mse         the amax minimizing the expected squared quantize-dequantize
 *               error, sum over bins of count x the mean of (t - dq(t))^2 for
 *               t spread evenly over the bin (the last bin ends at max|x|),
 *               integrated in closed form. Not the error at the bin center:
 *               when amax is a bin edge k * width and k is a multiple of qmax,
 *               the step is a whole number of bins, the centers all sit at the
 *               same few phases of the rounding sawtooth, and the center rule
 *               underestimates the error by ~width^2/12 for those candidates
 *               only, which made it pick them (seen: 3.97 instead of 3.91
 *               sigma on a Gaussian). Exact zeros are taken out of bin 0 (they
 *               quantize to 0 at any scale). Candidates: every bin edge
 *               k * width, k = 1 .. last non-empty bin (capped at max|x|);
 *               ~2M bin evaluations, a few ms. Ties: the smallest amax.
 *
 * skip_zeros (off by default, as in pytorch-quantization) drops exact zeros
 * before percentile and entropy, i.e. they rank/score the nonzero values
 * only. Post-GELU tensors have many tiny but nonzero values and hardly any
 * exact zeros; those small values stay in the statistics either way. */
#ifndef SQ_SCALE_SELECT_H
#define SQ_SCALE_SELECT_H

#include "histogram.h"
#include "sq_error.h"

typedef enum sq_calib_method {
    SQ_CALIB_MINMAX,
    SQ_CALIB_PERCENTILE,
    SQ_CALIB_ENTROPY,
    SQ_CALIB_MSE,
} sq_calib_method;

typedef struct sq_scale_params {
    sq_calib_method method;
    double percentile; /* in (0, 100]; percentile method only */
    int qmax;          /* largest quantized magnitude: 127 for int8 */
    int skip_zeros;    /* percentile / entropy: ignore exact zeros */
} sq_scale_params;

#define SQ_DEFAULT_PERCENTILE 99.99

/* Largest magnitude of a symmetric signed `bits`-bit quantizer:
 * 2^(bits-1) - 1 (127 for 8, 7 for 4). Returns -1 outside 2..16 bits. */
int sq_qmax_for_bits(int bits);

/* Defaults for method m: percentile 99.99, qmax 127, zeros kept. */
void sq_scale_params_default(sq_scale_params *p, sq_calib_method m);

/* The method's name: "minmax", "percentile", "entropy", "mse". */
const char *sq_calib_method_name(sq_calib_method m);

/* Parse a method name (exact, lower case). -1 with a message listing the
 * known names otherwise. */
int sq_calib_method_parse(const char *name, sq_calib_method *out, sq_err *err);

/* Parse "METHOD" or "percentile:P" (e.g. "percentile:99.9") into p, starting
 * from the method's defaults (qmax 127). -1 with a message on a bad name, a
 * parameter given to a method that takes none, or P outside (0, 100]. */
int sq_scale_params_parse(const char *spec, sq_scale_params *p, sq_err *err);

/* amax of h by p->method. -1 on bad parameters (qmax < 1, percentile out of
 * range). An empty or all-zero histogram gives *amax = 0 and returns 0. */
int sq_select_amax(const sq_hist *h, const sq_scale_params *p, float *amax, sq_err *err);

/* The individual methods (parameters assumed valid). */
float sq_amax_minmax(const sq_hist *h);
float sq_amax_percentile(const sq_hist *h, double percentile, int skip_zeros);
float sq_amax_entropy(const sq_hist *h, int qmax, int skip_zeros);
float sq_amax_mse(const sq_hist *h, int qmax);

/* The histogram's estimate of the summed squared quantize-dequantize error
 * for clip amax (what sq_amax_mse minimizes: values spread evenly within
 * each bin, exact zeros without error). */
double sq_hist_quant_sse(const sq_hist *h, double amax, int qmax);

/* KL(P||Q) of the entropy method for the first i bins (exposed for tests);
 * INFINITY when Q misses mass P has, or i is out of [1, SQ_HIST_BINS]. */
double sq_hist_kl_candidate(const sq_hist *h, int i, int qmax, int skip_zeros);

#endif

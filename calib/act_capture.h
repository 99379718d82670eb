/* An encoder observer that keeps a bounded sample of real activation rows
 * for every linear input (the first max_rows rows seen, in the run's
 * deterministic batch order), and optionally the statistics of the smoothed
 * activations x_j / s_j (SmoothQuant changes the tensor whose range the
 * activation scale must cover). quantize uses it to search SmoothQuant's
 * alpha, to measure each quantized linear's output error, and to pick the
 * activation scale on the smoothed histogram. */
#ifndef SQ_ACT_CAPTURE_H
#define SQ_ACT_CAPTURE_H

#include "act_stats.h"
#include "calib_stats.h"
#include "encoder.h"

typedef struct sq_act_capture {
    int layers, max_rows;
    float **rows;   /* [layers * SQ_LIN_KINDS]: [n_rows][cols] */
    int *n_rows;
    int *cols;
    /* Smoothed statistics: when smooth[i] is non-NULL (K floats), stats[i]
     * accumulates x_j / smooth[i][j]. */
    const float **smooth;
    /* With smooth[i]: skip[i] (K bytes, or NULL) marks the outlier channels
     * (sq_linear.outlier_idx), which the static range does not cover; they
     * are observed as 0 (a zero does not move a clip or a one-sided
     * input's minimum: act_range clamps it to <= 0 anyway). */
    const uint8_t **skip;
    sq_act_stats *stats;
    /* GPTQ (quantize/gptq.h): when gram[i] is non-NULL (cols x cols doubles,
     * sq_act_capture_want_gram), it accumulates the upper triangle of
     * sum x x^T of the input as the integer GEMM sees it: divided by
     * smooth[i] and with the skip[i] channels 0 when those are set. */
    double **gram;
    bool failed;
    sq_err first_err;
} sq_act_capture;

/* For the linears of the model st describes (encoder or decoder). */
int sq_act_capture_init(sq_act_capture *c, const sq_calib_stats *st, int max_rows, sq_err *err);
void sq_act_capture_free(sq_act_capture *c);
sq_observer sq_act_capture_observer(sq_act_capture *c);
int sq_act_capture_check(const sq_act_capture *c, sq_err *err);
/* Accumulate the Gram matrix of linear i's input (see gram above). */
int sq_act_capture_want_gram(sq_act_capture *c, int i, sq_err *err);
/* True once every linear input holds max_rows rows (a capture-only run can stop). */
bool sq_act_capture_full(const sq_act_capture *c);

#endif

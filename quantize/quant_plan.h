/* The per-linear decisions of the one quantize driver (quantizer.c), for
 * every model family: SmoothQuant's
 * alpha search on the channels in the integer GEMM, the activation clip,
 * step and zero point from a histogram, quantizing and packing W diag(s)
 * with its outlier columns taken out, the output error of the quantized
 * linear as the runtime computes it, and the writer's keep-alive list and
 * self-check. */
#ifndef SQ_QUANT_PLAN_H
#define SQ_QUANT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "act_stats.h"
#include "calib_stats.h"
#include "strbuf.h"
#include "container.h"
#include "linear.h"
#include "quantizer.h"
#include "act_capture.h"
#include "recipe.h"
#include "scale_select.h"
#include "smoothquant.h"

/* Everything decided for one linear before it is written. */
typedef struct sq_plan_linear {
    sq_resolved_linear res;
    float *s;        /* SmoothQuant factors [k] or NULL */
    bool absent;     /* the layer has no such linear (res of a non-widening layer) */
    bool folded;     /* s folded into the producer (attn_out: V rows; pre-LN qkv and
                        ffn_up: the LayerNorm), no runtime multiplier */
    float alpha;
    float act_amax;
    float act_scale; /* the int8 step: amax / 127, or (amax - lo) / 254 with a zero point */
    int act_zero;    /* its zero point (sq_ref_round_s8_zp), 0 = symmetric */
    sq_qweight qw;   /* quantized and packed (when not fp32) */
    /* outlier channels (recipe outliers, outlier_select.h): n_outl indices,
     * ascending; their columns of W diag(s) [n_outl][N] (filled in step 5);
     * the calibrated channel maxima with them set to 0, and a K-byte mask */
    int n_outl;
    int32_t *outl_idx;
    float *outl_w;
    float *xmax_m;
    uint8_t *skip;
    /* GPTQ (recipe weights.int4_rounding: gptq, int4 linears): the Gram
     * matrix of the input as the GEMM sees it (act_capture.h), borrowed;
     * NULL = round to nearest */
    const double *gram;
} sq_plan_linear;

/* True when p is rounded with GPTQ: an int4 linear under a recipe with
 * weights.int4_rounding: gptq. */
bool sq_plan_wants_gptq(const sq_plan_linear *p, const sq_recipe *r);

/* Step 4's capture (act_capture.h) for the replay that sees each linear's
 * input as the integer GEMM does: divided by s (unless s is folded into
 * the producer: then by ones), outlier channels skipped, and a Gram matrix
 * for every GPTQ linear. pl has n linears, SQ_LIN_KINDS per layer, as the
 * capture and the statistics. */
int sq_plan_capture_smoothed(sq_act_capture *cap, const sq_calib_stats *st,
                             const sq_plan_linear *pl, int n, const float *ones,
                             const sq_recipe *r, sq_err *err);
/* After that replay: each plan linear borrows its Gram matrix (NULL if none). */
void sq_plan_take_grams(sq_plan_linear *pl, int n, const sq_act_capture *cap);

/* Storage that must live until the writer has written. */
typedef struct sq_keep {
    void **p;
    int n, cap;
} sq_keep;

sq_scale_params sq_plan_recipe_scale(const sq_recipe *r);

/* Relative output error of the quantized linear as the runtime computes
 * it (the linear.c path on the packed weights, qlinear_eval.h) against
 * x W^T + b in fp32. */
int sq_plan_quantized_error(const float *x, int rows, const float *w_ref, const float *bias, int N,
                           int K, const float *s, float act_scale, int act_zero,
                           const sq_plan_linear *p, const sq_qweight *qw, double *out, sq_err *err);

/* Quantize W (times diag(scale_s) when given) to qt. The int4 importance of
 * input j is the calibration sum of x_j^2 / imp_s_j^2 (the smoothed input;
 * xs NULL: every input weighs 1).
 * With p (n_outl > 0): the outlier columns of W diag(scale_s) go to
 * p->outl_w [n_outl][N] and are zeroed before quantizing, so no outlier
 * sets a row's weight scale. With p->gram (int4): GPTQ rounding. */
int sq_plan_quantize_linear(const sq_linear *lin, const float *scale_s, const float *imp_s,
                           const sq_act_stats *xs, sq_qtype qt, bool int4_search,
                           sq_plan_linear *p, sq_qweight *qw, sq_err *err);

/* SmoothQuant's alpha search (smoothquant.h) on the channels that stay in
 * the integer GEMM: with outlier channels, on copies of the sample rows and
 * of W whose outlier columns are 0 (the fp32 side path is exact whatever
 * alpha is). */
int sq_plan_search_alpha(const float *x, int rows, const sq_linear *lin, const sq_plan_linear *p,
                        const float *xmax, const float *wmax, const sq_smooth_search *search,
                        float *alpha, sq_err *err);

uint64_t sq_plan_packed_bytes(const sq_qweight *q);

void *sq_keep_add(sq_keep *k, void *p);

void sq_keep_free(sq_keep *k);

float sq_plan_safe_amax(float a);

/* The int8 step and zero point of an input clipped at amax whose smallest
 * calibrated value is lo (lo_known false: unknown). A symmetric code range
 * spends half its codes on negatives; ReLU outputs have none and GELU
 * outputs none below -0.17, so where the input is (nearly) one-sided the
 * 255 codes cover [lo, amax] instead: step (amax - lo) / 254, zero point z
 * (sq_ref_round_s8_zp), up to half the step. Two-sided inputs, where the
 * gain would be under 25%, stay symmetric. */
void sq_plan_act_range(float amax, bool use_zero, bool lo_known, float lo, float *scale, int *zero);

/* The clip (amax), step and zero point of one int8 input from its |x|
 * histogram. The error-driven methods (mse, entropy) weigh clipping against
 * the step; an input that gets a zero point has twice the levels (about
 * 2 qmax steps over [0, amax]), so its clip is chosen again for those. */
int sq_plan_select_act(const sq_hist *h, const sq_scale_params *sp, bool use_zero, bool lo_known,
                      float lo, float *amax, float *scale, int *zero, sq_err *err);


/* Outlier channels of a packed linear (outlier_select.h) from the
 * calibrated channel maxima xs and its weights: p->outl_idx, n_outl, and
 * with any, xmax_m (their maxima 0) and skip. Returns n_outl, -1 on OOM. */
int sq_plan_outliers(sq_plan_linear *p, const sq_linear *lin, const sq_act_stats *xs,
                     const sq_recipe *r, sq_err *err);

/* The activation clip, step and zero point of a packed linear: from the
 * histogram of its input (xs), or of the smoothed replay (smoothed: the
 * statistics of x / s with outliers zeroed; NULL when there was none, then
 * a remapped input's range follows from the channel maxima). */
int sq_plan_act(sq_plan_linear *p, const sq_act_stats *xs, const sq_act_stats *smoothed,
                const sq_recipe *r, const sq_scale_params *sp, const float *ones, sq_err *err);

/* The metadata's `calibration` mapping (digest, date, observer, corpus,
 * sampling) and the canonical `recipe` text (SQM.md 2.5). */
void sq_plan_yaml_provenance(sq_strbuf *sb, const sq_calib_stats *st, uint64_t st_hash,
                             const sq_scale_params *sp, const sq_recipe *r);

/* One entry of the metadata's `linears` list (SQM.md 2.5): name, type,
 * shape, smooth and alpha, then fold_note (", folded_into_v: true" or the
 * like; "" for none), the static activation range and error when
 * with_range (a packed linear with static activations), the error without
 * SmoothQuant when with_nosmooth, and the outlier count. */
void sq_plan_yaml_linear(sq_strbuf *sb, const sq_linear_report *lr, const char *fold_note,
                         bool with_range, bool with_nosmooth);

/* One line of the quantizer's log (o->log; nothing when unset). */
void sq_quantize_log(const sq_quantize_opts *o, const char *fmt, ...) SQ_PRINTF(2, 3);

/* Free the plans' arrays (and w_orig[i] when given), then the arrays. */
void sq_plan_free(sq_plan_linear *pl, int n, float **w_orig);

#endif

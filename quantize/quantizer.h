/* squint's quantizer: an fp32 checkpoint + calibration statistics + a recipe
 * -> a packed .sqm model (formats/SQM.md). It lives in calib/ because it
 * needs the statistics and replays the calibration samples through the fp32
 * executor; the numerics (SmoothQuant, RTN, packing) are libquant's.
 *
 * Per layer: SmoothQuant factors for the inputs the recipe smooths (alpha
 * fixed, or searched against the int8 output error on real calibration
 * rows); the attention-output factors folded exactly into V; the activation
 * scale from the observer method on the (smoothed) activation histogram;
 * weights scaled by s and quantized (int8 per channel / int4-g128) into
 * VNNI-4 panels. */
#ifndef SQ_QUANTIZER_H
#define SQ_QUANTIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "calib_stats.h"
#include "embed_model.h"
#include "qtype.h"
#include "recipe.h"
#include "sqm_class_head.h"

typedef struct sq_quantize_opts {
    const sq_recipe *recipe;
    bool strict;                /* an override matching nothing is an error */
    bool int4_search;           /* force the int4 weighted scale search on */
    const char *bundled_corpus; /* to replay bundled-corpus calibrations */
    const char *const *corpus;  /* replay on these files instead */
    size_t n_corpus;
    int batch;
    int capture_rows;           /* calibration rows per linear for alpha search and errors */
    int zstd_level;             /* 0: plain file */
    bool dry_run;
    /* a classification head to store (formats/SQM.md section 9); NULL: none.
     * Its dim must be the model's hidden width (checked). */
    const sq_sqm_class_head *class_head;
    void (*log)(void *ctx, const char *line); /* one line per tensor */
    void *log_ctx;
} sq_quantize_opts;

typedef struct sq_linear_report {
    char name[48];
    sq_qtype qtype;
    int n, k;
    bool smooth;
    float alpha;
    float act_amax;
    int act_zero;        /* int8 activation zero point (0: symmetric) */
    double err;          /* relative output error of the quantized linear (NaN for fp32) */
    double err_nosmooth; /* the same with SmoothQuant and outliers off (NaN when not smoothed) */
    int n_outliers;      /* input channels computed in fp32 beside the GEMM (recipe outliers) */
    uint64_t bytes_fp32, bytes_packed;
} sq_linear_report;

typedef struct sq_quantize_report {
    int n_linears;
    sq_linear_report *linears;
    uint64_t bytes_in;  /* the fp32 checkpoint files (weights + tokenizer) */
    uint64_t bytes_out; /* the .sqm written (0 for a dry run) */
} sq_quantize_report;

void sq_quantize_report_free(sq_quantize_report *r);

/* st_path is recorded (its xxh64) as the calibration's identity. */
int sq_quantize_model(sq_embed_model *m, const char *model_arg, const sq_calib_stats *st,
                      const char *st_path, const sq_quantize_opts *o, const char *out_path,
                      sq_quantize_report *rep, sq_err *err);

#endif

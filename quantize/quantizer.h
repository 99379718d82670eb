/* squint's quantizer: an fp32 checkpoint + calibration statistics + a recipe
 * -> a packed .sqm model (formats/SQM.md). One driver for every model
 * family (sq_quantize); a family gives what is its own through an
 * sq_quant_target: its linears, how its calibration samples are replayed,
 * which SmoothQuant factors fold exactly into the model, and its writer
 * (quantize_encoder.c, quantize_decoder.c).
 *
 * Per linear: the recipe's type and options; outlier channels; SmoothQuant
 * factors for the inputs the recipe smooths (alpha fixed, or searched
 * against the quantized output error on real calibration rows), folded
 * where the family can do so exactly, else kept as runtime multipliers; the
 * activation scale from the observer method on the (smoothed) activation
 * histogram, or per-row steps at run time (dynamic activations); weights
 * scaled by s and quantized (int8 per channel / int4-g128, RTN or GPTQ)
 * into VNNI-4 panels. */
#ifndef SQ_QUANTIZER_H
#define SQ_QUANTIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "calib_stats.h"
#include "calibrate.h"
#include "embed_model.h"
#include "file_hash.h"
#include "scale_select.h"
#include "llama_model.h"
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

/* What the one driver needs of a model family. Plan and report index
 * i = layer * SQ_LIN_KINDS + kind (the statistics' index too); a kind the
 * layer lacks is absent. */
typedef struct sq_quant_target sq_quant_target;
typedef struct sq_plan_linear sq_plan_linear; /* quant_plan.h */

/* What the writer gets: the plans and the provenance. */
typedef struct sq_quant_result {
    const sq_plan_linear *plans; /* [n_layers * SQ_LIN_KINDS (+ 1: the classifier)] */
    const sq_quantize_report *rep;
    const sq_calib_stats *st;
    uint64_t st_hash;            /* xxh64 of the .sqc file (0: none) */
    uint64_t model_digest;       /* of the checkpoint's files */
    const char *model_arg;
    const sq_recipe *recipe;
    const sq_scale_params *scale;
} sq_quant_result;

struct sq_quant_target {
    void *model;
    int n_layers;
    int kmax;           /* the widest linear input */
    bool dynamic_acts;  /* per-row activation steps at run time: no static range,
                           no smoothing, no outlier channels, act_scale 0 */
    /* the same model as a calibration target: its identity (the digest the
     * statistics record) and how the calibration samples run through it */
    const sq_calib_target *calib;
    int replay_batch;   /* sequences (encoder) or rows (decoder) per replay step; 0: o->batch */
    /* the statistics are of this model's family and shape */
    bool (*stats_match)(const sq_quant_target *t, const sq_calib_stats *st);
    /* the recipe against the model (architecture, shape, sections it cannot use) */
    int (*check_recipe)(const sq_quant_target *t, const sq_recipe *r, sq_err *err);
    /* linear (l, k) of the fp32 model, NULL when the layer has none */
    sq_linear *(*linear)(const sq_quant_target *t, int l, sq_linear_kind k);
    /* SmoothQuant's s of linear (l, k) folded exactly into the model (its
     * producer); NULL or false from can_fold: kept as a runtime multiplier */
    bool (*can_fold)(const sq_quant_target *t, int l, sq_linear_kind k);
    int (*fold)(const sq_quant_target *t, int l, sq_linear_kind k, const float *s, sq_err *err);
    /* a classifier to pack (per-channel weights, per-row activations, no
     * statistics): plan and report index n_layers * SQ_LIN_KINDS */
    const sq_linear *classifier;
    sq_qtype classifier_qtype;
    const char *classifier_name;
    /* the .sqm, from the (folded) model and the plans */
    int (*write)(const sq_quant_target *t, const sq_quant_result *res, int zstd_level,
                 const char *path, sq_err *err);
};

/* The one driver: the statistics proven to be of this model, the recipe
 * checked, then per linear the recipe, outlier channels, SmoothQuant,
 * activation ranges, quantized and packed weights with their errors, and
 * the file written (not for a dry run, which stops after the recipe). st_path
 * is recorded (its xxh64) as the calibration's identity. */
int sq_quantize(const sq_quant_target *t, const char *model_arg, const sq_calib_stats *st,
                const char *st_path, const sq_quantize_opts *o, const char *out_path,
                sq_quantize_report *rep, sq_err *err);

/* The recipe's per-override warnings, through o->log. */
void sq_quantize_warn(void *o, const char *msg);

/* The families' targets, run by sq_quantize. */
int sq_quantize_model(sq_embed_model *m, const char *model_arg, const sq_calib_stats *st,
                      const char *st_path, const sq_quantize_opts *o, const char *out_path,
                      sq_quantize_report *rep, sq_err *err);
/* A causal LM (formats/SQM.md section 10): every decoder linear keeps 1/s as
 * a runtime multiplier (nothing is folded); embeddings and RMSNorm weights
 * stay fp32, the classifier too unless the recipe's classifier.type is int8
 * (SQM.md 10.6). dynamic_acts: act_scale 0 in the file, each input row
 * quantized with its own int8 step at run time (per token). */
int sq_dec_quantize(sq_llama_model *m, const char *model_arg, const sq_calib_stats *st,
                    const char *st_path, const sq_quantize_opts *o, bool dynamic_acts,
                    const char *out_path, sq_quantize_report *rep, sq_err *err);

#endif

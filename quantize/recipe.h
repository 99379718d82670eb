/* Quantization recipes: what `squint quantize` does to each linear layer of a
 * model, and the accuracy gates `squint embed-run` enforces. The schema is
 * documented in recipes/README.md; this is its validating parser (errors read
 * "recipe.yaml:7:3: ..."), the per-linear resolution of overrides, and the
 * canonical YAML form recorded in .sqm files. The observer method is
 * calibration's own (calib/scale_select.h sq_calib_method). */
#ifndef SQ_RECIPE_H
#define SQ_RECIPE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "attn_matmul.h"
#include "encoder.h"
#include "hf_config.h"
#include "qtype.h"
#include "scale_select.h"
#include "sq_error.h"

#define SQ_RECIPE_VERSION 1
/* Bounds on a "re:" override pattern (glibc regcomp is exponential in stacked repetitions). */
#define SQ_RECIPE_MAX_REGEX 256
#define SQ_RECIPE_MAX_REGEX_REPS 16

/* A SmoothQuant migration strength: a number in [0, 1] or "auto" (searched
 * per layer against the layer-output error on the calibration data). */
typedef struct sq_alpha {
    bool is_auto;
    double value; /* meaningful when !is_auto */
} sq_alpha;

/* Accuracy gates of embed-run: one row per metric in a table, so adding a
 * metric is adding a row. "min" gates pass when measured >= threshold, "max"
 * gates (the *_drop metrics, fp32 minus quantized) when measured <= it. */
typedef enum sq_gate_id {
    SQ_GATE_COS_MEAN,           /* mean cosine(fp32, quantized) embedding, min */
    SQ_GATE_COS_MIN,            /* worst-text cosine, min */
    SQ_GATE_TOPK_OVERLAP,       /* mean |top-k fp32 ∩ top-k quantized| / k, min */
    SQ_GATE_STSB_SPEARMAN_DROP, /* STS-B Spearman drop, max */
    SQ_GATE_NDCG10_DROP,        /* retrieval nDCG@10 drop, max */
    SQ_GATE_CENTRED_COS_MEAN,   /* mean centred cosine (reference mean embedding removed), min */
    SQ_GATE_SCORE_SPEARMAN,     /* Spearman of pair scores (cross-encoder, reranking), min */
    SQ_GATE_MAX_ACCURACY_DROP,  /* classification head accuracy drop in points (SST-2), max */
    SQ_GATE_COUNT
} sq_gate_id;

typedef struct sq_gate_info {
    const char *name; /* as written in recipes and on the command line */
    double lo, hi;    /* valid thresholds */
    bool is_max;      /* true: measured must not exceed the threshold */
} sq_gate_info;

/* NULL when id is out of range. */
const sq_gate_info *sq_gate_get(sq_gate_id id);
/* The gate named `name`; -1 when unknown. */
int sq_gate_lookup(const char *name);
/* Does `measured` pass the gate at `threshold`? NaN never passes. */
bool sq_gate_pass(sq_gate_id id, double threshold, double measured);

#define SQ_GATE_TOPK_DEFAULT 10

typedef struct sq_recipe_gates {
    bool set[SQ_GATE_COUNT];
    double threshold[SQ_GATE_COUNT];
    int topk_k; /* the k of topk_overlap, 1..1000 (default 10) */
} sq_recipe_gates;

/* One entry of the ordered `overrides` list. */
typedef struct sq_recipe_override {
    char *match;     /* as written: a glob, or "re:" + a POSIX extended regex */
    bool is_regex;
    regex_t re;      /* compiled, when is_regex */
    bool set_type;
    sq_qtype type;
    bool set_smooth; /* `smoothquant: true|false` */
    bool smooth;
    bool set_alpha;
    sq_alpha alpha;
    int line, col;   /* of the item in the source; 0 when not from a file */
} sq_recipe_override;

#define SQ_RECIPE_MAX_OUTLIERS 256

/* A parsed recipe. It owns its strings and compiled regexes: release with
 * sq_recipe_free, and do not copy it by value (the copy would share them). */
typedef struct sq_recipe {
    int version;  /* SQ_RECIPE_VERSION */
    char *name;   /* optional (NULL) */
    char *source; /* file or buffer name for messages; "<default>" for the default */

    /* model: expected shape (0 = not checked) and embedding post-processing */
    char architecture[16]; /* "bert", "t2t", "mpnet", "nomic_bert", "llama", "qwen3" or "" (any) */
    int hidden, layers, heads, ffn;
    bool set_pooling;
    sq_pooling pooling;
    bool set_normalize;
    bool normalize;

    /* observer: how activation clip ranges are chosen from calibration */
    sq_calib_method observer;
    double percentile; /* (0, 100]; percentile only (99.99 otherwise) */
    bool skip_zeros;   /* percentile and entropy only */
    bool zero_point;   /* int8 inputs that are (nearly) one-sided get a zero point */
    /* guard: row (true) | clip: what the runtime does with an input row
     * holding a value beyond the static range. row: that row is quantized
     * with its own step (sq_gemm_quantize_acts_guard), clip: it is clipped.
     * Recorded in the .sqm (activation_guard). */
    bool guard_rows;

    /* smoothquant */
    bool sq_enabled;
    sq_alpha sq_alpha;
    double sq_auto_step;           /* grid step of the alpha search, [0.01, 0.5] */
    bool sq_inputs[SQ_LIN_KINDS];  /* which linear kinds have their input smoothed */

    /* outliers: input channels kept out of the integer GEMM and computed in
     * fp32 beside it (sq_linear.outlier_idx): a channel whose calibrated
     * max|x_j|, or whose weight column's max|W_nj|, exceeds outl_ratio times
     * the median over the linear's channels; the largest outl_max per linear */
    bool outl_enabled;
    double outl_ratio;   /* [2, 1000] */
    int outl_max;        /* 1 .. SQ_RECIPE_MAX_OUTLIERS */

    /* weights */
    sq_qtype weight_type;
    bool int4_scale_search; /* int4-g128: search each group's clip for least error */
    bool int4_gptq;         /* int4-g128: GPTQ rounding (gptq.h) instead of nearest */

    /* attention: the precision of the matmuls Q K^T and P V (attn_matmul.h;
     * recorded in the .sqm as `attention` unless f32) */
    sq_attn_matmul attn_matmul;

    /* classifier: a causal LM's classifier (lm_head) SQ_QT_F32 (default) or
     * SQ_QT_S8: per-channel int8 weights, dynamic per-token activations
     * (recorded in the .sqm as classifier_type; encoders refuse it) */
    sq_qtype classifier_type;

    sq_recipe_override *overrides;
    size_t n_overrides;

    sq_recipe_gates gates;
} sq_recipe;

/* The recipe `quantize` uses without --recipe: int8 weights, SmoothQuant with
 * alpha 0.5 on the LayerNorm-output inputs (qkv, ffn_up), percentile 99.99
 * observer, no overrides, no gates. Every key a recipe file leaves out takes
 * its value from here. Returns 0 (-1 only on allocation failure). */
int sq_recipe_default(sq_recipe *r);

/* Parse and validate a recipe. On failure r is left empty (safe to free) and
 * err reads "<name>:<line>:<col>: <message>". An empty document is an error. */
int sq_recipe_load_file(const char *path, sq_recipe *r, sq_err *err);
int sq_recipe_load_buffer(const char *text, size_t len, const char *name, sq_recipe *r,
                          sq_err *err);

/* Release what r owns and zero it. Accepts a zeroed or already freed recipe. */
void sq_recipe_free(sq_recipe *r);

/* Same recipe (every field that affects quantization or gating, including
 * the name and override order; not the source name or positions). */
bool sq_recipe_equal(const sq_recipe *a, const sq_recipe *b);

/* The canonical YAML of r, malloc'd: every field written explicitly in a
 * fixed order with shortest round-trip numbers, so equal recipes give equal
 * bytes and the text loads back to an equal recipe. NULL on OOM or when a
 * string is not valid UTF-8. */
char *sq_recipe_to_yaml(const sq_recipe *r);

/* ---- linears and their resolution ---- */

/* The name recipes use for a linear: "layer.<i>.<kind>", i from 0, kind one
 * of qkv, attn_out, ffn_up, ffn_down. Like snprintf. */
int sq_linear_name(char *buf, size_t n, int layer, sq_linear_kind kind);
/* Split such a name; -1 when it is not one. */
int sq_linear_name_parse(const char *name, int *layer, sq_linear_kind *kind);
/* A linear kind by name; -1 when unknown. */
int sq_linear_kind_parse(const char *name, sq_linear_kind *out);

/* Does override o match the linear name? */
bool sq_recipe_override_matches(const sq_recipe_override *o, const char *linear_name);

typedef struct sq_resolved_linear {
    sq_qtype qtype;
    bool smooth;       /* smooth this linear's input (never for fp32 linears) */
    sq_alpha alpha;    /* when smooth */
    int last_override; /* index of the last override that matched; -1 if none */
} sq_resolved_linear;

/* What the recipe says for one linear: the defaults (weights.type; smoothing
 * when smoothquant is enabled and the kind is in smoothquant.inputs, with
 * smoothquant.alpha), then every matching override in order, so the last
 * match wins per field. A linear whose type ends up fp32 is not smoothed
 * (its input is not quantized). -1 with err when the name is not
 * "layer.<i>.<kind>". */
int sq_recipe_resolve(const sq_recipe *r, const char *linear_name, sq_resolved_linear *out,
                      sq_err *err);

/* Receives one warning line (no trailing newline). */
typedef void (*sq_recipe_warn_fn)(void *ctx, const char *msg);

/* Report overrides that match none of `names` (the model's linears). With
 * strict, the first one is an error (-1, err set, positioned at the
 * override); otherwise each is passed to warn (may be NULL) and the count of
 * unmatched overrides is returned. */
int sq_recipe_check_overrides(const sq_recipe *r, const char *const *names, size_t n,
                              bool strict, sq_recipe_warn_fn warn, void *warn_ctx,
                              sq_err *err);
/* The same for the linears of a `layers`-layer BERT encoder. */
int sq_recipe_check_overrides_layers(const sq_recipe *r, int layers, bool strict,
                                     sq_recipe_warn_fn warn, void *warn_ctx, sq_err *err);

/* ---- the model section ---- */

/* Refuse a model whose shape differs from what the recipe expects. */
int sq_recipe_check_model(const sq_recipe *r, const sq_bert_config *cfg, sq_err *err);
/* Apply the recipe's pooling / normalize (where given) over the model's. */
void sq_recipe_apply_pooling(const sq_recipe *r, sq_pooling_config *pc);

/* Set a gate from "name=value" (embed-run --gate), validated like the recipe
 * key; it replaces the recipe's value for that gate. */
int sq_recipe_set_gate(sq_recipe *r, const char *spec, sq_err *err);

#endif

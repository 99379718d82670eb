/* One evaluation run: a model's embeddings of an sq_eval_input (and, for a
 * .sqm, how often each quantized linear's input went beyond its calibrated
 * range), a reference's (a model, or precomputed .npy embeddings), and the
 * metrics between them: cosine statistics with the worst inputs, top-k
 * neighbour overlap, and the task metric of a labelled set. */
#ifndef SQ_EVAL_RUN_H
#define SQ_EVAL_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "embedder.h"
#include "eval_input.h"
#include "eval_metrics.h"

/* Folds of the SST-2 logistic-regression probe. */
#define SQ_EVAL_SST2_FOLDS 5

/* Per quantized linear of a .sqm: input values seen in this run and how
 * many were beyond the static range (sq_linear_count_clipped). */
typedef struct sq_eval_clip {
    char name[48]; /* "layer.L.kind"; "" for f32 or absent linears */
    int64_t values, clipped;   /* input values, those beyond the static range */
    int64_t rows, rows_beyond; /* input rows, those holding such a value */
    bool guard;                /* the linear guards those rows (else clips) */
} sq_eval_clip;

/* One model's embeddings of the input and how they were made. */
typedef struct sq_eval_model {
    const char *path;
    bool is_sqm;
    sq_embed_result res;
    double seconds;
    const char *pooling; /* "cls", "mean", "precomputed" */
    bool normalize;
    sq_eval_clip *clip;  /* [layers * SQ_LIN_KINDS] for a .sqm, else NULL */
    int n_clip;
} sq_eval_model;

typedef struct sq_eval_embed_opts {
    int batch;
    int max_seq; /* 0: the model's */
    const bool *normalize; /* NULL: the model's; else L2-normalize or not (a head's) */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
} sq_eval_embed_opts;

/* Embed every input text with the model at path (the model's pooling and
 * normalization). 0, or -1 with err naming path. */
int sq_eval_embed(const char *path, const sq_eval_embed_opts *o, const sq_eval_input *in,
                  sq_eval_model *out, sq_err *err);
/* Is p a .npy file of precomputed embeddings (not a directory)? */
bool sq_eval_is_npy_path(const char *p);
/* The reference as precomputed embeddings: must hold exactly in->n rows. */
int sq_eval_reference_npy(const char *path, const sq_eval_input *in, sq_eval_model *out,
                          sq_err *err);
void sq_eval_model_free(sq_eval_model *m);

typedef struct sq_eval_task_metric {
    const char *name; /* "spearman", "ndcg10", "recall100", "probe_accuracy" */
    double model, reference;
    double drop_se; /* paired standard error of reference - model (per query); 0: not measured */
} sq_eval_task_metric;

typedef struct sq_eval_metrics {
    sq_cos_stats cos;
    double topk;
    int topk_k;
    sq_eval_task_metric task[3]; /* + "head_accuracy", added by embed-run */
    int n_task;
    double seconds;
    /* A pair scoring run (eval_rerank.h): no embeddings are compared (the
     * cosine gates cannot be measured); score_spearman is Spearman(model
     * pair scores, reference pair scores), NaN in an embedding run. */
    bool pairs;
    double score_spearman;
} sq_eval_metrics;

/* Every metric of model m against reference ref (same rows), k for the
 * top-k overlap. */
void sq_eval_measure(const sq_eval_input *in, const sq_eval_model *m, const sq_eval_model *ref,
                     int k, sq_eval_metrics *out);

/* Seconds on a monotonic clock (for the timings of a run). */
double sq_eval_now(void);

#endif

/* Pair scoring evaluation (squint embed-run on a cross-encoder, or with
 * --retriever): the scores a model gives query/document pairs against a
 * reference's. STS-B: its sentence pairs (Spearman against the gold scores);
 * a BEIR set: each query's top candidates from a bi-encoder retriever,
 * reranked by each model (nDCG@10 of the reranked lists). A pair's score is
 * a cross-encoder's activated logit, or a bi-encoder's cosine of the two
 * embeddings. */
#ifndef SQ_EVAL_RERANK_H
#define SQ_EVAL_RERANK_H

#include <stdbool.h>
#include <stdint.h>

#include "embedder.h"
#include "eval_input.h"

/* Does the model at path score pairs by itself (a sequence classifier)? */
int sq_eval_is_classifier(const char *path, bool *out, sq_err *err);

#define SQ_RERANK_WORST 10

typedef struct sq_eval_rerank_opts {
    const char *model, *reference; /* paths */
    const char *retriever;         /* BEIR input: the bi-encoder giving candidates */
    int candidates;                /* per query (BEIR), default 100 */
    int batch, max_seq;
    void (*progress)(void *ctx, const char *stage, int64_t done, int64_t total);
    void *progress_ctx;
} sq_eval_rerank_opts;

typedef struct sq_eval_rerank {
    int64_t n_pairs, n_queries;
    double *model, *reference;   /* [n_pairs] scores */
    int64_t *pair_query;         /* [n_pairs] (BEIR) query index; else NULL */
    int64_t *pair_doc;           /* [n_pairs] (BEIR) document index; else NULL */
    const char **a, **b;         /* [n_pairs] the texts (into the input) */
    double model_s, reference_s, retriever_s;
    bool cross_model, cross_reference;
    double score_spearman;       /* Spearman(model scores, reference scores) */
    double max_abs, mean_abs;    /* |model - reference| over the pairs */
    int64_t worst[SQ_RERANK_WORST]; /* pairs with the largest rank change, worst first */
    int n_worst;
    /* task: stsb Spearman vs gold; BEIR nDCG@10 of the reranked candidates
     * (and of the retriever's own order) */
    const char *task_metric;     /* "spearman" or "ndcg10" */
    double task_model, task_reference, task_retriever;
} sq_eval_rerank;

/* Run it: in must be STS-B or BEIR (a retriever is then required). */
int sq_eval_rerank_run(const sq_eval_rerank_opts *o, const sq_eval_input *in, sq_eval_rerank *r,
                       sq_err *err);
void sq_eval_rerank_free(sq_eval_rerank *r);

#endif

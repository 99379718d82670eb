#include "eval_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "linear.h"
#include "npy.h"

double sq_eval_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- embedding ---- */

typedef struct clip_observer {
    const sq_encoder *enc;
    sq_eval_clip *st;
} clip_observer;

static void count_clips(void *ctx, int layer, sq_linear_kind kind, const float *x, int rows,
                        int cols)
{
    clip_observer *o = ctx;
    const sq_linear *l = &o->enc->layers[layer].lin[kind];
    if (l->qtype == SQ_QT_F32)
        return;
    sq_eval_clip *s = &o->st[layer * SQ_LIN_KINDS + kind];
    int64_t rb;
    s->values += (int64_t)rows * cols;
    s->clipped += sq_linear_count_clipped(l, x, rows, &rb);
    s->rows += rows;
    s->rows_beyond += rb;
    s->guard = l->guard;
}

int sq_eval_embed(const char *path, const sq_eval_embed_opts *eo, const sq_eval_input *in,
                  sq_eval_model *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    double t0 = sq_eval_now();
    sq_embed_model m;
    if (sq_embed_model_open(path, &m, err) != 0)
        return -1;
    int rc = -1;
    if (sq_embed_model_require_embeddings(&m, path, err) != 0)
        goto done;
    if (eo->max_seq > sq_bert_max_tokens(&m.enc.cfg)) {
        sq_err_set(err, "%s: max_seq %d exceeds the model's %d positions", path, eo->max_seq,
                   sq_bert_max_tokens(&m.enc.cfg));
        goto done;
    }
    sq_embed_opts o = {
        .batch = (int)eo->batch,
        .max_seq = eo->max_seq ? (int)eo->max_seq : m.max_seq,
        .pooling = m.pool.pooling,
        .normalize = eo->normalize ? *eo->normalize : m.pool.normalize,
        .progress = eo->progress,
        .progress_ctx = eo->progress_ctx,
    };
    /* A .sqm: count, per quantized linear, the input values beyond its
     * calibrated clip (the observer sees every linear's float input). */
    clip_observer co = {&m.enc, NULL};
    sq_observer obs = {.linear_input = count_clips, .ctx = &co};
    if (m.is_sqm) {
        out->n_clip = m.enc.cfg.layers * SQ_LIN_KINDS;
        if (!(out->clip = calloc((size_t)out->n_clip, sizeof *out->clip))) {
            sq_err_set(err, "out of memory");
            goto done;
        }
        for (int l = 0; l < m.enc.cfg.layers; l++)
            for (int k = 0; k < SQ_LIN_KINDS; k++)
                if (m.enc.layers[l].lin[k].out > 0 && m.enc.layers[l].lin[k].qtype != SQ_QT_F32)
                    snprintf(out->clip[l * SQ_LIN_KINDS + k].name, sizeof out->clip->name,
                             "layer.%d.%s", l, sq_linear_kind_name((sq_linear_kind)k));
        co.st = out->clip;
        o.observer = &obs;
    }
    rc = sq_embed_texts(&m, in->text, in->len, in->n, &o, &out->res, err);
    out->is_sqm = sq_embed_model_is_packed(&m);
    out->pooling = sq_pooling_name(m.pool.pooling);
    out->normalize = o.normalize;
done:
    sq_embed_model_close(&m);
    out->seconds = sq_eval_now() - t0;
    if (rc != 0)
        sq_err_prefix(err, "%s", path);
    return rc;
}

/* A reference given as precomputed embeddings (.npy) of these inputs. */
bool sq_eval_is_npy_path(const char *p)
{
    size_t n = strlen(p);
    return n > 4 && strcmp(p + n - 4, ".npy") == 0 && !sq_dir_exists(p);
}

int sq_eval_reference_npy(const char *path, const sq_eval_input *in, sq_eval_model *out,
                          sq_err *err)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    double t0 = sq_eval_now();
    int64_t rows, cols;
    float *emb;
    if (sq_npy_read_f32_2d(path, &emb, &rows, &cols, err) != 0)
        return -1;
    if (rows != in->n || cols < 1) {
        free(emb);
        return sq_err_set(err,
                          "%s: holds %lld embeddings of dimension %lld, but the input has %lld "
                          "texts: it must be the reference's embeddings of exactly these inputs",
                          path, (long long)rows, (long long)cols, (long long)in->n);
    }
    out->res.n = rows;
    out->res.dim = (int)cols;
    out->res.emb = emb;
    out->pooling = "precomputed";
    out->normalize = false;
    out->seconds = sq_eval_now() - t0;
    return 0;
}

void sq_eval_model_free(sq_eval_model *m)
{
    sq_embed_result_free(&m->res);
    free(m->clip);
    m->clip = NULL;
}

/* ---- metrics ---- */

/* cos(emb[i], emb[n + i]) for the n STS-B pairs, Spearman vs gold. */
static double stsb_spearman(const sq_embed_result *r, const sq_stsb *s)
{
    int64_t n = s->n;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return NAN;
    for (int64_t i = 0; i < n; i++) {
        c[i] = sq_cosine(r->emb + (size_t)i * r->dim, r->emb + (size_t)(n + i) * r->dim, r->dim);
        if (isnan(c[i]))
            c[i] = 0;
    }
    double v = sq_spearman(c, s->score, n);
    free(c);
    return v;
}

static int retrieval(const sq_embed_result *r, const sq_beir *b, double *ndcg, double *recall,
                     double *per_query)
{
    const float *docs = r->emb + (size_t)b->n_queries * r->dim;
    return sq_retrieval_eval(r->emb, b->n_queries, docs, b->n_docs, r->dim, b->qrel_off, b->qrel_doc,
                             b->qrel_grade, ndcg, recall, per_query);
}

/* nDCG@10 and recall@100 of both models, and the paired standard error of
 * the nDCG@10 change over the queries: whether it is more than their noise. */
static void scifact_metrics(const sq_embed_result *a, const sq_embed_result *b, const sq_beir *beir,
                            sq_eval_metrics *out)
{
    out->task[0].name = "ndcg10";
    out->task[1].name = "recall100";
    out->n_task = 2;
    int64_t nq = beir->n_queries;
    double *qa = malloc((size_t)(nq > 0 ? nq : 1) * sizeof *qa);
    double *qb = malloc((size_t)(nq > 0 ? nq : 1) * sizeof *qb);
    int rc_a = retrieval(a, beir, &out->task[0].model, &out->task[1].model, qa);
    int rc_b = retrieval(b, beir, &out->task[0].reference, &out->task[1].reference, qb);
    if (qa && qb && rc_a == 0 && rc_b == 0) /* both filled every query's value */
        out->task[0].drop_se = sq_paired_se(qb, qa, nq);
    free(qa);
    free(qb);
}

void sq_eval_measure(const sq_eval_input *in, const sq_eval_model *m, const sq_eval_model *ref, int k,
                     sq_eval_metrics *out)
{
    memset(out, 0, sizeof *out);
    double t0 = sq_eval_now();
    const sq_embed_result *a = &m->res, *b = &ref->res;
    sq_cos_pair_stats(a->emb, b->emb, a->n, a->dim, &out->cos);
    out->topk = sq_topk_overlap(a->emb, b->emb, a->n, a->dim, k, &out->topk_k);
    switch (in->task) {
    case SQ_TASK_STSB:
        out->task[0] = (sq_eval_task_metric){.name = "spearman",
                                             .model = stsb_spearman(a, &in->stsb),
                                             .reference = stsb_spearman(b, &in->stsb)};
        out->n_task = 1;
        break;
    case SQ_TASK_SCIFACT:
        scifact_metrics(a, b, &in->beir, out);
        break;
    case SQ_TASK_SST2:
        out->task[0] = (sq_eval_task_metric){
            .name = "probe_accuracy",
            .model = sq_logreg_cv_accuracy(a->emb, in->sst2.label, a->n, a->dim, SQ_EVAL_SST2_FOLDS,
                                           NULL),
            .reference = sq_logreg_cv_accuracy(b->emb, in->sst2.label, b->n, b->dim,
                                               SQ_EVAL_SST2_FOLDS, NULL)};
        out->n_task = 1;
        break;
    default:
        break;
    }
    out->seconds = sq_eval_now() - t0;
}

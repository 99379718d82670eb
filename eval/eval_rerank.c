/* Pair scoring evaluation (eval_rerank.h). */
#include "eval_rerank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_metrics.h"
#include "eval_run.h"
#include "ranker.h"
#include "seq_classify.h"

int sq_eval_is_classifier(const char *path, bool *out, sq_err *err)
{
    sq_embed_model m;
    if (sq_embed_model_open(path, &m, err) != 0)
        return -1;
    *out = sq_model_is_classifier(&m);
    sq_embed_model_close(&m);
    return 0;
}

void sq_eval_rerank_free(sq_eval_rerank *r)
{
    free(r->model);
    free(r->reference);
    free(r->pair_query);
    free(r->pair_doc);
    free(r->a);
    free(r->b);
    memset(r, 0, sizeof *r);
}

typedef struct stage_progress {
    const sq_eval_rerank_opts *o;
    const char *stage;
} stage_progress;

static void on_progress(void *ctx, int64_t done, int64_t total)
{
    stage_progress *p = ctx;
    if (p->o->progress)
        p->o->progress(p->o->progress_ctx, p->stage, done, total);
}

/* Score every pair of r with the model at path into scores; *cross gets
 * whether it is a cross-encoder, *secs the time. */
static int score_with(const char *path, const char *stage, const sq_eval_rerank_opts *o,
                      sq_eval_rerank *r, double *scores, bool *cross, double *secs, sq_err *err)
{
    double t0 = sq_eval_now();
    sq_embed_model m;
    if (sq_embed_model_open(path, &m, err) != 0)
        return -1;
    size_t *al = malloc((size_t)r->n_pairs * sizeof *al), *bl = malloc((size_t)r->n_pairs * sizeof *bl);
    int rc = -1;
    if (!al || !bl) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < r->n_pairs; i++)
        al[i] = strlen(r->a[i]), bl[i] = strlen(r->b[i]);
    stage_progress sp = {o, stage};
    sq_embed_opts eo = {.batch = o->batch, .max_seq = o->max_seq, .progress = on_progress,
                        .progress_ctx = &sp};
    *cross = sq_model_is_classifier(&m);
    rc = sq_score_pairs(&m, r->a, al, r->b, bl, r->n_pairs, &eo, scores, NULL, err);
    if (rc != 0)
        sq_err_prefix(err, "%s", path);
out:
    free(al);
    free(bl);
    sq_embed_model_close(&m);
    *secs = sq_eval_now() - t0;
    return rc;
}

/* BEIR: each query's top candidates by the retriever's cosine. */
static int retrieve(const sq_eval_rerank_opts *o, const sq_eval_input *in, sq_eval_rerank *r,
                    sq_err *err)
{
    const sq_beir *s = &in->beir;
    const int64_t nq = s->n_queries, nd = s->n_docs;
    const int64_t K = o->candidates < nd ? o->candidates : nd;
    double t0 = sq_eval_now();
    sq_embed_model m;
    if (sq_embed_model_open(o->retriever, &m, err) != 0)
        return -1;
    int rc = -1;
    sq_embed_result res = {0};
    double *sc = malloc((size_t)nd * sizeof *sc);
    int64_t *top = malloc((size_t)K * sizeof *top);
    r->n_pairs = nq * K;
    r->a = malloc((size_t)r->n_pairs * sizeof *r->a);
    r->b = malloc((size_t)r->n_pairs * sizeof *r->b);
    r->pair_query = malloc((size_t)r->n_pairs * sizeof *r->pair_query);
    r->pair_doc = malloc((size_t)r->n_pairs * sizeof *r->pair_doc);
    if (!sc || !top || !r->a || !r->b || !r->pair_query || !r->pair_doc) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    if (sq_model_is_classifier(&m)) {
        sq_err_set(err, "%s: the retriever must be a bi-encoder (an embedding model)",
                   o->retriever);
        goto out;
    }
    stage_progress sp = {o, "retriever"};
    sq_embed_opts eo = {.batch = o->batch, .max_seq = o->max_seq ? o->max_seq : m.max_seq,
                        .pooling = m.pool.pooling, .normalize = true,
                        .progress = on_progress, .progress_ctx = &sp};
    if (eo.max_seq > sq_bert_max_tokens(&m.enc.cfg))
        eo.max_seq = sq_bert_max_tokens(&m.enc.cfg);
    if (sq_embed_texts(&m, in->text, in->len, in->n, &eo, &res, err) != 0) {
        sq_err_prefix(err, "%s", o->retriever);
        goto out;
    }
    double sum = 0;
    int64_t p = 0;
    for (int64_t q = 0; q < nq; q++) {
        const float *qe = res.emb + (size_t)q * res.dim;
        for (int64_t d = 0; d < nd; d++)
            sc[d] = sq_cosine(qe, res.emb + (size_t)(nq + d) * res.dim, res.dim);
        int64_t nt = sq_top_indices(sc, nd, K, top);
        sq_qrels_view v = {s->qrel_doc + s->qrel_off[q], s->qrel_grade + s->qrel_off[q],
                           s->qrel_off[q + 1] - s->qrel_off[q]};
        sum += sq_ndcg_at_k(top, nt, &v, 10);
        for (int64_t k = 0; k < nt; k++, p++) {
            r->a[p] = s->query_text[q];
            r->b[p] = s->doc_text[top[k]];
            r->pair_query[p] = q;
            r->pair_doc[p] = top[k];
        }
    }
    r->n_pairs = p;
    r->n_queries = nq;
    r->task_retriever = sum / (double)nq;
    rc = 0;
out:
    sq_embed_result_free(&res);
    sq_embed_model_close(&m);
    free(sc);
    free(top);
    r->retriever_s = sq_eval_now() - t0;
    return rc;
}

/* Mean nDCG@10 of each query's candidates ordered by scores. */
static double rerank_ndcg(const sq_eval_input *in, const sq_eval_rerank *r, const double *scores,
                          sq_err *err)
{
    const sq_beir *s = &in->beir;
    int64_t *order = malloc((size_t)r->n_pairs * sizeof *order);
    int64_t *docs = malloc((size_t)r->n_pairs * sizeof *docs);
    if (!order || !docs) {
        free(order), free(docs);
        sq_err_set(err, "out of memory");
        return NAN;
    }
    double sum = 0;
    for (int64_t p0 = 0; p0 < r->n_pairs;) {
        int64_t q = r->pair_query[p0], p1 = p0;
        while (p1 < r->n_pairs && r->pair_query[p1] == q)
            p1++;
        sq_rank_scores(scores + p0, p1 - p0, order); /* NaN last */
        for (int64_t k = 0; k < p1 - p0; k++) {
            docs[k] = r->pair_doc[p0 + order[k]];
        }
        sq_qrels_view v = {s->qrel_doc + s->qrel_off[q], s->qrel_grade + s->qrel_off[q],
                           s->qrel_off[q + 1] - s->qrel_off[q]};
        sum += sq_ndcg_at_k(docs, p1 - p0, &v, 10);
        p0 = p1;
    }
    free(order);
    free(docs);
    return sum / (double)r->n_queries;
}

static void pair_differences(sq_eval_rerank *r)
{
    const int64_t n = r->n_pairs;
    double sum = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(r->model[i] - r->reference[i]);
        sum += d;
        if (d > mx || d != d)
            mx = d;
    }
    r->max_abs = mx;
    r->mean_abs = sum / (double)n;
    r->score_spearman = sq_spearman(r->model, r->reference, n);
    double *rm = malloc((size_t)n * sizeof *rm), *rr = malloc((size_t)n * sizeof *rr),
           *shift = malloc((size_t)n * sizeof *shift);
    int64_t *ord = malloc((size_t)n * sizeof *ord);
    if (rm && rr && shift && ord) {
        sq_average_ranks(r->model, n, rm);
        sq_average_ranks(r->reference, n, rr);
        for (int64_t i = 0; i < n; i++)
            shift[i] = fabs(rm[i] - rr[i]);
        sq_rank_scores(shift, n, ord);
        r->n_worst = n < SQ_RERANK_WORST ? (int)n : SQ_RERANK_WORST;
        memcpy(r->worst, ord, (size_t)r->n_worst * sizeof *ord);
    }
    free(rm), free(rr), free(shift), free(ord);
}

int sq_eval_rerank_run(const sq_eval_rerank_opts *o, const sq_eval_input *in, sq_eval_rerank *r,
                       sq_err *err)
{
    memset(r, 0, sizeof *r);
    if (in->task == SQ_TASK_STSB) {
        r->n_pairs = in->stsb.n;
        r->a = malloc((size_t)r->n_pairs * sizeof *r->a);
        r->b = malloc((size_t)r->n_pairs * sizeof *r->b);
        if (!r->a || !r->b)
            return sq_err_set(err, "out of memory");
        for (int64_t i = 0; i < r->n_pairs; i++)
            r->a[i] = in->stsb.s1[i], r->b[i] = in->stsb.s2[i];
        r->task_metric = "spearman";
        r->task_retriever = NAN;
    } else if (in->task == SQ_TASK_SCIFACT) {
        if (!o->retriever)
            return sq_err_set(err, "reranking a BEIR set needs --retriever BIENCODER (the model "
                                   "whose top candidates are reranked)");
        if (retrieve(o, in, r, err) != 0)
            return -1;
        r->task_metric = "ndcg10";
    } else {
        return sq_err_set(err, "scoring pairs needs an STS-B .tsv (sentence pairs) or a BEIR "
                               "directory (with --retriever)");
    }
    if (r->n_pairs < 1)
        return sq_err_set(err, "no pairs to score");
    r->model = malloc((size_t)r->n_pairs * sizeof *r->model);
    r->reference = malloc((size_t)r->n_pairs * sizeof *r->reference);
    if (!r->model || !r->reference)
        return sq_err_set(err, "out of memory");
    if (score_with(o->model, "model", o, r, r->model, &r->cross_model, &r->model_s, err) != 0 ||
        score_with(o->reference, "reference", o, r, r->reference, &r->cross_reference,
                   &r->reference_s, err) != 0)
        return -1;
    pair_differences(r);
    if (in->task == SQ_TASK_STSB) {
        r->task_model = sq_spearman(r->model, in->stsb.score, r->n_pairs);
        r->task_reference = sq_spearman(r->reference, in->stsb.score, r->n_pairs);
    } else {
        r->task_model = rerank_ndcg(in, r, r->model, err);
        r->task_reference = rerank_ndcg(in, r, r->reference, err);
        if (isnan(r->task_model) || isnan(r->task_reference))
            return -1;
    }
    return 0;
}

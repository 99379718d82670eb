#include "eval_report.h"

#include <math.h>

#include "fileio.h"

const char *sq_eval_model_kind(const sq_eval_model *m)
{
    return m->is_sqm ? "sqm" : sq_eval_is_npy_path(m->path) ? "embeddings" : "checkpoint";
}

/* A JSON number, or null when not finite (JSON has no NaN). */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *model_json(const sq_eval_model *m)
{
    return json_pack("{s:s, s:s, s:i, s:s, s:b, s:o}", "path", m->path, "kind", sq_eval_model_kind(m), "dim",
                     m->res.dim, "pooling", m->pooling,
                     "normalize", m->normalize, "seconds", jnum(m->seconds));
}

static json_t *counts_json(const sq_eval_input *in)
{
    json_t *c = json_pack("{s:I}", "texts", (json_int_t)in->n);
    switch (in->task) {
    case SQ_TASK_STSB: json_object_set_new(c, "pairs", json_integer(in->stsb.n)); break;
    case SQ_TASK_SST2: json_object_set_new(c, "sentences", json_integer(in->sst2.n)); break;
    case SQ_TASK_SCIFACT:
        json_object_set_new(c, "queries", json_integer(in->beir.n_queries));
        json_object_set_new(c, "documents", json_integer(in->beir.n_docs));
        break;
    default: break;
    }
    return c;
}

static json_t *gates_json(const sq_eval_gate *gr, int ng)
{
    json_t *gates = json_array();
    for (int i = 0; i < ng; i++) {
        const sq_gate_info *gi = sq_gate_get(gr[i].id);
        json_t *g = json_pack("{s:s, s:s, s:o, s:o, s:b}", "name", gi->name, "op",
                              gi->is_max ? "<=" : ">=", "threshold", jnum(gr[i].threshold),
                              "measured", jnum(gr[i].measured), "pass", gr[i].pass);
        if (!gr[i].measurable)
            json_object_set_new(g, "error", json_string(gr[i].why));
        json_array_append_new(gates, g);
    }
    return gates;
}

json_t *sq_eval_report_json(const sq_eval_report_info *info, const sq_eval_input *in,
                            const sq_eval_model *m, const sq_eval_model *ref,
                            const sq_eval_metrics *mt, const sq_eval_gate *gr, int ng, bool pass)
{
    const sq_cos_stats *c = &mt->cos;
    json_t *worst = json_array();
    for (int k = 0; k < c->n_worst; k++)
        json_array_append_new(worst, json_pack("{s:I, s:o, s:s%}", "index", (json_int_t)c->worst[k],
                                               "cosine", jnum(c->worst_cos[k]), "text",
                                               in->text[c->worst[k]], in->len[c->worst[k]]));
    json_t *metrics = json_pack(
        "{s:{s:o, s:o, s:o, s:o, s:I, s:{s:I, s:I, s:I}, s:o, s:{s:o, s:o, s:I}}, s:{s:i, s:o}}",
        "cosine", "mean", jnum(c->mean), "min", jnum(c->min), "p01", jnum(c->p01), "p001",
        jnum(c->p001), "argmin", (json_int_t)c->argmin, "below", "0.99",
        (json_int_t)c->below_099, "0.98", (json_int_t)c->below_098, "0.95",
        (json_int_t)c->below_095, "worst", worst, "centred", "mean", jnum(c->centred_mean),
        "min", jnum(c->centred_min), "argmin", (json_int_t)c->centred_argmin, "topk_overlap",
        "k", mt->topk_k, "value", jnum(mt->topk));
    if (m->clip) {
        json_t *cl = json_array();
        for (int i = 0; i < m->n_clip; i++)
            if (m->clip[i].name[0])
                json_array_append_new(
                    cl, json_pack("{s:s, s:s, s:I, s:I, s:o, s:I, s:I}", "linear",
                                  m->clip[i].name, "guard", m->clip[i].guard ? "row" : "clip",
                                  "values", (json_int_t)m->clip[i].values, "beyond",
                                  (json_int_t)m->clip[i].clipped, "fraction",
                                  jnum(m->clip[i].values ? (double)m->clip[i].clipped /
                                                               (double)m->clip[i].values
                                                         : NAN),
                                  "rows", (json_int_t)m->clip[i].rows, "rows_beyond",
                                  (json_int_t)m->clip[i].rows_beyond));
        json_object_set_new(metrics, "clip_exceed", cl);
    }
    if (mt->n_task) {
        json_t *t = json_object();
        for (int i = 0; i < mt->n_task; i++) {
            json_t *m = json_pack("{s:o, s:o, s:o}", "model", jnum(mt->task[i].model),
                                  "reference", jnum(mt->task[i].reference), "drop",
                                  jnum(mt->task[i].reference - mt->task[i].model));
            if (m && mt->task[i].drop_se > 0)
                json_object_set_new(m, "drop_se", jnum(mt->task[i].drop_se));
            json_object_set_new(t, mt->task[i].name, m);
        }
        json_object_set_new(metrics, sq_eval_task_name(in->task), t);
    }
    json_t *gates = gates_json(gr, ng);
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:I, s:o, s:o, s:o, s:b, "
                     "s:{s:o, s:o, s:o, s:o, s:o}}",
                     "command", "embed-run", "input", info->input, "task",
                     sq_eval_task_name(in->task), "model", model_json(m), "reference",
                     model_json(ref), "isa", info->isa, "threads", info->threads,
                     "limit", (json_int_t)info->limit, "counts", counts_json(in), "metrics", metrics,
                     "gates", gates, "pass", pass, "seconds", "input", jnum(info->input_s), "model",
                     jnum(m->seconds), "reference", jnum(ref->seconds), "metrics",
                     jnum(mt->seconds), "total", jnum(info->total_s));
}

int sq_eval_report_write(const char *path, json_t *r, sq_err *err)
{
    if (!r)
        return sq_err_set(err, "%s: could not build the report", path);
    sq_atomic_file af;
    if (sq_atomic_open(&af, path, err) != 0)
        return -1;
    if (json_dumpf(r, af.fp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', af.fp) == EOF) {
        sq_err_write_failed(err, path);
        sq_atomic_abort(&af);
        return -1;
    }
    return sq_atomic_commit(&af, err);
}

json_t *sq_eval_rerank_report_json(const sq_eval_report_info *info, const sq_eval_input *in,
                                   const sq_eval_rerank_opts *o, const sq_eval_rerank *r,
                                   const sq_eval_gate *gr, int ng, bool pass)
{
    json_t *worst = json_array();
    for (int k = 0; k < r->n_worst; k++) {
        int64_t i = r->worst[k];
        json_array_append_new(worst, json_pack("{s:I, s:o, s:o, s:s, s:s}", "pair", (json_int_t)i,
                                               "model", jnum(r->model[i]), "reference",
                                               jnum(r->reference[i]), "a", r->a[i], "b",
                                               r->b[i]));
    }
    json_t *task = json_pack("{s:o, s:o, s:o}", "model", jnum(r->task_model), "reference",
                             jnum(r->task_reference), "drop",
                             jnum(r->task_reference - r->task_model));
    if (!isnan(r->task_retriever))
        json_object_set_new(task, "retriever", jnum(r->task_retriever));
    json_t *metrics = json_pack("{s:o, s:o, s:o, s:o, s:{s:o}}", "score_spearman",
                                jnum(r->score_spearman), "max_abs_diff", jnum(r->max_abs),
                                "mean_abs_diff", jnum(r->mean_abs), "worst_pairs", worst,
                                sq_eval_task_name(in->task), r->task_metric, task);
    return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}, s:s?, s:i, s:s, s:i, "
                     "s:I, s:I, s:I, s:o, s:o, s:b, s:{s:o, s:o, s:o, s:o}}",
                     "command", "embed-run", "mode", "pairs", "input", info->input, "task",
                     sq_eval_task_name(in->task), "model", "path", o->model, "scores",
                     r->cross_model ? "cross-encoder" : "cosine", "reference", "path",
                     o->reference, "scores", r->cross_reference ? "cross-encoder" : "cosine",
                     "retriever", o->retriever, "candidates", o->candidates, "isa", info->isa,
                     "threads", info->threads, "limit", (json_int_t)info->limit, "pairs",
                     (json_int_t)r->n_pairs, "queries", (json_int_t)r->n_queries, "metrics",
                     metrics, "gates", gates_json(gr, ng), "pass", pass, "seconds", "retriever",
                     jnum(r->retriever_s), "model", jnum(r->model_s), "reference",
                     jnum(r->reference_s), "total", jnum(info->total_s));
}

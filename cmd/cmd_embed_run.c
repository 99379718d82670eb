/* squint embed-run: embed inputs with a model (normally a packed .sqm) and,
 * with --reference, measure how far it is from the reference model: cosine
 * per text, top-k neighbour overlap, and the task metric of a labelled set
 * (STS-B Spearman, SciFact nDCG@10 / recall@100, SST-2 probe accuracy), with
 * accuracy gates from --gate and/or a recipe. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cpu_features.h"
#include "embed_output.h"
#include "fileio.h"
#include "npy.h"
#include "embedder.h"
#include "eval_data.h"
#include "eval_metrics.h"
#include "fileio.h"
#include "linear.h"
#include "recipe.h"
#include "text_input.h"
#include "threads.h"

#define CMD "embed-run"
#define SST2_FOLDS 5

static const char *const help =
    "usage: squint embed-run MODEL --input FILE [options]\n"
    "\n"
    "Embed the inputs with MODEL (a packed .sqm, or a checkpoint) and, with --reference,\n"
    "measure it against the reference model (normally the fp32 checkpoint it came from).\n"
    "\n"
    "options:\n"
    "  --input FILE|DIR     texts (one per line, or JSONL with --field), or a labelled set:\n"
    "                       STS-B .tsv, SST-2 .tsv, or a BEIR directory (corpus.jsonl, queries.jsonl,\n"
    "                       qrels/test.tsv)\n"
    "  --field PATH         JSONL field holding the text (plain task only)\n"
    "  --output FILE        MODEL's embeddings: .jsonl, .npy or .f32 (without --reference the\n"
    "                       default is JSONL on stdout)\n"
    "  --reference MODEL    the model to compare with: a checkpoint directory or a .sqm, or a\n"
    "                       .npy of its embeddings of exactly these inputs (float32 [n, dim],\n"
    "                       e.g. an earlier run's --output): the reference is then not re-run\n"
    "  --task T             auto (default), plain, stsb, scifact or sst2\n"
    "  --report FILE        write every figure as JSON\n"
    "  --gate LIST          name=value[,name=value...]: cos_mean, cos_min, centred_cos_mean,\n"
    "                       topk_overlap (minimums),\n"
    "                       stsb_spearman_drop, ndcg10_drop (maximums), topk_k; repeatable,\n"
    "                       overrides the recipe's gates\n"
    "  --recipe FILE        take the gates from this recipe's gates: section\n"
    "  --topk K             k of the top-k overlap (default: the recipe's topk_k, else 10)\n"
    "  --limit N            only the first N texts / pairs / sentences; scifact: a corpus of N\n"
    "                       documents holding every relevant document of the queries kept\n"
    "  --batch N            sequences per forward pass (default 32)\n"
    "  --max-seq N          truncate to N tokens, special tokens included (default: model limit)\n"
    "  --threads N          worker threads (default: all CPUs)\n"
    "  --quiet              no progress line\n"
    "\n"
    "Metrics (MODEL vs reference): cosine of the two embeddings of each text (mean, min, 0.1st\n"
    "and 1st percentile, counts below 0.99 / 0.98 / 0.95, the 10 worst texts); the centred\n"
    "cosine (the reference's mean embedding over the inputs removed from both: what tells\n"
    "inputs apart); for a .sqm, per linear the input values and rows beyond its calibrated\n"
    "range; top-k overlap (for each text its k most similar other inputs under each model,\n"
    "mean shared fraction); stsb: Spearman of cosine(s1, s2) vs the gold score; scifact: nDCG@10\n"
    "and recall@100 of cosine ranking; sst2: 5-fold accuracy of a logistic-regression probe.\n"
    "Drops are reference minus MODEL. Exit: 0 all gates pass, 1 a gate failed (named), 2 bad input.\n"
    "\n"
    "example:\n"
    "  squint embed-run bge-small.sqm --reference bge-small/ --input texts.txt --gate cos_mean=0.99\n";

typedef struct run_args {
    const char *model, *reference, *input, *field, *output, *report, *recipe;
    sq_eval_task task;
    long batch, max_seq, threads, topk, limit;
    bool quiet;
} run_args;

/* The input, flattened into one list of texts, plus the task's labels. */
typedef struct run_input {
    sq_eval_task task;
    int64_t n;
    const char **text;
    size_t *len;
    sq_texts plain;
    sq_stsb stsb;     /* texts: s1[0..n), then s2[0..n) */
    sq_sst2 sst2;
    sq_beir beir;     /* texts: queries, then documents */
} run_input;

/* One model's embeddings of the input and how they were made. */
/* Per quantized linear of a .sqm: input values seen in this run and how
 * many the quantize step clipped (beyond the calibrated range). */
typedef struct clip_stat {
    char name[48]; /* "layer.L.kind"; "" for f32 or absent linears */
    int64_t values, clipped; /* input values, those beyond the static range */
    int64_t rows, rows_beyond; /* input rows, those holding such a value */
    bool guard;                /* the linear guards those rows (else clips) */
} clip_stat;

typedef struct model_run {
    const char *path;
    bool is_sqm;
    sq_embed_result res;
    double seconds;
    const char *pooling;
    bool normalize;
    clip_stat *clip; /* [layers * SQ_LIN_KINDS] for a .sqm, else NULL */
    int n_clip;
} model_run;

typedef struct task_metric {
    const char *name; /* "spearman", "ndcg10", "recall100", "probe_accuracy" */
    double model, reference;
} task_metric;

typedef struct run_metrics {
    sq_cos_stats cos;
    double topk;
    int topk_k;
    task_metric task[2];
    int n_task;
    double seconds;
} run_metrics;

/* ---- input ---- */

static void input_free(run_input *in)
{
    free(in->text);
    free(in->len);
    sq_texts_free(&in->plain);
    sq_stsb_free(&in->stsb);
    sq_sst2_free(&in->sst2);
    sq_beir_free(&in->beir);
}

static int flatten(run_input *in, int64_t n, char **a, int64_t na, char **b)
{
    in->n = n;
    in->text = malloc((size_t)(n ? n : 1) * sizeof *in->text);
    in->len = malloc((size_t)(n ? n : 1) * sizeof *in->len);
    if (!in->text || !in->len)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        in->text[i] = i < na ? a[i] : b[i - na];
        in->len[i] = strlen(in->text[i]);
    }
    return 0;
}

static int input_load(const run_args *a, run_input *in, sq_err *err)
{
    memset(in, 0, sizeof *in);
    in->task = a->task;
    if (in->task == SQ_TASK_AUTO && sq_eval_task_detect(a->input, &in->task, err) != 0)
        return -1;
    int rc = 0;
    switch (in->task) {
    case SQ_TASK_STSB:
        if (sq_stsb_read(a->input, a->limit, &in->stsb, err) != 0)
            return -1;
        rc = flatten(in, 2 * in->stsb.n, in->stsb.s1, in->stsb.n, in->stsb.s2);
        break;
    case SQ_TASK_SST2:
        if (sq_sst2_read(a->input, a->limit, &in->sst2, err) != 0)
            return -1;
        rc = flatten(in, in->sst2.n, in->sst2.text, in->sst2.n, NULL);
        break;
    case SQ_TASK_SCIFACT:
        if (sq_beir_read(a->input, "test", a->limit, &in->beir, err) != 0)
            return -1;
        rc = flatten(in, in->beir.n_queries + in->beir.n_docs, in->beir.query_text,
                     in->beir.n_queries, in->beir.doc_text);
        break;
    default:
        if (sq_texts_read(a->input, a->field, &in->plain, err) != 0)
            return -1;
        if (in->plain.n == 0)
            return sq_err_set(err, "%s: no texts", a->input);
        rc = flatten(in, a->limit > 0 && a->limit < in->plain.n ? a->limit : in->plain.n,
                     in->plain.text, in->plain.n, NULL);
        break;
    }
    return rc == 0 ? 0 : sq_err_set(err, "out of memory");
}

/* ---- embedding ---- */

typedef struct clip_observer {
    const sq_encoder *enc;
    clip_stat *st;
} clip_observer;

static void count_clips(void *ctx, int layer, sq_linear_kind kind, const float *x, int rows,
                        int cols)
{
    clip_observer *o = ctx;
    const sq_linear *l = &o->enc->layers[layer].lin[kind];
    if (l->qtype == SQ_QT_F32)
        return;
    clip_stat *s = &o->st[layer * SQ_LIN_KINDS + kind];
    int64_t rb;
    s->values += (int64_t)rows * cols;
    s->clipped += sq_linear_count_clipped(l, x, rows, &rb);
    s->rows += rows;
    s->rows_beyond += rb;
    s->guard = l->guard;
}

static int embed_with(const char *path, const char *label, const run_args *a, const run_input *in,
                      model_run *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    double t0 = cli_now();
    sq_embed_model m;
    if (sq_embed_model_open(path, &m, err) != 0)
        return -1;
    int rc = -1;
    if (a->max_seq > m.enc.cfg.max_pos) {
        sq_err_set(err, "%s: --max-seq %ld exceeds the model's %d positions", path, a->max_seq,
                   m.enc.cfg.max_pos);
        goto done;
    }
    cli_progress prog;
    cli_progress_init(&prog, label);
    if (a->quiet)
        prog.enabled = false;
    sq_embed_opts o = {
        .batch = (int)a->batch,
        .max_seq = a->max_seq ? (int)a->max_seq : m.max_seq,
        .pooling = m.pool.pooling,
        .normalize = m.pool.normalize,
        .progress = cli_progress_update,
        .progress_ctx = &prog,
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
    cli_progress_finish(&prog);
    out->is_sqm = m.is_sqm;
    out->pooling = m.pool.pooling == SQ_POOL_MEAN ? "mean" : "cls";
    out->normalize = m.pool.normalize;
done:
    sq_embed_model_close(&m);
    out->seconds = cli_now() - t0;
    if (rc != 0)
        sq_err_prefix(err, "%s", path);
    return rc;
}

/* A reference given as precomputed embeddings (.npy) of these inputs. */
static bool is_npy_path(const char *p)
{
    size_t n = strlen(p);
    return n > 4 && strcmp(p + n - 4, ".npy") == 0 && !sq_dir_exists(p);
}

static int reference_from_npy(const char *path, const run_input *in, model_run *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    double t0 = cli_now();
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
    out->seconds = cli_now() - t0;
    return 0;
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

static void retrieval(const sq_embed_result *r, const sq_beir *b, double *ndcg, double *recall)
{
    const float *docs = r->emb + (size_t)b->n_queries * r->dim;
    sq_retrieval_eval(r->emb, b->n_queries, docs, b->n_docs, r->dim, b->qrel_off, b->qrel_doc,
                      b->qrel_grade, ndcg, recall);
}

static void measure(const run_input *in, const model_run *m, const model_run *ref, int k,
                    run_metrics *out)
{
    double t0 = cli_now();
    const sq_embed_result *a = &m->res, *b = &ref->res;
    sq_cos_pair_stats(a->emb, b->emb, a->n, a->dim, &out->cos);
    out->topk = sq_topk_overlap(a->emb, b->emb, a->n, a->dim, k, &out->topk_k);
    switch (in->task) {
    case SQ_TASK_STSB:
        out->task[0] = (task_metric){"spearman", stsb_spearman(a, &in->stsb),
                                     stsb_spearman(b, &in->stsb)};
        out->n_task = 1;
        break;
    case SQ_TASK_SCIFACT:
        out->task[0].name = "ndcg10";
        out->task[1].name = "recall100";
        retrieval(a, &in->beir, &out->task[0].model, &out->task[1].model);
        retrieval(b, &in->beir, &out->task[0].reference, &out->task[1].reference);
        out->n_task = 2;
        break;
    case SQ_TASK_SST2:
        out->task[0] = (task_metric){
            "probe_accuracy",
            sq_logreg_cv_accuracy(a->emb, in->sst2.label, a->n, a->dim, SST2_FOLDS, NULL),
            sq_logreg_cv_accuracy(b->emb, in->sst2.label, b->n, b->dim, SST2_FOLDS, NULL)};
        out->n_task = 1;
        break;
    default:
        break;
    }
    out->seconds = cli_now() - t0;
}

/* ---- gates ---- */

typedef struct gate_result {
    sq_gate_id id;
    double threshold, measured;
    bool measurable, pass;
    const char *why; /* when not measurable */
} gate_result;

/* The measured value of a gate on this run; false with *why when the input
 * cannot give it. */
static bool gate_value(sq_gate_id id, const run_input *in, const run_metrics *mt, double *v,
                       const char **why)
{
    *why = NULL;
    switch (id) {
    case SQ_GATE_COS_MEAN: *v = mt->cos.mean; return true;
    case SQ_GATE_COS_MIN: *v = mt->cos.min; return true;
    case SQ_GATE_CENTRED_COS_MEAN:
        *v = mt->cos.centred_mean;
        *why = isnan(*v) ? "needs at least 2 texts" : NULL;
        return !isnan(*v);
    case SQ_GATE_TOPK_OVERLAP:
        *v = mt->topk;
        *why = isnan(*v) ? "needs at least 2 texts" : NULL;
        return !isnan(*v);
    case SQ_GATE_STSB_SPEARMAN_DROP:
        if (in->task != SQ_TASK_STSB) {
            *why = "needs an STS-B input (--task stsb)";
            return false;
        }
        *v = mt->task[0].reference - mt->task[0].model;
        *why = isnan(*v) ? "Spearman undefined (constant scores or similarities)" : NULL;
        return !isnan(*v);
    case SQ_GATE_NDCG10_DROP:
        if (in->task != SQ_TASK_SCIFACT) {
            *why = "needs a BEIR retrieval input (--task scifact)";
            return false;
        }
        *v = mt->task[0].reference - mt->task[0].model;
        return !isnan(*v);
    default: *why = "unknown gate"; return false;
    }
}

static int eval_gates(const sq_recipe_gates *g, const run_input *in, const run_metrics *mt,
                      gate_result *out)
{
    int n = 0;
    for (int i = 0; i < SQ_GATE_COUNT; i++) {
        if (!g->set[i])
            continue;
        gate_result *r = &out[n++];
        r->id = (sq_gate_id)i;
        r->threshold = g->threshold[i];
        r->measured = NAN;
        r->measurable = gate_value(r->id, in, mt, &r->measured, &r->why);
        r->pass = r->measurable && sq_gate_pass(r->id, r->threshold, r->measured);
    }
    return n;
}

/* ---- printing and the report ---- */

static const char *task_label(const char *name)
{
    if (strcmp(name, "spearman") == 0)
        return "Spearman";
    if (strcmp(name, "ndcg10") == 0)
        return "nDCG@10";
    if (strcmp(name, "recall100") == 0)
        return "recall@100";
    return "probe accuracy";
}

/* The three linears whose inputs went beyond their calibrated clip most
 * often in this run (all of them in the report). */
static void print_clip_summary(FILE *fp, const model_run *m)
{
    if (!m->clip)
        return;
    int best[3] = {-1, -1, -1};
    for (int i = 0; i < m->n_clip; i++) {
        const clip_stat *s = &m->clip[i];
        if (!s->name[0] || !s->values || !s->clipped)
            continue;
        double r = (double)s->clipped / (double)s->values;
        for (int k = 0; k < 3; k++) {
            const clip_stat *b = best[k] < 0 ? NULL : &m->clip[best[k]];
            double rk = b ? (double)b->clipped / (double)b->values : -1;
            if (r > rk) {
                for (int j = 2; j > k; j--)
                    best[j] = best[j - 1];
                best[k] = i;
                break;
            }
        }
    }
    if (best[0] < 0) {
        fprintf(fp, "beyond     no input value beyond any linear's calibrated range\n");
        return;
    }
    fprintf(fp, "beyond    ");
    for (int k = 0; k < 3 && best[k] >= 0; k++) {
        const clip_stat *s = &m->clip[best[k]];
        fprintf(fp, "%s %s %.3g (%lld values, %lld rows)", k ? "," : "", s->name,
                (double)s->clipped / (double)s->values, (long long)s->clipped,
                (long long)s->rows_beyond);
    }
    fprintf(fp, "\n           (input values beyond the calibrated range: %s)\n",
            m->clip[best[0]].guard ? "their rows were quantized with their own step (guard row)"
                                   : "clipped (guard clip)");
}

static void print_summary(FILE *fp, const run_input *in, const model_run *m, const model_run *ref,
                          const run_metrics *mt, const gate_result *gr, int ng)
{
    fprintf(fp, "model      %s (%s, %.2fs)\n", m->path, m->is_sqm ? "sqm" : "checkpoint",
            m->seconds);
    fprintf(fp, "reference  %s (%s, %.2fs)\n", ref->path,
            ref->is_sqm ? "sqm" : is_npy_path(ref->path) ? "embeddings" : "checkpoint",
            ref->seconds);
    fprintf(fp, "task       %s, %lld texts, dim %d\n", sq_eval_task_name(in->task),
            (long long)in->n, m->res.dim);
    const sq_cos_stats *c = &mt->cos;
    fprintf(fp, "cosine     mean %.6f  min %.6f (text %lld)  p0.1 %.6f  p1 %.6f\n", c->mean,
            c->min, (long long)c->argmin, c->p001, c->p01);
    fprintf(fp, "           below 0.99: %lld  below 0.98: %lld  below 0.95: %lld  (of %lld)\n",
            (long long)c->below_099, (long long)c->below_098, (long long)c->below_095,
            (long long)in->n);
    fprintf(fp, "centred    mean %.6f  min %.6f (text %lld)  (reference mean embedding removed)\n",
            c->centred_mean, c->centred_min, (long long)c->centred_argmin);
    for (int k = 0; k < c->n_worst && k < 3; k++) {
        size_t len = in->len[c->worst[k]]; /* texts shown up to 100 bytes */
        fprintf(fp, "worst %d    %.6f  text %lld: %.*s%s\n", k + 1, c->worst_cos[k],
                (long long)c->worst[k], (int)(len > 100 ? 100 : len), in->text[c->worst[k]],
                len > 100 ? "..." : "");
    }
    print_clip_summary(fp, m);
    fprintf(fp, "top-%-2d     overlap %.4f\n", mt->topk_k, mt->topk);
    for (int i = 0; i < mt->n_task; i++) {
        const task_metric *t = &mt->task[i];
        fprintf(fp, "%-10s model %.4f  reference %.4f  drop %+.4f\n", task_label(t->name),
                t->model, t->reference, t->reference - t->model);
    }
    for (int i = 0; i < ng; i++) {
        const gate_result *r = &gr[i];
        const sq_gate_info *gi = sq_gate_get(r->id);
        if (!r->measurable)
            fprintf(fp, "gate %-20s FAIL  cannot be measured: %s\n", gi->name, r->why);
        else
            fprintf(fp, "gate %-20s %s  %.6f %s %g\n", gi->name, r->pass ? "PASS" : "FAIL",
                    r->measured, gi->is_max ? "<=" : ">=", r->threshold);
    }
}

/* A JSON number, or null when not finite (JSON has no NaN). */
static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *model_json(const model_run *m)
{
    const char *kind = m->is_sqm ? "sqm" : is_npy_path(m->path) ? "embeddings" : "checkpoint";
    return json_pack("{s:s, s:s, s:i, s:s, s:b, s:o}", "path", m->path, "kind", kind, "dim",
                     m->res.dim, "pooling", m->pooling,
                     "normalize", m->normalize, "seconds", jnum(m->seconds));
}

static json_t *counts_json(const run_input *in)
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

static json_t *report_json(const run_args *a, const run_input *in, const model_run *m,
                           const model_run *ref, const run_metrics *mt, const gate_result *gr,
                           int ng, bool pass, double total_s, double input_s)
{
    sq_isa isa = SQ_ISA_SCALAR;
    sq_linear_isa(&isa, NULL);
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
        for (int i = 0; i < mt->n_task; i++)
            json_object_set_new(t, mt->task[i].name,
                                json_pack("{s:o, s:o, s:o}", "model", jnum(mt->task[i].model),
                                          "reference", jnum(mt->task[i].reference), "drop",
                                          jnum(mt->task[i].reference - mt->task[i].model)));
        json_object_set_new(metrics, sq_eval_task_name(in->task), t);
    }
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
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:I, s:o, s:o, s:o, s:b, "
                     "s:{s:o, s:o, s:o, s:o, s:o}}",
                     "command", "embed-run", "input", a->input, "task",
                     sq_eval_task_name(in->task), "model", model_json(m), "reference",
                     model_json(ref), "isa", sq_isa_name(isa), "threads", sq_threads_count(),
                     "limit", (json_int_t)a->limit, "counts", counts_json(in), "metrics", metrics,
                     "gates", gates, "pass", pass, "seconds", "input", jnum(input_s), "model",
                     jnum(m->seconds), "reference", jnum(ref->seconds), "metrics",
                     jnum(mt->seconds), "total", jnum(total_s));
}

static int write_report(const char *path, json_t *r, sq_err *err)
{
    if (!r)
        return sq_err_set(err, "%s: could not build the report", path);
    sq_atomic_file af;
    if (sq_atomic_open(&af, path, err) != 0)
        return -1;
    if (json_dumpf(r, af.fp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', af.fp) == EOF) {
        sq_atomic_abort(&af);
        return sq_err_set(err, "%s: write failed", path);
    }
    return sq_atomic_commit(&af, err);
}

/* ---- arguments ---- */

static int parse_args(int argc, char **argv, run_args *a, sq_recipe *rec, sq_err *err)
{
    enum { O_FIELD = 256, O_REF, O_TASK, O_REPORT, O_GATE, O_RECIPE, O_TOPK, O_LIMIT, O_MAXSEQ,
           O_QUIET };
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},      {"output", required_argument, 0, 'o'},
        {"field", required_argument, 0, O_FIELD},  {"reference", required_argument, 0, O_REF},
        {"task", required_argument, 0, O_TASK},    {"report", required_argument, 0, O_REPORT},
        {"gate", required_argument, 0, O_GATE},    {"recipe", required_argument, 0, O_RECIPE},
        {"topk", required_argument, 0, O_TOPK},    {"limit", required_argument, 0, O_LIMIT},
        {"batch", required_argument, 0, 'b'},      {"max-seq", required_argument, 0, O_MAXSEQ},
        {"threads", required_argument, 0, 't'},    {"quiet", no_argument, 0, O_QUIET},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    *a = (run_args){.task = SQ_TASK_AUTO, .batch = 32};
    /* Gate specs are applied after the recipe is loaded so they override it. */
    char **gate_specs = calloc((size_t)argc, sizeof *gate_specs);
    int n_specs = 0, rc = -1;
    if (!gate_specs)
        return sq_err_set(err, "out of memory");
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "i:o:b:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': a->input = optarg; break;
        case 'o': a->output = optarg; break;
        case O_FIELD: a->field = optarg; break;
        case O_REF: a->reference = optarg; break;
        case O_REPORT: a->report = optarg; break;
        case O_RECIPE: a->recipe = optarg; break;
        case O_GATE: gate_specs[n_specs++] = optarg; break;
        case O_QUIET: a->quiet = true; break;
        case O_TASK:
            if (sq_eval_task_parse(optarg, &a->task) != 0) {
                sq_err_set(err, "--task must be auto, plain, stsb, scifact or sst2");
                goto done;
            }
            break;
        case 'b':
            if (!cli_parse_int(optarg, 1, 4096, &a->batch)) {
                sq_err_set(err, "--batch must be an integer in [1, 4096]");
                goto done;
            }
            break;
        case O_MAXSEQ:
            if (!cli_parse_int(optarg, 3, 65536, &a->max_seq)) {
                sq_err_set(err, "--max-seq must be an integer in [3, 65536]");
                goto done;
            }
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, 1024, &a->threads)) {
                sq_err_set(err, "--threads must be an integer in [1, 1024]");
                goto done;
            }
            break;
        case O_TOPK:
            if (!cli_parse_int(optarg, 1, 1000, &a->topk)) {
                sq_err_set(err, "--topk must be an integer in [1, 1000]");
                goto done;
            }
            break;
        case O_LIMIT:
            if (!cli_parse_int(optarg, 1, INT64_MAX / 4, &a->limit)) {
                sq_err_set(err, "--limit must be a positive integer");
                goto done;
            }
            break;
        case 'h': rc = 1; goto done;
        default: sq_err_set(err, "invalid option"); goto done;
        }
    }
    if (optind != argc - 1) {
        sq_err_set(err, "expected exactly one MODEL argument");
        goto done;
    }
    a->model = argv[optind];
    if (!a->input) {
        sq_err_set(err, "--input is required");
        goto done;
    }
    if (a->field && a->task != SQ_TASK_AUTO && a->task != SQ_TASK_PLAIN) {
        sq_err_set(err, "--field applies to plain text input only");
        goto done;
    }
    if (a->recipe ? sq_recipe_load_file(a->recipe, rec, err) : sq_recipe_default(rec))
        goto done;
    for (int i = 0; i < n_specs; i++) {
        /* Each --gate holds a comma-separated list. */
        char *list = strdup(gate_specs[i]), *save = NULL;
        if (!list) {
            sq_err_set(err, "out of memory");
            goto done;
        }
        int bad = 0;
        for (char *s = strtok_r(list, ",", &save); s && !bad; s = strtok_r(NULL, ",", &save))
            bad = sq_recipe_set_gate(rec, s, err) != 0;
        free(list);
        if (bad)
            goto done;
    }
    if (a->topk)
        rec->gates.topk_k = (int)a->topk;
    bool any_gate = false;
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        any_gate |= rec->gates.set[i];
    if (!a->reference && (any_gate || a->report)) {
        sq_err_set(err, "%s needs --reference (the metrics compare two models)",
                   any_gate ? "a gate" : "--report");
        goto done;
    }
    rc = 0;
done:
    free(gate_specs);
    return rc;
}

/* ---- the command ---- */

int cmd_embed_run(int argc, char **argv)
{
    double t_start = cli_now();
    sq_err err = {0};
    run_args a;
    sq_recipe rec;
    memset(&rec, 0, sizeof rec);
    int prc = parse_args(argc, argv, &a, &rec, &err);
    if (prc != 0) {
        sq_recipe_free(&rec);
        if (prc > 0) {
            fputs(help, stdout);
            return SQ_EXIT_OK;
        }
        return cli_usage_error(CMD, "%s", err.msg);
    }
    sq_threads_init((int)a.threads);

    run_input in;
    model_run m = {0}, ref = {0};
    json_t *report = NULL;
    int rc = SQ_EXIT_BADINPUT;
    if (input_load(&a, &in, &err) != 0)
        goto fail;
    double input_s = cli_now() - t_start;
    if (embed_with(a.model, CMD, &a, &in, &m, &err) != 0)
        goto fail;
    /* Without --reference stdout may carry the embeddings (as in `embed`). */
    if ((a.output || !a.reference) && write_embeddings(a.output ? a.output : "-", NULL, &m.res, &err) != 0)
        goto fail;
    if (!a.reference) {
        rc = SQ_EXIT_OK;
        goto done;
    }
    if ((is_npy_path(a.reference) ? reference_from_npy(a.reference, &in, &ref, &err)
                                  : embed_with(a.reference, "reference", &a, &in, &ref, &err)) != 0)
        goto fail;
    if (ref.res.dim != m.res.dim) {
        sq_err_set(&err, "%s gives %d-dimensional embeddings but %s gives %d", a.model, m.res.dim,
                   a.reference, ref.res.dim);
        goto fail;
    }
    run_metrics mt = {0};
    measure(&in, &m, &ref, rec.gates.topk_k, &mt);
    gate_result gr[SQ_GATE_COUNT];
    int ng = eval_gates(&rec.gates, &in, &mt, gr);
    bool pass = true;
    for (int i = 0; i < ng; i++)
        pass &= gr[i].pass;
    /* Keep stdout clean when it carries the embeddings. */
    FILE *txt = a.output && strcmp(a.output, "-") == 0 ? stderr : stdout;
    print_summary(txt, &in, &m, &ref, &mt, gr, ng);
    if (a.report) {
        report = report_json(&a, &in, &m, &ref, &mt, gr, ng, pass, cli_now() - t_start, input_s);
        if (write_report(a.report, report, &err) != 0)
            goto fail;
    }
    rc = SQ_EXIT_OK;
    if (!pass) {
        fprintf(stderr, "squint %s: gate failed:", CMD);
        for (int i = 0, first = 1; i < ng; i++)
            if (!gr[i].pass) {
                fprintf(stderr, "%s %s", first ? "" : ",", sq_gate_get(gr[i].id)->name);
                first = 0;
            }
        fputc('\n', stderr);
        rc = SQ_EXIT_FAIL;
    }
    goto done;
fail:
    rc = cli_fail(CMD, &err);
done:
    json_decref(report);
    sq_embed_result_free(&m.res);
    sq_embed_result_free(&ref.res);
    free(m.clip);
    free(ref.clip);
    input_free(&in);
    sq_recipe_free(&rec);
    return rc;
}

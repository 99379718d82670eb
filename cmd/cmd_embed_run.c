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
#include "embedder.h"
#include "cpu_features.h"
#include "embed_output.h"
#include "fileio.h"
#include "head.h"
#include "npy.h"
#include "eval_gates.h"
#include "eval_report.h"
#include "eval_rerank.h"
#include "linear.h"
#include "threads.h"

#define CMD "embed-run"

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
    "  --retriever MODEL    rerank instead: each BEIR query's top --candidates documents by this\n"
    "                       bi-encoder, reordered by MODEL's and the reference's pair scores\n"
    "  --candidates K       documents per query to rerank (default 100)\n"
    "  --report FILE        write every figure as JSON\n"
    "  --gate LIST          name=value[,name=value...]: cos_mean, cos_min, centred_cos_mean,\n"
    "                       topk_overlap (minimums),\n"
    "                       score_spearman (minimum; pair scores),\n"
    "                       stsb_spearman_drop, ndcg10_drop, max_accuracy_drop (maximums),\n"
    "                       topk_k; repeatable, overrides the recipe's gates\n"
    "  --head FILE          sst2: a classification head (`squint train-head`, JSON or\n"
    "                       safetensors) whose dev accuracy is measured on both models;\n"
    "                       default: the head stored in MODEL, if any. Gate:\n"
    "                       max_accuracy_drop (percentage points)\n"
    "  --recipe FILE        take the gates from this recipe's gates: section\n"
    "  --topk K             k of the top-k overlap (default: the recipe's topk_k, else 10)\n"
    "  --limit N            only the first N texts / pairs / sentences; scifact: a corpus of N\n"
    "                       documents holding every relevant document of the queries kept\n"
    "  --batch N            sequences per forward pass (default 32)\n"
    "  --max-seq N          truncate to N tokens, special tokens included (default: model limit)\n"
    "  --threads N          worker threads (default: $OMP_NUM_THREADS, else the CPUs this process\n"
    "                       may run on, at most its cgroup CPU quota)\n"
    "  --quiet              no progress line\n"
    "\n"
    "Metrics (MODEL vs reference): cosine of the two embeddings of each text (mean, min, 0.1st\n"
    "and 1st percentile, counts below 0.99 / 0.98 / 0.95, the 10 worst texts); the centred\n"
    "cosine (the reference's mean embedding over the inputs removed from both: what tells\n"
    "inputs apart); for a .sqm, per linear the input values and rows beyond its calibrated\n"
    "range; top-k overlap (for each text its k most similar other inputs under each model,\n"
    "mean shared fraction); stsb: Spearman of cosine(s1, s2) vs the gold score; scifact: nDCG@10\n"
    "and recall@100 of cosine ranking; sst2: 5-fold accuracy of a logistic-regression probe,\n"
    "and with a head its accuracy on both models (embedded normalized as the head was trained).\n"
    "Drops are reference minus MODEL. Exit: 0 all gates pass, 1 a gate failed (named), 2 bad input.\n"
    "\n"
    "Pair scores: when MODEL is a cross-encoder (BertForSequenceClassification), or with\n"
    "--retriever, embed-run scores pairs instead: the STS-B sentence pairs, or each BEIR\n"
    "query with its --candidates top documents from the retriever. A pair's score is the\n"
    "cross-encoder's (activated) logit or a bi-encoder's cosine. Metrics: Spearman of MODEL's\n"
    "scores vs the reference's over all pairs (gate score_spearman), |score difference|, the\n"
    "pairs whose rank moved most; stsb: Spearman vs the gold scores; BEIR: nDCG@10 of the\n"
    "reranked candidates (and of the retriever's own order).\n"
    "\n"
    "examples:\n"
    "  squint embed-run bge-small.sqm --reference bge-small/ --input texts.txt --gate cos_mean=0.99\n"
    "  squint embed-run reranker.sqm --reference reranker/ --input scifact/ --retriever bge.sqm \\\n"
    "      --gate score_spearman=0.99,ndcg10_drop=0.01\n";

typedef struct run_args {
    const char *model, *reference, *input, *field, *output, *report, *recipe, *retriever, *head;
    sq_eval_task task;
    long batch, max_seq, threads, topk, limit, candidates;
    bool quiet;
    bool cli_gate[SQ_GATE_COUNT]; /* set by --gate (not only by the recipe) */
} run_args;

/* ---- printing ---- */

static const char *task_label(const char *name)
{
    if (strcmp(name, "spearman") == 0)
        return "Spearman";
    if (strcmp(name, "ndcg10") == 0)
        return "nDCG@10";
    if (strcmp(name, "recall100") == 0)
        return "recall@100";
    if (strcmp(name, "head_accuracy") == 0)
        return "head acc";
    return "probe accuracy";
}

/* The three linears whose inputs went beyond their calibrated clip most
 * often in this run (all of them in the report). */
static void print_clip_summary(FILE *fp, const sq_eval_model *m)
{
    if (!m->clip)
        return;
    int best[3] = {-1, -1, -1};
    for (int i = 0; i < m->n_clip; i++) {
        const sq_eval_clip *s = &m->clip[i];
        if (!s->name[0] || !s->values || !s->clipped)
            continue;
        double r = (double)s->clipped / (double)s->values;
        for (int k = 0; k < 3; k++) {
            const sq_eval_clip *b = best[k] < 0 ? NULL : &m->clip[best[k]];
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
        const sq_eval_clip *s = &m->clip[best[k]];
        fprintf(fp, "%s %s %.3g (%lld values, %lld rows)", k ? "," : "", s->name,
                (double)s->clipped / (double)s->values, (long long)s->clipped,
                (long long)s->rows_beyond);
    }
    fprintf(fp, "\n           (input values beyond the calibrated range: %s)\n",
            m->clip[best[0]].guard ? "their rows were quantized with their own step (guard row)"
                                   : "clipped (guard clip)");
}

/* One line per gate: PASS / FAIL with the measurement, or why it could not
 * be measured. */
static void print_gates(FILE *fp, const sq_eval_gate *gr, int ng)
{
    for (int i = 0; i < ng; i++) {
        const sq_eval_gate *r = &gr[i];
        const sq_gate_info *gi = sq_gate_get(r->id);
        if (!r->measurable)
            fprintf(fp, "gate %-20s FAIL  cannot be measured: %s\n", gi->name, r->why);
        else
            fprintf(fp, "gate %-20s %s  %.6f %s %g\n", gi->name, r->pass ? "PASS" : "FAIL",
                    r->measured, gi->is_max ? "<=" : ">=", r->threshold);
    }
}

/* "squint embed-run: gate failed: a, b" on stderr. */
static void print_failed_gates(const sq_eval_gate *gr, int ng)
{
    fprintf(stderr, "squint %s: gate failed:", CMD);
    for (int i = 0, first = 1; i < ng; i++)
        if (!gr[i].pass) {
            fprintf(stderr, "%s %s", first ? "" : ",", sq_gate_get(gr[i].id)->name);
            first = 0;
        }
    fputc('\n', stderr);
}

static void print_summary(FILE *fp, const sq_eval_input *in, const sq_eval_model *m, const sq_eval_model *ref,
                          const sq_eval_metrics *mt, const sq_eval_gate *gr, int ng)
{
    fprintf(fp, "model      %s (%s, %.2fs)\n", m->path, m->is_sqm ? "sqm" : "checkpoint",
            m->seconds);
    fprintf(fp, "reference  %s (%s, %.2fs)\n", ref->path,
            sq_eval_model_kind(ref),
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
        const sq_eval_task_metric *t = &mt->task[i];
        if (strcmp(t->name, "head_accuracy") == 0)
            fprintf(fp, "%-10s model %.4f  reference %.4f  drop %+.2f points\n",
                    task_label(t->name), t->model, t->reference,
                    100.0 * (t->reference - t->model));
        else if (t->drop_se > 0)
            fprintf(fp, "%-10s model %.4f  reference %.4f  drop %+.4f (paired s.e. %.4f)\n",
                    task_label(t->name), t->model, t->reference, t->reference - t->model,
                    t->drop_se);
        else
            fprintf(fp, "%-10s model %.4f  reference %.4f  drop %+.4f\n", task_label(t->name),
                    t->model, t->reference, t->reference - t->model);
    }
    print_gates(fp, gr, ng);
}

/* Embed with a progress line on stderr (unless --quiet). */
static int embed_with(const char *path, const char *label, const run_args *a,
                      const sq_eval_input *in, const bool *normalize, sq_eval_model *out,
                      sq_err *err)
{
    cli_progress prog;
    cli_progress_init(&prog, label);
    if (a->quiet)
        prog.enabled = false;
    sq_eval_embed_opts o = {.batch = (int)a->batch, .max_seq = (int)a->max_seq,
                            .normalize = normalize,
                            .progress = cli_progress_update, .progress_ctx = &prog};
    int rc = sq_eval_embed(path, &o, in, out, err);
    cli_progress_finish(&prog);
    return rc;
}

/* ---- arguments ---- */

static int parse_args(int argc, char **argv, run_args *a, sq_recipe *rec, sq_err *err)
{
    enum { O_FIELD = 256, O_REF, O_TASK, O_REPORT, O_GATE, O_RECIPE, O_TOPK, O_LIMIT, O_MAXSEQ,
           O_QUIET, O_RETRIEVER, O_CANDIDATES, O_HEAD };
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},      {"output", required_argument, 0, 'o'},
        {"field", required_argument, 0, O_FIELD},  {"reference", required_argument, 0, O_REF},
        {"task", required_argument, 0, O_TASK},    {"report", required_argument, 0, O_REPORT},
        {"gate", required_argument, 0, O_GATE},    {"recipe", required_argument, 0, O_RECIPE},
        {"topk", required_argument, 0, O_TOPK},    {"limit", required_argument, 0, O_LIMIT},
        {"batch", required_argument, 0, 'b'},      {"max-seq", required_argument, 0, O_MAXSEQ},
        {"threads", required_argument, 0, 't'},    {"quiet", no_argument, 0, O_QUIET},
        {"retriever", required_argument, 0, O_RETRIEVER},
        {"candidates", required_argument, 0, O_CANDIDATES},
        {"head", required_argument, 0, O_HEAD},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    *a = (run_args){.task = SQ_TASK_AUTO, .batch = 32, .candidates = 100};
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
        case O_HEAD: a->head = optarg; break;
        case O_GATE: gate_specs[n_specs++] = optarg; break;
        case O_QUIET: a->quiet = true; break;
        case O_RETRIEVER: a->retriever = optarg; break;
        case O_CANDIDATES:
            if (!cli_parse_int(optarg, 1, 100000, &a->candidates)) {
                sq_err_set(err, "--candidates must be an integer in [1, 100000]");
                goto done;
            }
            break;
        case O_TASK:
            if (sq_eval_task_parse(optarg, &a->task) != 0) {
                sq_err_set(err, "--task must be auto, plain, stsb, scifact or sst2");
                goto done;
            }
            break;
        case 'b':
            if (!cli_parse_int(optarg, 1, SQ_BATCH_MAX, &a->batch)) {
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
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &a->threads)) {
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
        for (char *s = strtok_r(list, ",", &save); s && !bad; s = strtok_r(NULL, ",", &save)) {
            bad = sq_recipe_set_gate(rec, s, err) != 0;
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(s, "="), s);
            int id = sq_gate_lookup(name);
            if (!bad && id >= 0)
                a->cli_gate[id] = true;
        }
        free(list);
        if (bad)
            goto done;
    }
    if (a->topk)
        rec->gates.topk_k = (int)a->topk;
    bool any_gate = false;
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        any_gate |= rec->gates.set[i];
    if (!a->reference && (any_gate || a->report || a->head)) {
        sq_err_set(err, "%s needs --reference (the metrics compare two models)",
                   any_gate ? "a gate" : a->report ? "--report" : "--head");
        goto done;
    }
    rc = 0;
done:
    free(gate_specs);
    return rc;
}

/* ---- pair scoring (a cross-encoder, or --retriever reranking) ---- */

typedef struct stage_progress {
    cli_progress p;
    const char *stage;
    bool quiet, open;
} stage_progress;

static void stage_update(void *ctx, const char *stage, int64_t done, int64_t total)
{
    stage_progress *s = ctx;
    if (s->quiet)
        return;
    if (!s->open || strcmp(s->stage, stage) != 0) {
        if (s->open)
            cli_progress_finish(&s->p);
        cli_progress_init(&s->p, stage);
        s->stage = stage;
        s->open = true;
    }
    cli_progress_update(&s->p, done, total);
}

static void print_pairs(FILE *fp, const sq_eval_input *in, const sq_eval_rerank_opts *o,
                        const sq_eval_rerank *r, const sq_eval_gate *gr, int ng)
{
    fprintf(fp, "model      %s (%s, %.2fs)\n", o->model,
            r->cross_model ? "cross-encoder" : "bi-encoder cosine", r->model_s);
    fprintf(fp, "reference  %s (%s, %.2fs)\n", o->reference,
            r->cross_reference ? "cross-encoder" : "bi-encoder cosine", r->reference_s);
    if (o->retriever)
        fprintf(fp, "retriever  %s (top %d candidates per query, %.2fs)\n", o->retriever,
                o->candidates, r->retriever_s);
    fprintf(fp, "task       %s, %lld pairs", sq_eval_task_name(in->task), (long long)r->n_pairs);
    if (r->n_queries)
        fprintf(fp, " (%lld queries)", (long long)r->n_queries);
    fprintf(fp, "\nscores     Spearman(model, reference) %.6f  |diff| max %.4g mean %.4g\n",
            r->score_spearman, r->max_abs, r->mean_abs);
    for (int k = 0; k < r->n_worst && k < 3; k++) {
        int64_t i = r->worst[k];
        fprintf(fp, "worst %d    pair %lld: model %.5g reference %.5g: %.60s | %.60s\n", k + 1,
                (long long)i, r->model[i], r->reference[i], r->a[i], r->b[i]);
    }
    const char *label = task_label(r->task_metric);
    if (!isnan(r->task_retriever))
        fprintf(fp, "%-10s retriever order %.4f\n", label, r->task_retriever);
    fprintf(fp, "%-10s model %.4f  reference %.4f  drop %+.4f\n", label, r->task_model,
            r->task_reference, r->task_reference - r->task_model);
    print_gates(fp, gr, ng);
}

static int run_pairs(run_args *a, sq_recipe *rec, const sq_eval_input *in, double t_start)
{
    sq_err err = {0};
    if (!a->reference)
        return cli_usage_error(CMD, "scoring pairs needs --reference (the model to compare with)");
    if (a->output)
        return cli_usage_error(CMD, "--output writes embeddings; a pair scoring run has none");
    if (sq_eval_is_npy_path(a->reference))
        return cli_usage_error(CMD, "a pair scoring run needs a reference model, not embeddings");
    /* A recipe's embedding gates do not apply to pair scores; --gate ones are kept (and fail
     * as not measurable). */
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        if (rec->gates.set[i] && !a->cli_gate[i] && i != SQ_GATE_SCORE_SPEARMAN &&
            i != SQ_GATE_STSB_SPEARMAN_DROP && i != SQ_GATE_NDCG10_DROP) {
            fprintf(stderr, "squint %s: the recipe's gate %s does not apply to pair scores: "
                            "skipped\n", CMD, sq_gate_get((sq_gate_id)i)->name);
            rec->gates.set[i] = false;
        }
    stage_progress sp = {.quiet = a->quiet};
    sq_eval_rerank_opts o = {.model = a->model, .reference = a->reference,
                             .retriever = a->retriever, .candidates = (int)a->candidates,
                             .batch = (int)a->batch, .max_seq = (int)a->max_seq,
                             .progress = stage_update, .progress_ctx = &sp};
    sq_eval_rerank r;
    int rc = sq_eval_rerank_run(&o, in, &r, &err);
    if (sp.open)
        cli_progress_finish(&sp.p);
    json_t *report = NULL;
    if (rc != 0) {
        sq_eval_rerank_free(&r);
        return cli_fail(CMD, &err);
    }
    sq_eval_metrics mt = {.pairs = true, .score_spearman = r.score_spearman, .n_task = 1};
    mt.task[0] = (sq_eval_task_metric){.name = r.task_metric, .model = r.task_model,
                                         .reference = r.task_reference};
    sq_eval_gate gr[SQ_GATE_COUNT];
    int ng = sq_eval_gates(&rec->gates, in, &mt, gr);
    bool pass = sq_eval_gates_pass(gr, ng);
    print_pairs(stdout, in, &o, &r, gr, ng);
    rc = SQ_EXIT_OK;
    if (a->report) {
        sq_isa isa = SQ_ISA_SCALAR;
        sq_linear_isa(&isa, NULL);
        sq_eval_report_info info = {.input = a->input, .limit = a->limit, .isa = sq_isa_name(isa),
                                    .threads = sq_threads_count(),
                                    .total_s = cli_now() - t_start};
        report = sq_eval_rerank_report_json(&info, in, &o, &r, gr, ng, pass);
        if (sq_eval_report_write(a->report, report, &err) != 0)
            rc = cli_fail(CMD, &err);
    }
    if (rc == SQ_EXIT_OK && !pass) {
        print_failed_gates(gr, ng);
        rc = SQ_EXIT_FAIL;
    }
    json_decref(report);
    sq_eval_rerank_free(&r);
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

    sq_eval_input in;
    sq_eval_model m = {0}, ref = {0};
    json_t *report = NULL;
    sq_head head = {0};
    bool has_head = false;
    int rc = SQ_EXIT_BADINPUT;
    bool cross = false;
    if (!a.retriever && sq_eval_is_classifier(a.model, &cross, &err) != 0) {
        rc = cli_fail(CMD, &err);
        sq_recipe_free(&rec);
        return rc;
    }
    if (sq_eval_input_load(a.input, a.field, a.task, a.limit, &in, &err) != 0)
        goto fail;
    if (cross || a.retriever) {
        rc = run_pairs(&a, &rec, &in, t_start);
        goto done;
    }
    double input_s = cli_now() - t_start;
    /* A head (--head, else the one stored in MODEL) on an SST-2 set: both
     * models embed as it was trained (normalized or not). */
    if (a.head && in.task != SQ_TASK_SST2) {
        sq_err_set(&err, "--head needs an SST-2 input (--task sst2): the head's accuracy is "
                         "measured on its labels");
        goto fail;
    }
    if (a.head || (in.task == SQ_TASK_SST2 && a.reference && sq_head_stored_in(a.model))) {
        if (sq_head_for_model(a.model, NULL, a.head, 0, &head, &err) != 0)
            goto fail;
        has_head = true;
    }
    const bool *norm = has_head ? &head.normalized : NULL;
    if (embed_with(a.model, CMD, &a, &in, norm, &m, &err) != 0)
        goto fail;
    if (has_head && head.dim != m.res.dim) {
        sq_err_set(&err, "%s: the head is for %d-dimensional embeddings, but %s gives %d",
                   a.head ? a.head : a.model, head.dim, a.model, m.res.dim);
        goto fail;
    }
    /* Without --reference stdout may carry the embeddings (as in `embed`). */
    if ((a.output || !a.reference) && write_embeddings(a.output ? a.output : "-", NULL, &m.res, &err) != 0)
        goto fail;
    if (!a.reference) {
        rc = SQ_EXIT_OK;
        goto done;
    }
    if ((sq_eval_is_npy_path(a.reference) ? sq_eval_reference_npy(a.reference, &in, &ref, &err)
                                  : embed_with(a.reference, "reference", &a, &in, norm, &ref,
                                               &err)) != 0)
        goto fail;
    if (ref.res.dim != m.res.dim) {
        sq_err_set(&err, "%s gives %d-dimensional embeddings but %s gives %d", a.model, m.res.dim,
                   a.reference, ref.res.dim);
        goto fail;
    }
    sq_eval_metrics mt = {0};
    sq_eval_measure(&in, &m, &ref, rec.gates.topk_k, &mt);
    if (has_head) {
        sq_eval_task_metric *t = &mt.task[mt.n_task];
        const char *hn = a.head ? a.head : a.model;
        t->name = "head_accuracy";
        if (sq_head_accuracy(&head, hn, m.res.emb, m.res.n, in.sst2.label, &t->model, &err) != 0 ||
            sq_head_accuracy(&head, hn, ref.res.emb, ref.res.n, in.sst2.label, &t->reference,
                             &err) != 0)
            goto fail;
        mt.n_task++;
    }
    sq_eval_gate gr[SQ_GATE_COUNT];
    int ng = sq_eval_gates(&rec.gates, &in, &mt, gr);
    bool pass = sq_eval_gates_pass(gr, ng);
    /* Keep stdout clean when it carries the embeddings. */
    FILE *txt = a.output && strcmp(a.output, "-") == 0 ? stderr : stdout;
    print_summary(txt, &in, &m, &ref, &mt, gr, ng);
    if (a.report) {
        sq_isa isa = SQ_ISA_SCALAR;
        sq_linear_isa(&isa, NULL);
        sq_eval_report_info info = {.input = a.input, .limit = a.limit, .isa = sq_isa_name(isa),
                                    .threads = sq_threads_count(), .input_s = input_s,
                                    .total_s = cli_now() - t_start};
        report = sq_eval_report_json(&info, &in, &m, &ref, &mt, gr, ng, pass);
        if (sq_eval_report_write(a.report, report, &err) != 0)
            goto fail;
    }
    rc = SQ_EXIT_OK;
    if (!pass) {
        print_failed_gates(gr, ng);
        rc = SQ_EXIT_FAIL;
    }
    goto done;
fail:
    rc = cli_fail(CMD, &err);
done:
    json_decref(report);
    sq_head_free(&head);
    sq_eval_model_free(&m);
    sq_eval_model_free(&ref);
    sq_eval_input_free(&in);
    sq_recipe_free(&rec);
    return rc;
}

/* squint tune: search instances x threads per instance x batch for the best
 * throughput or latency on this machine (cmd/tune_search.h), measured by
 * pinned worker processes (cmd/bench_instances.h); prints the table and
 * writes the choice to a tune file (formats/tune_file.h). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_instances.h"
#include "cli.h"
#include "cpu_features.h"
#include "cpu_sets.h"
#include "squint_version.h"
#include "tune_search.h"
#include "tune_use.h"

static const char *const help =
    "usage: squint tune MODEL [options]\n"
    "\n"
    "Search the number of instances (worker processes pinned to disjoint cores), threads\n"
    "per instance and batch size for the best throughput or latency on this machine; print\n"
    "the table and the best configuration, and write it to a tune file that `squint serve`\n"
    "and `squint bench` read (--tune FILE, or MODEL.tune.json next to the model by default).\n"
    "\n"
    "objectives:\n"
    "  throughput   aggregate sequences/s of all instances over a common window, each\n"
    "               running forward passes of batch x --seq tokens back to back; batches\n"
    "               1, 2, 4, ... --max-batch\n"
    "  latency      the median (p50) time of one request of 1 x --seq tokens while every\n"
    "               instance serves such requests back to back (batch 1)\n"
    "\n"
    "options:\n"
    "  --objective O    throughput (default) or latency\n"
    "  --budget S       seconds to spend, spread over the planned measurements (default 60;\n"
    "                   each measurement takes at least one pass per instance)\n"
    "  --seq N          tokens per sequence (default 128)\n"
    "  --max-batch N    the largest batch tried for throughput (default 32)\n"
    "  --exhaustive     measure every point of the grid (--rounds times, alternating order)\n"
    "                   instead of searching\n"
    "  --rounds N       measurements per point with --exhaustive (default 2)\n"
    "  --warmup N       untimed passes per instance before each window (default 1)\n"
    "  --json           print the table as JSON\n"
    "  -o FILE          the tune file (default: MODEL.tune.json)\n"
    "\n"
    "The grid holds every (instances, threads) with instances x threads <= the cores this\n"
    "process may use (its affinity mask: taskset, cpusets; at most its cgroup CPU quota).\n"
    "Progress goes to stderr.\n"
    "\n"
    "example:\n"
    "  squint tune bge-small.sqm --objective throughput --budget 120\n"
    "  squint serve bge-small.sqm            # uses bge-small.sqm.tune.json\n";

typedef struct tune_ctx {
    sq_inst_plan plan;
    int seq;
    bool quiet;
    char prec[16];
    char info[256];
} tune_ctx;

static int measure(void *vctx, int instances, int threads, int batch, double window_s,
                   sq_tune_fig *out, sq_err *err)
{
    tune_ctx *c = vctx;
    sq_inst_plan p = c->plan;
    p.instances = instances, p.threads = threads, p.batch = batch, p.window_s = window_s;
    sq_inst_result r;
    if (sq_instances_measure(&p, &r, err) != 0)
        return -1;
    if (!c->info[0]) {
        snprintf(c->info, sizeof c->info, "%s", r.info);
        snprintf(c->prec, sizeof c->prec, "%s", r.prec);
    }
    *out = (sq_tune_fig){r.seq_per_s, r.p50_ms, r.p95_ms};
    return 0;
}

static void progress(void *vctx, int done, int planned, int instances, int threads, int batch,
                     const sq_tune_fig *f)
{
    (void)vctx;
    fprintf(stderr,
            "squint tune: [%d/%d] %d instance%s x %d thread%s, batch %d: %.2f seq/s, p50 %.2f ms\n",
            done, planned, instances, instances == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
            batch, f->seq_per_s, f->p50_ms);
}

static double clock_s(void *vctx)
{
    (void)vctx;
    return cli_now();
}

static json_t *point_json(const sq_tune_point *p)
{
    sq_tune_fig f = sq_tune_mean(p);
    return json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:i}", "instances", p->instances, "threads",
                     p->threads, "batch", p->batch, "seq_per_s", f.seq_per_s, "p50_ms", f.p50_ms,
                     "p95_ms", f.p95_ms, "runs", p->n);
}

int cmd_tune(int argc, char **argv)
{
    enum { O_OBJ = 256, O_BUDGET, O_SEQ, O_MAXB, O_EXH, O_ROUNDS, O_WARM, O_JSON, O_HELP };
    static const struct option opts[] = {
        {"objective", required_argument, 0, O_OBJ}, {"budget", required_argument, 0, O_BUDGET},
        {"seq", required_argument, 0, O_SEQ},       {"max-batch", required_argument, 0, O_MAXB},
        {"exhaustive", no_argument, 0, O_EXH},      {"rounds", required_argument, 0, O_ROUNDS},
        {"warmup", required_argument, 0, O_WARM},   {"json", no_argument, 0, O_JSON},
        {"output", required_argument, 0, 'o'},      {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0}};
    sq_tune_space sp = {.objective = SQ_TUNE_THROUGHPUT, .max_batch = 32, .rounds = 2,
                        .budget_s = 60, .min_window_s = 0.05};
    long seq = 128, warmup = 1, v;
    bool json = false;
    const char *output = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
        switch (c) {
        case O_OBJ:
            if (sq_tune_objective_parse(optarg, &sp.objective) != 0)
                return cli_usage_error("tune", "--objective must be throughput or latency, not '%s'",
                                       optarg);
            break;
        case O_BUDGET:
            if (!cli_parse_double(optarg, 0.1, 1e6, &sp.budget_s))
                return cli_usage_error("tune", "--budget must be seconds in [0.1, 1e6]");
            break;
        case O_SEQ:
            if (!cli_parse_int(optarg, 2, 65536, &seq))
                return cli_usage_error("tune", "--seq must be an integer in [2, 65536]");
            break;
        case O_MAXB:
            if (!cli_parse_int(optarg, 1, 4096, &v))
                return cli_usage_error("tune", "--max-batch must be an integer in [1, 4096]");
            sp.max_batch = (int)v;
            break;
        case O_ROUNDS:
            if (!cli_parse_int(optarg, 1, 100, &v))
                return cli_usage_error("tune", "--rounds must be an integer in [1, 100]");
            sp.rounds = (int)v;
            break;
        case O_WARM:
            if (!cli_parse_int(optarg, 0, 100, &warmup))
                return cli_usage_error("tune", "--warmup must be an integer in [0, 100]");
            break;
        case O_EXH: sp.exhaustive = true; break;
        case O_JSON: json = true; break;
        case 'o': output = optarg; break;
        case O_HELP: fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("tune", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("tune", "expected exactly one MODEL argument");
    const char *model = argv[optind];
    sq_err err = {0};
    sq_tune_file tf = {0};
    if (tune_model_identity(model, &tf.model_size, &tf.model_xxh64, &err) != 0)
        return cli_fail("tune", &err);
    static int cpus[SQ_CPUS_MAX];
    int n_cpus = sq_cpus_usable(cpus, SQ_CPUS_MAX);
    if (n_cpus > SQ_TUNE_MAX_CORES)
        n_cpus = SQ_TUNE_MAX_CORES;
    sp.cores = n_cpus;
    char *def_out = output ? NULL : tune_default_path(model);
    if (!output && !(output = def_out))
        return cli_usage_error("tune", "out of memory");
    char cpu[128], list[256];
    sq_cpu_name(cpu, sizeof cpu);
    sq_cpus_format(cpus, n_cpus, list, sizeof list);
    fprintf(stderr, "squint tune: %s on %d usable core%s (CPUs %s, %s), objective %s, %s, budget %.0f s\n",
            model, n_cpus, n_cpus == 1 ? "" : "s", list, cpu, sq_tune_objective_name(sp.objective),
            sp.exhaustive ? "exhaustive grid" : "search", sp.budget_s);
    tune_ctx ctx = {.plan = {.model_path = model, .seq = (int)seq, .warmup = (int)warmup,
                             .cpus = cpus, .n_cpus = n_cpus},
                    .seq = (int)seq};
    sq_tune_outcome o;
    if (sq_tune_run(&sp, measure, progress, clock_s, &ctx, &o, &err) != 0) {
        free(def_out);
        return cli_fail("tune", &err);
    }
    const sq_tune_point *b = &o.points[o.best];
    const sq_tune_fig bf = sq_tune_mean(b);
    if (json) {
        json_t *pts = json_array();
        for (int i = 0; i < o.n_points; i++)
            json_array_append_new(pts, point_json(&o.points[i]));
        json_t *root = json_pack(
            "{s:s, s:s, s:s, s:i, s:i, s:s, s:i, s:i, s:i, s:f, s:o, s:o}", "model", model,
            "objective", sq_tune_objective_name(sp.objective), "cpu", cpu, "usable_cores", n_cpus,
            "seq", (int)seq, "method", sp.exhaustive ? "exhaustive" : "search", "grid_points",
            o.grid_points, "points_measured", o.n_points, "measurements", o.measurements, "noise",
            o.noise, "points", pts, "best", point_json(b));
        if (root)
            json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        fputc('\n', stdout);
        json_decref(root);
    } else {
        printf("model: %s  %s\n", model, ctx.info);
        printf("cpu: %s, %d usable core%s (%s); objective %s: %s\n", cpu, n_cpus,
               n_cpus == 1 ? "" : "s", list, sq_tune_objective_name(sp.objective),
               sp.objective == SQ_TUNE_LATENCY
                   ? "p50 ms of one 1 x seq request, every instance busy (lower is better)"
                   : "aggregate seq/s, every instance running batch x seq passes");
        printf("  %9s %7s %5s %10s %10s %10s %4s\n", "instances", "threads", "batch", "seq/s",
               "p50 ms", "p95 ms", "runs");
        for (int i = 0; i < o.n_points; i++) {
            const sq_tune_point *p = &o.points[i];
            sq_tune_fig f = sq_tune_mean(p);
            printf("%s %9d %7d %5d %10.2f %10.2f %10.2f %4d\n", i == o.best ? "*" : " ",
                   p->instances, p->threads, p->batch, f.seq_per_s, f.p50_ms, f.p95_ms, p->n);
        }
        printf("best: --instances %d --threads %d --batch %d: %.2f seq/s, p50 %.2f ms, p95 %.2f ms "
               "(batch %d x %ld tokens per request)\n",
               b->instances, b->threads, b->batch, bf.seq_per_s, bf.p50_ms, bf.p95_ms, b->batch,
               seq);
        printf("%s: %d of %d grid points measured, %d measurements", sp.exhaustive ? "exhaustive" : "search",
               o.n_points, o.grid_points, o.measurements);
        if (!sp.exhaustive)
            printf(", noise margin %.1f%%", 100 * (o.noise > 0.02 ? o.noise : 0.02));
        printf("\n");
    }
    snprintf(tf.squint_version, sizeof tf.squint_version, "%s", SQUINT_VERSION);
    snprintf(tf.model_path, sizeof tf.model_path, "%s", model);
    snprintf(tf.cpu_name, sizeof tf.cpu_name, "%s", cpu);
    snprintf(tf.method, sizeof tf.method, "%s", sp.exhaustive ? "exhaustive" : "search");
    tf.usable_cores = n_cpus;
    tf.objective = sp.objective;
    tf.seq = (int)seq;
    tf.instances = b->instances, tf.threads = b->threads, tf.batch = b->batch;
    tf.seq_per_s = bf.seq_per_s, tf.p50_ms = bf.p50_ms, tf.p95_ms = bf.p95_ms;
    tf.points_measured = o.n_points, tf.grid_points = o.grid_points;
    tf.budget_s = sp.budget_s;
    sq_tune_outcome_free(&o);
    int rc = SQ_EXIT_OK;
    if (sq_tune_file_write(output, &tf, &err) != 0)
        rc = cli_fail("tune", &err);
    else
        fprintf(stderr, "squint tune: wrote %s\n", output);
    free(def_out);
    return rc;
}

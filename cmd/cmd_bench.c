/* squint bench: encoder throughput (batch x seq tokens) and single-sequence
 * latency, measured on synthetic token ids of exact length. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_instances.h"
#include "cli.h"
#include "cpu_sets.h"
#include "embed_model.h"
#include "embedder.h"
#include "linear.h"
#include "threads.h"
#include "tune_use.h"

static const char *const help =
    "usage: squint bench MODEL [options]\n"
    "\n"
    "Measure the encoder: throughput at --batch x --seq tokens and latency at\n"
    "--lat-batch x --lat-seq tokens, after warm-up. Figures are medians over --iters runs.\n"
    "\n"
    "options:\n"
    "  --batch N       sequences per throughput batch (default 32)\n"
    "  --seq N         tokens per sequence for throughput (default 256)\n"
    "  --lat-batch N   sequences for the latency run (default 1)\n"
    "  --lat-seq N     tokens for the latency run (default 128)\n"
    "  --iters N       timed repetitions (default 5)\n"
    "  --warmup N      untimed repetitions first (default 1)\n"
    "  --threads N     worker threads (default: $OMP_NUM_THREADS, else the CPUs this process\n"
    "                  may run on, at most its cgroup CPU quota)\n"
    "  --instances N   run N worker processes, each pinned to its own --threads cores (default:\n"
    "                  the usable cores / N), on the same work at once: aggregate seq/s over a\n"
    "                  common --window and the latency of one pass (a request of --batch x\n"
    "                  --seq) under that load, p50 / p95\n"
    "  --window S      the common measuring window of --instances, seconds (default 3)\n"
    "  --tune FILE     instances, threads, batch and seq from `squint tune` (options given\n"
    "                  here win); MODEL.tune.json is used by default when it exists and\n"
    "                  none of --instances / --threads / --batch is given\n"
    "  --no-tune       ignore MODEL.tune.json\n"
    "  --profile       then --iters more throughput passes timed per op (embeddings, LayerNorm,\n"
    "                  activation quantize, each linear's GEMM with its epilogue and outlier\n"
    "                  channels, attention Q.K^T / softmax / P.V, GELU (act+quantize when it\n"
    "                  runs inside the next linear's quantize step), residuals): ms per pass\n"
    "                  and share\n"
    "\n"
    "example:\n"
    "  squint bench bge-small/ --batch 32 --seq 256 --threads 2\n";

/* The per-op table of --profile: ms per forward pass and share of it. */
static void print_profile(const sq_op_profile *p, const char *prec, long batch, long seq)
{
    if (p->forwards < 1)
        return;
    const double per = 1e3 / (double)p->forwards;
    printf("profile (%s, batch %ld x %ld tokens, %lld forward passes, wall time per op):\n",
           prec, batch, seq, (long long)p->forwards);
    printf("  %-18s %10s %7s\n", "op", "ms/pass", "share");
    double sum = 0;
    for (int op = 0; op < SQ_OP_COUNT; op++) {
        sum += p->seconds[op];
        if (p->calls[op] > 0)
            printf("  %-18s %10.2f %6.1f%%\n", sq_op_name((sq_op)op), p->seconds[op] * per,
                   100.0 * p->seconds[op] / p->total);
    }
    double other = p->total - sum;
    printf("  %-18s %10.2f %6.1f%%\n", "other", (other > 0 ? other : 0) * per,
           100.0 * (other > 0 ? other : 0) / p->total);
    printf("  %-18s %10.2f %6.1f%%\n", "total", p->total * per, 100.0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median seconds of one forward pass over n_seq sequences of len tokens
 * (bench_batch_make's synthetic ids). */
static int time_forward(const sq_embed_model *m, int n_seq, int len, int warmup, int iters,
                        double *median, sq_op_profile *prof, sq_err *err)
{
    float *hid = malloc((size_t)n_seq * len * m->enc.cfg.hidden * sizeof *hid);
    double *times = malloc((size_t)iters * sizeof *times);
    sq_workspace ws = {0};
    bench_batch bb = {0};
    int rc = -1;
    if (!hid || !times) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    if (bench_batch_make(m, n_seq, len, &bb, err) != 0)
        goto out;
    const sq_batch b = bb.b;
    for (int i = 0; i < warmup + iters; i++) {
        ws.lin.prof = i >= warmup ? prof : NULL; /* the timed passes only */
        double t0 = cli_now();
        if (sq_encoder_forward(&m->enc, &ws, &b, hid, NULL, err) != 0)
            goto out;
        if (i >= warmup)
            times[i - warmup] = cli_now() - t0;
    }
    qsort(times, (size_t)iters, sizeof *times, cmp_double);
    *median = times[iters / 2];
    rc = 0;
out:
    bench_batch_free(&bb);
    free(hid);
    free(times);
    sq_workspace_free(&ws);
    return rc;
}

/* --instances: N pinned worker processes over one window (bench_instances.h).
 * No OpenMP region may run in this process before they are forked. */
static int bench_instances(const char *model, int instances, int threads, int batch, int seq,
                           int warmup, double window)
{
    static int cpus[SQ_CPUS_MAX];
    int n = sq_cpus_usable(cpus, SQ_CPUS_MAX);
    if (threads <= 0)
        threads = n / instances;
    if (threads < 1 || (long)instances * threads > n)
        return cli_usage_error("bench", "%d instances x %d threads need %ld cores; this process "
                               "may use %d (its affinity mask and cgroup CPU quota)",
                               instances, threads > 0 ? threads : 1,
                               (long)instances * (threads > 0 ? threads : 1), n);
    sq_inst_plan p = {.model_path = model, .instances = instances, .threads = threads,
                      .batch = batch, .seq = seq, .warmup = warmup, .window_s = window,
                      .cpus = cpus, .n_cpus = n};
    sq_inst_result r;
    sq_err err = {0};
    if (sq_instances_measure(&p, &r, &err) != 0)
        return cli_fail("bench", &err);
    char sets[1024] = "", one[256];
    for (int i = 0; i < instances; i++) {
        sq_cpus_format(cpus + (size_t)i * threads, threads, one, sizeof one);
        size_t len = strlen(sets);
        snprintf(sets + len, sizeof sets - len, "%s%s", i ? " | " : "", one);
    }
    printf("model: %s  %s\n", model, r.info);
    printf("instances=%d  threads=%d  (CPUs %s; %d usable)\n", instances, threads, sets, n);
    printf("%s seq/s=%.2f  (aggregate of %d instance%s over a %.2f s window, batch %d x %d tokens "
           "each)\n",
           r.prec, r.seq_per_s, instances, instances == 1 ? "" : "s", r.window_s, batch, seq);
    printf("%s latency_ms p50=%.2f p95=%.2f  (one pass of batch %d x %d tokens under that load; "
           "%d passes)\n",
           r.prec, r.p50_ms, r.p95_ms, batch, seq, r.passes);
    return SQ_EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"batch", required_argument, 0, 'b'},    {"seq", required_argument, 0, 's'},
        {"lat-batch", required_argument, 0, 'B'}, {"lat-seq", required_argument, 0, 'S'},
        {"iters", required_argument, 0, 'n'},    {"warmup", required_argument, 0, 'w'},
        {"threads", required_argument, 0, 't'},  {"help", no_argument, 0, 'h'},
        {"profile", no_argument, 0, 'P'},        {"instances", required_argument, 0, 'I'},
        {"window", required_argument, 0, 'W'},   {"tune", required_argument, 0, 'T'},
        {"no-tune", no_argument, 0, 'N'},
        {0, 0, 0, 0}};
    long batch = 32, seq = 256, lbatch = 1, lseq = 128, iters = 5, warmup = 1, threads = 0;
    long instances = 0;
    double window = 3;
    bool lseq_given = false, profile = false, no_tune = false, seq_given = false;
    bool threads_given = false, batch_given = false;
    const char *tune_path = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        long *dst = NULL, lo = 1, hi = 65536;
        switch (c) {
        case 'b': dst = &batch; hi = 4096; batch_given = true; break;
        case 's': dst = &seq; lo = 2; seq_given = true; break;
        case 'B': dst = &lbatch; hi = 4096; break;
        case 'S': dst = &lseq; lo = 2; lseq_given = true; break;
        case 'n': dst = &iters; hi = 10000; break;
        case 'w': dst = &warmup; lo = 0; hi = 10000; break;
        case 't': dst = &threads; hi = 1024; threads_given = true; break;
        case 'I': dst = &instances; hi = SQ_CPUS_MAX; break;
        case 'W':
            if (!cli_parse_double(optarg, 0.01, 3600, &window))
                return cli_usage_error("bench", "--window must be seconds in [0.01, 3600]");
            continue;
        case 'T': tune_path = optarg; continue;
        case 'N': no_tune = true; continue;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        case 'P': profile = true; continue;
        default: return cli_usage_error("bench", "invalid option");
        }
        if (!cli_parse_int(optarg, lo, hi, dst))
            return cli_usage_error("bench", "option value '%s' must be an integer in [%ld, %ld]",
                                   optarg, lo, hi);
    }
    if (optind != argc - 1)
        return cli_usage_error("bench", "expected exactly one MODEL argument");
    if (tune_path && no_tune)
        return cli_usage_error("bench", "--tune and --no-tune contradict each other");
    sq_err err = {0};
    if (tune_path || (!no_tune && !instances && !threads_given && !batch_given)) {
        sq_tune_file t;
        int got = tune_load_for("bench", argv[optind], tune_path, &t, &err);
        if (got < 0)
            return cli_fail("bench", &err);
        if (got) {
            instances = instances ? instances : t.instances;
            threads = threads_given ? threads : t.threads;
            batch = batch_given ? batch : t.batch;
            seq = seq_given ? seq : t.seq;
        }
    }
    if (instances > 0) {
        if (profile)
            return cli_usage_error("bench", "--profile runs in one process: not with --instances");
        return bench_instances(argv[optind], (int)instances, (int)threads, (int)batch, (int)seq,
                               (int)warmup, window);
    }
    int nt = sq_threads_init((int)threads);
    sq_embed_model m;
    double t_open = cli_now();
    if (sq_embed_model_open(argv[optind], &m, &err) != 0)
        return cli_fail("bench", &err);
    double load_s = cli_now() - t_open;
    /* Load to first embedding: one short text through tokenizer and encoder. */
    double first_s = 0;
    {
        const char *text = "How fast is the first embedding after loading the model?";
        size_t len = strlen(text);
        sq_embed_opts eo = {.batch = 1, .max_seq = m.max_seq, .pooling = m.pool.pooling,
                            .normalize = m.pool.normalize};
        sq_embed_result r;
        double t0 = cli_now();
        if (sq_embed_texts(&m, &text, &len, 1, &eo, &r, &err) != 0) {
            sq_embed_model_close(&m);
            return cli_fail("bench", &err);
        }
        first_s = cli_now() - t0;
        sq_embed_result_free(&r);
    }
    const sq_bert_config *cfg = &m.enc.cfg;
    /* The latency length defaults to 128 tokens, or the model's length when shorter. */
    if (!lseq_given && lseq > sq_bert_max_tokens(cfg))
        lseq = sq_bert_max_tokens(cfg);
    if (seq > sq_bert_max_tokens(cfg) || lseq > sq_bert_max_tokens(cfg)) {
        const int max_pos = sq_bert_max_tokens(cfg); /* read before the model is closed */
        sq_embed_model_close(&m);
        return cli_usage_error("bench", "%s %ld exceeds the model's %d positions",
                               seq > max_pos ? "--seq" : "--lat-seq", seq > max_pos ? seq : lseq,
                               max_pos);
    }
    printf("model: %s  layers=%d hidden=%d heads=%d ffn=%d\n", argv[optind], cfg->layers,
           cfg->hidden, cfg->heads, cfg->ffn);
    /* The precision of the linears: a .sqm may mix types (recipe overrides). */
    const char *prec, *gemm;
    bench_precision(&m, &prec, &gemm);
    printf("threads=%d  linears=%s  gemm=%s\n", nt, prec, gemm);
    double tput, lat;
    int rc = SQ_EXIT_OK;
    sq_op_profile prof = {0};
    if (time_forward(&m, (int)batch, (int)seq, (int)warmup, (int)iters, &tput, NULL, &err) != 0 ||
        time_forward(&m, (int)lbatch, (int)lseq, (int)warmup, (int)iters, &lat, NULL, &err) != 0 ||
        (profile && time_forward(&m, (int)batch, (int)seq, (int)warmup, (int)iters, &(double){0}, &prof,
                                 &err) != 0)) {
        rc = cli_fail("bench", &err);
    } else {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("%s seq/s=%.2f  (batch %ld x %ld tokens, %.1f ms/batch)\n", prec, batch / tput,
               batch, seq, tput * 1e3);
        printf("%s latency_ms=%.2f  (batch %ld x %ld tokens)\n", prec, lat * 1e3, lbatch, lseq);
        printf("load_ms=%.1f  first_embedding_ms=%.1f  (open + checks; then one short text)\n",
               load_s * 1e3, first_s * 1e3);
        printf("peak_rss_mib=%.1f\n", ru.ru_maxrss / 1024.0);
        if (profile)
            print_profile(&prof, prec, batch, seq);
    }
    sq_embed_model_close(&m);
    return rc;
}

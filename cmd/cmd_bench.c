/* squint bench: encoder throughput (batch x seq tokens) and single-sequence
 * latency, measured on synthetic token ids of exact length. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "embed_model.h"
#include "embedder.h"
#include "linear.h"
#include "threads.h"

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
    "  --threads N     worker threads (default: $OMP_NUM_THREADS, else the CPUs this process may run on)\n"
    "  --profile       then --iters more throughput passes timed per op (embeddings, LayerNorm,\n"
    "                  activation quantize, each linear's GEMM, outlier channels, attention\n"
    "                  Q.K^T / softmax / P.V, GELU, residuals): ms per pass and share\n"
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

/* Median seconds of one forward pass over n_seq sequences of len tokens. */
static int time_forward(const sq_embed_model *m, int n_seq, int len, int warmup, int iters,
                        double *median, sq_op_profile *prof, sq_err *err)
{
    int T = n_seq * len;
    int32_t *ids = malloc((size_t)T * sizeof *ids);
    int *off = malloc(((size_t)n_seq + 1) * sizeof *off);
    float *hid = malloc((size_t)T * m->enc.cfg.hidden * sizeof *hid);
    double *times = malloc((size_t)iters * sizeof *times);
    sq_workspace ws = {0};
    int rc = -1;
    if (!ids || !off || !hid || !times) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    /* Deterministic ids spread over the vocabulary (avoiding the first 1000). */
    uint32_t x = 12345;
    int V = m->enc.cfg.vocab_size;
    for (int s = 0; s <= n_seq; s++)
        off[s] = s * len;
    for (int t = 0; t < T; t++) {
        x = x * 1664525u + 1013904223u;
        ids[t] = V > 2000 ? 1000 + (int)(x % (uint32_t)(V - 1000)) : (int)(x % (uint32_t)V);
    }
    sq_batch b = {.n_seq = n_seq, .offsets = off, .ids = ids, .type_ids = NULL};
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
    free(ids);
    free(off);
    free(hid);
    free(times);
    sq_workspace_free(&ws);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"batch", required_argument, 0, 'b'},    {"seq", required_argument, 0, 's'},
        {"lat-batch", required_argument, 0, 'B'}, {"lat-seq", required_argument, 0, 'S'},
        {"iters", required_argument, 0, 'n'},    {"warmup", required_argument, 0, 'w'},
        {"threads", required_argument, 0, 't'},  {"help", no_argument, 0, 'h'},
        {"profile", no_argument, 0, 'P'},
        {0, 0, 0, 0}};
    long batch = 32, seq = 256, lbatch = 1, lseq = 128, iters = 5, warmup = 1, threads = 0;
    bool lseq_given = false, profile = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        long *dst = NULL, lo = 1, hi = 65536;
        switch (c) {
        case 'b': dst = &batch; hi = 4096; break;
        case 's': dst = &seq; lo = 2; break;
        case 'B': dst = &lbatch; hi = 4096; break;
        case 'S': dst = &lseq; lo = 2; lseq_given = true; break;
        case 'n': dst = &iters; hi = 10000; break;
        case 'w': dst = &warmup; lo = 0; hi = 10000; break;
        case 't': dst = &threads; hi = 1024; break;
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
    int nt = sq_threads_init((int)threads);
    sq_err err = {0};
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
    if (!lseq_given && lseq > cfg->max_pos)
        lseq = cfg->max_pos;
    if (seq > cfg->max_pos || lseq > cfg->max_pos) {
        const int max_pos = cfg->max_pos; /* read before the model is closed */
        sq_embed_model_close(&m);
        return cli_usage_error("bench", "%s %ld exceeds the model's %d positions",
                               seq > max_pos ? "--seq" : "--lat-seq", seq > max_pos ? seq : lseq,
                               max_pos);
    }
    printf("model: %s  layers=%d hidden=%d heads=%d ffn=%d\n", argv[optind], cfg->layers,
           cfg->hidden, cfg->heads, cfg->ffn);
    /* The precision of the linears: a .sqm may mix types (recipe overrides). */
    int count[SQ_QT_COUNT] = {0}, n_lin = 0;
    for (int l = 0; l < cfg->layers; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++)
            if (m.enc.layers[l].lin[k].out > 0) {
                count[m.enc.layers[l].lin[k].qtype]++;
                n_lin++;
            }
    const char *prec = "mixed";
    for (int q = 0; q < SQ_QT_COUNT; q++)
        if (count[q] == n_lin) {
            prec = sq_qtype_get((sq_qtype)q)->label;
            break;
        }
    sq_isa isa = SQ_ISA_SCALAR;
    sq_linear_isa(&isa, NULL);
    printf("threads=%d  linears=%s  gemm=%s\n", nt, prec,
           count[SQ_QT_F32] == n_lin ? "openblas-sgemm" : sq_isa_name(isa));
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

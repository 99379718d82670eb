/* squint calibrate: activation statistics of a model on a corpus (.sqc). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cli.h"
#include "embedder.h"
#include "data_dir.h"
#include "threads.h"


static const char *const help =
    "usage: squint calibrate MODEL [options] -o OUT.sqc\n"
    "       squint calibrate --merge A.sqc B.sqc [...] -o OUT.sqc\n"
    "\n"
    "Run a calibration corpus through squint's fp32 encoder and record, for the input\n"
    "of every linear layer: per-channel max|x| and sum of x^2, min/max and a 2048-bin\n"
    "|x| histogram; plus the attention-probability range of each layer. The .sqc file\n"
    "feeds `squint quantize` with any recipe, without recalibrating.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE     the statistics file to write (required)\n"
    "  --corpus FILE         corpus file (repeatable): text, JSONL, QASPER, or any of them\n"
    "                        in .tar/.tar.gz/.zip/.zst/.gz (default: the bundled QASPER subset;\n"
    "                        for a cross-encoder, its bundled question/evidence pairs; a causal\n"
    "                        language model has none: it needs --corpus)\n"
    "  --format F            auto|text|jsonl|qasper (default auto, by file name)\n"
    "  --field PATH          JSONL field holding the text (dotted path; default text)\n"
    "  --pair-field PATH     JSONL field holding a second text: samples are text pairs\n"
    "                        (field, pair-field), read as a cross-encoder reads query and\n"
    "                        document\n"
    "  --qasper-parts LIST   QASPER parts: title,abstract,paragraphs,questions,evidence\n"
    "  --samples N           texts drawn from the corpus (default 256; 0 = all)\n"
    "  --seed S              sampling seed (default 0)\n"
    "  --max-seq L           tokens per sequence, special tokens included (default: model limit)\n"
    "  --window              split texts longer than --max-seq into windows (default: truncate)\n"
    "  --batch B             sequences per forward pass (default 16)\n"
    "  --threads T           worker threads (default: $OMP_NUM_THREADS, else the CPUs this process\n"
    "                        may run on, at most its cgroup CPU quota)\n"
    "  --observer M          minmax | percentile[:P] | entropy | mse (default percentile:99.99):\n"
    "                        the clip method quantize will use by default\n"
    "  --quiet               no progress line\n"
    "  --merge               merge the given .sqc files of the same model into -o\n"
    "\n"
    "The same inputs give a byte-identical file at any thread count. The date recorded\n"
    "is today's (UTC), or SOURCE_DATE_EPOCH when set.\n"
    "\n"
    "examples:\n"
    "  squint calibrate bge-small/ -o bge-small.sqc\n"
    "  squint calibrate bge-small/ --corpus qasper.jsonl --samples 100 --max-seq 512 -o a.sqc\n"
    "  squint calibrate reranker/ --corpus pairs.jsonl --field query --pair-field passage -o r.sqc\n"
    "  squint calibrate --merge a.sqc b.sqc -o ab.sqc\n";

static int run_merge(char **files, int n, const char *out)
{
    sq_err err = {0};
    sq_calib_stats acc;
    if (sq_calib_stats_load(files[0], &acc, &err) != 0)
        return cli_fail("calibrate", &err);
    for (int i = 1; i < n; i++) {
        sq_calib_stats next;
        if (sq_calib_stats_load(files[i], &next, &err) != 0) {
            sq_calib_stats_free(&acc);
            return cli_fail("calibrate", &err);
        }
        int rc = sq_calib_stats_merge(&acc, &next, &err);
        sq_calib_stats_free(&next);
        if (rc != 0) {
            sq_err_prefix(&err, "cannot merge %s into %s", files[i], files[0]);
            sq_calib_stats_free(&acc);
            return cli_fail("calibrate", &err);
        }
    }
    free(acc.date);
    acc.date = sq_calib_date_now();
    int rc = sq_calib_stats_save(&acc, out, &err);
    sq_calib_stats_free(&acc);
    if (rc != 0)
        return cli_fail("calibrate", &err);
    fprintf(stderr, "squint calibrate: merged %d files into %s\n", n, out);
    return SQ_EXIT_OK;
}

/* Calibrate any family through its target (calibrate.h), with progress,
 * and save the statistics. max_pos: the model's positions (--max-seq is
 * checked against it). */
static int run_calibration(const sq_calib_target *t, const char *model_arg, sq_calibrate_opts *o,
                           int quiet, const char *out)
{
    sq_err err = {0};
    if (o->max_seq > t->max_pos)
        return cli_usage_error("calibrate", "--max-seq %d exceeds the model's %d positions",
                               o->max_seq, t->max_pos);
    cli_progress prog;
    cli_progress_init(&prog, "calibrate");
    prog.enabled = prog.enabled && !quiet;
    o->progress = cli_progress_update;
    o->progress_ctx = &prog;
    sq_calib_stats st;
    double t0 = cli_now();
    int rc = sq_calibrate(t, model_arg, o, &st, &err);
    cli_progress_finish(&prog);
    if (rc != 0)
        return cli_fail("calibrate", &err);
    double el = cli_now() - t0;
    if (sq_calib_stats_save(&st, out, &err) != 0) {
        rc = cli_fail("calibrate", &err);
    } else {
        fprintf(stderr,
                "squint calibrate: %llu texts -> %llu sequences, %llu tokens in %.1fs (%.1f "
                "sequences/s); wrote %s\n",
                (unsigned long long)st.n_texts, (unsigned long long)st.n_sequences,
                (unsigned long long)st.n_tokens, el, el > 0 ? st.n_sequences / el : 0.0, out);
        rc = SQ_EXIT_OK;
    }
    sq_calib_stats_free(&st);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    enum { O_CORPUS = 256, O_FORMAT, O_FIELD, O_PARTS, O_SAMPLES, O_SEED, O_MAXSEQ, O_WINDOW,
           O_BATCH, O_OBS, O_QUIET, O_MERGE, O_PAIR };
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},   {"corpus", required_argument, 0, O_CORPUS},
        {"format", required_argument, 0, O_FORMAT}, {"field", required_argument, 0, O_FIELD},
        {"pair-field", required_argument, 0, O_PAIR},
        {"qasper-parts", required_argument, 0, O_PARTS}, {"samples", required_argument, 0, O_SAMPLES},
        {"seed", required_argument, 0, O_SEED}, {"max-seq", required_argument, 0, O_MAXSEQ},
        {"window", no_argument, 0, O_WINDOW},   {"batch", required_argument, 0, O_BATCH},
        {"threads", required_argument, 0, 't'}, {"observer", required_argument, 0, O_OBS},
        {"quiet", no_argument, 0, O_QUIET},     {"merge", no_argument, 0, O_MERGE},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *out = NULL;
    const char **corpus = calloc((size_t)argc + 1, sizeof *corpus);
    size_t n_corpus = 0;
    sq_calibrate_opts o = {.samples = 256, .seed = 0, .batch = 16};
    sq_scale_params_default(&o.scale, SQ_CALIB_PERCENTILE);
    long threads = 0, v;
    int quiet = 0, merge = 0, rc = SQ_EXIT_BADINPUT;
    sq_err err = {0};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_CORPUS: corpus[n_corpus++] = optarg; break;
        case O_FORMAT:
            if (sq_corpus_parse_format(optarg, &o.corpus_opts.format, &err) != 0) {
                rc = cli_usage_error("calibrate", "%s", err.msg);
                goto done;
            }
            break;
        case O_FIELD: o.corpus_opts.field = optarg; break;
        case O_PAIR: o.corpus_opts.pair_field = optarg; break;
        case O_PARTS: {
            unsigned mask;
            if (sq_qasper_parts_parse(optarg, &mask, &err) != 0) {
                rc = cli_usage_error("calibrate", "%s", err.msg);
                goto done;
            }
            o.corpus_opts.qasper_parts = optarg;
            break;
        }
        case O_SAMPLES:
            if (!cli_parse_int(optarg, 0, 100000000, &v)) {
                rc = cli_usage_error("calibrate", "--samples must be an integer in [0, 1e8]");
                goto done;
            }
            o.samples = (uint64_t)v;
            break;
        case O_SEED:
            if (!cli_parse_int(optarg, 0, 0x7fffffffffffffffL, &v)) {
                rc = cli_usage_error("calibrate", "--seed must be a non-negative integer");
                goto done;
            }
            o.seed = (uint64_t)v;
            break;
        case O_MAXSEQ:
            if (!cli_parse_int(optarg, 3, 65536, &v)) {
                rc = cli_usage_error("calibrate", "--max-seq must be an integer in [3, 65536]");
                goto done;
            }
            o.max_seq = (int)v;
            break;
        case O_WINDOW: o.windows = true; break;
        case O_BATCH:
            if (!cli_parse_int(optarg, 1, SQ_BATCH_MAX, &v)) {
                rc = cli_usage_error("calibrate", "--batch must be an integer in [1, 4096]");
                goto done;
            }
            o.batch = (int)v;
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads)) {
                rc = cli_usage_error("calibrate", "--threads must be an integer in [1, 1024]");
                goto done;
            }
            break;
        case O_OBS:
            if (sq_scale_params_parse(optarg, &o.scale, &err) != 0) {
                rc = cli_usage_error("calibrate", "--observer: %s", err.msg);
                goto done;
            }
            break;
        case O_QUIET: quiet = 1; break;
        case O_MERGE: merge = 1; break;
        case 'h': fputs(help, stdout); rc = SQ_EXIT_OK; goto done;
        default: rc = cli_usage_error("calibrate", "invalid option"); goto done;
        }
    }
    if (!out) {
        rc = cli_usage_error("calibrate", "-o OUT.sqc is required");
        goto done;
    }
    sq_threads_init((int)threads);
    if (merge) {
        if (argc - optind < 2) {
            rc = cli_usage_error("calibrate", "--merge needs at least two .sqc files");
            goto done;
        }
        rc = run_merge(argv + optind, argc - optind, out);
        goto done;
    }
    if (optind != argc - 1) {
        rc = cli_usage_error("calibrate", "expected exactly one MODEL argument");
        goto done;
    }
    const char *model_arg = argv[optind];
    char bundled_buf[4096];
    o.corpus = corpus;
    o.n_corpus = n_corpus;
    if (sq_llama_is_checkpoint(model_arg)) { /* a causal LM */
        sq_llama_model lm;
        if (sq_llama_model_open(model_arg, NULL, &lm, &err) != 0) {
            rc = cli_fail("calibrate", &err);
            goto done;
        }
        const sq_calib_target t = sq_calib_target_decoder(&lm);
        /* whether the family may use it is the target's no_bundled */
        o.bundled_corpus = cli_bundled_corpus(false, bundled_buf, sizeof bundled_buf);
        rc = run_calibration(&t, model_arg, &o, quiet, out);
        sq_llama_model_close(&lm);
        goto done;
    }
    sq_embed_model m;
    if (sq_embed_model_open(model_arg, &m, &err) != 0) {
        rc = cli_fail("calibrate", &err);
        goto done;
    }
    if (o.corpus_opts.pair_field && n_corpus == 0) {
        sq_embed_model_close(&m);
        rc = cli_usage_error("calibrate", "--pair-field needs --corpus");
        goto done;
    }
    sq_calibrate_pick_corpus(&m, &o);
    o.bundled_corpus = cli_bundled_corpus(o.corpus_opts.pair_field != NULL, bundled_buf,
                                          sizeof bundled_buf);
    if (o.max_seq == 0)
        o.max_seq = m.max_seq;
    const sq_calib_target t = sq_calib_target_encoder(&m);
    rc = run_calibration(&t, model_arg, &o, quiet, out);
    sq_embed_model_close(&m);
done:
    free(corpus);
    return rc;
}

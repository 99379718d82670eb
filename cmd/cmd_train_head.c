/* squint train-head: a logistic-regression classification head on a model's
 * sentence embeddings (SetFit's head), written as JSON (formats/HEAD.md). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "eval_data.h"
#include "eval_metrics.h"
#include "embedder.h"
#include "few_shot.h"
#include "file_hash.h"
#include "head.h"
#include "squint_version.h"
#include "threads.h"

static const char *const help =
    "usage: squint train-head MODEL --train FILE -o HEAD.json [options]\n"
    "\n"
    "Train a classification head (multinomial logistic regression with L2, as SetFit's\n"
    "head) on MODEL's sentence embeddings of a labelled set, and write it as JSON for\n"
    "`squint classify`. MODEL is anything `squint embed` takes (.sqm or fp32 checkpoint).\n"
    "\n"
    "options:\n"
    "  --train FILE         labelled texts: .tsv with a header row (default columns 'sentence'\n"
    "                       and 'label', GLUE SST-2) or .jsonl (default fields 'text', 'label';\n"
    "                       labels strings or integers)\n"
    "  --text-field F       the text column / dotted JSONL field\n"
    "  --label-field F      the label column / dotted JSONL field\n"
    "  --per-class N        few-shot: N examples per class, drawn by --seed (default: all rows)\n"
    "  --seed S             seed of the few-shot draw (default 0)\n"
    "  --l2 X               L2 penalty on the weights, > 0 (default 1: scikit-learn's C = 1)\n"
    "  -o, --output FILE    the head (JSON)\n"
    "  --batch N            sequences per forward pass (default 32)\n"
    "  --threads N          worker threads (default: $OMP_NUM_THREADS, else the CPUs available)\n"
    "  --quiet              no progress line\n"
    "\n"
    "Classes are the distinct labels, in numeric order when all are integers, else byte\n"
    "order. Features are standardized; two classes train the binary model by Newton's\n"
    "method, three or more a softmax by L-BFGS. The few-shot draw: per class (in class\n"
    "order) a seeded Fisher-Yates shuffle of its rows, the first N kept; a class with\n"
    "fewer rows is an error. The same inputs give the same bytes at any thread count.\n"
    "example:\n"
    "  squint train-head model.sqm --train sst2/train.tsv --per-class 64 -o head.json\n";

/* xxh64 of the model: the .sqm (or other) file, or a checkpoint's combined
 * digest; false when neither can be taken (USE Lite tfjs folders). */
static bool model_hash(const char *arg, uint64_t *h)
{
    sq_err e = {0};
    struct stat st;
    if (stat(arg, &st) != 0)
        return false;
    if (S_ISREG(st.st_mode)) {
        uint64_t size;
        return sq_hash_file(arg, &size, h, &e) == 0;
    }
    sq_model_digest d;
    if (sq_model_digest_dir(arg, &d, &e) != 0)
        return false;
    *h = d.combined;
    sq_model_digest_free(&d);
    return true;
}

int cmd_train_head(int argc, char **argv)
{
    enum { O_TEXT = 256, O_LABEL, O_PER, O_SEED, O_L2, O_QUIET };
    static const struct option opts[] = {
        {"train", required_argument, 0, 'i'},      {"output", required_argument, 0, 'o'},
        {"text-field", required_argument, 0, O_TEXT}, {"label-field", required_argument, 0, O_LABEL},
        {"per-class", required_argument, 0, O_PER}, {"seed", required_argument, 0, O_SEED},
        {"l2", required_argument, 0, O_L2},        {"batch", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 't'},    {"quiet", no_argument, 0, O_QUIET},
        {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
    const char *train = NULL, *output = NULL, *text_field = NULL, *label_field = NULL;
    long per_class = 0, seed = -1, batch = 32, threads = 0;
    double l2 = 1.0;
    int quiet = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:b:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': train = optarg; break;
        case 'o': output = optarg; break;
        case O_TEXT: text_field = optarg; break;
        case O_LABEL: label_field = optarg; break;
        case O_PER:
            if (!cli_parse_int(optarg, 1, 1L << 30, &per_class))
                return cli_usage_error("train-head", "--per-class must be an integer in [1, 2^30]");
            break;
        case O_SEED:
            if (!cli_parse_int(optarg, 0, 0x7fffffffffffffffL, &seed))
                return cli_usage_error("train-head", "--seed must be a non-negative integer");
            break;
        case O_L2: {
            char *end;
            errno = 0;
            l2 = strtod(optarg, &end);
            if (end == optarg || *end || errno || !isfinite(l2) || !(l2 > 0) || l2 > 1e12)
                return cli_usage_error("train-head", "--l2 must be a number in (0, 1e12]");
            break;
        }
        case 'b':
            if (!cli_parse_int(optarg, 1, SQ_BATCH_MAX, &batch))
                return cli_usage_error("train-head", "--batch must be an integer in [1, 4096]");
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads))
                return cli_usage_error("train-head", "--threads must be an integer in [1, 1024]");
            break;
        case O_QUIET: quiet = 1; break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("train-head", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("train-head", "expected exactly one MODEL argument");
    if (!train)
        return cli_usage_error("train-head", "--train is required");
    if (!output)
        return cli_usage_error("train-head", "-o/--output is required");
    if (seed >= 0 && !per_class)
        return cli_usage_error("train-head", "--seed needs --per-class");
    const char *model_arg = argv[optind];

    sq_threads_init((int)threads);
    sq_err err = {0};
    sq_labelled set;
    if (sq_labelled_read(train, text_field, label_field, &set, &err) != 0)
        return cli_fail("train-head", &err);
    if (set.n_classes < 2) {
        sq_err_set(&err, "%s: every text has the label '%s': a classifier needs two classes or more",
                   train, set.class_name[0]);
        sq_labelled_free(&set);
        return cli_fail("train-head", &err);
    }
    int rc = SQ_EXIT_OK;
    unsigned char *use = NULL;
    float *X = NULL;
    int *y = NULL;
    double *probs = NULL;
    const char **texts = NULL;
    size_t *lens = NULL;
    sq_head head = {0};
    sq_embed_result res = {0};
    sq_embed_model m;
    bool model_open = false;
    if (!(use = malloc((size_t)set.n)))
        goto oom;
    if (per_class) {
        if (sq_few_shot_pick(set.label, set.n, set.n_classes, set.class_name, per_class,
                             (uint64_t)(seed < 0 ? 0 : seed), use, &err) != 0) {
            sq_err_prefix(&err, "%s", train);
            goto fail;
        }
    } else {
        memset(use, 1, (size_t)set.n);
    }
    int64_t rows = 0;
    for (int64_t i = 0; i < set.n; i++)
        rows += use[i];
    if (sq_embed_model_open(model_arg, &m, &err) != 0)
        goto fail;
    model_open = true;
    if (sq_embed_model_require_embeddings(&m, model_arg, &err) != 0)
        goto fail;
    const int D = m.enc.cfg.hidden;
    X = malloc((size_t)rows * D * sizeof *X);
    y = malloc((size_t)rows * sizeof *y);
    texts = malloc((size_t)rows * sizeof *texts);
    lens = malloc((size_t)rows * sizeof *lens);
    probs = malloc((size_t)rows * set.n_classes * sizeof *probs);
    if (!X || !y || !texts || !lens || !probs)
        goto oom;
    int64_t r = 0;
    for (int64_t i = 0; i < set.n; i++)
        if (use[i]) {
            texts[r] = set.text[i];
            lens[r] = strlen(set.text[i]);
            y[r++] = set.label[i];
        }
    sq_embed_opts o = {
        .batch = (int)batch,
        .max_seq = m.max_seq,
        .pooling = m.pool.pooling,
        .normalize = m.pool.normalize,
    };
    cli_progress prog;
    cli_progress_init(&prog, "train-head");
    if (quiet)
        prog.enabled = false;
    /* Embedded in chunks (progress; memory of one chunk's tokens): the rows
     * do not depend on the chunking for int8/int4 models. */
    const int64_t chunk = 1024;
    for (int64_t i0 = 0; i0 < rows; i0 += chunk) {
        int64_t n = rows - i0 < chunk ? rows - i0 : chunk;
        if (sq_embed_texts(&m, texts + i0, lens + i0, n, &o, &res, &err) != 0) {
            cli_progress_finish(&prog);
            goto fail;
        }
        memcpy(X + (size_t)i0 * D, res.emb, (size_t)n * D * sizeof *X);
        sq_embed_result_free(&res);
        cli_progress_update(&prog, i0 + n, rows);
    }
    cli_progress_finish(&prog);
    if (sq_head_alloc(&head, set.n_classes, D, &err) != 0)
        goto fail;
    head.normalized = o.normalize;
    for (int k = 0; k < set.n_classes; k++)
        if (!(head.labels[k] = strdup(set.class_name[k])))
            goto oom;
    sq_logreg_opts lo = {.l2 = l2, .max_iter = 50, .tol = 1e-8, .lbfgs_iter = 1000};
    int steps = sq_softmax_train(X, y, rows, D, set.n_classes, NULL, &lo, head.W, head.b);
    if (steps < 0) {
        sq_err_set(&err, "%s: training failed (a singular system: are the embeddings constant?)",
                   train);
        goto fail;
    }
    sq_head_apply(&head, X, rows, probs);
    int64_t correct = 0;
    for (int64_t i = 0; i < rows; i++)
        correct += sq_argmax(probs + (size_t)i * set.n_classes, set.n_classes) == y[i];
    sq_head_provenance p = {
        .model = model_arg,
        .train_file = train,
        .text_field = text_field ? text_field : (strlen(train) > 6 && strcmp(train + strlen(train) - 6, ".jsonl") == 0 ? "text" : "sentence"),
        .label_field = label_field ? label_field : "label",
        .rows_in_file = set.n,
        .rows_used = rows,
        .per_class = per_class,
        .seed = (uint64_t)(seed < 0 ? 0 : seed),
        .l2 = l2,
        .steps = steps,
        .train_accuracy = (double)correct / (double)rows,
        .squint_version = SQUINT_VERSION,
    };
    p.has_model_hash = model_hash(model_arg, &p.model_xxh64);
    uint64_t tsize;
    sq_err e2 = {0};
    p.has_train_hash = sq_hash_file(train, &tsize, &p.train_xxh64, &e2) == 0;
    if (sq_head_write(output, &head, &p, &err) != 0)
        goto fail;
    if (!quiet)
        fprintf(stderr, "squint train-head: %d classes, %lld rows, dim %d, %d steps, train "
                        "accuracy %.4f -> %s\n",
                set.n_classes, (long long)rows, D, steps, p.train_accuracy, output);
    goto done;
oom:
    sq_err_set(&err, "out of memory");
fail:
    rc = cli_fail("train-head", &err);
done:
    sq_embed_result_free(&res);
    sq_head_free(&head);
    if (model_open)
        sq_embed_model_close(&m);
    free(use);
    free(X);
    free(y);
    free(probs);
    free(texts);
    free(lens);
    sq_labelled_free(&set);
    return rc;
}

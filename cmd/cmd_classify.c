/* squint classify: a model's embeddings through a head from `squint
 * train-head`: one JSONL line of label and class probabilities per text. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "embed_output.h"
#include "embedder.h"
#include "head.h"
#include "seq_classify.h"
#include "text_stream.h"
#include "threads.h"

static const char *const help =
    "usage: squint classify MODEL [--head HEAD] --input FILE [options]\n"
    "\n"
    "Classify texts: MODEL's sentence embeddings (as `squint embed` computes them) through\n"
    "a head written by `squint train-head`, or the head stored in MODEL (a .sqm quantized\n"
    "with --head). MODEL must be the model the head was trained on (its embedding width is\n"
    "checked; the head's file records which model it was).\n"
    "Python pickles (SetFit's model_head.pkl) are refused: they can run arbitrary code.\n"
    "A sequence classifier (BertForSequenceClassification, e.g. an NLI cross-encoder)\n"
    "classifies with its own classifier instead: single texts, or text pairs with\n"
    "--pair-field; probabilities by its score activation (softmax for several labels).\n"
    "\n"
    "options:\n"
    "  --head FILE           the head (JSON or safetensors, formats/HEAD.md); overrides a\n"
    "                        head stored in MODEL, required when MODEL has none\n"
    "  --input FILE          texts: one per line, or JSONL (see --field); '-' = stdin\n"
    "  --field PATH          JSONL field holding the text (default 'text' for .jsonl)\n"
    "  --id-field PATH       JSONL field (string or integer) copied to each output line as \"id\"\n"
    "  --pair-field PATH     a sequence classifier reads text pairs: --field the first text,\n"
    "                        PATH the second ([CLS] a [SEP] b [SEP], SQM.md 6.11)\n"
    "  --output FILE         JSONL (default: standard output)\n"
    "  --batch N             sequences per forward pass (default 32)\n"
    "  --threads N           worker threads (default: $OMP_NUM_THREADS, else the CPUs available)\n"
    "  --chunk N             texts read ahead and embedded together (default 1024)\n"
    "  --quiet               no progress line\n"
    "\n"
    "Each input gives one line, in input order:\n"
    "  {\"index\":0,\"label\":\"1\",\"probs\":{\"0\":0.0312,\"1\":0.9688}}\n"
    "the label the most probable class. Input is streamed as by `squint embed`.\n"
    "example:\n"
    "  squint classify model.sqm --head head.json --input reviews.txt --output labels.jsonl\n"
    "  squint classify model-with-head.sqm --input reviews.txt\n"
    "  squint classify nli.sqm --input pairs.jsonl --field premise --pair-field hypothesis\n";

int cmd_classify(int argc, char **argv)
{
    enum { O_HEAD = 256, O_FIELD, O_ID, O_CHUNK, O_QUIET, O_PAIR };
    static const struct option opts[] = {
        {"head", required_argument, 0, O_HEAD},    {"input", required_argument, 0, 'i'},
        {"output", required_argument, 0, 'o'},     {"field", required_argument, 0, O_FIELD},
        {"id-field", required_argument, 0, O_ID},  {"batch", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 't'},    {"chunk", required_argument, 0, O_CHUNK},
        {"quiet", no_argument, 0, O_QUIET},        {"help", no_argument, 0, 'h'},
        {"pair-field", required_argument, 0, O_PAIR},
        {0, 0, 0, 0}};
    const char *head_path = NULL, *input = NULL, *output = "-", *field = NULL, *id_field = NULL,
               *pair_field = NULL;
    long batch = 32, threads = 0, chunk_size = 1024;
    int quiet = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "i:o:b:t:h", opts, NULL)) != -1) {
        switch (c) {
        case O_HEAD: head_path = optarg; break;
        case 'i': input = optarg; break;
        case 'o': output = optarg; break;
        case O_FIELD: field = optarg; break;
        case O_ID: id_field = optarg; break;
        case O_PAIR: pair_field = optarg; break;
        case 'b':
            if (!cli_parse_int(optarg, 1, SQ_BATCH_MAX, &batch))
                return cli_usage_error("classify", "--batch must be an integer in [1, 4096]");
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads))
                return cli_usage_error("classify", "--threads must be an integer in [1, 1024]");
            break;
        case O_CHUNK:
            if (!cli_parse_int(optarg, 1, 1 << 20, &chunk_size))
                return cli_usage_error("classify", "--chunk must be an integer in [1, 1048576]");
            break;
        case O_QUIET: quiet = 1; break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("classify", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("classify", "expected exactly one MODEL argument");
    if (!input)
        return cli_usage_error("classify", "--input is required");

    sq_threads_init((int)threads);
    sq_err err = {0};
    sq_head head = {0};
    sq_embed_model m;
    if (sq_embed_model_open(argv[optind], &m, &err) != 0)
        return cli_fail("classify", &err);
    /* A sequence classifier classifies with its own score head (SQM.md
     * 6.11); an embedding model with a head over its embeddings. */
    const bool seqcls = sq_model_is_classifier(&m);
    if (seqcls && head_path)
        sq_err_set(&err, "%s is a sequence classifier with its own classifier: --head is for "
                         "embedding models",
                   argv[optind]);
    else if (!seqcls && pair_field)
        sq_err_set(&err, "%s is an embedding model: --pair-field (text pairs) needs a "
                         "sequence classifier (a cross-encoder)",
                   argv[optind]);
    if ((seqcls && head_path) || (!seqcls && pair_field) ||
        (!seqcls && sq_head_for_model(argv[optind], m.is_sqm ? &m.sqm : NULL, head_path,
                                      m.enc.cfg.hidden, &head, &err) != 0)) {
        sq_embed_model_close(&m);
        return cli_fail("classify", &err);
    }
    const int classes = seqcls ? m.enc.cfg.num_labels : head.classes;
    char *const *class_names = seqcls ? m.labels : head.labels;
    sq_text_stream in;
    if (sq_text_stream_open(input, field, id_field, &in, &err) != 0 ||
        (pair_field && sq_text_stream_pairs(&in, pair_field, &err) != 0)) {
        sq_text_stream_close(&in);
        sq_head_free(&head);
        sq_embed_model_close(&m);
        return cli_fail("classify", &err);
    }
    int rc = SQ_EXIT_OK;
    char **labels_json = calloc((size_t)classes, sizeof *labels_json);
    double *probs = NULL;
    float *logits = NULL;
    embed_writer out = {0};
    sq_text_chunk chunk = {0};
    sq_embed_result res = {0};
    cli_progress prog;
    cli_progress_init(&prog, "classify");
    if (quiet)
        prog.enabled = false;
    if (!labels_json)
        goto oom;
    for (int k = 0; k < classes; k++) {
        json_t *j = json_string(class_names[k]);
        labels_json[k] = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        json_decref(j);
        if (!labels_json[k])
            goto oom;
    }
    if (!(probs = malloc((size_t)chunk_size * classes * sizeof *probs)) ||
        (seqcls && !(logits = malloc((size_t)chunk_size * classes * sizeof *logits))))
        goto oom;
    sq_embed_opts o = {
        .batch = (int)batch,
        .max_seq = m.max_seq,
        .pooling = m.pool.pooling,
        .normalize = head.normalized, /* as the head was trained */
    };
    if (embed_writer_open(&out, output, "jsonl", seqcls ? m.enc.cfg.hidden : head.dim, &err) != 0)
        goto fail;
    for (;;) {
        int64_t n = sq_text_stream_next(&in, chunk_size, &chunk, &err);
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        if (seqcls) {
            if (sq_classify_texts(&m, (const char *const *)chunk.text, chunk.len,
                                  (const char *const *)chunk.text2, chunk.len2, n, &o, logits,
                                  &err) != 0)
                goto fail;
            sq_scores_from_logits(m.enc.cfg.score_act, classes, logits, n, probs);
        } else {
            if (sq_embed_texts(&m, (const char *const *)chunk.text, chunk.len, n, &o, &res,
                               &err) != 0)
                goto fail;
            sq_head_apply(&head, res.emb, n, probs);
        }
        if (embed_writer_classes(&out, probs, classes, labels_json, n, out.rows,
                                 chunk.id_json, &err) != 0)
            goto fail;
        sq_embed_result_free(&res);
        cli_progress_update(&prog, out.rows, -1);
    }
    cli_progress_finish(&prog);
    if (embed_writer_finish(&out, &err) != 0)
        goto fail;
    goto done;
oom:
    sq_err_set(&err, "out of memory");
fail:
    cli_progress_finish(&prog);
    rc = cli_fail("classify", &err);
    embed_writer_abort(&out);
done:
    sq_embed_result_free(&res);
    sq_text_chunk_free(&chunk);
    if (labels_json)
        for (int k = 0; k < classes; k++)
            free(labels_json[k]);
    free(labels_json);
    free(probs);
    free(logits);
    sq_embed_model_close(&m);
    sq_text_stream_close(&in);
    sq_head_free(&head);
    return rc;
}

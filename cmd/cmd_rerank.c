/* squint rerank: order documents for a query, or score pairs, with whatever
 * kind of model ranks (ranker.h: a bi-encoder's cosine, a cross-encoder's
 * logit, a causal LM's yes/no judgement). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "embedder.h"
#include "rank_order.h"
#include "fileio.h"
#include "ranker.h"
#include "text_stream.h"
#include "threads.h"

/* The most documents one call ranks (all are embedded at once). */
#define RERANK_MAX_DOCS 1000000

static const char *const help =
    "usage: squint rerank MODEL --query TEXT --docs FILE [options]\n"
    "       squint rerank MODEL --pairs FILE.jsonl [--field Q --pair-field D] [options]\n"
    "\n"
    "Rank documents for a query. MODEL (a .sqm or a checkpoint) is either\n"
    "  a bi-encoder (an embedding model): the score of a document is the cosine of its\n"
    "    embedding with the query's, or\n"
    "  a cross-encoder (BertForSequenceClassification with one label): each pair is read\n"
    "    as [CLS] query [SEP] document [SEP] (the document cut first when the pair is\n"
    "    longer than --max-seq) and scored by the model's logit through the activation\n"
    "    its config names (sentence-transformers' CrossEncoder: sigmoid by default), or\n"
    "  a causal LM (Qwen3-Reranker; a Hugging Face folder or its .sqm): each pair is put in\n"
    "    Qwen3-Reranker's yes/no prompt (system message, <Instruct>, <Query>, <Document>)\n"
    "    and scored by P(\"yes\") against \"no\" as the next token; the document is cut first\n"
    "    when the prompt is longer than --max-seq (default 8192 or the model's context).\n"
    "\n"
    "options:\n"
    "  --query TEXT          the query (embedded as is: add bge's query instruction or\n"
    "                        e5's \"query: \" yourself, or use --query-prefix)\n"
    "  --query-prefix TEXT   put TEXT before the query\n"
    "  --instruction TEXT    a causal LM's <Instruct> line (default Qwen3-Reranker's: \"Given a\n"
    "                        web search query, retrieve relevant passages that answer the query\")\n"
    "  --docs FILE           documents: one per line, or JSONL (see --field); '-' = stdin\n"
    "  --field PATH          JSONL field holding the text (default 'text' for .jsonl)\n"
    "  --id-field PATH       JSONL field (string or integer) copied to each output line as \"id\"\n"
    "  --top-k K             write the K best only (default: all)\n"
    "  --pairs FILE          score each JSONL line's pair instead (fields --field, default\n"
    "                        'query', and --pair-field, default 'document'); one line per\n"
    "                        pair in input order: {\"index\":0,\"score\":0.93} (bi-encoder:\n"
    "                        the cosine of the two embeddings; --query-prefix applies to\n"
    "                        the first text)\n"
    "  --output FILE         JSONL (default: standard output)\n"
    "  --max-seq N           truncation length in tokens (default: the model's)\n"
    "  --batch N             sequences per forward pass (default 32)\n"
    "  --threads N           worker threads (default: $OMP_NUM_THREADS, else the CPUs available)\n"
    "\n"
    "One line per document, best first (ties: input order):\n"
    "  {\"rank\":1,\"index\":3,\"score\":0.8125}\n"
    "a cross-encoder adds the raw \"logit\" (a causal LM: logit(yes) - logit(no)).\n"
    "index is the document's position in FILE (from 0); at most 1,000,000 documents.\n"
    "example:\n"
    "  squint rerank bge-small.sqm --query \"what causes tides\" --docs candidates.txt --top-k 10\n";

/* The rest of an output line after its index: the id (JSON, when the input
 * has one), the score (null for NaN: an empty document under mean pooling)
 * and a cross-encoder's logit. */
static void print_tail(FILE *fp, const char *id_json, double score, const float *logit)
{
    if (id_json)
        fprintf(fp, ",\"id\":%s", id_json);
    if (score == score)
        fprintf(fp, ",\"score\":%.9g", score);
    else
        fprintf(fp, ",\"score\":null");
    if (logit)
        fprintf(fp, ",\"logit\":%.9g", (double)*logit);
    fputs("}\n", fp);
}

/* Commit the output file, or flush standard output. */
static int finish_output(sq_atomic_file *af, sq_err *err)
{
    if (af->fp)
        return sq_atomic_commit(af, err);
    if (fflush(stdout) != 0 || ferror(stdout))
        return sq_err_set(err, "standard output: write error");
    return 0;
}

/* --pairs: every line's pair scored, streamed in chunks, in input order. */
static int run_pairs(const char *model_arg, const char *path, const char *field,
                     const char *pair_field, const char *id_field, const char *qprefix,
                     const char *instruction, const char *output, int batch, int max_seq)
{
    sq_err err = {0};
    sq_text_stream in;
    if (sq_text_stream_open(path, field, id_field, &in, &err) != 0)
        return cli_fail("rerank", &err);
    if (sq_text_stream_pairs(&in, pair_field, &err) != 0) {
        sq_text_stream_close(&in);
        return cli_fail("rerank", &err);
    }
    sq_ranker m;
    if (sq_ranker_open(model_arg, instruction, max_seq, &m, &err) != 0) {
        sq_text_stream_close(&in);
        return cli_fail("rerank", &err);
    }
    const int chunk = 1024;
    sq_embed_opts o = {.batch = batch, .max_seq = max_seq};
    sq_text_chunk c = {0};
    float *logits = malloc(chunk * sizeof *logits);
    double *scores = malloc(chunk * sizeof *scores);
    sq_atomic_file af = {0};
    FILE *fp = stdout;
    int64_t n, done = 0;
    int rc = SQ_EXIT_OK;
    if (!logits || !scores) {
        sq_err_set(&err, "out of memory");
        goto fail;
    }
    if (strcmp(output, "-") != 0) {
        if (sq_atomic_open(&af, output, &err) != 0)
            goto fail;
        fp = af.fp;
    }
    while ((n = sq_text_stream_next(&in, chunk, &c, &err)) > 0) {
        if ((*qprefix && sq_text_chunk_prefix(&c, qprefix) != 0 &&
             sq_err_set(&err, "out of memory")) ||
            sq_ranker_score(&m, NULL, (const char *const *)c.text, c.len,
                         (const char *const *)c.text2, c.len2, n, &o, scores, logits,
                         &err) != 0)
            goto fail;
        for (int64_t i = 0; i < n; i++) {
            fprintf(fp, "{\"index\":%lld", (long long)(done + i));
            print_tail(fp, c.id_json ? c.id_json[i] : NULL, scores[i],
                       sq_ranker_has_logit(&m) ? &logits[i] : NULL);
        }
        if (!af.fp)
            fflush(stdout);
        done += n;
    }
    if (n < 0)
        goto fail;
    if (finish_output(&af, &err) != 0)
        goto fail;
    goto done;
fail:
    if (af.fp)
        sq_atomic_abort(&af);
    rc = cli_fail("rerank", &err);
done:
    sq_text_chunk_free(&c);
    free(logits);
    free(scores);
    sq_ranker_close(&m);
    sq_text_stream_close(&in);
    return rc;
}

int cmd_rerank(int argc, char **argv)
{
    enum { O_QUERY = 256, O_QPREFIX, O_DOCS, O_FIELD, O_ID, O_TOPK, O_MAXSEQ, O_PAIRS,
           O_PAIRF, O_INSTR };
    static const struct option opts[] = {
        {"query", required_argument, 0, O_QUERY}, {"query-prefix", required_argument, 0, O_QPREFIX},
        {"docs", required_argument, 0, O_DOCS},   {"field", required_argument, 0, O_FIELD},
        {"id-field", required_argument, 0, O_ID}, {"top-k", required_argument, 0, O_TOPK},
        {"max-seq", required_argument, 0, O_MAXSEQ}, {"pairs", required_argument, 0, O_PAIRS},
        {"pair-field", required_argument, 0, O_PAIRF},
        {"instruction", required_argument, 0, O_INSTR},
        {"output", required_argument, 0, 'o'},    {"batch", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 't'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *query = NULL, *qprefix = "", *docs = NULL, *field = NULL, *id_field = NULL,
               *output = "-", *pairs = NULL, *pair_field = NULL, *instruction = NULL;
    long batch = 32, threads = 0, top_k = -1, max_seq = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:b:t:h", opts, NULL)) != -1) {
        switch (c) {
        case O_QUERY: query = optarg; break;
        case O_QPREFIX: qprefix = optarg; break;
        case O_DOCS: docs = optarg; break;
        case O_FIELD: field = optarg; break;
        case O_ID: id_field = optarg; break;
        case O_PAIRS: pairs = optarg; break;
        case O_PAIRF: pair_field = optarg; break;
        case O_INSTR: instruction = optarg; break;
        case O_TOPK:
            if (!cli_parse_int(optarg, 1, RERANK_MAX_DOCS, &top_k))
                return cli_usage_error("rerank", "--top-k must be an integer in [1, 1000000]");
            break;
        case O_MAXSEQ:
            if (!cli_parse_int(optarg, 3, 65536, &max_seq))
                return cli_usage_error("rerank", "--max-seq must be an integer in [3, 65536]");
            break;
        case 'o': output = optarg; break;
        case 'b':
            if (!cli_parse_int(optarg, 1, SQ_BATCH_MAX, &batch))
                return cli_usage_error("rerank", "--batch must be an integer in [1, 4096]");
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads))
                return cli_usage_error("rerank", "--threads must be an integer in [1, 1024]");
            break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("rerank", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("rerank", "expected exactly one MODEL argument");
    if (pairs) {
        if (query || docs || top_k > 0)
            return cli_usage_error("rerank", "--pairs scores every line; it takes no --query, "
                                             "--docs or --top-k");
        sq_threads_init((int)threads);
        return run_pairs(argv[optind], pairs, field ? field : "query",
                         pair_field ? pair_field : "document", id_field, qprefix, instruction,
                         output, (int)batch, (int)max_seq);
    }
    if (pair_field)
        return cli_usage_error("rerank", "--pair-field goes with --pairs");
    if (!query || !docs)
        return cli_usage_error("rerank", "--query and --docs (or --pairs) are required");
    sq_threads_init((int)threads);
    sq_err err = {0};
    sq_text_stream in;
    if (sq_text_stream_open(docs, field, id_field, &in, &err) != 0)
        return cli_fail("rerank", &err);
    /* All documents, the query first. */
    sq_text_chunk all = {0};
    int64_t n = sq_text_stream_next(&in, RERANK_MAX_DOCS + 1, &all, &err);
    sq_text_stream_close(&in);
    if (n < 0) {
        sq_text_chunk_free(&all);
        return cli_fail("rerank", &err);
    }
    if (n > RERANK_MAX_DOCS) {
        sq_text_chunk_free(&all);
        sq_err_set(&err, "%s: more than %d documents", docs, RERANK_MAX_DOCS);
        return cli_fail("rerank", &err);
    }
    size_t qlen = strlen(qprefix) + strlen(query);
    char *q = malloc(qlen + 1);
    const char **texts = malloc((size_t)(n + 1) * sizeof *texts);
    size_t *lens = malloc((size_t)(n + 1) * sizeof *lens);
    double *scores = malloc((size_t)(n ? n : 1) * sizeof *scores);
    int64_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    sq_ranker m;
    bool model_open = false;
    float *logits = NULL;
    sq_atomic_file af = {0};
    FILE *fp = stdout;
    int rc = SQ_EXIT_OK;
    if (!q || !texts || !lens || !scores || !order) {
        sq_err_set(&err, "out of memory for %lld documents", (long long)n);
        goto fail;
    }
    snprintf(q, qlen + 1, "%s%s", qprefix, query);
    if (sq_ranker_open(argv[optind], instruction, (int)max_seq, &m, &err) != 0)
        goto fail;
    model_open = true;
    sq_embed_opts o = {.batch = (int)batch, .max_seq = (int)max_seq};
    if (sq_ranker_has_logit(&m) && !(logits = malloc((size_t)(n ? n : 1) * sizeof *logits))) {
        sq_err_set(&err, "out of memory for %lld documents", (long long)n);
        goto fail;
    }
    for (int64_t i = 0; i < n; i++) /* the same query pointer: embedded once */
        texts[i] = q, lens[i] = qlen;
    if (n > 0 && sq_ranker_score(&m, NULL, texts, lens, (const char *const *)all.text, all.len, n, &o,
                              scores, logits, &err) != 0)
        goto fail;
    if (sq_rank_scores(scores, n, order) != 0) {
        sq_err_set(&err, "out of memory");
        goto fail;
    }
    if (strcmp(output, "-") != 0) {
        if (sq_atomic_open(&af, output, &err) != 0)
            goto fail;
        fp = af.fp;
    }
    int64_t k = top_k > 0 && top_k < n ? top_k : n;
    for (int64_t r = 0; r < k; r++) {
        int64_t i = order[r];
        fprintf(fp, "{\"rank\":%lld,\"index\":%lld", (long long)(r + 1), (long long)i);
        print_tail(fp, all.id_json ? all.id_json[i] : NULL, scores[i], logits ? &logits[i] : NULL);
    }
    if (finish_output(&af, &err) != 0)
        goto fail;
    goto done;
fail:
    if (af.fp)
        sq_atomic_abort(&af);
    rc = cli_fail("rerank", &err);
done:
    if (model_open)
        sq_ranker_close(&m);
    sq_text_chunk_free(&all);
    free(q), free(texts), free(lens), free(scores), free(order), free(logits);
    return rc;
}

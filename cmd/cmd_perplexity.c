/* squint perplexity: token-level perplexity of a causal LM over a text. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "cli.h"
#include "fileio.h"
#include "perplexity.h"
#include "threads.h"

static const char *const help =
    "usage: squint perplexity MODEL --input FILE [options]\n"
    "\n"
    "Token-level perplexity of a causal language model (a llama2.c checkpoint, fp32) over the\n"
    "documents of a text file.\n"
    "\n"
    "options:\n"
    "  --input FILE        UTF-8 text ('-' = stdin)\n"
    "  --docs blank|lines  how the text splits into documents: 'blank' (the default) cuts at\n"
    "                      blank lines and at <|endoftext|>; 'lines' makes every line a\n"
    "                      document (<|endoftext|> still cuts). Documents are trimmed; empty\n"
    "                      ones are skipped\n"
    "  --ctx N             tokens per window (default: the model's context); a longer document\n"
    "                      is scored in consecutive windows of N, each from an empty cache\n"
    "  --json              write the result as one JSON object\n"
    "  --output FILE       write the JSON result to FILE (atomically) instead of stdout\n"
    "  --tokenizer FILE    llama2.c tokenizer (default: next to MODEL, as for generate)\n"
    "  --threads N         worker threads (default: $OMP_NUM_THREADS, else the CPUs available)\n"
    "\n"
    "Each document is encoded as BOS + the text (dummy-prefix space, byte fallback) and every\n"
    "token after BOS is scored: perplexity = exp(mean -log p(token | the tokens before it)).\n"
    "example:\n"
    "  squint perplexity stories260K.bin --input TinyStories-valid-head.txt --docs lines\n";

typedef struct ppl_run {
    const sq_llama_model *m;
    sq_decoder_state st;
    float *logits;
    int ctx;
    sq_ppl_acc acc;
    sq_err *err;
} ppl_run;

static int one_doc(void *vctx, const char *doc, size_t n)
{
    ppl_run *r = vctx;
    int32_t *ids;
    int64_t k = sq_tokenizer_encode_all(r->m->tok, doc, n, true, false, &ids);
    if (k < 0)
        return sq_err_set(r->err, "out of memory encoding a document");
    int rc = sq_ppl_doc(&r->m->dec, &r->st, ids, k, r->ctx, r->logits, &r->acc, r->err);
    free(ids);
    return rc;
}

int cmd_perplexity(int argc, char **argv)
{
    enum { O_DOCS = 256, O_CTX, O_JSON, O_TOK };
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},  {"docs", required_argument, 0, O_DOCS},
        {"ctx", required_argument, 0, O_CTX},  {"json", no_argument, 0, O_JSON},
        {"output", required_argument, 0, 'o'}, {"tokenizer", required_argument, 0, O_TOK},
        {"threads", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    const char *input = NULL, *output = NULL, *tokenizer = NULL;
    long ctx = 0, threads = 0;
    bool json = false;
    sq_ppl_docs docs = SQ_DOCS_BLANK;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "i:o:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': input = optarg; break;
        case 'o': output = optarg; json = true; break;
        case O_DOCS:
            if (strcmp(optarg, "blank") == 0)
                docs = SQ_DOCS_BLANK;
            else if (strcmp(optarg, "lines") == 0)
                docs = SQ_DOCS_LINES;
            else
                return cli_usage_error("perplexity", "--docs must be blank or lines");
            break;
        case O_CTX:
            if (!cli_parse_int(optarg, 2, 1 << 20, &ctx))
                return cli_usage_error("perplexity", "--ctx must be an integer in [2, 1048576]");
            break;
        case O_JSON: json = true; break;
        case O_TOK: tokenizer = optarg; break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads))
                return cli_usage_error("perplexity", "--threads must be an integer in [1, 1024]");
            break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("perplexity", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("perplexity", "expected exactly one MODEL argument");
    if (!input)
        return cli_usage_error("perplexity", "--input is required");
    sq_threads_init((int)threads);
    sq_err err = {0};
    char *text = NULL;
    size_t text_len = 0;
    if (sq_read_file(input, (size_t)1 << 30, &text, &text_len, &err) != 0)
        return cli_fail("perplexity", &err);
    sq_llama_model m;
    if (sq_llama_model_open(argv[optind], tokenizer, &m, &err) != 0) {
        free(text);
        return cli_fail("perplexity", &err);
    }
    int rc = SQ_EXIT_BADINPUT;
    ppl_run r = {.m = &m, .err = &err};
    if (ctx > m.dec.cfg.max_pos) {
        sq_err_set(&err, "--ctx %ld exceeds the context of %s (%d)", ctx, argv[optind],
                   m.dec.cfg.max_pos);
        goto done;
    }
    r.ctx = ctx ? (int)ctx : m.dec.cfg.max_pos;
    if (sq_decoder_state_init(&r.st, &m.dec, 64, r.ctx, &err) != 0)
        goto done;
    if (!(r.logits = malloc((size_t)r.st.max_rows * m.dec.cfg.vocab * sizeof(float)))) {
        sq_err_set(&err, "out of memory");
        goto done;
    }
    const double t0 = cli_now();
    if (sq_ppl_split(text, text_len, docs, one_doc, &r) != 0)
        goto done;
    const double secs = cli_now() - t0;
    if (r.acc.tokens == 0) {
        sq_err_set(&err, "%s: no document with a token to score", input);
        goto done;
    }
    const double mean = r.acc.nll / (double)r.acc.tokens, ppl = exp(mean);
    const char *docs_name = docs == SQ_DOCS_LINES ? "lines" : "blank";
    if (!json) {
        printf("perplexity %.4f over %lld tokens in %lld documents (mean NLL %.4f nats/token, "
               "ctx %d, docs: %s)\n",
               ppl, (long long)r.acc.tokens, (long long)r.acc.docs, mean, r.ctx, docs_name);
        fprintf(stderr, "squint perplexity: %.2f s, %.0f tokens/s\n", secs,
                secs > 0 ? r.acc.tokens / secs : 0.0);
        rc = SQ_EXIT_OK;
        goto done;
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:f, s:f, s:f}", "model",
                          argv[optind], "tokenizer", m.tokenizer_path, "input", input, "docs",
                          docs_name, "ctx", r.ctx, "documents", (json_int_t)r.acc.docs, "windows",
                          (json_int_t)r.acc.windows, "tokens", (json_int_t)r.acc.tokens,
                          "mean_nll", mean, "perplexity", ppl, "seconds", secs);
    char *s = o ? json_dumps(o, JSON_REAL_PRECISION(10)) : NULL;
    json_decref(o);
    if (!s) {
        sq_err_set(&err, "out of memory");
        goto done;
    }
    if (output) {
        sq_atomic_file af;
        if (sq_atomic_open(&af, output, &err) != 0) {
            free(s);
            goto done;
        }
        fprintf(af.fp, "%s\n", s);
        free(s);
        if (sq_atomic_commit(&af, &err) != 0)
            goto done;
    } else {
        printf("%s\n", s);
        free(s);
    }
    rc = SQ_EXIT_OK;
done:
    if (rc != SQ_EXIT_OK)
        cli_fail("perplexity", &err);
    free(r.logits);
    sq_decoder_state_free(&r.st);
    sq_llama_model_close(&m);
    free(text);
    return rc;
}

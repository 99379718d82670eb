/* squint serve: options -> serve/server.h. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fileio.h"
#include "threads.h"
#include "embedder.h"
#ifdef SQ_HAVE_SERVE
#include "instances.h"
#include "server.h"
#endif
#include "cpu_sets.h"
#include "tune_use.h"

static const char *const help =
    "usage: squint serve MODEL [options]\n"
    "\n"
    "Serve embeddings over HTTP/1.1. MODEL is a .sqm or a checkpoint, as for `squint embed`;\n"
    "or generate text: MODEL a causal LM, as for `squint generate` (a llama2.c checkpoint, a\n"
    "Hugging Face Llama folder or a decoder .sqm), served on POST /v1/completions.\n"
    "\n"
    "endpoints:\n"
    "  POST /v1/embeddings   OpenAI: {\"input\": \"text\" | [\"text\", ...], \"encoding_format\":\n"
    "                        \"float\" | \"base64\"} -> {\"data\": [{\"embedding\": ...}], \"usage\"}\n"
    "  POST /embed           text-embeddings-inference: {\"inputs\": ..., \"normalize\": true}\n"
    "                        -> [[...], ...]\n"
    "  GET  /health          {\"status\": \"ok\"} (503 \"draining\" during shutdown)\n"
    "  GET  /info            the model: name, dim, max_seq, limits\n"
    "  GET  /metrics         Prometheus text: requests, texts, tokens, queue depth, batch\n"
    "                        sizes, latency histogram\n"
    "  POST /rerank          {\"query\": \"text\", \"texts\": [...]} -> [{\"index\", \"score\"}], by\n"
    "                        cosine, highest first\n"
    "  POST /classify        with --head or a head stored in MODEL: {\"inputs\": ...} ->\n"
    "                        [[{\"label\", \"score\"}, ...], ...]\n"
    "  POST /v1/completions  a causal LM (also /completions), OpenAI: {\"prompt\": \"text\",\n"
    "                        \"max_tokens\": 16, \"temperature\": 0, \"top_p\": 1, \"seed\": S,\n"
    "                        \"stop\": \"s\" | [up to 4], \"stream\": false} -> {\"choices\": [{\"text\",\n"
    "                        \"finish_reason\"}], \"usage\"}; \"stream\": true: Server-Sent Events,\n"
    "                        one per piece of text, then data: [DONE]\n"
    "\n"
    "options:\n"
    "  --host ADDR           numeric IPv4 / IPv6 address or localhost (default 127.0.0.1;\n"
    "                        0.0.0.0 listens on every interface)\n"
    "  --port N              TCP port (default 8080; 0: any free port, printed)\n"
    "  --model-name NAME     the \"model\" reported (default: the file name)\n"
    "  --threads N           encoder threads (default: $OMP_NUM_THREADS, else the CPUs this\n"
    "                        process may run on, at most its cgroup CPU quota)\n"
    "  --batch N             sequences per forward pass (default 32)\n"
    "  --max-batch N         texts from concurrent requests coalesced into one encoder call\n"
    "                        (default 256)\n"
    "  --batch-wait MS       how long the batcher waits for more texts before an encoder call\n"
    "                        (default 0: requests that arrive while the encoder is busy are\n"
    "                        batched anyway)\n"
    "  --queue N             requests that may wait for the encoder; beyond: 503 with\n"
    "                        Retry-After (default 64)\n"
    "  --max-body BYTES      request body limit, 413 beyond (default 8388608)\n"
    "  --max-inputs N        texts per request, 413 beyond (default 2048)\n"
    "  --max-tokens N        tokens per request after truncation, 413 beyond (default 262144)\n"
    "  --timeout S           seconds a connection may stay idle, and a request (headers and\n"
    "                        body) may take to arrive, however slowly it trickles (default 30)\n"
    "  --max-connections N   concurrent connections (default 128)\n"
    "  --api-key-file FILE   require `Authorization: Bearer KEY` (KEY: the file's first line;\n"
    "                        or set SQUINT_API_KEY); /health stays open\n"
    "  --head HEAD           a classification head from `squint train-head` for /classify\n"
    "                        (JSON or safetensors; overrides a head stored in MODEL)\n"
    "  --quiet               no access log on stderr\n"
    "  --tokenizer FILE      a causal LM's llama2.c tokenizer (default: as for generate)\n"
    "  --max-generations N   a causal LM: concurrent generations, 503 with Retry-After beyond\n"
    "                        (default 4); each uses --threads threads\n"
    "  --draft DRAFT         a causal LM: assisted generation, as `squint generate --draft`\n"
    "  --draft-tokens K      tokens the draft proposes per check, 1..15 (default 4)\n"
    "  --draft-tokenizer FILE  the draft's llama2.c tokenizer (default: next to DRAFT)\n"
    "  --ranges F.npy        calibration ranges [2, dim] for \"precision\": \"int8\" / \"uint8\"\n"
    "                        embeddings (squint embed --ranges-out writes them)\n"
    "  --instances N         N worker processes, each pinned to its own --threads cores\n"
    "                        (default: the usable cores / N), behind the one address; a worker\n"
    "                        that dies is restarted; /metrics, /health and /info answer for\n"
    "                        the worker that took the connection\n"
    "  --tune FILE           instances, threads and batch from `squint tune` (options given\n"
    "                        here win); MODEL.tune.json is used by default when it exists and\n"
    "                        none of --instances / --threads / --batch is given\n"
    "  --no-tune             ignore MODEL.tune.json\n"
    "\n"
    "Texts longer than the model's limit are truncated (as sentence-transformers does). For a\n"
    ".sqm each embedding is the same bytes `squint embed` gives that text, whatever shares its\n"
    "batch. SIGTERM or SIGINT: stop accepting, finish the requests in flight, exit 0.\n"
    "example:\n"
    "  squint serve bge-small.sqm --port 8080 &\n"
    "  curl -s localhost:8080/v1/embeddings -d '{\"input\": [\"a query\", \"a document\"]}'\n"
    "  squint serve stories260K.bin --port 8080 &\n"
    "  curl -sN localhost:8080/v1/completions -d '{\"prompt\": \"Once upon a time\", \"stream\": true}'\n";

int cmd_serve(int argc, char **argv)
{
    enum { O_HOST = 256, O_PORT, O_NAME, O_MAXB, O_WAIT, O_QUEUE, O_BODY, O_INPUTS, O_TOKENS,
           O_TIMEOUT, O_CONNS, O_KEY, O_QUIET, O_HEAD, O_HELP, O_INST, O_TUNE, O_NOTUNE,
           O_TOK, O_GENS, O_DRAFT, O_DRAFT_K, O_DRAFT_TOK, O_RANGES };
    static const struct option opts[] = {
        {"host", required_argument, 0, O_HOST},       {"port", required_argument, 0, O_PORT},
        {"model-name", required_argument, 0, O_NAME}, {"threads", required_argument, 0, 't'},
        {"batch", required_argument, 0, 'b'},         {"max-batch", required_argument, 0, O_MAXB},
        {"batch-wait", required_argument, 0, O_WAIT}, {"queue", required_argument, 0, O_QUEUE},
        {"max-body", required_argument, 0, O_BODY},   {"max-inputs", required_argument, 0, O_INPUTS},
        {"max-tokens", required_argument, 0, O_TOKENS},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"max-connections", required_argument, 0, O_CONNS},
        {"api-key-file", required_argument, 0, O_KEY}, {"quiet", no_argument, 0, O_QUIET},
        {"head", required_argument, 0, O_HEAD},
        {"instances", required_argument, 0, O_INST}, {"tune", required_argument, 0, O_TUNE},
        {"no-tune", no_argument, 0, O_NOTUNE},
        {"tokenizer", required_argument, 0, O_TOK},
        {"max-generations", required_argument, 0, O_GENS},
        {"draft", required_argument, 0, O_DRAFT},
        {"draft-tokens", required_argument, 0, O_DRAFT_K},
        {"draft-tokenizer", required_argument, 0, O_DRAFT_TOK},
        {"ranges", required_argument, 0, O_RANGES},
        {"help", no_argument, 0, O_HELP},             {0, 0, 0, 0}};
#ifdef SQ_HAVE_SERVE
    sq_serve_opts o = {.host = "127.0.0.1", .port = 8080, .batch = 32, .max_batch = 256,
                       .batch_wait_ms = 0, .queue = 64, .max_body = 8u << 20,
                       .max_inputs = 2048, .max_tokens = 262144, .timeout_s = 30,
                       .max_connections = 128, .max_generations = 4, .draft_tokens = 4};
#endif
    long threads = 0, v, instances = 0;
    const char *key_file = NULL, *tune_path = NULL;
    bool no_tune = false, batch_given = false;
    optind = 1;
    int c;
#define NUM(name, lo, hi, dst)                                                                     \
    do {                                                                                           \
        if (!cli_parse_int(optarg, lo, hi, &v))                                                    \
            return cli_usage_error("serve", "%s must be an integer in [%ld, %ld]", name,           \
                                   (long)(lo), (long)(hi));                                        \
        dst;                                                                                       \
    } while (0)
    while ((c = getopt_long(argc, argv, "t:b:", opts, NULL)) != -1) {
        switch (c) {
#ifdef SQ_HAVE_SERVE
        case O_HOST: o.host = optarg; break;
        case O_PORT: NUM("--port", 0, 65535, o.port = (int)v); break;
        case O_NAME: o.model_name = optarg; break;
        case 't': NUM("--threads", 1, SQ_THREADS_MAX, threads = v); break;
        case 'b': NUM("--batch", 1, SQ_BATCH_MAX, o.batch = (int)v); batch_given = true; break;
        case O_MAXB: NUM("--max-batch", 1, 65536, o.max_batch = (int)v); break;
        case O_WAIT: NUM("--batch-wait", 0, 10000, o.batch_wait_ms = (int)v); break;
        case O_QUEUE: NUM("--queue", 1, 1000000, o.queue = (int)v); break;
        case O_BODY: NUM("--max-body", 1024, 1L << 30, o.max_body = (size_t)v); break;
        case O_INPUTS: NUM("--max-inputs", 1, 1000000, o.max_inputs = v); break;
        case O_TOKENS: NUM("--max-tokens", 1, 1L << 30, o.max_tokens = v); break;
        case O_TIMEOUT: NUM("--timeout", 1, 86400, o.timeout_s = (int)v); break;
        case O_CONNS: NUM("--max-connections", 1, 10000, o.max_connections = (int)v); break;
        case O_KEY: key_file = optarg; break;
        case O_QUIET: o.quiet = true; break;
        case O_HEAD: o.head_path = optarg; break;
        case O_INST: NUM("--instances", 1, SQ_CPUS_MAX, instances = v); break;
        case O_TUNE: tune_path = optarg; break;
        case O_NOTUNE: no_tune = true; break;
        case O_TOK: o.tokenizer_path = optarg; break;
        case O_GENS: NUM("--max-generations", 1, 1024, o.max_generations = (int)v); break;
        case O_DRAFT: o.draft_path = optarg; break;
        case O_DRAFT_K: NUM("--draft-tokens", 1, 15, o.draft_tokens = (int)v); break;
        case O_DRAFT_TOK: o.draft_tokenizer_path = optarg; break;
        case O_RANGES: o.ranges_path = optarg; break;
#else
        case O_HOST: case O_PORT: case O_NAME: case 't': case 'b': case O_MAXB: case O_WAIT:
        case O_QUEUE: case O_BODY: case O_INPUTS: case O_TOKENS: case O_TIMEOUT: case O_CONNS:
        case O_KEY: case O_QUIET: case O_HEAD: case O_INST: case O_TUNE: case O_NOTUNE:
        case O_TOK: case O_GENS: case O_DRAFT: case O_DRAFT_K: case O_DRAFT_TOK: case O_RANGES:
            break;
#endif
        case O_HELP: fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("serve", "invalid option");
        }
    }
#undef NUM
    if (optind != argc - 1)
        return cli_usage_error("serve", optind >= argc ? "missing MODEL" : "one MODEL only");
#ifndef SQ_HAVE_SERVE
    (void)threads, (void)v, (void)key_file, (void)instances, (void)tune_path, (void)no_tune,
        (void)batch_given;
    fprintf(stderr, "squint serve: this squint was built without libmicrohttpd (Debian: "
                    "libmicrohttpd-dev); rebuild to serve\n");
    return SQ_EXIT_FAIL;
#else
    o.model_path = argv[optind];
    sq_err err = {0};
    if (tune_path && no_tune)
        return cli_usage_error("serve", "--tune and --no-tune contradict each other");
    if (o.draft_tokenizer_path && !o.draft_path)
        return cli_usage_error("serve", "--draft-tokenizer applies to a --draft model");
    if (tune_path || (!no_tune && !instances && !threads && !batch_given)) {
        sq_tune_file t;
        int got = tune_load_for("serve", o.model_path, tune_path, &t, &err);
        if (got < 0)
            return cli_fail("serve", &err);
        if (got) {
            instances = instances ? instances : t.instances;
            threads = threads ? threads : t.threads;
            o.batch = batch_given ? o.batch : t.batch;
        }
    }
    /* --instances: the workers set their own thread count after forking. */
    o.threads = instances ? (int)threads : sq_threads_init((int)threads);
    char *key = NULL;
    if (key_file) {
        size_t len;
        if (sq_read_file(key_file, 4096, &key, &len, &err) != 0)
            return cli_fail("serve", &err);
        key[strcspn(key, "\r\n")] = '\0';
        if (!key[0]) {
            free(key);
            sq_err_set(&err, "%s: the first line (the API key) is empty", key_file);
            return cli_fail("serve", &err);
        }
        o.api_key = key;
    } else if (getenv("SQUINT_API_KEY") && getenv("SQUINT_API_KEY")[0]) {
        o.api_key = getenv("SQUINT_API_KEY");
    }
    int rc = instances ? sq_serve_instances_run(&o, (int)instances, (int)threads, &err)
                       : sq_serve_run(&o, &err);
    free(key);
    return rc == 0 ? SQ_EXIT_OK : cli_fail("serve", &err);
#endif
}

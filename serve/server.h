/* squint serve: an HTTP/1.1 embedding (or text generation) server on libmicrohttpd.
 *   POST /v1/embeddings  OpenAI-compatible (http_api.h)
 *   POST /embed          text-embeddings-inference-style
 *   GET  /health         {"status": "ok", ...}; 503 while draining
 *   GET  /info           the model: name, dim, max_seq, quantized
 *   GET  /metrics        Prometheus text (metrics.h)
 *   POST /rerank         {"query", "texts"} -> [{"index", "score"}] by cosine
 *   POST /classify       with a head (--head, or stored in the .sqm): [[{"label", "score"}], ...]
 *   POST /v1/completions a causal LM's text (completion_api.h), whole or streamed
 *                        as Server-Sent Events; the embedding endpoints answer 400
 *                        for such a model, and /v1/completions 400 for an encoder
 * Concurrent requests are coalesced by the batcher (batcher.h); a full queue
 * answers 503 with Retry-After; a body over max_body, or more inputs or
 * tokens than allowed, 413; a bad body 400; every error is JSON. With an API
 * key, every endpoint but /health needs `Authorization: Bearer KEY`
 * (compared in constant time), else 401. SIGTERM / SIGINT: stop accepting,
 * finish the requests in flight, exit 0. */
#ifndef SQ_SERVE_SERVER_H
#define SQ_SERVE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

struct sq_serve_worker;

typedef struct sq_serve_opts {
    const char *model_path;
    const char *model_name;  /* reported as "model"; default: the file name */
    const char *host;        /* numeric IPv4 / IPv6 address or "localhost" */
    int port;                /* 0: any free port (printed) */
    int threads;             /* encoder threads */
    int batch;               /* sequences per forward pass */
    int max_batch;           /* texts coalesced into one encoder call */
    int batch_wait_ms;       /* how long the batcher waits for more texts */
    int queue;               /* requests that may wait for the batcher */
    size_t max_body;         /* bytes */
    int64_t max_inputs;      /* texts per request */
    int64_t max_tokens;      /* tokens per request (after truncation) */
    int timeout_s;           /* idle / slow client timeout */
    int max_connections;
    const char *api_key;     /* NULL: none */
    const char *head_path;   /* a classification head (heads/head.h) for /classify */
    const char *ranges_path; /* [2, dim] ranges for int8 / uint8 embeddings (emb_precision.h) */
    /* a causal LM (POST /v1/completions, completions.h) */
    const char *tokenizer_path; /* NULL: found next to the checkpoint (llama_model.h) */
    const char *draft_path;  /* assisted generation; NULL: none */
    const char *draft_tokenizer_path; /* the draft's llama2.c tokenizer; NULL: next to it */
    int draft_tokens;        /* 1 .. SQ_GEN_MAX_DRAFT */
    int max_generations;     /* concurrent generations; beyond: 503 */
    bool quiet;              /* no access log */
    struct sq_serve_worker *worker; /* NULL: bind host:port; else a worker of serve
                                       --instances (instances.h) */
} sq_serve_opts;

/* Open the model, listen, and serve until SIGTERM / SIGINT. Prints
 * "squint serve: listening on http://HOST:PORT ..." to stderr once ready.
 * Returns 0 after a clean shutdown, -1 with err when it cannot start. */
int sq_serve_run(const sq_serve_opts *o, sq_err *err);

struct sockaddr_storage;
/* The listening address: a numeric IPv4 / IPv6 address, or "localhost". */
int sq_serve_bind_addr(const char *host, int port, struct sockaddr_storage *ss, bool *v6,
                       sq_err *err);

#endif

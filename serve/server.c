/* squint serve (server.h): libmicrohttpd with a thread per connection; each
 * request is parsed and tokenized on its connection's thread, embedded by the
 * batcher, and answered there. A causal LM generates instead
 * (completions.h): on the connection's thread, or streamed from a thread of
 * its own. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "batcher.h"
#include "seq_classify.h"
#include "embed_model.h"
#include "rank_order.h"
#include "head.h"
#include "sqm_class_head.h"
#include "http_api.h"
#include "linear.h"
#include "metrics.h"
#include "pooling.h"
#include "instances.h"
#include "completions.h"
#include "conn_deadline.h"
#include "dec_sqm.h"
#include "generate.h"
#include "lm_judge.h"
#include "llama_model.h"
#include "op_profile.h"

typedef struct server {
    const sq_serve_opts *o;
    sq_embed_model model;
    char name[256];
    int dim;
    sq_serve_metrics metrics;
    sq_batcher batcher;
    sq_head head;
    bool has_head;
    pthread_mutex_t mu;
    bool draining;
    /* a causal LM (text generation) instead of an encoder */
    bool decoder;
    sq_llama_model lm, draft;
    bool has_draft;
    sq_cmpl_engine cmpl;
    char draft_name[256];
    /* the causal LM as a yes/no judge for POST /rerank (lm_judge.h); when it
     * cannot be one, judge_why says why */
    sq_lm_judge judge;
    bool judge_ok;
    char judge_why[sizeof(((sq_err *)0)->msg)];
    /* the whole-request deadline (conn_deadline.h) */
    sq_deadline *deadline;
    float *ranges; /* --ranges [2][dim] (emb_precision.h), NULL: none */
    /* what is open, for close_server */
    bool model_open, lm_open, metrics_ok, cmpl_ok;
} server;

/* One request's state across libmicrohttpd's calls. */
typedef struct conn_req {
    sq_endpoint ep;
    char *body;
    size_t len, cap;
    bool too_big;
    double t0;
    int64_t texts, tokens; /* for the access log */
} conn_req;

static bool is_draining(server *s)
{
    pthread_mutex_lock(&s->mu);
    bool d = s->draining;
    pthread_mutex_unlock(&s->mu);
    return d;
}

static sq_endpoint route(const char *url)
{
    if (!strcmp(url, "/v1/embeddings") || !strcmp(url, "/embeddings"))
        return SQ_EP_EMBEDDINGS;
    if (!strcmp(url, "/embed"))
        return SQ_EP_EMBED;
    if (!strcmp(url, "/health"))
        return SQ_EP_HEALTH;
    if (!strcmp(url, "/metrics"))
        return SQ_EP_METRICS;
    if (!strcmp(url, "/info"))
        return SQ_EP_INFO;
    if (!strcmp(url, "/classify") || !strcmp(url, "/predict"))
        return SQ_EP_CLASSIFY;
    if (!strcmp(url, "/rerank"))
        return SQ_EP_RERANK;
    if (!strcmp(url, "/v1/completions") || !strcmp(url, "/completions"))
        return SQ_EP_COMPLETIONS;
    return SQ_EP_OTHER;
}

/* Queue resp (taken): headers, the metrics, the access log. extra: "Name:
 * value" pairs, NULL-ended. */
static enum MHD_Result queue(server *s, struct MHD_Connection *c, conn_req *r, int status,
                             const char *ctype, struct MHD_Response *resp,
                             const char *const *extra)
{
    MHD_add_response_header(resp, "Content-Type", ctype);
    for (int i = 0; extra && extra[i]; i += 2)
        MHD_add_response_header(resp, extra[i], extra[i + 1]);
    if (is_draining(s))
        MHD_add_response_header(resp, "Connection", "close");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) /* counted once it is on its way */
        sq_metrics_request(&s->metrics, r->ep, status);
    double dt = sq_op_now() - r->t0;
    if (r->ep == SQ_EP_EMBEDDINGS || r->ep == SQ_EP_EMBED || r->ep == SQ_EP_CLASSIFY ||
        r->ep == SQ_EP_RERANK)
        sq_metrics_latency(&s->metrics, dt);
    if (!s->o->quiet) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char addr[64] = "-";
        if (ci && ci->client_addr) {
            const struct sockaddr *sa = ci->client_addr;
            if (sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
            else if (sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr,
                          sizeof addr);
        }
        fprintf(stderr, "squint serve: %s %s %d texts %lld tokens %lld %.1f ms\n", addr,
                sq_endpoint_label(r->ep), status, (long long)r->texts, (long long)r->tokens,
                1e3 * dt);
    }
    return ret;
}

/* Queue sb (taken) as the response. */
static enum MHD_Result reply(server *s, struct MHD_Connection *c, conn_req *r, int status,
                             const char *ctype, sq_strbuf *sb, const char *const *extra)
{
    if (sb->failed) {
        sq_sb_free(sb);
        sq_sb_printf(sb, "{\"error\":\"out of memory\"}");
        status = 500;
    }
    size_t len = sb->len;
    char *body = sb->s ? sb->s : strdup("");
    sb->s = NULL;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    return queue(s, c, r, status, ctype, resp, extra);
}

static enum MHD_Result reply_error(server *s, struct MHD_Connection *c, conn_req *r, int status,
                                   const char *const *extra, const char *fmt, ...)
    SQ_PRINTF(6, 7);
static enum MHD_Result reply_error(server *s, struct MHD_Connection *c, conn_req *r, int status,
                                   const char *const *extra, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sq_deadline_received(s->deadline, c); /* answered: no longer a request on its way */
    sq_strbuf sb = {0};
    /* TEI's error style on its endpoints (/embed, /rerank, /classify), OpenAI's elsewhere */
    const bool tei = r->ep == SQ_EP_EMBED || r->ep == SQ_EP_RERANK || r->ep == SQ_EP_CLASSIFY;
    sq_api_error(tei ? SQ_API_TEI : SQ_API_OPENAI, status, msg, &sb);
    return reply(s, c, r, status, "application/json", &sb, extra);
}

/* Authorization: Bearer KEY, compared without an early exit on the first
 * differing byte (the time does not tell how much of a guess was right). */
static bool authorized(server *s, struct MHD_Connection *c)
{
    const char *key = s->o->api_key;
    if (!key)
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    size_t kl = strlen(key), hl = strlen(h);
    unsigned char diff = kl != hl;
    for (size_t i = 0; i < kl; i++)
        diff |= (unsigned char)key[i] ^ (unsigned char)(i < hl ? h[i] : 0);
    return diff == 0;
}

static enum MHD_Result handle_get(server *s, struct MHD_Connection *c, conn_req *r)
{
    sq_strbuf sb = {0};
    if (r->ep == SQ_EP_METRICS) {
        sq_metrics_render(&s->metrics, s->name, &sb);
        return reply(s, c, r, 200, "text/plain; version=0.0.4; charset=utf-8", &sb, NULL);
    }
    bool draining = is_draining(s);
    if (r->ep == SQ_EP_HEALTH)
        sq_sb_printf(&sb, "{\"status\":\"%s\"}", draining ? "draining" : "ok");
    else if (s->decoder) {
        const sq_decoder_config *dc = &s->lm.dec.cfg;
        sq_sb_printf(&sb,
                     "{\"model\":\"%s\",\"task\":\"text-generation\",\"kind\":\"decoder\","
                     "\"architecture\":\"llama\",\"context\":%d,\"vocab\":%d,\"dim\":%d,"
                     "\"layers\":%d,\"quantized\":%s,\"max_generations\":%d,\"max_body\":%zu,"
                     "\"draft\":%s%s%s,\"endpoints\":[\"/v1/completions\"%s]}",
                     s->name, dc->max_pos, dc->vocab, dc->dim, dc->n_layers,
                     s->lm.sqm ? "true" : "false", s->o->max_generations, s->o->max_body,
                     s->has_draft ? "\"" : "", s->has_draft ? s->draft_name : "null",
                     s->has_draft ? "\"" : "", s->judge_ok ? ",\"/rerank\"" : "");
    } else
        sq_sb_printf(&sb,
                     "{\"model\":\"%s\",\"task\":\"%s\",\"dim\":%d,\"max_seq\":%d,\"quantized\":%s,"
                     "\"pooling\":\"%s\",\"normalize\":%s,\"max_inputs\":%lld,"
                     "\"max_tokens\":%lld,\"max_body\":%zu}",
                     s->name, sq_model_is_classifier(&s->model) ? "cross-encoder" : "embedding",
                     s->dim, s->model.max_seq, s->model.is_sqm ? "true" : "false",
                     sq_pooling_name(s->model.pool.pooling),
                     s->model.pool.normalize ? "true" : "false", (long long)s->o->max_inputs,
                     (long long)s->o->max_tokens, s->o->max_body);
    return reply(s, c, r, draining && r->ep == SQ_EP_HEALTH ? 503 : 200, "application/json", &sb,
                 NULL);
}

/* A cross-encoder's /rerank: texts[0] is the query, each document makes the
 * pair (query, document). */
static int tokenize_rerank_pairs(server *s, const sq_embed_request *req, sq_token_seqs *seqs,
                                 sq_err *err)
{
    int64_t n = req->n - 1;
    const char **q = malloc((size_t)(n > 0 ? n : 1) * sizeof *q);
    size_t *ql = malloc((size_t)(n > 0 ? n : 1) * sizeof *ql);
    int rc = -1;
    if (!q || !ql) {
        sq_err_set(err, "out of memory");
    } else {
        for (int64_t i = 0; i < n; i++)
            q[i] = req->texts[0], ql[i] = req->lens[0];
        rc = sq_tokenize_pairs(&s->model, q, ql, req->texts + 1, req->lens + 1, n,
                               s->model.max_seq, seqs, err);
    }
    free(q);
    free(ql);
    return rc;
}

static enum MHD_Result handle_embed(server *s, struct MHD_Connection *c, conn_req *r)
{
    static const char *const retry[] = {"Retry-After", "1", NULL};
    if (is_draining(s))
        return reply_error(s, c, r, 503, retry, "the server is shutting down");
    if (s->decoder)
        return reply_error(s, c, r, 400, NULL,
                           "the model is a causal LM (a decoder): it generates text (POST "
                           "/v1/completions); %s is for an encoder model",
                           sq_endpoint_label(r->ep));
    if (r->ep == SQ_EP_CLASSIFY && !s->has_head)
        return reply_error(s, c, r, 404, NULL,
                           "no classification head: start the server with --head HEAD, or serve a .sqm "
                           "quantized with --head");
    const bool cross = sq_model_is_classifier(&s->model);
    if (cross && r->ep != SQ_EP_RERANK)
        return reply_error(s, c, r, 400, NULL,
                           "the model is a cross-encoder: it scores query/document pairs "
                           "(POST /rerank), it gives no embeddings");
    const sq_api_kind k = r->ep == SQ_EP_EMBEDDINGS ? SQ_API_OPENAI : SQ_API_TEI;
    sq_embed_request req;
    char msg[512];
    const char *body = r->body ? r->body : "";
    int st = r->ep == SQ_EP_RERANK
                 ? sq_api_parse_rerank(body, r->len, s->o->max_inputs, &req, msg, sizeof msg)
                 : sq_api_parse_embed(k, body, r->len, s->dim, s->o->max_inputs, &req, msg,
                                      sizeof msg);
    if (st) {
        sq_api_request_free(&req);
        return reply_error(s, c, r, st, NULL, "%s", msg);
    }
    if (req.instruction) {
        sq_api_request_free(&req);
        return reply_error(s, c, r, 400, NULL,
                           "\"instruction\" is for a causal LM reranking as Qwen3-Reranker "
                           "does; this model is an embedding model or a cross-encoder");
    }
    if ((r->ep == SQ_EP_CLASSIFY || r->ep == SQ_EP_RERANK) && req.precision != SQ_PREC_FLOAT32) {
        sq_api_request_free(&req);
        return reply_error(s, c, r, 400, NULL, "\"precision\" applies to embeddings only");
    }
    if (sq_emb_precision_needs_ranges(req.precision) &&
        (!s->ranges || (req.dimensions && req.dimensions != s->dim))) {
        sq_api_request_free(&req);
        return reply_error(s, c, r, 400, NULL, s->ranges
                               ? "\"precision\" %s with \"dimensions\": the ranges (--ranges) "
                                 "are calibrated for the whole width"
                               : "\"precision\" %s needs calibration ranges: start the server "
                                 "with --ranges F.npy (squint embed --ranges-out writes them)",
                           sq_emb_precision_name(req.precision));
    }
    if (r->ep == SQ_EP_CLASSIFY && req.dimensions) {
        sq_api_request_free(&req);
        return reply_error(s, c, r, 400, NULL,
                           "\"dimensions\" does not apply to /classify (the head reads the "
                           "whole embedding)");
    }
    if (r->ep == SQ_EP_CLASSIFY) /* embedded as the head was trained */
        req.normalize = s->head.normalized;
    r->texts = req.n;
    sq_embed_job job = {0};
    sq_err err = {0};
    enum MHD_Result ret;
    /* Tokenizing is cheap and runs on this connection's thread: one thread,
     * not an OpenMP team per request. */
    omp_set_num_threads(1);
    if ((cross ? tokenize_rerank_pairs(s, &req, &job.seqs, &err)
               : sq_tokenize_texts(&s->model, req.texts, req.lens, req.n, s->model.max_seq,
                                   false, &job.seqs, &err)) != 0) {
        ret = reply_error(s, c, r, 400, NULL, "%s", err.msg);
        goto out;
    }
    r->tokens = job.seqs.offsets[job.seqs.n];
    if (r->tokens > s->o->max_tokens) {
        ret = reply_error(s, c, r, 413, NULL,
                          "%lld tokens in one request (after truncation to %d per text); the "
                          "limit is %lld (--max-tokens)",
                          (long long)r->tokens, s->model.max_seq, (long long)s->o->max_tokens);
        goto out;
    }
    job.normalize = req.normalize < 0 ? s->model.pool.normalize : req.normalize == 1;
    job.emb = malloc((size_t)req.n * s->dim * sizeof(float));
    if (cross)
        job.logits = malloc((size_t)req.n * sizeof(float));
    if (!job.emb || (cross && !job.logits)) {
        ret = reply_error(s, c, r, 500, NULL, "out of memory for %lld embeddings",
                          (long long)req.n);
        goto out;
    }
    if (sq_batcher_submit(&s->batcher, &job) != 0) {
        sq_metrics_rejected(&s->metrics);
        ret = reply_error(s, c, r, 503, retry,
                          "the queue is full (%d requests waiting, --queue); retry later",
                          s->o->queue);
        goto out;
    }
    sq_batcher_wait(&s->batcher, &job);
    if (job.rc != 0) {
        ret = reply_error(s, c, r, 500, NULL, "%s", job.err.msg);
        goto out;
    }
    sq_metrics_texts(&s->metrics, req.n);
    sq_strbuf sb = {0};
    if (r->ep == SQ_EP_RERANK) {
        double *score = malloc((size_t)req.n * sizeof *score);
        int64_t *order = malloc((size_t)req.n * sizeof *order);
        if (score && order && cross) /* one pair per document */
            sq_scores_from_logits(s->model.enc.cfg.score_act, 1, job.logits, req.n - 1, score);
        if (!score || !order ||
            (cross ? sq_rank_scores(score, req.n - 1, order)
                   : sq_rank_by_cosine(job.emb, job.emb + s->dim, req.n - 1, s->dim, score,
                                       order)) != 0) {
            free(score), free(order);
            ret = reply_error(s, c, r, 500, NULL, "out of memory");
            goto out;
        }
        sq_api_rerank_response(score, order, req.n - 1, &sb);
        free(score), free(order);
    } else if (r->ep == SQ_EP_CLASSIFY) {
        double *probs = malloc((size_t)req.n * s->head.classes * sizeof *probs);
        if (!probs) {
            ret = reply_error(s, c, r, 500, NULL, "out of memory");
            goto out;
        }
        sq_head_apply(&s->head, job.emb, req.n, probs);
        sq_api_classify_response(probs, req.n, s->head.classes,
                                 (const char *const *)s->head.labels, &sb);
        free(probs);
    } else {
        const int dims = req.dimensions ? req.dimensions : s->dim;
        sq_truncate_dims(job.emb, req.n, s->dim, dims, job.normalize);
        const int width = sq_emb_precision_width(req.precision, dims);
        uint8_t *codes = NULL;
        if (req.precision != SQ_PREC_FLOAT32) {
            if (!(codes = malloc((size_t)req.n * width))) {
                ret = reply_error(s, c, r, 500, NULL, "out of memory");
                goto out;
            }
            sq_emb_quantize(req.precision, job.emb, req.n, dims, s->ranges, codes);
        }
        sq_api_embed_response(k, &req, job.emb, dims, codes, width, r->tokens, s->name, &sb);
        free(codes);
    }
    ret = reply(s, c, r, 200, "application/json", &sb, NULL);
out:
    free(job.emb);
    free(job.logits);
    sq_token_seqs_free(&job.seqs);
    sq_api_request_free(&req);
    return ret;
}

/* A causal LM's POST /rerank (TEI's body and answer): each text judged
 * against the query by the LM (lm_judge.h), in a generation slot, on this
 * connection's thread. The scores are those of `squint rerank`. */
static enum MHD_Result handle_judge(server *s, struct MHD_Connection *c, conn_req *r)
{
    static const char *const retry[] = {"Retry-After", "1", NULL};
    if (is_draining(s))
        return reply_error(s, c, r, 503, retry, "the server is shutting down");
    if (!s->judge_ok)
        return reply_error(s, c, r, 400, NULL,
                           "this causal LM cannot rerank: %s; it generates text (POST "
                           "/v1/completions)", s->judge_why);
    sq_embed_request req;
    char msg[512];
    int st = sq_api_parse_rerank(r->body ? r->body : "", r->len, s->o->max_inputs, &req, msg,
                                 sizeof msg);
    if (st) {
        sq_api_request_free(&req);
        return reply_error(s, c, r, st, NULL, "%s", msg);
    }
    const int64_t n = req.n - 1;
    r->texts = req.n;
    sq_err err = {0};
    /* "instruction": a judge for this request (the fixed prompt's ids, a
     * few hundred bytes), at the server's length; zeroed, freeing it is a
     * no-op when there is none */
    sq_lm_judge own = {0};
    const sq_lm_judge *judge = &s->judge;
    enum MHD_Result ret;
    if (req.instruction) {
        if (sq_lm_judge_init(&own, &s->lm, req.instruction, s->judge.max_seq, &err) != 0) {
            ret = reply_error(s, c, r, 400, NULL, "\"instruction\": %s", err.msg);
            goto out;
        }
        judge = &own;
    }
    /* the prompts' tokens, for --max-tokens, before any forward */
    int64_t tokens = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t *ids;
        int k = sq_lm_judge_prompt(judge, req.texts[0], req.lens[0], req.texts[i + 1],
                                   req.lens[i + 1], &ids, &err);
        free(ids);
        if (k < 0) {
            ret = reply_error(s, c, r, 500, NULL, "%s", err.msg);
            goto out;
        }
        tokens += k;
    }
    r->tokens = tokens;
    if (tokens > s->o->max_tokens) {
        ret = reply_error(s, c, r, 413, NULL,
                          "%lld prompt tokens in one request (after truncation to %d per "
                          "pair); the limit is %lld (--max-tokens)",
                          (long long)tokens, s->judge.max_seq, (long long)s->o->max_tokens);
        goto out;
    }
    if ((st = sq_cmpl_slot_take(&s->cmpl, msg, sizeof msg)) != 0) {
        ret = reply_error(s, c, r, st, retry, "%s", msg);
        goto out;
    }
    const char **q = malloc((size_t)n * sizeof *q);
    size_t *ql = malloc((size_t)n * sizeof *ql);
    double *score = malloc((size_t)n * sizeof *score);
    int64_t *order = malloc((size_t)n * sizeof *order);
    int rc = q && ql && score && order ? 0 : sq_err_set(&err, "out of memory");
    for (int64_t i = 0; rc == 0 && i < n; i++)
        q[i] = req.texts[0], ql[i] = req.lens[0];
    if (rc == 0) {
        if (s->cmpl.threads > 0)
            omp_set_num_threads(s->cmpl.threads);
        rc = sq_lm_judge_score(judge, q, ql, req.texts + 1, req.lens + 1, n, score, NULL, NULL,
                               NULL, &err);
    }
    sq_cmpl_slot_release(&s->cmpl);
    if (rc == 0 && sq_rank_scores(score, n, order) != 0)
        rc = sq_err_set(&err, "out of memory");
    if (rc != 0) {
        ret = reply_error(s, c, r, 500, NULL, "%s", err.msg);
    } else {
        sq_metrics_texts(&s->metrics, req.n);
        sq_strbuf sb = {0};
        sq_api_rerank_response(score, order, n, &sb);
        ret = reply(s, c, r, 200, "application/json", &sb, NULL);
    }
    free(q), free(ql), free(score), free(order);
out:
    sq_lm_judge_free(&own);
    sq_api_request_free(&req);
    return ret;
}

/* POST /v1/completions: a whole body, or Server-Sent Events. */
static enum MHD_Result handle_completion(server *s, struct MHD_Connection *c, conn_req *r)
{
    static const char *const retry[] = {"Retry-After", "1", NULL};
    if (is_draining(s))
        return reply_error(s, c, r, 503, retry, "the server is shutting down");
    if (!s->decoder)
        return reply_error(s, c, r, 400, NULL,
                           "the model is an encoder: it gives embeddings, not text (serve a causal "
                           "LM, a llama2.c checkpoint, Hugging Face Llama folder or decoder .sqm, "
                           "for POST /v1/completions)");
    sq_cmpl_job *job;
    char msg[512];
    int st = sq_cmpl_begin(&s->cmpl, r->body ? r->body : "", r->len, &job, msg, sizeof msg);
    if (st)
        return reply_error(s, c, r, st, st == 503 ? retry : NULL, "%s", msg);
    r->texts = 1;
    r->tokens = sq_cmpl_prompt_tokens(job);
    if (sq_cmpl_streamed(job)) {
        struct MHD_Response *resp = sq_cmpl_stream_response(job);
        if (!resp)
            return reply_error(s, c, r, 500, NULL, "cannot start the generation thread");
        static const char *const sse[] = {"Cache-Control", "no-cache", "X-Accel-Buffering", "no",
                                          NULL};
        return queue(s, c, r, 200, "text/event-stream", resp, sse);
    }
    sq_strbuf sb = {0};
    sq_err err = {0};
    if (sq_cmpl_run(job, &sb, &err) != 0) {
        sq_sb_free(&sb);
        return reply_error(s, c, r, 500, NULL, "generation failed: %s", err.msg);
    }
    return reply(s, c, r, 200, "application/json", &sb, NULL);
}

/* The headers that frame a request body: every Content-Length value (they
 * must agree: two different ones are a request-smuggling shape, RFC 9112
 * 6.3) and the Transfer-Encoding (a coding libmicrohttpd does not decode,
 * "gzip, chunked", would leave the body unframed until the timeout). */
typedef struct body_framing {
    char length[32], other[32];
    bool lengths_differ;
    char coding[64];
} body_framing;

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    body_framing *bf = cls;
    if (!value)
        return MHD_YES;
    if (strcasecmp(key, "Content-Length") == 0) {
        if (!bf->length[0])
            snprintf(bf->length, sizeof bf->length, "%s", value);
        else if (strcmp(bf->length, value) != 0 && !bf->lengths_differ) {
            snprintf(bf->other, sizeof bf->other, "%s", value);
            bf->lengths_differ = true;
        }
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        snprintf(bf->coding, sizeof bf->coding, "%s", value);
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **ctx)
{
    (void)version;
    server *s = cls;
    conn_req *r = *ctx;
    if (!r) { /* headers are in: route, method, auth, declared size */
        if (!(r = calloc(1, sizeof *r)))
            return MHD_NO;
        r->t0 = sq_op_now();
        r->ep = route(url);
        *ctx = r;
        sq_metrics_add_gauge(&s->metrics, &s->metrics.in_flight, 1);
        const bool post = r->ep == SQ_EP_EMBEDDINGS || r->ep == SQ_EP_EMBED ||
                          r->ep == SQ_EP_CLASSIFY || r->ep == SQ_EP_RERANK ||
                          r->ep == SQ_EP_COMPLETIONS;
        if (r->ep == SQ_EP_OTHER)
            return reply_error(s, c, r, 404, NULL,
                               "no such endpoint (POST /v1/embeddings, POST /embed, POST /rerank, "
                               "POST /classify, POST /v1/completions, GET /health, GET /info, "
                               "GET /metrics)");
        if (post && strcmp(method, "POST") != 0) {
            static const char *const allow[] = {"Allow", "POST", NULL};
            return reply_error(s, c, r, 405, allow, "%s takes POST", sq_endpoint_label(r->ep));
        }
        if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
            static const char *const allow[] = {"Allow", "GET, HEAD", NULL};
            return reply_error(s, c, r, 405, allow, "%s takes GET", sq_endpoint_label(r->ep));
        }
        if (r->ep != SQ_EP_HEALTH && !authorized(s, c)) {
            static const char *const www[] = {"WWW-Authenticate", "Bearer", NULL};
            return reply_error(s, c, r, 401, www,
                               "missing or wrong API key (Authorization: Bearer KEY)");
        }
        if (!post) {
            sq_deadline_received(s->deadline, c);
            return handle_get(s, c, r);
        }
        /* framing the body: one Content-Length value, chunked the only coding */
        body_framing bf = {0};
        MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &bf);
        if (bf.lengths_differ)
            return reply_error(s, c, r, 400, NULL,
                               "conflicting Content-Length headers (%s and %s)", bf.length,
                               bf.other);
        if (bf.coding[0] && strcasecmp(bf.coding, "chunked") != 0)
            return reply_error(s, c, r, 501, NULL,
                               "Transfer-Encoding \"%s\" is not supported (only chunked)",
                               bf.coding);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(cl, &end, 10);
            if (errno || *end || v > s->o->max_body)
                return reply_error(s, c, r, 413, NULL,
                                   "the body is %s bytes; the limit is %zu (--max-body)", cl,
                                   s->o->max_body);
        }
        return MHD_YES; /* the body follows */
    }
    if (*upload_size) { /* a piece of the body */
        size_t n = *upload_size;
        *upload_size = 0;
        if (r->too_big)
            return MHD_YES;
        if (r->len + n > s->o->max_body) {
            r->too_big = true; /* chunked past the limit: read and drop the rest */
            free(r->body);
            r->body = NULL;
            r->len = r->cap = 0;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + n + 1)
                cap *= 2;
            char *b = realloc(r->body, cap);
            if (!b)
                return MHD_NO;
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload, n);
        r->len += n;
        r->body[r->len] = '\0';
        return MHD_YES;
    }
    sq_deadline_received(s->deadline, c); /* the body is in: the work may take longer */
    if (r->too_big)
        return reply_error(s, c, r, 413, NULL, "the body is over %zu bytes (--max-body)",
                           s->o->max_body);
    if (r->ep == SQ_EP_COMPLETIONS)
        return handle_completion(s, c, r);
    if (r->ep == SQ_EP_RERANK && s->decoder)
        return handle_judge(s, c, r);
    return handle_embed(s, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    server *s = cls;
    sq_deadline_rearm(s->deadline, c); /* a keep-alive client's next request starts now */
    conn_req *r = *ctx;
    if (!r)
        return;
    free(r->body);
    free(r);
    *ctx = NULL;
    sq_metrics_add_gauge(&s->metrics, &s->metrics.in_flight, -1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    fprintf(stderr, "squint serve: http: %s\n", line);
}

int sq_serve_bind_addr(const char *host, int port, struct sockaddr_storage *ss, bool *v6,
                       sq_err *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = strcmp(host, "localhost") ? AI_NUMERICHOST : 0};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0 || !ai)
        return sq_err_set(err, "--host %s: not a numeric IPv4 / IPv6 address or localhost (%s)",
                          host, gai_strerror(rc));
    memset(ss, 0, sizeof *ss);
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *v6 = ai->ai_family == AF_INET6;
    if (*v6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    freeaddrinfo(ai);
    return 0;
}

static void base_name(const char *path, char *out, size_t n)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t b = len;
    while (b > 0 && path[b - 1] != '/')
        b--;
    size_t e = len;
    const char *dot = memchr(path + b, '.', len - b);
    if (dot && !strncmp(dot, ".sqm", 4) && (size_t)(dot - path) + 4 == len)
        e = (size_t)(dot - path);
    snprintf(out, n, "%.*s", (int)(e - b), path + b);
}

/* Names go into JSON and metrics labels hand-written: printable ASCII
 * without quotes or backslashes only. */
static void sanitize_name(char *name)
{
    for (char *p = name; *p; p++)
        if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
            *p = '_';
}

/* A causal LM (text generation), and its draft model if any. */
static int open_decoder(server *s, sq_err *err)
{
    const sq_serve_opts *o = s->o;
    if (o->head_path || o->ranges_path)
        return sq_err_set(err, "%s: a causal LM takes no --head or --ranges", o->model_path);
    if (sq_llama_model_open(o->model_path, o->tokenizer_path, &s->lm, err) != 0)
        return -1;
    s->lm_open = true;
    if (o->draft_path) {
        if (sq_llama_draft_open(o->draft_path, o->draft_tokenizer_path, &s->draft, err) != 0)
            return -1;
        s->has_draft = true;
        if (sq_gen_check_draft(&s->lm, &s->draft, err) != 0)
            return sq_err_prefix(err, "%s cannot draft for %s", o->draft_path, o->model_path);
        base_name(o->draft_path, s->draft_name, sizeof s->draft_name);
        sanitize_name(s->draft_name);
    }
    s->dim = s->lm.dec.cfg.dim;
    /* POST /rerank when the LM can judge (a ChatML tokenizer with yes / no) */
    sq_err why = {0};
    s->judge_ok = sq_lm_judge_init(&s->judge, &s->lm, NULL, 0, &why) == 0;
    if (!s->judge_ok)
        snprintf(s->judge_why, sizeof s->judge_why, "%s", why.msg);
    return 0;
}

/* An encoder: embeddings, a cross-encoder's /rerank, a head's /classify. */
static int open_encoder(server *s, sq_err *err)
{
    const sq_serve_opts *o = s->o;
    if (o->tokenizer_path || o->draft_path)
        return sq_err_set(err, "%s: --tokenizer and --draft are for a causal LM; this is not one",
                          o->model_path);
    if (sq_embed_model_open(o->model_path, &s->model, err) != 0)
        return -1;
    s->model_open = true;
    sq_isa isa;
    if (s->model.is_sqm && sq_linear_isa(&isa, err) != 0)
        return -1;
    s->dim = s->model.enc.cfg.hidden;
    if (sq_model_is_classifier(&s->model) &&
        (s->model.enc.cfg.num_labels != 1 || o->head_path))
        return sq_err_set(err, "%s: a sequence classifier is served as a cross-encoder (POST "
                               "/rerank): it needs one label (it has %d) and takes no --head",
                          o->model_path, s->model.enc.cfg.num_labels);
    /* /classify: the --head file, else the head stored in the .sqm, else none. */
    if (o->head_path || (s->model.is_sqm && sq_sqm_has_class_head(&s->model.sqm))) {
        if (sq_head_for_model(o->model_path, s->model.is_sqm ? &s->model.sqm : NULL,
                              o->head_path, s->dim, &s->head, err) != 0)
            return -1;
        s->has_head = true;
    }
    if (o->ranges_path && /* int8 / uint8 embeddings: [2, dim], min row then max row */
        (!(s->ranges = malloc((size_t)2 * s->dim * sizeof *s->ranges)) ||
         sq_emb_ranges_load(o->ranges_path, s->dim, s->ranges, err) != 0))
        return s->ranges ? -1 : sq_err_set(err, "out of memory");
    return 0;
}

/* The generation engine or the encoder's batcher, with the metrics. */
static int start_engine(server *s, sq_err *err)
{
    const sq_serve_opts *o = s->o;
    if (sq_metrics_init(&s->metrics) != 0)
        return sq_err_set(err, "cannot create the metrics lock");
    s->metrics_ok = true;
    if (s->decoder) {
        s->cmpl = (sq_cmpl_engine){.m = &s->lm, .draft = s->has_draft ? &s->draft : NULL,
                                   .draft_tokens = o->draft_tokens, .threads = o->threads,
                                   .max_active = o->max_generations, .model_name = s->name,
                                   .metrics = &s->metrics};
        if (sq_cmpl_engine_init(&s->cmpl) != 0)
            return sq_err_set(err, "cannot create the generation lock");
        s->cmpl_ok = true;
        return 0;
    }
    s->batcher = (sq_batcher){.model = &s->model, .pooling = s->model.pool.pooling,
                              .threads = o->threads, .batch = o->batch,
                              .max_texts = o->max_batch, .wait_ms = o->batch_wait_ms,
                              .queue_cap = o->queue, .metrics = &s->metrics};
    return sq_batcher_start(&s->batcher, err);
}

/* Listen (or, as a worker of serve --instances, accept on the inherited
 * socket); *port gets the port bound. */
static struct MHD_Daemon *start_daemon(server *s, int *port, bool *v6, sq_err *err)
{
    const sq_serve_opts *o = s->o;
    struct sockaddr_storage ss;
    if (sq_serve_bind_addr(o->host, o->port, &ss, v6, err) != 0)
        return NULL;
    struct MHD_OptionItem where[] = {
        o->worker ? (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, o->worker->listen_fd, NULL}
                  : (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss},
        {MHD_OPTION_END, 0, NULL}};
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG | (*v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
                         MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                         MHD_OPTION_ARRAY, where,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                         MHD_OPTION_NOTIFY_CONNECTION, sq_deadline_notify, s->deadline,
                         MHD_OPTION_END);
    if (!d) {
        sq_err_set(err, "cannot listen on %s port %d (in use, or not an address of this host)",
                   o->host, o->port);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : o->port;
    return d;
}

/* The ready line (a worker tells its supervisor through ready_fd instead). */
static void announce(server *s, int port, bool v6)
{
    const sq_serve_opts *o = s->o;
    if (o->worker) {
        fprintf(stderr, "squint serve: worker %d (pid %d, CPUs %s, %d encoder threads) ready\n",
                o->worker->index, (int)getpid(), o->worker->cpus, o->threads);
        fflush(stderr);
        (void)!write(o->worker->ready_fd, "R", 1);
        close(o->worker->ready_fd);
        o->worker->ready_fd = -1;
    } else if (s->decoder) {
        fprintf(stderr,
                "squint serve: %s (causal LM, %s, context %d, vocab %d%s%s) listening on "
                "http://%s%s%s:%d (POST /v1/completions; %d threads per generation, up to %d "
                "at once%s)\n",
                s->name, s->lm.sqm ? "quantized" : "fp32", s->lm.dec.cfg.max_pos,
                s->lm.dec.cfg.vocab, s->has_draft ? ", draft " : "",
                s->has_draft ? s->draft_name : "", v6 ? "[" : "", o->host, v6 ? "]" : "", port,
                o->threads, o->max_generations, o->api_key ? ", API key required" : "");
    } else {
        fprintf(stderr,
                "squint serve: %s (%s, dim %d, max_seq %d) listening on http://%s%s%s:%d "
                "(%d encoder threads, up to %d texts per batch, queue %d%s)\n",
                s->name, s->model.is_sqm ? "quantized" : "fp32", s->dim, s->model.max_seq,
                v6 ? "[" : "", o->host, v6 ? "]" : "", port, o->threads, o->max_batch, o->queue,
                o->api_key ? ", API key required" : "");
    }
    fflush(stderr);
}

/* After SIGTERM / SIGINT: no new connections (the listening socket is
 * closed at once: a connect now is refused, not left in the backlog to be
 * reset later), then wait until no request is in flight and every
 * connection has closed (a request whose bytes are still on their way has
 * a connection but no state yet; a keep-alive connection gets 503 +
 * Connection: close for anything it sends now, and an idle one is closed by
 * --timeout), bounded by the timeout. */
static void drain(server *s, struct MHD_Daemon *d)
{
    pthread_mutex_lock(&s->mu);
    s->draining = true;
    pthread_mutex_unlock(&s->mu);
    MHD_socket lfd = MHD_quiesce_daemon(d);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd);
    double t_end = sq_op_now() + s->o->timeout_s + 1;
    for (;;) {
        int64_t n = sq_metrics_get_gauge(&s->metrics, &s->metrics.in_flight);
        const union MHD_DaemonInfo *ci = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        unsigned conns = ci ? ci->num_connections : 0;
        if ((n == 0 && conns == 0) || sq_op_now() > t_end)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Everything open_* and start_engine set up; returns the requests answered. */
static uint64_t close_server(server *s)
{
    uint64_t answered = s->metrics_ok ? sq_metrics_answered(&s->metrics) : 0;
    sq_batcher_stop(&s->batcher);
    free(s->ranges);
    if (s->metrics_ok)
        sq_metrics_destroy(&s->metrics);
    if (s->model_open)
        sq_embed_model_close(&s->model);
    if (s->cmpl_ok)
        sq_cmpl_engine_destroy(&s->cmpl);
    if (s->has_draft)
        sq_llama_model_close(&s->draft);
    if (s->judge_ok)
        sq_lm_judge_free(&s->judge);
    if (s->lm_open)
        sq_llama_model_close(&s->lm);
    if (s->has_head)
        sq_head_free(&s->head);
    return answered;
}

int sq_serve_run(const sq_serve_opts *o, sq_err *err)
{
    server *s = calloc(1, sizeof *s);
    if (!s)
        return sq_err_set(err, "out of memory");
    s->o = o;
    int rc = -1;
    struct MHD_Daemon *d = NULL;
    pthread_mutex_init(&s->mu, NULL);
    /* Signals: handled by sigwait below, blocked in every thread started
     * from here on (they inherit this mask). */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* a causal embedding model (Qwen3-Embedding) answers embeddings, as an encoder */
    s->decoder = (sq_llama_is_checkpoint(o->model_path) || sq_dec_sqm_is_decoder(o->model_path)) &&
                 !sq_llama_is_embedding(o->model_path);
    if ((s->decoder ? open_decoder(s, err) : open_encoder(s, err)) != 0)
        goto out;
    if (o->model_name)
        snprintf(s->name, sizeof s->name, "%s", o->model_name);
    else
        base_name(o->model_path, s->name, sizeof s->name);
    sanitize_name(s->name);
    int port;
    bool v6 = false;
    /* --timeout bounds a whole request's arrival too (conn_deadline.h) */
    if (start_engine(s, err) != 0 ||
        !(s->deadline = sq_deadline_start((double)o->timeout_s, &s->metrics, err)) ||
        !(d = start_daemon(s, &port, &v6, err)))
        goto out;
    announce(s, port, v6);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "squint serve: %s: finishing the requests in flight\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT");
    drain(s, d);
    rc = 0;
out:
    if (d)
        MHD_stop_daemon(d);
    sq_deadline_stop(s->deadline); /* after the daemon: no connection notifies any more */
    uint64_t answered = close_server(s);
    pthread_mutex_destroy(&s->mu);
    free(s);
    if (rc == 0)
        fprintf(stderr, "squint serve: stopped after answering %llu requests\n",
                (unsigned long long)answered);
    return rc;
}

/* Text generation for squint serve (completions.h). */
#include "completions.h"

#include <errno.h>
#include <microhttpd.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "completion_api.h"
#include "generate.h"
#include "http_api.h"
#include "stop_text.h"
#include "op_profile.h"

/* Bytes of events a stream may hold unread before generation waits for the
 * client (one event, however long, always fits). */
enum { STREAM_BUFFER = 64 * 1024, STREAM_BLOCK = 4096 };

struct sq_cmpl_job {
    sq_cmpl_engine *e;
    sq_cmpl_request req;
    int32_t *ids;
    int n_ids;
    sq_cmpl_meta meta;
    sq_stop_text text;
    sq_gen_stats stats;
    sq_err err;
    int rc;
    bool stop_hit, oom;
    double t0, seconds;
    /* streamed: the events not yet read, between the generation thread and
     * the response's reader (mu, cv) */
    bool sync;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *q;
    size_t qoff, qlen, qcap;
    bool done;      /* the generation thread has written its last event */
    bool cancelled; /* the response is gone: stop generating */
    bool read_all;  /* the client read everything */
    bool started;
    pthread_t thread;
};

int sq_cmpl_engine_init(sq_cmpl_engine *e)
{
    e->active = 0;
    e->next_id = 0;
    /* When each token covers at most max_piece bytes of the text, a prompt
     * too long for the context can be refused before it is encoded. */
    e->max_piece = sq_tokenizer_max_piece_bytes(e->m->tok);
    return pthread_mutex_init(&e->mu, NULL) == 0 ? 0 : -1;
}

void sq_cmpl_engine_destroy(sq_cmpl_engine *e)
{
    pthread_mutex_destroy(&e->mu);
}

static void release(sq_cmpl_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->active--;
    pthread_mutex_unlock(&e->mu);
    sq_metrics_add_gauge(e->metrics, &e->metrics->generations_active, -1);
}

void sq_cmpl_slot_release(sq_cmpl_engine *e)
{
    release(e);
}

/* Take a slot: 0, or 503 with msg when every one is taken. */
static int take(sq_cmpl_engine *e, uint64_t *id, char *msg, size_t msgn)
{
    pthread_mutex_lock(&e->mu);
    const bool full = e->active >= e->max_active;
    if (!full)
        e->active++;
    const uint64_t n = ++e->next_id;
    pthread_mutex_unlock(&e->mu);
    if (id)
        *id = n;
    if (full) {
        sq_metrics_completion_rejected(e->metrics);
        snprintf(msg, msgn, "%d generations are running (--max-generations); retry later",
                 e->max_active);
        return 503;
    }
    sq_metrics_add_gauge(e->metrics, &e->metrics->generations_active, 1);
    return 0;
}

int sq_cmpl_slot_take(sq_cmpl_engine *e, char *msg, size_t msgn)
{
    return take(e, NULL, msg, msgn);
}

void sq_cmpl_job_free(sq_cmpl_job *j)
{
    if (!j)
        return;
    release(j->e);
    sq_cmpl_request_free(&j->req);
    sq_stop_text_free(&j->text);
    free(j->ids);
    free(j->q);
    if (j->sync) {
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
    }
    free(j);
}

bool sq_cmpl_streamed(const sq_cmpl_job *j)
{
    return j->req.stream;
}

int64_t sq_cmpl_prompt_tokens(const sq_cmpl_job *j)
{
    return j->n_ids;
}

static uint64_t random_seed(void)
{
    uint64_t s;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) == (ssize_t)sizeof s)
        return s;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)t.tv_sec;
}

int sq_cmpl_begin(sq_cmpl_engine *e, const char *body, size_t len, sq_cmpl_job **job,
                  char *msg, size_t msgn)
{
    *job = NULL;
    const int ctx = e->m->dec.cfg.max_pos;
    sq_cmpl_request req;
    int st = sq_api_parse_completion(body, len, ctx, &req, msg, msgn);
    if (st) {
        sq_cmpl_request_free(&req);
        return st;
    }
    /* Refused by bytes before any tokenizing: BOS, then the dummy-prefix
     * space and the text in tokens of max_piece bytes at most; without such
     * a bound (a tokenizer whose unknown characters fuse), the cap of
     * SQ_CMPL_BYTES_PER_TOKEN bytes per context token. */
    if (e->max_piece && req.prompt_len / e->max_piece + 2 > (size_t)ctx - 1) {
        snprintf(msg, msgn,
                 "the prompt is %zu bytes, more than %zu tokens; the model's context is %d "
                 "tokens, so a prompt may have at most %d (BOS included)",
                 req.prompt_len, req.prompt_len / e->max_piece + 1, ctx, ctx - 1);
        sq_cmpl_request_free(&req);
        return 400;
    }
    const size_t cap = (size_t)SQ_CMPL_BYTES_PER_TOKEN * (size_t)ctx;
    if (!e->max_piece && req.prompt_len > cap) {
        snprintf(msg, msgn,
                 "the prompt is %zu bytes; with a context of %d tokens this server takes at "
                 "most %zu bytes (%d per token)",
                 req.prompt_len, ctx, cap, SQ_CMPL_BYTES_PER_TOKEN);
        sq_cmpl_request_free(&req);
        return 400;
    }
    /* A generation slot before tokenizing: --max-generations bounds the
     * prompts being tokenized too, not only the generations running. */
    sq_cmpl_job *j = calloc(1, sizeof *j);
    if (!j) {
        sq_cmpl_request_free(&req);
        snprintf(msg, msgn, "out of memory");
        return 500;
    }
    uint64_t id;
    if (take(e, &id, msg, msgn) != 0) {
        free(j);
        sq_cmpl_request_free(&req);
        return 503;
    }
    int32_t *ids = NULL;
    int64_t n = sq_tokenizer_encode_all(e->m->tok, req.prompt, req.prompt_len, true, false, &ids);
    int st_tok = 0;
    if (n < 0) {
        snprintf(msg, msgn, "out of memory encoding a prompt of %zu bytes", req.prompt_len);
        st_tok = req.prompt_len > (1u << 28) ? 400 : 500;
    } else if (n < 1) {
        snprintf(msg, msgn, "the prompt encodes to no token (the tokenizer has no BOS)");
        st_tok = 400;
    } else if (n >= ctx) {
        snprintf(msg, msgn,
                 "the prompt is %lld tokens; the model's context is %d tokens, so a prompt "
                 "may have at most %d (BOS included)",
                 (long long)n, ctx, ctx - 1);
        st_tok = 400;
    }
    if (st_tok) {
        free(ids);
        free(j);
        sq_cmpl_request_free(&req);
        release(e);
        return st_tok;
    }
    j->e = e;
    j->req = req;
    j->ids = ids;
    j->n_ids = (int)n;
    j->meta = (sq_cmpl_meta){.id = id, .created = (int64_t)time(NULL), .model = e->model_name};
    sq_stop_text_init(&j->text, j->req.stops, j->req.stop_lens, j->req.n_stops);
    *job = j;
    return 0;
}

static bool is_cancelled(sq_cmpl_job *j)
{
    pthread_mutex_lock(&j->mu);
    bool c = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return c;
}

/* Append an event for the reader; waits while the client is behind.
 * -1 once the response is gone (or out of memory). */
static int push(sq_cmpl_job *j, sq_strbuf *ev)
{
    if (ev->failed) {
        j->oom = true;
        return -1;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->cancelled && j->qlen - j->qoff >= STREAM_BUFFER)
        pthread_cond_wait(&j->cv, &j->mu);
    int rc = -1;
    if (!j->cancelled) {
        if (j->qoff) { /* what was read goes */
            memmove(j->q, j->q + j->qoff, j->qlen - j->qoff);
            j->qlen -= j->qoff;
            j->qoff = 0;
        }
        if (j->qlen + ev->len > j->qcap) {
            size_t cap = j->qcap ? j->qcap : STREAM_BLOCK;
            while (cap < j->qlen + ev->len)
                cap *= 2;
            char *q = realloc(j->q, cap);
            if (q) {
                j->q = q;
                j->qcap = cap;
            }
        }
        if (j->qlen + ev->len <= j->qcap) {
            memcpy(j->q + j->qlen, ev->s, ev->len);
            j->qlen += ev->len;
            pthread_cond_broadcast(&j->cv);
            rc = 0;
        } else {
            j->oom = true;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static int push_piece(sq_cmpl_job *j, const char *p, size_t n)
{
    sq_strbuf ev = {0};
    sq_api_completion_chunk(&j->meta, p, n, NULL, 0, 0, &ev);
    int rc = push(j, &ev);
    sq_sb_free(&ev);
    return rc;
}

/* Each token: through the stop strings; what may go out goes (streamed) or
 * stays in j->text (a whole body). Nonzero ends generation. */
static int on_token(void *ctx, int32_t id, const char *piece, size_t len)
{
    (void)id;
    sq_cmpl_job *j = ctx;
    if (j->req.stream && is_cancelled(j))
        return 1;
    const char *out;
    size_t n;
    int r = sq_stop_text_feed(&j->text, piece, len, &out, &n);
    if (r < 0) {
        j->oom = true;
        return 1;
    }
    if (j->req.stream && n && push_piece(j, out, n) != 0)
        return 1;
    if (r == 1) {
        j->stop_hit = true;
        return 1;
    }
    return 0;
}

static void generate(sq_cmpl_job *j)
{
    const sq_cmpl_engine *e = j->e;
    omp_set_num_threads(e->threads);
    sq_gen_opts o;
    memset(&o, 0, sizeof o);
    o.max_tokens = (int)j->req.max_tokens;
    o.temperature = (float)j->req.temperature;
    o.top_p = (float)j->req.top_p;
    o.seed = j->req.has_seed ? j->req.seed : random_seed();
    o.draft = e->draft;
    o.draft_tokens = e->draft_tokens;
    j->t0 = sq_op_now();
    j->rc = sq_generate(e->m, j->ids, j->n_ids, &o, on_token, j, &j->stats, &j->err);
    if (j->rc == 0 && j->oom) {
        j->rc = -1;
        sq_err_set(&j->err, "out of memory");
    }
    j->seconds = sq_op_now() - j->t0;
}

/* Generation ended: the text held back; a character left cut becomes
 * U+FFFD, and a stop string that completes still stops the text. */
static void flush_text(sq_cmpl_job *j, const char **rest, size_t *n)
{
    int r = sq_stop_text_flush(&j->text, rest, n);
    if (r == 1)
        j->stop_hit = true;
}

static const char *finish_reason(const sq_cmpl_job *j)
{
    return j->stop_hit || j->stats.stop == SQ_GEN_STOP_EOS ? "stop" : "length";
}

int sq_cmpl_run(sq_cmpl_job *j, sq_strbuf *sb, sq_err *err)
{
    generate(j);
    int rc = j->rc;
    if (rc == 0) {
        const char *rest;
        size_t n;
        flush_text(j, &rest, &n);
        sq_api_completion_response(&j->meta, j->text.buf ? j->text.buf : "", j->text.len,
                                   finish_reason(j), j->n_ids, j->stats.generated, sb);
    } else {
        *err = j->err;
    }
    sq_metrics_completion(j->e->metrics, j->n_ids, j->stats.generated, j->seconds, false, rc != 0);
    sq_cmpl_job_free(j);
    return rc;
}

/* The generation thread of a stream: the pieces, then the last chunk (or
 * an error event) and [DONE]. */
static void *stream_main(void *arg)
{
    sq_cmpl_job *j = arg;
    generate(j);
    if (!is_cancelled(j)) {
        sq_strbuf ev = {0};
        if (j->rc == 0) {
            const char *rest;
            size_t n;
            flush_text(j, &rest, &n);
            if (n)
                sq_api_completion_chunk(&j->meta, rest, n, NULL, 0, 0, &ev);
            sq_api_completion_chunk(&j->meta, "", 0, finish_reason(j), j->n_ids,
                                    j->stats.generated, &ev);
        } else {
            sq_sb_printf(&ev, "data: ");
            sq_api_error(SQ_API_OPENAI, 500, j->err.msg, &ev);
            sq_sb_printf(&ev, "\n\n");
        }
        sq_sb_printf(&ev, "data: [DONE]\n\n");
        push(j, &ev);
        sq_sb_free(&ev);
    }
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* MHD's reader (on the connection's thread, which may block: the server
 * runs a thread per connection, where returning 0 would spin). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sq_cmpl_job *j = cls;
    pthread_mutex_lock(&j->mu);
    while (j->qoff == j->qlen && !j->done)
        pthread_cond_wait(&j->cv, &j->mu);
    ssize_t n;
    if (j->qoff == j->qlen) { /* done, and all read */
        j->read_all = true;
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        size_t k = j->qlen - j->qoff < max ? j->qlen - j->qoff : max;
        memcpy(buf, j->q + j->qoff, k);
        j->qoff += k;
        if (j->qoff == j->qlen)
            j->qoff = j->qlen = 0;
        pthread_cond_broadcast(&j->cv); /* room for the generation thread */
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

/* The response is gone: after the last byte, or when the client left (MHD
 * could not send) or the server stopped. Generation stops at its next
 * token; everything is freed here. */
static void stream_free(void *cls)
{
    sq_cmpl_job *j = cls;
    pthread_mutex_lock(&j->mu);
    j->cancelled = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (j->started)
        pthread_join(j->thread, NULL);
    sq_metrics_completion(j->e->metrics, j->n_ids, j->stats.generated, j->seconds, !j->read_all,
                          j->rc != 0);
    sq_cmpl_job_free(j);
}

struct MHD_Response *sq_cmpl_stream_response(sq_cmpl_job *j)
{
    if (pthread_mutex_init(&j->mu, NULL) != 0) {
        sq_cmpl_job_free(j);
        return NULL;
    }
    if (pthread_cond_init(&j->cv, NULL) != 0) {
        pthread_mutex_destroy(&j->mu);
        sq_cmpl_job_free(j);
        return NULL;
    }
    j->sync = true;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, j, stream_free);
    if (!resp) {
        sq_cmpl_job_free(j);
        return NULL;
    }
    if (pthread_create(&j->thread, NULL, stream_main, j) != 0) {
        MHD_destroy_response(resp); /* stream_free: nothing started */
        return NULL;
    }
    j->started = true;
    return resp;
}

/* Text generation behind POST /v1/completions (completion_api.h for the
 * bodies): the causal LM is shared read-only by every request; each
 * generation has its own KV cache (sq_generate allocates it) and runs on
 * the connection's thread (a whole body) or, streamed, on a thread of its
 * own that feeds a bounded buffer the HTTP response drains as the client
 * reads (Server-Sent Events): each piece goes out as soon as it is
 * generated, a slow reader holds generation back, and a client that goes
 * away ends it at the next token. At most max_active generations run at
 * once; a request beyond gets 503. */
#ifndef SQ_SERVE_COMPLETIONS_H
#define SQ_SERVE_COMPLETIONS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "llama_model.h"
#include "metrics.h"
#include "strbuf.h"

typedef struct sq_cmpl_engine {
    const sq_llama_model *m;
    const sq_llama_model *draft; /* assisted generation (generate.h), NULL: none */
    int draft_tokens;
    int threads;                 /* OpenMP threads per generation */
    int max_active;              /* concurrent generations */
    const char *model_name;      /* "model" in the bodies */
    sq_serve_metrics *metrics;
    /* set by sq_cmpl_engine_init */
    pthread_mutex_t mu;
    int active;
    uint64_t next_id;
    size_t max_piece; /* bytes of text per token at most; 0: no bound (tokenizer.h) */
} sq_cmpl_engine;

int sq_cmpl_engine_init(sq_cmpl_engine *e);
void sq_cmpl_engine_destroy(sq_cmpl_engine *e);

/* A generation slot for other work on the causal LM (a reranking request,
 * server.c): 0, or 503 with msg when --max-generations are running. Give it
 * back with sq_cmpl_slot_release. */
int sq_cmpl_slot_take(sq_cmpl_engine *e, char *msg, size_t msgn);
void sq_cmpl_slot_release(sq_cmpl_engine *e);

typedef struct sq_cmpl_job sq_cmpl_job;
struct MHD_Response;

/* Parse and check a body, encode the prompt, take a generation slot.
 * Returns 0 with *job, or the HTTP status to answer with msg: 400 (a bad
 * body, a prompt beyond the context), 503 (every slot taken), 500. */
int sq_cmpl_begin(sq_cmpl_engine *e, const char *body, size_t len, sq_cmpl_job **job,
                  char *msg, size_t msgn);
bool sq_cmpl_streamed(const sq_cmpl_job *j);
int64_t sq_cmpl_prompt_tokens(const sq_cmpl_job *j);
/* Generate on this thread; the whole response body into sb. 0, or -1 with
 * err. The job is freed either way. */
int sq_cmpl_run(sq_cmpl_job *j, sq_strbuf *sb, sq_err *err);
/* The streamed response (text/event-stream, size unknown): generation starts now, on its own thread. The response owns
 * the job from here (freed with it; on NULL, freed already). */
struct MHD_Response *sq_cmpl_stream_response(sq_cmpl_job *j);
/* A job begun but neither run nor streamed. */
void sq_cmpl_job_free(sq_cmpl_job *j);

#endif

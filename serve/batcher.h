/* Dynamic batching for squint serve: request handlers tokenize their texts
 * and submit a job; one batcher thread takes the queued jobs in arrival
 * order, waits up to `wait_ms` for more while fewer than `max_texts` texts
 * are queued, runs them through the encoder as one call (sq_encode_seqs
 * sorts them by length into forward passes of `batch` sequences), and hands
 * each job its rows. The queue is bounded: a submit that finds `queue_cap`
 * jobs waiting is refused (the handler answers 503).
 *
 * For a .sqm every row is the same bytes as `squint embed` gives that text
 * alone (the int8/int4 runtime does not depend on batching); an fp32
 * checkpoint may differ in the last bit with the texts that share a pass. */
#ifndef SQ_SERVE_BATCHER_H
#define SQ_SERVE_BATCHER_H

#include <pthread.h>
#include <stdbool.h>

#include "embedder.h"
#include "metrics.h"

typedef struct sq_embed_job {
    sq_token_seqs seqs; /* in: one truncated sequence per text (sq_tokenize_texts), or
                           per pair with token types (sq_tokenize_pairs) */
    bool normalize;     /* in: L2-normalize this job's rows */
    float *emb;         /* in: [seqs.n][dim], filled */
    float *logits;      /* in: NULL, or [seqs.n][num_labels] of a sequence classifier,
                           filled */
    int rc;             /* out: 0, or -1 with err */
    sq_err err;
    bool done;
    struct sq_embed_job *next;
} sq_embed_job;

typedef struct sq_batcher {
    sq_embed_model *model;
    sq_pooling pooling;
    int threads, batch, max_texts, wait_ms, queue_cap;
    sq_serve_metrics *metrics;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    sq_embed_job *head, *tail;
    int queued;
    bool stopping;
    pthread_t thread;
    bool started;
} sq_batcher;

/* Start the batcher thread (the fields above `metrics` set by the caller). */
int sq_batcher_start(sq_batcher *b, sq_err *err);
/* Queue a job: 0, or -1 when the queue is full or the batcher is stopping. */
int sq_batcher_submit(sq_batcher *b, sq_embed_job *j);
/* Block until the job is done. */
void sq_batcher_wait(sq_batcher *b, sq_embed_job *j);
/* Finish every queued job, then stop the thread. */
void sq_batcher_stop(sq_batcher *b);

#endif

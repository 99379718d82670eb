/* The server's counters and histograms, rendered in the Prometheus text
 * exposition format (version 0.0.4) for GET /metrics. All updates take one
 * mutex: a few per request, nothing on the hot path of the encoder. */
#ifndef SQ_SERVE_METRICS_H
#define SQ_SERVE_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

/* Endpoints that count requests (the rest are "other"). */
typedef enum sq_endpoint {
    SQ_EP_EMBEDDINGS, /* POST /v1/embeddings */
    SQ_EP_EMBED,      /* POST /embed */
    SQ_EP_HEALTH,     /* GET /health */
    SQ_EP_METRICS,    /* GET /metrics */
    SQ_EP_INFO,       /* GET /info */
    SQ_EP_CLASSIFY,   /* POST /classify (with a head) */
    SQ_EP_RERANK,     /* POST /rerank */
    SQ_EP_COMPLETIONS, /* POST /v1/completions (a causal LM) */
    SQ_EP_OTHER,
    SQ_EP_COUNT
} sq_endpoint;

const char *sq_endpoint_label(sq_endpoint e);

enum { SQ_LAT_BUCKETS = 12, SQ_BATCH_BUCKETS = 10, SQ_STATUS_SLOTS = 9 };

typedef struct sq_serve_metrics {
    pthread_mutex_t mu;
    /* requests by endpoint and status (the status codes squint answers) */
    uint64_t requests[SQ_EP_COUNT][SQ_STATUS_SLOTS];
    uint64_t texts, tokens;            /* embedded */
    uint64_t rejected_full;            /* 503: the queue was full */
    uint64_t deadline_cut;             /* connections shut down: request not received in time */
    /* request latency (embedding endpoints, arrival to response) */
    uint64_t lat_bucket[SQ_LAT_BUCKETS + 1];
    double lat_sum;
    uint64_t lat_count;
    /* sequences per forward pass */
    uint64_t batch_bucket[SQ_BATCH_BUCKETS + 1];
    uint64_t batch_sum, batch_count;
    double encode_seconds;             /* time in the encoder */
    int64_t queue_depth;               /* requests waiting for the batcher (gauge) */
    int64_t in_flight;                 /* requests being handled (gauge) */
    /* text generation (a causal LM) */
    uint64_t completions;              /* generations that ran to their end */
    uint64_t prompt_tokens, completion_tokens;
    uint64_t completions_cancelled;    /* streams whose client left before the end */
    uint64_t completions_failed;       /* generations that failed (500 / an error event) */
    uint64_t completions_rejected;     /* 503: every generation slot taken */
    int64_t generations_active;        /* gauge */
    double generate_seconds;           /* time in generation */
} sq_serve_metrics;

int sq_metrics_init(sq_serve_metrics *m);
void sq_metrics_destroy(sq_serve_metrics *m);
void sq_metrics_request(sq_serve_metrics *m, sq_endpoint e, int status);
void sq_metrics_latency(sq_serve_metrics *m, double seconds);
void sq_metrics_batch(sq_serve_metrics *m, int64_t sequences, int64_t tokens, double seconds);
void sq_metrics_texts(sq_serve_metrics *m, int64_t texts);
void sq_metrics_add_gauge(sq_serve_metrics *m, int64_t *gauge, int64_t delta);
int64_t sq_metrics_get_gauge(sq_serve_metrics *m, const int64_t *gauge);
void sq_metrics_rejected(sq_serve_metrics *m);
/* A connection shut down for not sending its request within --timeout. */
void sq_metrics_deadline_cut(sq_serve_metrics *m);
/* One generation over: its tokens, and whether it was cut short by the
 * client or failed. */
void sq_metrics_completion(sq_serve_metrics *m, int64_t prompt_tokens, int64_t generated,
                           double seconds, bool cancelled, bool failed);
void sq_metrics_completion_rejected(sq_serve_metrics *m);
/* Responses sent, over every endpoint and status. */
uint64_t sq_metrics_answered(sq_serve_metrics *m);

/* The exposition text into sb (model: the label of squint_model_info). */
void sq_metrics_render(sq_serve_metrics *m, const char *model, sq_strbuf *sb);

#endif

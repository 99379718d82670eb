/* Prometheus metrics of squint serve (metrics.h). */
#include "metrics.h"

#include <string.h>

static const int status_codes[SQ_STATUS_SLOTS] = {200, 400, 401, 404, 405, 413, 501, 503, 500};
static const double lat_bounds[SQ_LAT_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                   0.5,   1,    2.5,   5,    10,  30};
static const int batch_bounds[SQ_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

const char *sq_endpoint_label(sq_endpoint e)
{
    static const char *const names[SQ_EP_COUNT] = {"/v1/embeddings", "/embed", "/health",
                                                   "/metrics", "/info", "/classify", "/rerank",
                                                   "/v1/completions", "other"};
    return e < SQ_EP_COUNT ? names[e] : "other";
}

int sq_metrics_init(sq_serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    return pthread_mutex_init(&m->mu, NULL) == 0 ? 0 : -1;
}

void sq_metrics_destroy(sq_serve_metrics *m)
{
    pthread_mutex_destroy(&m->mu);
}

static int status_slot(int status)
{
    for (int i = 0; i < SQ_STATUS_SLOTS - 1; i++)
        if (status_codes[i] == status)
            return i;
    return SQ_STATUS_SLOTS - 1; /* 500 and anything unexpected */
}

void sq_metrics_request(sq_serve_metrics *m, sq_endpoint e, int status)
{
    pthread_mutex_lock(&m->mu);
    m->requests[e < SQ_EP_COUNT ? e : SQ_EP_OTHER][status_slot(status)]++;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_latency(sq_serve_metrics *m, double s)
{
    pthread_mutex_lock(&m->mu);
    int b = 0;
    while (b < SQ_LAT_BUCKETS && s > lat_bounds[b])
        b++;
    m->lat_bucket[b]++;
    m->lat_sum += s;
    m->lat_count++;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_batch(sq_serve_metrics *m, int64_t seqs, int64_t tokens, double seconds)
{
    pthread_mutex_lock(&m->mu);
    int b = 0;
    while (b < SQ_BATCH_BUCKETS && seqs > batch_bounds[b])
        b++;
    m->batch_bucket[b]++;
    m->batch_sum += (uint64_t)seqs;
    m->batch_count++;
    m->tokens += (uint64_t)tokens;
    m->encode_seconds += seconds;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_texts(sq_serve_metrics *m, int64_t texts)
{
    pthread_mutex_lock(&m->mu);
    m->texts += (uint64_t)texts;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_add_gauge(sq_serve_metrics *m, int64_t *gauge, int64_t delta)
{
    pthread_mutex_lock(&m->mu);
    *gauge += delta;
    pthread_mutex_unlock(&m->mu);
}

int64_t sq_metrics_get_gauge(sq_serve_metrics *m, const int64_t *gauge)
{
    pthread_mutex_lock(&m->mu);
    int64_t v = *gauge;
    pthread_mutex_unlock(&m->mu);
    return v;
}

uint64_t sq_metrics_answered(sq_serve_metrics *m)
{
    uint64_t n = 0;
    pthread_mutex_lock(&m->mu);
    for (int e = 0; e < SQ_EP_COUNT; e++)
        for (int s = 0; s < SQ_STATUS_SLOTS; s++)
            n += m->requests[e][s];
    pthread_mutex_unlock(&m->mu);
    return n;
}

void sq_metrics_rejected(sq_serve_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->rejected_full++;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_deadline_cut(sq_serve_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->deadline_cut++;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_completion(sq_serve_metrics *m, int64_t prompt_tokens, int64_t generated,
                           double seconds, bool cancelled, bool failed)
{
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)(prompt_tokens > 0 ? prompt_tokens : 0);
    m->completion_tokens += (uint64_t)(generated > 0 ? generated : 0);
    m->generate_seconds += seconds;
    if (failed)
        m->completions_failed++;
    else if (cancelled)
        m->completions_cancelled++;
    else
        m->completions++;
    pthread_mutex_unlock(&m->mu);
}

void sq_metrics_completion_rejected(sq_serve_metrics *m)
{
    pthread_mutex_lock(&m->mu);
    m->completions_rejected++;
    pthread_mutex_unlock(&m->mu);
}

/* A label value with \, " and newline escaped (exposition format). */
static void label_value(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (; *s && o + 3 < n; s++) {
        if (*s == '\\' || *s == '"')
            out[o++] = '\\', out[o++] = *s;
        else if (*s == '\n')
            out[o++] = '\\', out[o++] = 'n';
        else
            out[o++] = *s;
    }
    out[o] = '\0';
}

void sq_metrics_render(sq_serve_metrics *m, const char *model_name, sq_strbuf *sb)
{
    char model[512];
    label_value(model_name, model, sizeof model);
    pthread_mutex_lock(&m->mu);
    sq_sb_printf(sb, "# HELP squint_requests_total HTTP requests answered, by endpoint and status.\n"
                     "# TYPE squint_requests_total counter\n");
    for (int e = 0; e < SQ_EP_COUNT; e++)
        for (int s = 0; s < SQ_STATUS_SLOTS; s++)
            if (m->requests[e][s])
                sq_sb_printf(sb, "squint_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
                             sq_endpoint_label((sq_endpoint)e), status_codes[s],
                             (unsigned long long)m->requests[e][s]);
    sq_sb_printf(sb,
                 "# HELP squint_request_deadline_closed_total Connections shut down because "
                 "their request (headers and body) did not arrive within --timeout.\n"
                 "# TYPE squint_request_deadline_closed_total counter\n"
                 "squint_request_deadline_closed_total %llu\n",
                 (unsigned long long)m->deadline_cut);
    sq_sb_printf(sb,
                 "# HELP squint_texts_total Texts embedded.\n# TYPE squint_texts_total counter\n"
                 "squint_texts_total{model=\"%s\"} %llu\n"
                 "# HELP squint_tokens_total Tokens run through the encoder (special tokens "
                 "included).\n# TYPE squint_tokens_total counter\n"
                 "squint_tokens_total{model=\"%s\"} %llu\n"
                 "# HELP squint_rejected_total Requests answered 503 because the queue was "
                 "full.\n# TYPE squint_rejected_total counter\nsquint_rejected_total %llu\n"
                 "# HELP squint_queue_depth Requests waiting for the batcher.\n"
                 "# TYPE squint_queue_depth gauge\nsquint_queue_depth %lld\n"
                 "# HELP squint_in_flight_requests Requests being handled.\n"
                 "# TYPE squint_in_flight_requests gauge\nsquint_in_flight_requests %lld\n"
                 "# HELP squint_encode_seconds_total Time spent in the encoder.\n"
                 "# TYPE squint_encode_seconds_total counter\nsquint_encode_seconds_total %.6f\n",
                 model, (unsigned long long)m->texts, model, (unsigned long long)m->tokens,
                 (unsigned long long)m->rejected_full, (long long)m->queue_depth,
                 (long long)m->in_flight, m->encode_seconds);
    sq_sb_printf(sb,
                 "# HELP squint_completions_total Text generations that ran to their end.\n"
                 "# TYPE squint_completions_total counter\nsquint_completions_total{model=\"%s\"} %llu\n"
                 "# HELP squint_completion_tokens_total Tokens generated.\n"
                 "# TYPE squint_completion_tokens_total counter\n"
                 "squint_completion_tokens_total{model=\"%s\"} %llu\n"
                 "# HELP squint_prompt_tokens_total Prompt tokens run (BOS included).\n"
                 "# TYPE squint_prompt_tokens_total counter\n"
                 "squint_prompt_tokens_total{model=\"%s\"} %llu\n"
                 "# HELP squint_completions_cancelled_total Streamed generations ended early "
                 "because the client went away.\n# TYPE squint_completions_cancelled_total "
                 "counter\nsquint_completions_cancelled_total %llu\n"
                 "# HELP squint_completions_failed_total Generations that failed.\n"
                 "# TYPE squint_completions_failed_total counter\n"
                 "squint_completions_failed_total %llu\n"
                 "# HELP squint_completions_rejected_total Completion requests answered 503 "
                 "because every generation slot was taken.\n"
                 "# TYPE squint_completions_rejected_total counter\n"
                 "squint_completions_rejected_total %llu\n"
                 "# HELP squint_generations_active Generations running.\n"
                 "# TYPE squint_generations_active gauge\nsquint_generations_active %lld\n"
                 "# HELP squint_generate_seconds_total Time spent generating.\n"
                 "# TYPE squint_generate_seconds_total counter\nsquint_generate_seconds_total %.6f\n",
                 model, (unsigned long long)m->completions, model,
                 (unsigned long long)m->completion_tokens, model,
                 (unsigned long long)m->prompt_tokens, (unsigned long long)m->completions_cancelled,
                 (unsigned long long)m->completions_failed,
                 (unsigned long long)m->completions_rejected, (long long)m->generations_active,
                 m->generate_seconds);
    sq_sb_printf(sb, "# HELP squint_batch_sequences Sequences per forward pass (dynamic "
                     "batching).\n# TYPE squint_batch_sequences histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < SQ_BATCH_BUCKETS; b++) {
        cum += m->batch_bucket[b];
        sq_sb_printf(sb, "squint_batch_sequences_bucket{le=\"%d\"} %llu\n", batch_bounds[b],
                     (unsigned long long)cum);
    }
    cum += m->batch_bucket[SQ_BATCH_BUCKETS];
    sq_sb_printf(sb,
                 "squint_batch_sequences_bucket{le=\"+Inf\"} %llu\n"
                 "squint_batch_sequences_sum %llu\nsquint_batch_sequences_count %llu\n",
                 (unsigned long long)cum, (unsigned long long)m->batch_sum,
                 (unsigned long long)m->batch_count);
    sq_sb_printf(sb, "# HELP squint_request_duration_seconds Embedding request latency, arrival "
                     "to response.\n# TYPE squint_request_duration_seconds histogram\n");
    cum = 0;
    for (int b = 0; b < SQ_LAT_BUCKETS; b++) {
        cum += m->lat_bucket[b];
        sq_sb_printf(sb, "squint_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
                     lat_bounds[b], (unsigned long long)cum);
    }
    cum += m->lat_bucket[SQ_LAT_BUCKETS];
    sq_sb_printf(sb,
                 "squint_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                 "squint_request_duration_seconds_sum %.6f\n"
                 "squint_request_duration_seconds_count %llu\n",
                 (unsigned long long)cum, m->lat_sum, (unsigned long long)m->lat_count);
    pthread_mutex_unlock(&m->mu);
}

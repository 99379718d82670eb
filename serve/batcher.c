/* The dynamic batcher of squint serve (batcher.h). */
#include "batcher.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pooling.h"
#include "op_profile.h"

static int64_t queued_texts(const sq_batcher *b)
{
    int64_t n = 0;
    for (const sq_embed_job *j = b->head; j; j = j->next)
        n += j->seqs.n;
    return n;
}

/* Run jobs [first .. the one before stop) as one encoder call. */
static void run_jobs(sq_batcher *b, sq_embed_job *first)
{
    int64_t n = 0, ntok = 0;
    bool types = false, logits = false;
    for (sq_embed_job *j = first; j; j = j->next) {
        n += j->seqs.n, ntok += j->seqs.offsets[j->seqs.n];
        types |= j->seqs.types != NULL;
        logits |= j->logits != NULL;
    }
    const int H = b->model->enc.cfg.hidden, NL = b->model->enc.cfg.num_labels;
    sq_token_seqs all = {.n = n};
    all.offsets = malloc((size_t)(n + 1) * sizeof *all.offsets);
    all.ids = malloc((size_t)(ntok ? ntok : 1) * sizeof *all.ids);
    all.source = malloc((size_t)(n ? n : 1) * sizeof *all.source);
    if (types) /* pairs: token types; jobs of single texts get type 0 */
        all.types = calloc((size_t)(ntok ? ntok : 1), sizeof *all.types);
    sq_embed_result res = {.n = n, .dim = H, .emb = malloc((size_t)(n ? n : 1) * H * sizeof(float))};
    if (logits && NL > 0)
        res.logits = malloc((size_t)(n ? n : 1) * NL * sizeof(float));
    sq_err err = {0};
    int rc = -1;
    if (!all.offsets || !all.ids || !all.source || !res.emb || (types && !all.types) ||
        (logits && NL > 0 && !res.logits)) {
        sq_err_set(&err, "out of memory for a batch of %lld texts", (long long)n);
    } else {
        int64_t s = 0, t = 0;
        all.offsets[0] = 0;
        for (sq_embed_job *j = first; j; j = j->next) {
            int64_t jt = j->seqs.offsets[j->seqs.n];
            memcpy(all.ids + t, j->seqs.ids, (size_t)jt * sizeof *all.ids);
            if (j->seqs.types)
                memcpy(all.types + t, j->seqs.types, (size_t)jt * sizeof *all.types);
            for (int64_t i = 0; i < j->seqs.n; i++) {
                all.offsets[s + i + 1] = t + j->seqs.offsets[i + 1];
                all.source[s + i] = s + i;
            }
            s += j->seqs.n, t += jt;
        }
        /* Normalization is per job, after the head, as the embedder does it. */
        sq_embed_opts o = {.batch = b->batch, .max_seq = b->model->max_seq,
                           .pooling = b->pooling, .normalize = false};
        omp_set_num_threads(b->threads);
        double t0 = sq_op_now();
        rc = sq_encode_seqs(b->model, &all, &o, &res, &err);
        sq_metrics_batch(b->metrics, n, ntok, sq_op_now() - t0);
    }
    int64_t s = 0;
    for (sq_embed_job *j = first; j; j = j->next) {
        j->rc = rc;
        if (rc == 0) {
            memcpy(j->emb, res.emb + (size_t)s * H, (size_t)j->seqs.n * H * sizeof(float));
            if (j->normalize)
                sq_l2_normalize_rows(j->emb, (int)j->seqs.n, H);
            if (j->logits && res.logits)
                memcpy(j->logits, res.logits + (size_t)s * NL,
                       (size_t)j->seqs.n * NL * sizeof(float));
        } else {
            j->err = err;
        }
        s += j->seqs.n;
    }
    free(all.offsets), free(all.ids), free(all.types), free(all.source), free(res.emb);
    free(res.logits);
}

static void *batcher_main(void *arg)
{
    sq_batcher *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->head && !b->stopping)
            pthread_cond_wait(&b->work, &b->mu);
        if (!b->head)
            break; /* stopping and nothing left */
        /* Coalesce: wait up to wait_ms from now for more texts. */
        if (b->wait_ms > 0 && !b->stopping) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long ns = until.tv_nsec + (long)(b->wait_ms % 1000) * 1000000L;
            until.tv_sec += b->wait_ms / 1000 + ns / 1000000000L;
            until.tv_nsec = ns % 1000000000L;
            while (!b->stopping && queued_texts(b) < b->max_texts &&
                   pthread_cond_timedwait(&b->work, &b->mu, &until) != ETIMEDOUT)
                ;
        }
        /* Take whole jobs in order up to max_texts (at least one). */
        sq_embed_job *first = b->head, *last = first;
        int64_t n = first->seqs.n;
        int taken = 1;
        while (last->next && n + last->next->seqs.n <= b->max_texts) {
            last = last->next;
            n += last->seqs.n;
            taken++;
        }
        b->head = last->next;
        if (!b->head)
            b->tail = NULL;
        last->next = NULL;
        b->queued -= taken;
        sq_metrics_add_gauge(b->metrics, &b->metrics->queue_depth, -taken);
        pthread_mutex_unlock(&b->mu);
        run_jobs(b, first);
        pthread_mutex_lock(&b->mu);
        for (sq_embed_job *j = first; j; j = j->next)
            j->done = true;
        pthread_cond_broadcast(&b->done);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int sq_batcher_start(sq_batcher *b, sq_err *err)
{
    b->head = b->tail = NULL;
    b->queued = 0;
    b->stopping = false;
    if (pthread_mutex_init(&b->mu, NULL) || pthread_cond_init(&b->work, NULL) ||
        pthread_cond_init(&b->done, NULL))
        return sq_err_set(err, "cannot create the batcher's locks");
    if (pthread_create(&b->thread, NULL, batcher_main, b) != 0)
        return sq_err_set(err, "cannot start the batcher thread");
    b->started = true;
    return 0;
}

int sq_batcher_submit(sq_batcher *b, sq_embed_job *j)
{
    pthread_mutex_lock(&b->mu);
    if (b->stopping || b->queued >= b->queue_cap) {
        pthread_mutex_unlock(&b->mu);
        return -1;
    }
    j->done = false;
    j->next = NULL;
    if (b->tail)
        b->tail->next = j;
    else
        b->head = j;
    b->tail = j;
    b->queued++;
    sq_metrics_add_gauge(b->metrics, &b->metrics->queue_depth, 1);
    pthread_cond_signal(&b->work);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

void sq_batcher_wait(sq_batcher *b, sq_embed_job *j)
{
    pthread_mutex_lock(&b->mu);
    while (!j->done)
        pthread_cond_wait(&b->done, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

void sq_batcher_stop(sq_batcher *b)
{
    if (!b->started)
        return;
    pthread_mutex_lock(&b->mu);
    b->stopping = true;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->done);
    b->started = false;
}

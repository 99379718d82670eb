/* Batch embedding driver: tokenizes every text, sorts by length so batches
 * carry little padding-free work imbalance, runs the encoder batch by batch
 * and returns results in input order. */
#ifndef SQ_EMBEDDER_H
#define SQ_EMBEDDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed_model.h"

typedef struct sq_embed_opts {
    int batch;       /* sequences per forward pass */
    int max_seq;     /* truncation length including [CLS]/[SEP] */
    sq_pooling pooling;
    bool normalize;
    bool keep_tokens; /* fill res->ids / res->offsets */
    bool keep_hidden; /* fill res->hidden (all token rows, input order) */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
    const sq_observer *observer;
} sq_embed_opts;

typedef struct sq_embed_result {
    int64_t n;        /* number of texts */
    int dim;
    float *emb;       /* [n][dim] */
    int64_t *offsets; /* [n + 1], token offsets per text (keep_tokens or keep_hidden) */
    int32_t *ids;     /* [offsets[n]] */
    float *hidden;    /* [offsets[n]][dim] */
} sq_embed_result;

int sq_embed_texts(sq_embed_model *m, const char *const *texts, const size_t *lens, int64_t n,
                   const sq_embed_opts *o, sq_embed_result *res, sq_err *err);
void sq_embed_result_free(sq_embed_result *r);

#endif

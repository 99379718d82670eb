/* Batch driver of the encoder. Texts are tokenized (truncated, or split into
 * windows), the sequences sorted by length into batches (longest first, ties
 * by position: a deterministic plan), run through the encoder, pooled, and
 * returned in input order. Calibration uses the same path with an observer
 * and no outputs. */
#ifndef SQ_EMBEDDER_H
#define SQ_EMBEDDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed_model.h"

/* Token sequences stored back to back: sequence i is ids[offsets[i] ..
 * offsets[i+1]), each with [CLS] ... [SEP]. */
typedef struct sq_token_seqs {
    int64_t n;
    int64_t *offsets; /* n + 1 */
    int32_t *ids;
    int32_t *types;   /* token type of each id (pairs: 0 first segment, 1 second);
                         NULL: all 0 */
    int64_t *source;  /* text index each sequence came from (n entries) */
} sq_token_seqs;

/* Tokenize n texts. Without windows each text gives one sequence, truncated
 * to max_seq tokens; with windows a long text gives ceil(tokens / (max_seq -
 * 2)) sequences of consecutive tokens. Parallel, deterministic. */
int sq_tokenize_texts(const sq_embed_model *m, const char *const *texts, const size_t *lens,
                      int64_t n, int max_seq, bool windows, sq_token_seqs *out, sq_err *err);
void sq_token_seqs_free(sq_token_seqs *s);

/* The largest batch (sequences per forward pass) squint takes. */
#define SQ_BATCH_MAX 4096

typedef struct sq_embed_opts {
    int batch;       /* sequences per forward pass */
    int max_seq;     /* truncation length including [CLS]/[SEP] */
    sq_pooling pooling;
    bool normalize;
    int dimensions;  /* Matryoshka: keep the first N values, then normalize (pooling.h
                        sq_truncate_dims); 0: all */
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
    float *logits;    /* [n][num_labels]: a sequence classifier's logits, filled by
                         sq_encode_seqs when the caller allocates it */
} sq_embed_result;

/* Run every sequence through the encoder. res == NULL: run only (for an
 * observer); otherwise fill res->emb (and hidden when o->keep_hidden), one
 * row per sequence in sequence order. */
int sq_encode_seqs(sq_embed_model *m, const sq_token_seqs *s, const sq_embed_opts *o,
                   sq_embed_result *res, sq_err *err);

/* Tokenize (truncating to o->max_seq) and encode: one embedding per text. */
int sq_embed_texts(sq_embed_model *m, const char *const *texts, const size_t *lens, int64_t n,
                   const sq_embed_opts *o, sq_embed_result *res, sq_err *err);
void sq_embed_result_free(sq_embed_result *r);

#endif

/* THE .sqm writer: the tensors a file holds, their names, order, dtypes
 * and shapes come from the one schema (libquant/sqm/sqm_schema.c, whose
 * row order is the file's), evaluated on the metadata being written; a
 * family only says where each tensor's values are (sq_sqm_source). The
 * packed linears' tensors come from their plans, the same for every family.
 * Order: the model rows before the first per-layer row (tokenizer,
 * embeddings, heads), then per layer its rows and its linears (each
 * linear's rows in schema order), then the model rows after (a class head,
 * a causal LM's final norm and classifier), then a causal LM's packed
 * classifier. */
#ifndef SQ_SQM_WRITE_H
#define SQ_SQM_WRITE_H

#include <stdint.h>

#include "quant_plan.h"
#include "sqm_schema.h"

/* A tensor's values. p NULL: the model has none (refused unless the row is
 * optional). n: the length of a row of any length (tokenizer.vocab's bytes,
 * tokenizer.merges' rows); ignored otherwise. */
typedef struct sq_sqm_data {
    const void *p;
    uint64_t n;
} sq_sqm_data;

typedef struct sq_sqm_source {
    /* The values of a model-wide or per-layer row (layer l) that applies to
     * this model. What must live until the write goes in kp. 0, or -1 with
     * err set. */
    int (*tensor)(void *ctx, enum sq_sqm_row row, int l, sq_keep *kp, sq_sqm_data *out,
                  sq_err *err);
    /* Linear (l, k) and its plan; l == SQ_SQM_CLASSIFIER: a causal LM's
     * packed classifier. NULL: the model has no such linear. */
    const sq_linear *(*linear)(void *ctx, int l, sq_linear_kind k, const sq_plan_linear **plan);
    void *ctx;
} sq_sqm_source;

/* The one way a .sqm is written: the metadata, the tensors by the schema,
 * zstd when asked, the atomic write, then the file read back against the
 * schema (sq_sqm_check_written). Every failure names path; nothing is left
 * there. */
int sq_sqm_write(const char *meta, const sq_sqm_source *src, int zstd_level, const char *path,
                 sq_err *err);

/* The writer's self-check (debug builds, or SQUINT_WRITE_CHECK set: the CLI
 * tests set it): the file just written, read back as the loader reads it,
 * matches the schema with every tensor accounted for. A failure is a
 * writer bug; the file is removed. */
int sq_sqm_check_written(const char *path, sq_err *err);

#endif

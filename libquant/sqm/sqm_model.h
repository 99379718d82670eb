/* Open a packed model (.sqm, formats/SQM.md) as a runnable encoder: every
 * weight is used in place from the mapped file (no repacking at load), the
 * tokenizer and pooling come from the file's metadata. */
#ifndef SQ_SQM_MODEL_H
#define SQ_SQM_MODEL_H

#include <stdbool.h>

#include "container.h"
#include "encoder.h"
#include "hf_config.h"
#include "hf_tokenizer.h"

typedef struct sq_sqm_info {
    sq_pooling_config pool;
    int max_seq;
    /* metadata activation_guard: row (true) or clip / absent (files written
     * before the guard existed): see sq_linear.guard */
    bool guard_rows;
    /* metadata attention (absent: f32): see sq_encoder.attn_matmul */
    sq_attn_matmul attn_matmul;
} sq_sqm_info;

/* True when the file starts like a squint container (plain or zstd). */
bool sq_sqm_sniff(const char *path);

struct sq_sqm_schema_ctx;
/* Parse the metadata the loader reads (format, config, pooling, max_seq,
 * embeddings_type, activation_guard; tokenizer type and vocab_size for the
 * schema) into the schema context (sqm_schema.h) and info. */
int sq_sqm_read_meta(const sq_container *c, struct sq_sqm_schema_ctx *ctx, sq_sqm_info *info,
                     sq_err *err);

/* c must be an open SQM container and stay open while enc is used. Checks
 * every checksum first (sq_container_verify), then the structure against
 * the schema (sq_sqm_check_schema), then the values. */
int sq_sqm_load_encoder(const sq_container *c, sq_encoder *enc, sq_sqm_info *info, sq_err *err);

/* An f32 tensor whose every value must be finite (embeddings, norms,
 * biases: one NaN or inf there makes every output NaN). positive: every
 * value must also be > 0 (scales). Its presence, dtype and shape are the
 * schema's (checked before). NULL with err naming the file, the tensor and
 * the entry. */
const float *sq_sqm_finite_f32(const sq_container *c, const char *name, bool positive,
                               sq_err *err);

/* The linear whose tensors are "<prefix>.weight", ".bias", ... (prefix
 * "layer.3.qkv", or a causal LM's "classifier": sq_sqm_linear_prefix) of
 * shape [N, K] from the file (f32 or packed), its values proven (finite,
 * panels against wsum, multipliers); the arrays are views into the
 * mapping. allow_dynamic: an act_scale of 0 means per-row steps
 * (sq_linear.dynamic; causal LMs, SQM.md 10.4). */
int sq_sqm_load_linear(const sq_container *c, const char *prefix, int N, int K,
                       bool allow_dynamic, sq_linear *lin, sq_err *err);

/* A sequence classifier's class names: metadata `labels`, n of them (n =
 * config.num_labels), unique, 1..256 bytes; labels[n] malloc'd, freed with
 * sq_labels_free (hf_config.h). */
int sq_sqm_labels(const sq_container *c, int n, char ***labels, sq_err *err);

#endif

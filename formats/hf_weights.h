/* The weights of a Hugging Face checkpoint folder: model.safetensors, or the
 * shards model.safetensors.index.json names (its "weight_map"), opened at
 * once and searched by tensor name. One place for every HF reader (BERT
 * encoders, Llama decoders); the files themselves are read by
 * safetensors.h. */
#ifndef SQ_HF_WEIGHTS_H
#define SQ_HF_WEIGHTS_H

#include <stdint.h>

#include "safetensors.h"

/* Distinct shards of one checkpoint opened at once (each is a mapping and a
 * file descriptor; real checkpoints have a handful). */
#define SQ_HF_MAX_SHARDS 1024

typedef struct sq_hf_weights {
    sq_safetensors *shards;
    int n_shards;
    const char *prefix; /* prepended to every name looked up ("" or "bert.") */
} sq_hf_weights;

/* Open dir's weights; on failure the shards opened so far are closed. A
 * folder with only pytorch_model.bin is refused by name. */
int sq_hf_weights_open(const char *dir, sq_hf_weights *w, sq_err *err);
void sq_hf_weights_close(sq_hf_weights *w);

/* The tensor `name` (no prefix added) and its shard; NULL when absent. */
const sq_st_tensor *sq_hf_weights_find(const sq_hf_weights *w, const char *name,
                                       const sq_safetensors **in);

/* Tensor prefix+name of exactly the shape [d0] (d1 <= 0) or [d0, d1], as
 * f32 (F16 / BF16 converted; non-finite values refused), in a 64-byte
 * aligned buffer (free()). NULL with err naming the file and tensor. */
float *sq_hf_weights_load(const sq_hf_weights *w, const char *name, int64_t d0, int64_t d1,
                          sq_err *err);

/* Refuse weights of a layer the config does not have: a tensor named
 * prefix + layers + "N." (layers e.g. "encoder.layer." or "model.layers.")
 * with N >= n_layers means the config lost layers, and running it would
 * silently drop them. what names the config key in the message. */
int sq_hf_weights_check_layers(const sq_hf_weights *w, const char *layers, int n_layers,
                               const char *what, sq_err *err);

#endif

/* config.json of a ModernBERT encoder (model_type modernbert:
 * answerdotai/ModernBERT-base, gte-modernbert-base, modernbert-embed-base;
 * ModernBertModel). Internal to hf_config.c. */
#ifndef SQ_HF_MODERNBERT_CONFIG_H
#define SQ_HF_MODERNBERT_CONFIG_H

#include <jansson.h>

#include "hf_config.h"

/* Fill cfg from root (ModernBertConfig's keys and defaults): pre-LN
 * LayerNorm without biases, GeGLU with the exact GELU, rotary positions
 * with a global and a local base, a sliding window on all but every
 * global_attn_every_n_layers-th layer, no linear biases. Every other value
 * of those keys is refused by name; path names the file. */
int sq_modernbert_config(json_t *root, const char *path, sq_bert_config *cfg, sq_err *err);

#endif

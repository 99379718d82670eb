/* config.json of a NomicBERT encoder (model_type nomic_bert: nomic-embed-text
 * v1 / v1.5, NomicBertModel). Internal to hf_config.c. */
#ifndef SQ_HF_NOMIC_CONFIG_H
#define SQ_HF_NOMIC_CONFIG_H

#include <jansson.h>

#include "hf_config.h"

/* Fill cfg from root (GPT-2 style keys: n_embd, n_head, n_layer, n_inner,
 * n_positions, layer_norm_epsilon, rotary_emb_*). squint runs post-LN,
 * SwiGLU, full non-interleaved rotary, no linear biases, no scaling; every
 * other value of those keys is refused by name. path names the file. */
int sq_nomic_config(json_t *root, const char *path, sq_bert_config *cfg, sq_err *err);

#endif

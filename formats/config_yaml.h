/* The encoder configuration as a YAML mapping, shared by the metadata of
 * .sqc and .sqm files: vocab_size, hidden, layers, heads, ffn,
 * max_positions, type_vocab, pad_token_id, layer_norm_eps, and the
 * architecture variants (embed_dim, norm, activation, positions,
 * embedding_layernorm, pooling_head; absent = BERT). */
#ifndef SQ_CONFIG_YAML_H
#define SQ_CONFIG_YAML_H

#include "hf_config.h"
#include "strbuf.h"
#include "yaml_tree.h"

/* Append the mapping's lines, each prefixed by indent. */
void sq_bert_config_to_yaml(sq_strbuf *sb, const sq_bert_config *c, const char *indent);
/* Read and validate (the same bounds as config.json); errors carry file:line:col. */
int sq_bert_config_from_yaml(const yt_node *conf, sq_bert_config *cfg, sq_err *err);

#endif

/* The shape of a Llama-family decoder (decoder/decoder.h runs it), shared
 * by the executor, the .sqc and .sqm metadata (calib/SQC.md, formats/SQM.md
 * section 10) and the .sqm schema: the widths, the linears each layer has,
 * and the YAML mapping both files write. */
#ifndef SQ_DECODER_CONFIG_H
#define SQ_DECODER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "encoder.h"
#include "strbuf.h"
#include "yaml_tree.h"

typedef struct sq_decoder_config {
    int dim, hidden, n_layers, n_heads, n_kv_heads, head_dim, kv_dim, vocab, max_pos;
    float norm_eps, rope_theta;
    int32_t bos, eos;
    bool tied_classifier;
} sq_decoder_config;

/* A decoder layer's linears use the encoder's kinds (encoder.h), so the
 * observers, statistics and tensor names are the same: qkv [dim + 2 kv_dim]
 * [dim] (wq, wk, wv stacked), attn_out [dim][dim], ffn_up [2 hidden][dim]
 * (w1, the gate, then w3, the up projection), ffn_down [dim][hidden]; no
 * res. False for res. */
bool sq_decoder_linear_shape(const sq_decoder_config *c, sq_linear_kind k, int *N, int *K);

/* Append the mapping's lines, each prefixed by indent: vocab_size, hidden
 * (dim), layers, heads, kv_heads, ffn (hidden), max_positions,
 * rms_norm_eps, rope_theta, tied_embeddings, bos_token_id, eos_token_id. */
void sq_decoder_config_to_yaml(sq_strbuf *sb, const sq_decoder_config *c, const char *indent);
/* Read and validate (the llama2.c reader's bounds); derives head_dim and
 * kv_dim. Errors carry file:line:col. */
int sq_decoder_config_from_yaml(const yt_node *conf, sq_decoder_config *c, sq_err *err);

#endif

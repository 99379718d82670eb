/* The shape of a Llama-family decoder (libquant/model/decoder.h runs it), shared
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
    /* The attention width n_heads * head_dim: dim for Llama, independent of
     * it when head_dim is given (Qwen3-0.6B: 16 x 128 = 2048, dim 1024). */
    int q_dim;
    /* Qwen3: each head's q and k RMSNormed over head_dim (weights
     * [head_dim] per layer, the block's qn_g / kn_g) before RoPE. */
    bool qk_norm;
} sq_decoder_config;

/* A decoder layer's linears use the encoder's kinds (encoder.h), so the
 * observers, statistics and tensor names are the same: qkv [q_dim + 2 kv_dim]
 * [dim] (wq, wk, wv stacked), attn_out [dim][q_dim], ffn_up [2 hidden][dim]
 * (w1, the gate, then w3, the up projection), ffn_down [dim][hidden]; no
 * res. False for res. */
bool sq_decoder_linear_shape(const sq_decoder_config *c, sq_linear_kind k, int *N, int *K);

/* Append the mapping's lines, each prefixed by indent: vocab_size, hidden
 * (dim), layers, heads, kv_heads, ffn (hidden), max_positions,
 * rms_norm_eps, rope_theta, tied_embeddings, bos_token_id, eos_token_id;
 * then head_dim only when it is not dim / heads and qk_norm only when true
 * (a Llama's mapping is what it was before the keys existed). */
void sq_decoder_config_to_yaml(sq_strbuf *sb, const sq_decoder_config *c, const char *indent);
/* Read and validate (the llama2.c reader's bounds); head_dim (absent:
 * dim / heads, even, 2 .. 1024), qk_norm (absent: false); derives kv_dim and
 * q_dim. Errors carry file:line:col. */
int sq_decoder_config_from_yaml(const yt_node *conf, sq_decoder_config *c, sq_err *err);

#endif

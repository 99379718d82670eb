/* The decoder (Llama family): token embedding, n_layers of
 *   x += Wo · Attention(RoPE(Wq · RMSNorm(x)), RoPE(Wk · ..), Wv · ..)
 *   x += W2 · (silu(W1 · RMSNorm(x)) * (W3 · RMSNorm(x)))
 * then RMSNorm and the classifier (tied to the embedding or separate).
 * Each layer is the one block (libquant/model/block.h) described as
 * pre-RMSNorm with SwiGLU; this file holds its attention core (RoPE, the
 * KV cache, causal attention) and the embedding and LM head around it.
 * Qwen3 adds an RMSNorm of each head of q and k before RoPE
 * (sq_decoder_qk_row) and a head_dim independent of dim / n_heads (the
 * attention is q_dim = n_heads * head_dim wide).
 * RoPE as llama2.c applies it: adjacent pairs (2j, 2j+1) inside each head
 * rotated by pos * theta^(-2j / head_dim) (theta 10000). Grouped-query
 * attention: query head h reads key/value head h / (n_heads / n_kv_heads),
 * causal, over a KV cache, by libquant's attention kernels (M new rows x
 * N cached keys) in the model's precision: f32 (attn_f32.h), bf16
 * (attn_bf16.h) or int8 (attn_s8.h's causal form, V quantized per token). Every projection is an
 * sq_linear with a qtype (linear.h): the fused q|k|v projection, the
 * attention output, the fused gate|up projection (w1 then w3), the down
 * projection (w2), and the classifier; f32, int8 or int4 packed panels
 * through the same sq_linear_forward.
 *
 * One forward runs n tokens at positions pos .. pos + n - 1 (a batched
 * prefill, or one token of decoding) against a cache that holds positions
 * < pos; each attention output is one fixed fma chain whatever the number
 * of rows, so a prefill and token-by-token decoding agree up to the last
 * bits of the f32 sgemm (which may round differently for 1 row and for
 * many). The weights are libquant/model/decoder_model.h. */
#ifndef SQ_DECODER_H
#define SQ_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "attn_s8.h"
#include "decoder_model.h"
#include "encoder.h"
#include "llama_ckpt.h"

/* Build from a llama2.c checkpoint; the checkpoint's arrays are moved into
 * the decoder or copied (the fused linears), and ck is freed either way. */
int sq_decoder_from_llama(sq_llama_ckpt *ck, sq_decoder *d, sq_err *err);
/* The KV cache and the activation buffers of one sequence, planned once:
 * no allocation in the forward pass. */
typedef struct sq_decoder_state {
    int max_rows; /* rows per internal step of a forward (prefill chunk) */
    int max_pos;  /* positions the cache holds (<= cfg.max_pos) */
    int n_threads;
    float *k_cache, *v_cache; /* [n_layers][max_pos][kv_dim] */
    float *x, *xb, *qkv, *att, *gu, *hb; /* max_rows rows each */
    float *scores;            /* [n_threads][max_rows][max_pos]: attention probabilities
                                 (f32 and bf16 attention; NULL for int8) */
    float *attn_scratch;      /* [n_threads][attn_scratch_floats], 64-byte aligned (f32
                                 attention; NULL otherwise) */
    size_t attn_scratch_floats;
    void *attn_q;             /* [n_threads][attn_q_bytes]: bf16 / int8 attention (64-aligned) */
    size_t attn_q_bytes;
    /* int8 attention: the quantized KV cache, [n_layers][n_kv_heads], each
     * token's key and value quantized once (attn_s8.h) */
    sq_attn_s8_cache *s8_cache;
    void *s8_cache_mem;
    sq_linear_scratch lin;    /* the quantized linears' int8 rows and accumulators */
    /* Calibration: sees the input of every linear of every layer (rows of
     * the chunk being run), as the encoder's observer. NULL: none. */
    const sq_observer *obs;
} sq_decoder_state;

/* max_pos 0: the model's. */
int sq_decoder_state_init(sq_decoder_state *st, const sq_decoder *d, int max_rows, int max_pos,
                          sq_err *err);
void sq_decoder_state_free(sq_decoder_state *st);

/* Run ids[0 .. n) at positions pos .. pos + n - 1 (the cache must hold the
 * positions before pos: the caller's running count). logits gets
 * [n][vocab] when all_logits, else the last row's [vocab]. -1 with err on
 * an id out of range or positions beyond the cache, or on a model with no
 * LM head (d->no_head). */
int sq_decoder_forward(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int n,
                       int pos, float *logits, bool all_logits, sq_err *err);

/* The same run without the LM head: out [dim] gets the last row's final
 * hidden state (after the last RMSNorm), what a causal embedding model
 * (Qwen3-Embedding) pools: last-token pooling. Its bits depend only on
 * ids, pos and st->max_rows (the prefill chunk), never on the threads. */
int sq_decoder_last_hidden(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int n,
                           int pos, float *out, sq_err *err);

/* The attention core's step on one q|k|v row of layer `layer` at position
 * p, in place: with cfg.qk_norm (Qwen3) each head of q and of k RMSNormed
 * over head_dim (eps cfg.norm_eps, weights layers[layer].qn_g / kn_g),
 * then RoPE on q and k. v is untouched. */
void sq_decoder_qk_row(const sq_decoder *d, int layer, float *qkv_row, int p);

#endif

/* The encoder executor: embeddings, then every layer through the one block
 * (block.h) with the encoder's attention core, for every precision and
 * every supported architecture variant (hf_config.h: post-LN BERT, pre-LN
 * tensor2tensor encoders; GELU or ReLU; learned or sinusoidal positions; a
 * layer that widens its input). It runs a batch of variable-length sequences
 * packed without padding (token rows concatenated), so padding never enters
 * a statistic or an attention score. Every linear carries a qtype; an
 * optional observer sees the input of every linear (calibration hooks in
 * here). */
#ifndef SQ_ENCODER_H
#define SQ_ENCODER_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "attn_matmul.h"
#include "block.h"
#include "hf_config.h"
#include "linear.h"

/* Width of layer `layer`'s input: embed_dim for layer 0, hidden after. A
 * layer attends at its input width (qkv [3 in][in], attn_out [H][in]). */
int sq_layer_in_dim(const sq_bert_config *c, int layer);
/* Shape of linear k of a layer (N outputs, K inputs). False when the layer
 * has no such linear (res on a layer whose input is already H wide). */
bool sq_linear_shape(const sq_bert_config *c, int layer, sq_linear_kind k, int *N, int *K);
/* Width of the attention-block LayerNorm: the layer input for pre-LN, H for
 * post-LN. The FFN-block LayerNorm is always H wide. */
int sq_ln_attn_dim(const sq_bert_config *c, int layer);

/* The block description of the encoder variant c (block.h): LayerNorm,
 * c->norm placement, c->act, c->ln_eps. */
sq_block_desc sq_encoder_block_desc(const sq_bert_config *c);

typedef struct sq_encoder {
    sq_bert_config cfg;
    /* Word embeddings: f32 [vocab][H], or quantized by row (quant_embed.h):
     * int8 word_q [vocab][H] + word_scale [vocab], int4 word_q [vocab][H/2] +
     * word_scale [vocab][ceil(H/128)]; rows are dequantized when gathered. */
    sq_qtype word_qt;
    const void *word_q;
    const float *word_scale;
    bool borrowed;    /* the f32 arrays point into a mapped file: not freed */
    float *word_emb;  /* [vocab][E] (f32 word_qt); E = cfg.embed_dim */
    float *pos_emb;   /* [max_pos][E], learned or the sinusoid table; NULL: rotary
                         (encoder_rope.h) */
    float *type_emb;  /* [type_vocab][E]; NULL when type_vocab == 0 */
    float *emb_ln_g, *emb_ln_b; /* NULL without an embedding LayerNorm */
    float *final_ln_g, *final_ln_b; /* LayerNorm after the last layer (cfg.final_norm:
                                       ModernBERT's final_norm); NULL: none */
    sq_block *layers; /* LayerNorms (n1 after attention when post, before it when pre) */
    /* MPNet's relative attention bias (cfg.rel_buckets > 0): the checkpoint's
     * table [buckets][heads] (borrowed with the rest), and per head the bias
     * of every key - query distance, rel_table[h][d + max_tokens - 1] for d
     * in (-max_tokens, max_tokens) (sq_encoder_build_rel_table; owned). */
    float *rel_bias;
    float *rel_table;
    sq_linear head;   /* pooling head [H][H] (cfg.head != none), always f32 */
    sq_linear score;  /* sequence classifier [num_labels][H] on the head's output
                         (cfg.num_labels > 0), always f32 */
    sq_attn_matmul attn_matmul; /* the attention matmuls' precision (.sqm `attention`) */
} sq_encoder;

/* Fill enc->rel_table from enc->rel_bias (cfg.rel_buckets > 0; no-op
 * otherwise). Refuses a non-finite bias. */
int sq_encoder_build_rel_table(sq_encoder *enc, sq_err *err);

/* The pooling head in place on n pooled rows: x = tanh(x W^T + b). tmp holds
 * n x H floats. No-op without a head. Each row alone: the same bits at any
 * n (as the score below). */
void sq_encoder_apply_head(const sq_encoder *enc, float *x, int n, float *tmp);

/* A sequence classifier's logits of n pooled rows (after the head):
 * logits [n][num_labels] = x W^T + b. No-op without a classifier. */
void sq_encoder_apply_score(const sq_encoder *enc, const float *x, int n, float *logits);


/* A batch: n_seq sequences, sequence i is ids[offsets[i] .. offsets[i+1]). */
typedef struct sq_batch {
    int n_seq;
    const int *offsets;     /* n_seq + 1 entries, offsets[0] == 0 */
    const int32_t *ids;
    const int32_t *type_ids; /* NULL: all zero */
} sq_batch;

/* Activation buffers, planned once for the largest (tokens, sequence length)
 * and reused: no allocation inside the forward pass. */
typedef struct sq_workspace {
    int max_tokens, max_len, n_threads;
    float *qkv, *ctx, *tmp, *ffn, *scores;
    void *attn_q; /* per-thread scratch of the bf16 / int8 attention (sq_encoder.attn_matmul) */
    float *attn_f32; /* per-thread scratch of the f32 attention (attn_f32.h) */
    size_t attn_f32_floats; /* per thread, a multiple of 16 */
    size_t attn_q_bytes; /* per thread */
    float *res; /* residual projections (only when a layer widens) */
    float *act; /* [max_tokens][ffn]: SwiGLU's output (ffn holds gate|up); NULL otherwise */
    sq_linear_scratch lin; /* quantized linears: int8 activations, accumulators; lin.prof:
                              a per-op profile (op_profile.h) the forward passes add to,
                              NULL: none (set by the caller, kept by reserve) */
} sq_workspace;

int sq_workspace_reserve(sq_workspace *ws, const sq_encoder *enc, int max_tokens, int max_len);
void sq_workspace_free(sq_workspace *ws);

/* Run the encoder. hidden_out receives [total tokens][H] (the last hidden
 * state); it may alias nothing in ws. Returns 0, or -1 with err set on bad
 * ids or a batch that does not fit the workspace. */
int sq_encoder_forward(const sq_encoder *enc, sq_workspace *ws, const sq_batch *batch,
                       float *hidden_out, const sq_observer *obs, sq_err *err);

void sq_encoder_free(sq_encoder *enc);

#endif

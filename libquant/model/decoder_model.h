/* A causal LM's weights (Llama family; decoder_config.h): the token
 * embedding, per layer the RMSNorm weights and the four linears, the final
 * norm and the classifier, and the RoPE tables. Built by the checkpoint
 * readers (decoder/) and by the .sqm loader (sqm_decoder.h); run by the
 * decoder executor (libquant/model/decoder.h). */
#ifndef SQ_DECODER_MODEL_H
#define SQ_DECODER_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "attn_matmul.h"
#include "block.h"
#include "decoder_config.h"
#include "linear.h"

/* A layer is a block (block.h) of the encoder's linear kinds
 * (decoder_config.h): SQ_LIN_QKV (wq, wk, wv stacked), SQ_LIN_ATTN_OUT
 * (wo), SQ_LIN_FFN_UP (w1 the gate, then w3), SQ_LIN_FFN_DOWN (w2);
 * lin[SQ_LIN_RES] is empty. Its norms are RMSNorm weights [dim]: n1_g
 * before attention, n2_g before the FFN (no biases). */
#define SQ_DEC_LIN_KINDS SQ_LIN_RES

typedef struct sq_decoder {
    sq_decoder_config cfg;
    float *tok_emb;            /* [vocab][dim], owned; NULL when tok_q holds the rows */
    /* A causal embedding model's .sqm (SQM.md 10.8): the token rows in int8,
     * one scale per row (quant_embed.h), looked up and dequantized; NULL
     * otherwise. */
    const int8_t *tok_q;
    const float *tok_scale;    /* [vocab] */
    /* No LM head: a causal embedding model's .sqm, or a checkpoint saved
     * without one (an untied Qwen3-Embedding); the classifier is empty and
     * sq_decoder_forward refuses to give logits. */
    bool no_head;
    sq_block *layers;
    float *rms_final;          /* [dim], owned */
    sq_linear classifier;      /* [vocab][dim]; tied: borrows tok_emb and cls_bias */
    float *cls_bias;           /* [vocab] zeros (the classifier has no bias) */
    float *rope_cos, *rope_sin; /* [max_pos][head_dim / 2] */
    /* the attention matmuls' precision (.sqm `attention`; checkpoints: f32);
     * int8 is attn_s8.h's causal form */
    sq_attn_matmul attn_matmul;
    /* tok_emb, the RMSNorm weights and the classifier point into a mapped
     * .sqm (dec_sqm.h): not freed */
    bool borrowed;
} sq_decoder;

void sq_decoder_free(sq_decoder *d);
/* The RoPE tables of d->cfg (the loaders call it). 0, or -1 out of memory. */
int sq_decoder_rope_tables(sq_decoder *d);

#endif

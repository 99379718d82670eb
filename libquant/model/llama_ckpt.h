/* The llama2.c checkpoint reader (the "legacy" version-0 export of
 * llama2.c's export.py / train.py): seven little-endian int32
 *   dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 * (vocab_size > 0: the classifier is the token embedding; < 0: a separate
 * classifier follows at the end, |vocab_size| tokens), then float32 tensors
 * in this order, each [out][in] row-major:
 *   token_embedding [vocab][dim], rms_att [L][dim], wq [L][dim][dim],
 *   wk [L][kv_dim][dim], wv [L][kv_dim][dim], wo [L][dim][dim],
 *   rms_ffn [L][dim], w1 [L][hidden][dim], w2 [L][dim][hidden],
 *   w3 [L][hidden][dim], rms_final [dim],
 *   freq_cis_real, freq_cis_imag [seq_len][head_size / 2] (skipped: RoPE is
 *   recomputed), wcls [vocab][dim] (separate classifier only),
 * with kv_dim = dim * n_kv_heads / n_heads. The file must be exactly that
 * long. Hostile input: every header field is range-checked, sizes are
 * computed without overflow, a non-finite weight is refused, the versioned
 * llama2.c exports ("ak42" magic) are refused by name; every message names
 * the file. */
#ifndef SQ_LLAMA_CKPT_H
#define SQ_LLAMA_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"

/* Limits of what the reader accepts (far above any llama2.c model). */
#define SQ_LLAMA_MAX_DIM 65536
#define SQ_LLAMA_MAX_LAYERS 1024
#define SQ_LLAMA_MAX_HEADS 1024
#define SQ_LLAMA_MAX_VOCAB (1 << 22)
#define SQ_LLAMA_MAX_SEQ (1 << 20)

typedef struct sq_llama_config {
    int dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len;
    bool shared_classifier;
    float norm_eps;   /* RMSNorm epsilon (1e-5, llama2.c's) */
    float rope_theta; /* 10000 */
    int32_t bos, eos; /* 1, 2 (an HF config.json says) */
    int head_dim;     /* 0: dim / n_heads (llama2.c); an HF config's head_dim (Qwen3) */
} sq_llama_config;

/* The weights, copied out of the file (owned). */
typedef struct sq_llama_ckpt {
    sq_llama_config cfg;
    float *tok_emb;            /* [vocab][dim] */
    float *rms_att, *rms_ffn;  /* [L][dim] */
    float *wq, *wk, *wv, *wo;  /* [L][dim][dim], [L][kv][dim] x2, [L][dim][dim] */
    float *w1, *w2, *w3;       /* [L][hidden][dim], [L][dim][hidden], [L][hidden][dim] */
    float *rms_final;          /* [dim] */
    float *wcls;               /* [vocab][dim], NULL when shared or no_head */
    /* no LM head at all: an untied causal embedding model saved without
     * lm_head.weight (Qwen3-Embedding-8B); HF folders only */
    bool no_head;
    /* Qwen3 (HF folders only): per-head q / k RMSNorm weights [L][head_dim],
     * NULL for Llama. With head_dim set, wq is [L][heads * head_dim][dim],
     * wk, wv [L][kv_heads * head_dim][dim], wo [L][dim][heads * head_dim]. */
    float *q_norm, *k_norm;
} sq_llama_ckpt;

/* Check a header (7 int32 as read) and derive the config. expected_bytes
 * (optional) gets the exact file size it implies. */
int sq_llama_config_from_header(const int32_t hdr[7], sq_llama_config *cfg,
                                uint64_t *expected_bytes, const char *path, sq_err *err);
int sq_llama_ckpt_load(const char *path, sq_llama_ckpt *ck, sq_err *err);
void sq_llama_ckpt_free(sq_llama_ckpt *ck);

#endif

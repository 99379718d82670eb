/* THE transformer block: one layer of every family (BERT, USE Lite, the
 * cross-encoder, the Llama decoder) runs through sq_block_forward. A
 * family differs only by
 *   - its description (sq_block_desc): the norm kind (LayerNorm or
 *     RMSNorm), its placement (pre or post) and the FFN's activation
 *     (GELU, ReLU, or SwiGLU on a fused gate|up projection);
 *   - its attention core (sq_block_attn): how the q|k|v rows become the
 *     context rows. Encoders attend within each sequence of a packed batch;
 *     a causal decoder applies RoPE, appends K and V to its cache and
 *     attends causally over it (its KV cache is its one difference).
 * The linears and their fusions (an activation inside the next linear's
 * quantize step), the norms, the residuals, the observer's look at every
 * linear's input and the op profile are this one code path:
 *   pre:  x += Wo attn(Wqkv N1(x));     x += Wd act(Wu N2(x))
 *   post: x = N1(x + Wo attn(Wqkv x));  x = N2(x + Wd act(Wu x))
 * A widening layer (input narrower than H: USE Lite) projects its
 * residual x by its res linear before the add. Every width comes from the
 * linears themselves: in = qkv.in, H = attn_out.out, the FFN width =
 * ffn_down.in (ffn_up.out is twice that for SwiGLU). */
#ifndef SQ_BLOCK_H
#define SQ_BLOCK_H

#include <stdbool.h>

#include "hf_config.h"
#include "linear.h"

typedef enum sq_linear_kind {
    SQ_LIN_QKV = 0,   /* fused query/key/value: [3H][H] (a decoder: [H + 2 kv][H]) */
    SQ_LIN_ATTN_OUT,  /* attention output projection [H][H] */
    SQ_LIN_FFN_UP,    /* intermediate [F][H] (SwiGLU: the gate rows, then the up rows) */
    SQ_LIN_FFN_DOWN,  /* output [H][F] */
    SQ_LIN_RES,       /* residual projection [H][in] of a widening layer (in < H) */
    SQ_LIN_KINDS
} sq_linear_kind;

const char *sq_linear_kind_name(sq_linear_kind k);

/* Called with the rows feeding a linear (all rows are real tokens), from
 * outside any parallel region. The FFN_DOWN input is the activation's
 * output. attn_probs (optional) gets the range of the attention
 * probabilities of a layer after its attention has run, when the family's
 * attention core observes them. */
typedef struct sq_observer {
    void (*linear_input)(void *ctx, int layer, sq_linear_kind kind, const float *x, int rows,
                         int cols);
    void (*attn_probs)(void *ctx, int layer, float pmin, float pmax);
    void *ctx;
} sq_observer;

typedef enum sq_norm_kind {
    SQ_NORM_LAYER = 0, /* (x - mean) / sqrt(var + eps) * g + b */
    SQ_NORM_RMS = 1,   /* g * (x / sqrt(mean(x^2) + eps)); no bias */
} sq_norm_kind;

typedef struct sq_block_desc {
    sq_norm_kind norm;
    sq_norm_place place;
    sq_act act;
    float eps;
} sq_block_desc;

/* One layer's weights. lin[k].out == 0: absent (res, unless the layer
 * widens). The norm vectors are n1 (before attention when pre, after it
 * when post) and n2 (the FFN's); the b vectors are NULL for RMSNorm.
 * Pre-norm only: n1_g NULL is no norm before the attention (ModernBERT's
 * layer 0: its input goes to the qkv linear as it is). */
typedef struct sq_block {
    sq_linear lin[SQ_LIN_KINDS];
    float *n1_g, *n1_b;
    float *n2_g, *n2_b;
    /* A decoder's per-head q / k RMSNorm weights [head_dim] (Qwen3), read by
     * its attention core; NULL: none. */
    float *qn_g, *kn_g;
} sq_block;

/* The family's attention core: context rows [rows][in] from the q|k|v
 * rows [rows][qkv.out] of layer `layer` (rows as given to
 * sq_block_forward), which it may change (RoPE rotates them in place). prange non-NULL: the core fills [min, max] of the
 * probabilities and returns true, or returns false when it does not
 * observe them. Called from outside any parallel region; it adds its own
 * time to the op profile. */
typedef struct sq_block_attn {
    bool (*run)(void *ctx, int layer, float *qkv, float *out, float *prange);
    void *ctx;
} sq_block_attn;

/* The activation buffers, rows of each. */
typedef struct sq_block_bufs {
    float *tmp; /* [rows][H]: normed inputs and the linears' outputs */
    float *qkv; /* [rows][qkv.out] */
    float *ctx; /* [rows][in] */
    float *ffn; /* [rows][ffn_up.out] */
    float *act; /* [rows][ffn_down.in]: the activation's output; may be ffn
                   when the activation keeps the width (in place) */
    float *res; /* [rows][H]: a widening layer's projected residual, else unused */
    sq_linear_scratch *lin;
} sq_block_bufs;

/* x [rows][in] -> [rows][H] in place through one block. */
void sq_block_forward(const sq_block_desc *d, const sq_block *L, int layer, float *x, int rows,
                      const sq_block_bufs *b, const sq_block_attn *attn, const sq_observer *obs);

/* Frees the linears; the norm vectors too unless borrowed. */
void sq_block_free(sq_block *L, bool borrowed);

#endif

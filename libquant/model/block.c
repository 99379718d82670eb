#include "block.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"

const char *sq_linear_kind_name(sq_linear_kind k)
{
    static const char *const names[SQ_LIN_KINDS] = {"qkv", "attn_out", "ffn_up", "ffn_down",
                                                    "res"};
    return (unsigned)k < SQ_LIN_KINDS ? names[k] : "?";
}

/* The op profile's running clock: each step adds the time since the last
 * mark to its op (linears and the attention core time themselves). */
typedef struct clock {
    sq_op_profile *prof;
    double t;
} clock;

static void mark(clock *c, sq_op op)
{
    if (c->prof)
        c->t = sq_op_add(c->prof, op, c->t);
}

static void restart(clock *c)
{
    if (c->prof)
        c->t = sq_op_now();
}

/* The observer's look at a linear's input, then the linear. */
static void linear(const sq_block *L, sq_linear_kind k, int layer, const float *x, int rows,
                   float *y, const sq_block_bufs *b, const sq_observer *obs, clock *c)
{
    const sq_linear *lin = &L->lin[k];
    if (obs && obs->linear_input)
        obs->linear_input(obs->ctx, layer, k, x, rows, lin->in);
    b->lin->gemm_op = (sq_op)(SQ_OP_GEMM_QKV + k);
    sq_linear_forward(lin, x, rows, y, b->lin);
    restart(c);
}

static void norm_to(const sq_block_desc *d, const float *x, float *y, int rows, int w,
                    const float *g, const float *bias)
{
    if (d->norm == SQ_NORM_RMS)
        sq_rmsnorm_to(x, y, rows, w, g, d->eps);
    else
        sq_layernorm_to(x, y, rows, w, g, bias, d->eps);
}

/* A sub-layer's input: x itself (post, or pre without a norm there:
 * ModernBERT's layer 0 attention, g NULL), or N(x) in tmp (pre). */
static const float *sublayer_input(const sq_block_desc *d, const float *x, float *tmp, int rows,
                                   int w, const float *g, const float *bias, clock *c)
{
    if (d->place != SQ_NORM_PRE || !g)
        return x;
    norm_to(d, x, tmp, rows, w, g, bias);
    mark(c, SQ_OP_LAYERNORM);
    return tmp;
}

/* x += y, then (post) x = N(x). */
static void residual(const sq_block_desc *d, float *x, const float *y, int rows, int H,
                     const float *g, const float *bias, clock *c)
{
    if (d->place == SQ_NORM_PRE) {
        sq_add_inplace(x, y, (int64_t)rows * H);
        mark(c, SQ_OP_RESIDUAL);
    } else if (d->norm == SQ_NORM_LAYER) {
        sq_add_layernorm(x, y, rows, H, g, bias, d->eps);
        mark(c, SQ_OP_LAYERNORM);
    } else {
        sq_add_inplace(x, y, (int64_t)rows * H);
        sq_rmsnorm_to(x, x, rows, H, g, d->eps); /* in place: a row is read before it is written */
        mark(c, SQ_OP_LAYERNORM);
    }
}

/* The activation as its own pass, ffn [rows][up] -> act [rows][F]. */
static void activation(sq_act a, float *ffn, float *act, int rows, int F)
{
    switch (a) {
    case SQ_ACT_RELU: sq_relu_inplace(ffn, (int64_t)rows * F); break;
    case SQ_ACT_SWIGLU: sq_swiglu(ffn, act, rows, F); break;
    case SQ_ACT_GEGLU: sq_geglu(ffn, act, rows, F); break;
    default: sq_gelu_inplace(ffn, (int64_t)rows * F); break;
    }
}

static sq_row_map activation_row(sq_act a)
{
    return a == SQ_ACT_RELU     ? sq_relu_row
           : a == SQ_ACT_SWIGLU ? sq_swiglu_row
           : a == SQ_ACT_GEGLU  ? sq_geglu_row
                                : sq_gelu_row;
}

void sq_block_forward(const sq_block_desc *d, const sq_block *L, int layer, float *x, int rows,
                      const sq_block_bufs *b, const sq_block_attn *attn, const sq_observer *obs)
{
    const int in = L->lin[SQ_LIN_QKV].in, H = L->lin[SQ_LIN_ATTN_OUT].out;
    const int F = L->lin[SQ_LIN_FFN_DOWN].in, up = L->lin[SQ_LIN_FFN_UP].out;
    clock c = {b->lin->prof, 0};
    restart(&c);

    /* Attention. */
    const float *a_in = sublayer_input(d, x, b->tmp, rows, in, L->n1_g, L->n1_b, &c);
    linear(L, SQ_LIN_QKV, layer, a_in, rows, b->qkv, b, obs, &c);
    float prange[2];
    const bool want_p = obs && obs->attn_probs;
    const bool got_p = attn->run(attn->ctx, layer, b->qkv, b->ctx, want_p ? prange : NULL);
    restart(&c);
    if (want_p && got_p)
        obs->attn_probs(obs->ctx, layer, prange[0], prange[1]);
    linear(L, SQ_LIN_ATTN_OUT, layer, b->ctx, rows, b->tmp, b, obs, &c);
    if (L->lin[SQ_LIN_RES].out > 0) {
        linear(L, SQ_LIN_RES, layer, x, rows, b->res, b, obs, &c);
        memcpy(x, b->res, (size_t)rows * H * sizeof(float)); /* x is H wide from here */
        mark(&c, SQ_OP_RESIDUAL);
    }
    residual(d, x, b->tmp, rows, H, L->n1_g, L->n1_b, &c);

    /* FFN. */
    const float *f_in = sublayer_input(d, x, b->tmp, rows, H, L->n2_g, L->n2_b, &c);
    linear(L, SQ_LIN_FFN_UP, layer, f_in, rows, b->ffn, b, obs, &c);
    if (obs && obs->linear_input) { /* the observer sees the activation's output */
        activation(d->act, b->ffn, b->act, rows, F);
        mark(&c, SQ_OP_ACTIVATION);
        linear(L, SQ_LIN_FFN_DOWN, layer, b->act, rows, b->tmp, b, obs, &c);
    } else { /* the activation inside ffn_down's quantize step (linear.h) */
        b->lin->gemm_op = SQ_OP_GEMM_FFN_DOWN;
        sq_linear_forward_mapped(&L->lin[SQ_LIN_FFN_DOWN], b->ffn, (size_t)up, rows,
                                 activation_row(d->act), b->act, b->tmp, b->lin);
        restart(&c);
    }
    residual(d, x, b->tmp, rows, H, L->n2_g, L->n2_b, &c);
}

void sq_block_free(sq_block *L, bool borrowed)
{
    for (int k = 0; k < SQ_LIN_KINDS; k++)
        sq_linear_free(&L->lin[k]);
    if (!borrowed) {
        free(L->n1_g);
        free(L->n1_b);
        free(L->n2_g);
        free(L->n2_b);
        free(L->qn_g);
        free(L->kn_g);
    }
    memset(L, 0, sizeof *L);
}

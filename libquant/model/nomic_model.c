/* NomicBERT's layout onto the one block (block.h): Wqkv is already the
 * fused [Q | K | V] rows, heads contiguous, as the encoder's qkv linear;
 * ffn_up is SwiGLU's gate rows then its up rows, and NomicBERT's gated MLP
 * computes fc11(x) * silu(fc12(x)): the gate is fc12, the up rows fc11.
 * The linears have no bias (the config refuses one): zero biases keep the
 * executor's and the .sqm's one form of a linear. */
#include "nomic_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int linear(const sq_hf_weights *w, int layer, const char *part, int out, int in,
                  sq_linear *l, sq_err *err)
{
    char name[160];
    const sq_safetensors *in_file;
    snprintf(name, sizeof name, "encoder.layers.%d.%s.bias", layer, part);
    if (sq_hf_weights_find(w, name, &in_file))
        return sq_err_set(err, "tensor %s: the config says the linears have no bias", name);
    snprintf(name, sizeof name, "encoder.layers.%d.%s.weight", layer, part);
    l->in = in;
    l->out = out;
    l->qtype = SQ_QT_F32;
    if (!(l->w = sq_hf_weights_load(w, name, out, in, err)))
        return -1;
    if (!(l->b = calloc((size_t)out, sizeof *l->b)))
        return sq_err_set(err, "out of memory");
    return 0;
}

static int norm(const sq_hf_weights *w, int layer, const char *part, int H, float **g,
                float **b, sq_err *err)
{
    char name[160];
    snprintf(name, sizeof name, "encoder.layers.%d.%s.weight", layer, part);
    if (!(*g = sq_hf_weights_load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layers.%d.%s.bias", layer, part);
    return (*b = sq_hf_weights_load(w, name, H, 0, err)) ? 0 : -1;
}

/* ffn_up = [fc12 (gate); fc11 (up)], [2F][H] */
static int gate_up(const sq_hf_weights *w, int layer, int F, int H, sq_linear *l, sq_err *err)
{
    sq_linear gate = {0}, up = {0};
    int rc = -1;
    if (linear(w, layer, "mlp.fc12", F, H, &gate, err) != 0 ||
        linear(w, layer, "mlp.fc11", F, H, &up, err) != 0)
        goto out;
    *l = (sq_linear){.in = H, .out = 2 * F, .qtype = SQ_QT_F32};
    l->w = malloc((size_t)2 * F * H * sizeof *l->w);
    l->b = calloc((size_t)2 * F, sizeof *l->b);
    if (!l->w || !l->b) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    memcpy(l->w, gate.w, (size_t)F * H * sizeof *l->w);
    memcpy(l->w + (size_t)F * H, up.w, (size_t)F * H * sizeof *l->w);
    rc = 0;
out:
    sq_linear_free(&gate);
    sq_linear_free(&up);
    return rc;
}

int sq_nomic_load_weights(const sq_hf_weights *w, sq_encoder *enc, sq_err *err)
{
    const sq_bert_config *c = &enc->cfg;
    const int H = c->hidden, F = c->ffn;
    if (sq_hf_weights_check_layers(w, "encoder.layers.", c->layers, "config.json n_layer",
                                   err) != 0)
        return -1;
    if (!(enc->word_emb = sq_hf_weights_load(w, "embeddings.word_embeddings.weight",
                                             c->vocab_size, H, err)) ||
        (c->type_vocab > 0 &&
         !(enc->type_emb = sq_hf_weights_load(w, "embeddings.token_type_embeddings.weight",
                                              c->type_vocab, H, err))) ||
        !(enc->emb_ln_g = sq_hf_weights_load(w, "emb_ln.weight", H, 0, err)) ||
        !(enc->emb_ln_b = sq_hf_weights_load(w, "emb_ln.bias", H, 0, err)))
        return -1;
    if (!(enc->layers = calloc((size_t)c->layers, sizeof *enc->layers)))
        return sq_err_set(err, "out of memory");
    for (int i = 0; i < c->layers; i++) {
        sq_block *L = &enc->layers[i];
        if (linear(w, i, "attn.Wqkv", 3 * H, H, &L->lin[SQ_LIN_QKV], err) != 0 ||
            linear(w, i, "attn.out_proj", H, H, &L->lin[SQ_LIN_ATTN_OUT], err) != 0 ||
            gate_up(w, i, F, H, &L->lin[SQ_LIN_FFN_UP], err) != 0 ||
            linear(w, i, "mlp.fc2", H, F, &L->lin[SQ_LIN_FFN_DOWN], err) != 0 ||
            norm(w, i, "norm1", H, &L->n1_g, &L->n1_b, err) != 0 ||
            norm(w, i, "norm2", H, &L->n2_g, &L->n2_b, err) != 0)
            return -1;
    }
    return 0;
}

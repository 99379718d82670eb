/* ModernBERT's layout onto the one block (block.h), pre-LN: Wqkv is already
 * the fused [Q | K | V] rows, heads contiguous, as the encoder's qkv
 * linear; mlp.Wi is GeGLU's [activated half; multiplier half] rows as the
 * block's gated ffn_up (ModernBertMLP: input, gate = Wi(x).chunk(2),
 * Wo(act(input) * gate)). The linears and LayerNorms have no bias (the
 * config refuses one): zero biases keep one form of a linear and a norm.
 * Layer 0 has no attn_norm (nn.Identity): its n1 stays NULL. */
#include "modernbert_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tensor that the config says is absent must be absent. */
static int refuse(const sq_hf_weights *w, const char *name, const char *why, sq_err *err)
{
    char full[200];
    const sq_safetensors *in;
    snprintf(full, sizeof full, "%s%s", w->prefix, name);
    if (sq_hf_weights_find(w, full, &in))
        return sq_err_set(err, "tensor %s: %s", full, why);
    return 0;
}

static int linear(const sq_hf_weights *w, int layer, const char *part, int out, int in,
                  sq_linear *l, sq_err *err)
{
    char name[160];
    snprintf(name, sizeof name, "layers.%d.%s.bias", layer, part);
    if (refuse(w, name, "the config says the linears have no bias", err) != 0)
        return -1;
    snprintf(name, sizeof name, "layers.%d.%s.weight", layer, part);
    l->in = in;
    l->out = out;
    l->qtype = SQ_QT_F32;
    if (!(l->w = sq_hf_weights_load(w, name, out, in, err)))
        return -1;
    if (!(l->b = calloc((size_t)out, sizeof *l->b)))
        return sq_err_set(err, "out of memory");
    return 0;
}

/* A LayerNorm without bias (norm_bias false): its weight, a zero bias. */
static int norm(const sq_hf_weights *w, const char *name, int H, float **g, float **b,
                sq_err *err)
{
    char n[160];
    snprintf(n, sizeof n, "%s.bias", name);
    if (refuse(w, n, "the config says the LayerNorms have no bias (norm_bias false)", err) != 0)
        return -1;
    snprintf(n, sizeof n, "%s.weight", name);
    if (!(*g = sq_hf_weights_load(w, n, H, 0, err)))
        return -1;
    if (!(*b = calloc((size_t)H, sizeof **b)))
        return sq_err_set(err, "out of memory");
    return 0;
}

int sq_modernbert_load_weights(sq_hf_weights *w, sq_encoder *enc, sq_err *err)
{
    const sq_bert_config *c = &enc->cfg;
    const int H = c->hidden, F = c->ffn;
    const sq_safetensors *in;
    w->prefix = sq_hf_weights_find(w, "model.embeddings.tok_embeddings.weight", &in) ? "model."
                                                                                      : "";
    if (sq_hf_weights_check_layers(w, "layers.", c->layers, "config.json num_hidden_layers",
                                   err) != 0)
        return -1;
    if (!(enc->word_emb = sq_hf_weights_load(w, "embeddings.tok_embeddings.weight",
                                             c->vocab_size, H, err)) ||
        norm(w, "embeddings.norm", H, &enc->emb_ln_g, &enc->emb_ln_b, err) != 0 ||
        norm(w, "final_norm", H, &enc->final_ln_g, &enc->final_ln_b, err) != 0)
        return -1;
    if (!(enc->layers = calloc((size_t)c->layers, sizeof *enc->layers)))
        return sq_err_set(err, "out of memory");
    char name[160];
    for (int i = 0; i < c->layers; i++) {
        sq_block *L = &enc->layers[i];
        snprintf(name, sizeof name, "layers.%d.attn_norm", i);
        if (i == 0) {
            char wname[180];
            snprintf(wname, sizeof wname, "%s.weight", name);
            if (refuse(w, wname, "layer 0 has no attn_norm in ModernBERT", err) != 0)
                return -1;
        } else if (norm(w, name, H, &L->n1_g, &L->n1_b, err) != 0) {
            return -1;
        }
        snprintf(name, sizeof name, "layers.%d.mlp_norm", i);
        if (norm(w, name, H, &L->n2_g, &L->n2_b, err) != 0 ||
            linear(w, i, "attn.Wqkv", 3 * H, H, &L->lin[SQ_LIN_QKV], err) != 0 ||
            linear(w, i, "attn.Wo", H, H, &L->lin[SQ_LIN_ATTN_OUT], err) != 0 ||
            linear(w, i, "mlp.Wi", 2 * F, H, &L->lin[SQ_LIN_FFN_UP], err) != 0 ||
            linear(w, i, "mlp.Wo", H, F, &L->lin[SQ_LIN_FFN_DOWN], err) != 0)
            return -1;
    }
    return 0;
}

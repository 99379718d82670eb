/* A causal LM from its .sqm (sqm_decoder.h). */
#include "sqm_decoder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqm_model.h"
#include "sqm_schema.h"
#include "sqm_tokenizer.h"

#define NK SQ_DEC_LIN_KINDS

int sq_sqm_load_decoder(const sq_container *c, sq_decoder *d, sq_tokenizer **tok, sq_err *err)
{
    memset(d, 0, sizeof *d);
    *tok = NULL;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    if (sq_sqm_read_meta(c, &ctx, &info, err) != 0)
        goto fail;
    if (!ctx.decoder) {
        sq_err_set(err, "%s: not a causal LM (an encoder model: use embed)", c->path);
        goto fail;
    }
    if (sq_sqm_check_schema(c, &ctx, 0, err) != 0)
        goto fail;
    d->cfg = ctx.dec;
    d->attn_matmul = info.attn_matmul;
    d->borrowed = true;
    const sq_decoder_config *k = &d->cfg;
    if (!(d->layers = calloc((size_t)k->n_layers, sizeof *d->layers)) ||
        !(d->cls_bias = calloc((size_t)k->vocab, sizeof(float)))) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    if (ctx.emb_qt == SQ_QT_S8) { /* a causal embedding model: no head (10.8) */
        const sq_container_tensor *w = sq_container_find(c, "embeddings.word");
        d->tok_q = w->data;
        d->no_head = true;
        if (!(d->tok_scale = sq_sqm_finite_f32(c, "embeddings.word.scale", false, err)))
            goto fail;
    } else if (!(d->tok_emb = (float *)sq_sqm_finite_f32(c, "embeddings.word", false, err))) {
        goto fail;
    }
    if (!(d->rms_final = (float *)sq_sqm_finite_f32(c, "final_norm.weight", false, err)))
        goto fail;
    char name[96];
    for (int l = 0; l < k->n_layers; l++) {
        sq_block *L = &d->layers[l];
        snprintf(name, sizeof name, "layer.%d.rms_att.weight", l);
        if (!(L->n1_g = (float *)sq_sqm_finite_f32(c, name, false, err)))
            goto fail;
        snprintf(name, sizeof name, "layer.%d.rms_ffn.weight", l);
        if (!(L->n2_g = (float *)sq_sqm_finite_f32(c, name, false, err)))
            goto fail;
        if (k->qk_norm) { /* Qwen3 (SQM.md 10.7) */
            snprintf(name, sizeof name, "layer.%d.q_norm.weight", l);
            if (!(L->qn_g = (float *)sq_sqm_finite_f32(c, name, false, err)))
                goto fail;
            snprintf(name, sizeof name, "layer.%d.k_norm.weight", l);
            if (!(L->kn_g = (float *)sq_sqm_finite_f32(c, name, false, err)))
                goto fail;
        }
        for (int j = 0; j < NK; j++) {
            int N, K;
            sq_decoder_linear_shape(k, (sq_linear_kind)j, &N, &K);
            sq_sqm_linear_prefix(name, sizeof name, l, (sq_linear_kind)j);
            if (sq_sqm_load_linear(c, name, N, K, true, &L->lin[j], err) != 0)
                goto fail;
            const sq_linear *li = &L->lin[j];
            if (ctx.dec_acts && li->qtype != SQ_QT_F32 && li->dynamic != (ctx.dec_acts == 2)) {
                char at[112];
                snprintf(at, sizeof at, "%s.act_scale", name);
                sq_err_set_at(err, at, "%s: tensor \"%s\" is %s, but metadata activations is %s",
                              c->path, at, li->dynamic ? "0 (dynamic)" : "nonzero (static)",
                              ctx.dec_acts == 2 ? "dynamic" : "static");
                goto fail;
            }
            L->lin[j].guard = info.guard_rows && L->lin[j].qtype != SQ_QT_F32;
        }
    }
    sq_linear *cl = &d->classifier;
    if (d->no_head) {
        /* no classifier */
    } else if (ctx.cls_qt != SQ_QT_F32) { /* packed (SQM.md 10.6) */
        if (sq_sqm_load_linear(c, SQ_SQM_CLASSIFIER_PREFIX, k->vocab, k->dim, true, cl, err) != 0)
            goto fail;
        cl->guard = info.guard_rows;
    } else {
        cl->in = k->dim;
        cl->out = k->vocab;
        cl->qtype = SQ_QT_F32;
        cl->b = d->cls_bias;
        cl->borrowed = true;
        if (k->tied_classifier)
            cl->w = d->tok_emb;
        else if (!(cl->w = (float *)sq_sqm_finite_f32(c, "classifier.weight", false, err)))
            goto fail;
    }
    if (sq_decoder_rope_tables(d) != 0) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    if (!(*tok = sq_sqm_tokenizer_load_bpe(c, &ctx, k->vocab, err)))
        goto fail;
    return 0;
fail:
    sq_decoder_free(d);
    sq_tokenizer_free(*tok);
    *tok = NULL;
    return -1;
}

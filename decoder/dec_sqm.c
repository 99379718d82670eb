#include "dec_sqm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "sqm_tokenizer.h"
#include "squint_version.h"
#include "strbuf.h"
#include "yaml_tree.h"

#define NK SQ_DEC_LIN_KINDS

bool sq_dec_sqm_is_decoder(const char *path)
{
    if (!sq_sqm_sniff(path))
        return false;
    sq_container c;
    sq_err e;
    if (sq_container_open(path, SQ_KIND_SQM, &c, &e) != 0)
        return false;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    bool dec = sq_sqm_read_meta(&c, &ctx, &info, &e) == 0 && ctx.decoder;
    sq_container_close(&c);
    return dec;
}

static const float *f32_of(const sq_container *c, const char *name, sq_err *err)
{
    const sq_container_tensor *t = sq_container_find(c, name);
    const float *v = t->data;
    for (uint64_t i = 0; i < t->size / 4; i++)
        if (!isfinite(v[i])) {
            sq_err_set_at(err, name, "%s: tensor \"%s\" holds a non-finite value", c->path, name);
            return NULL;
        }
    return v;
}

int sq_dec_sqm_open(const char *path, sq_llama_model *m, sq_err *err)
{
    memset(m, 0, sizeof *m);
    sq_container *c = calloc(1, sizeof *c);
    if (!c)
        return sq_err_set(err, "out of memory");
    if (sq_container_open(path, SQ_KIND_SQM, c, err) != 0) {
        free(c);
        return -1;
    }
    m->sqm = c;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    sq_decoder *d = &m->dec;
    if (sq_container_verify(c, err) != 0 || sq_sqm_read_meta(c, &ctx, &info, err) != 0)
        goto fail;
    if (!ctx.decoder) {
        sq_err_set(err, "%s: not a causal LM (an encoder model: use embed)", path);
        goto fail;
    }
    if (sq_sqm_check_schema(c, &ctx, 0, err) != 0)
        goto fail;
    d->cfg = ctx.dec;
    d->borrowed = true;
    const sq_decoder_config *k = &d->cfg;
    if (!(d->layers = calloc((size_t)k->n_layers, sizeof *d->layers)) ||
        !(d->cls_bias = calloc((size_t)k->vocab, sizeof(float)))) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    if (!(d->tok_emb = (float *)f32_of(c, "embeddings.word", err)) ||
        !(d->rms_final = (float *)f32_of(c, "final_norm.weight", err)))
        goto fail;
    char name[96];
    for (int l = 0; l < k->n_layers; l++) {
        sq_decoder_layer *L = &d->layers[l];
        snprintf(name, sizeof name, "layer.%d.rms_att.weight", l);
        if (!(L->rms_att = (float *)f32_of(c, name, err)))
            goto fail;
        snprintf(name, sizeof name, "layer.%d.rms_ffn.weight", l);
        if (!(L->rms_ffn = (float *)f32_of(c, name, err)))
            goto fail;
        for (int j = 0; j < NK; j++) {
            int N, K;
            sq_decoder_linear_shape(k, (sq_linear_kind)j, &N, &K);
            sq_sqm_linear_prefix(name, sizeof name, l, (sq_linear_kind)j);
            if (sq_sqm_load_linear(c, name, N, K, true, &L->lin[j], err) != 0)
                goto fail;
            const sq_linear *li = &L->lin[j];
            if (ctx.dec_acts && li->qtype != SQ_QT_F32 && li->dynamic != (ctx.dec_acts == 2)) {
                sq_err_set(err, "%s: tensor \"%s.act_scale\" is %s, but metadata activations is %s",
                           path, name, li->dynamic ? "0 (dynamic)" : "nonzero (static)",
                           ctx.dec_acts == 2 ? "dynamic" : "static");
                goto fail;
            }
            L->lin[j].guard = info.guard_rows && L->lin[j].qtype != SQ_QT_F32;
        }
    }
    sq_linear *cl = &d->classifier;
    if (ctx.cls_qt != SQ_QT_F32) { /* packed (SQM.md 10.6) */
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
        else if (!(cl->w = (float *)f32_of(c, "classifier.weight", err)))
            goto fail;
    }
    if (sq_decoder_rope_tables(d) != 0) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    if (!(m->tok = sq_sqm_tokenizer_load_bpe(c, &ctx, k->vocab, err)) ||
        !(m->tokenizer_path = strdup(path)))
        goto fail;
    return 0;
fail:
    sq_llama_model_close(m);
    return -1;
}

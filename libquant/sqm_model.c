#include "sqm_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_yaml.h"
#include "qlinear_ref.h"
#include "quant_embed.h"
#include "yaml_tree.h"

bool sq_sqm_sniff(const char *path)
{
    FILE *fp = fopen(path, "rb");
    unsigned char m[4] = {0};
    size_t n = fp ? fread(m, 1, 4, fp) : 0;
    if (fp)
        fclose(fp);
    return n == 4 && (memcmp(m, "SQNT", 4) == 0 ||
                      (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd));
}

/* The tensor `name` with exactly this dtype and shape (d1 == 0: 1-D). */
static const void *need(const sq_container *c, const char *name, unsigned dt, uint64_t d0,
                        uint64_t d1, sq_err *err)
{
    const sq_container_tensor *t = sq_container_find(c, name);
    int nd = d1 ? 2 : 1;
    if (!t) {
        sq_err_set(err, "%s: missing tensor \"%s\"", c->path, name);
        return NULL;
    }
    if (t->dtype != dt || t->ndim != nd || t->dims[0] != d0 || (nd == 2 && t->dims[1] != d1)) {
        sq_err_set(err, "%s: tensor \"%s\" has the wrong dtype or shape for this model", c->path,
                   name);
        return NULL;
    }
    return t->data;
}

static int parse_meta(const sq_container *c, sq_bert_config *cfg, sq_sqm_info *info,
                      sq_qtype *emb_qt, sq_err *err)
{
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    const yt_node *r = yt_root(doc), *conf;
    const char *s;
    int64_t v;
    int rc = -1;
    memset(cfg, 0, sizeof *cfg);
    if (yt_get_string(r, "format", &s, err) != 0 || strcmp(s, "squint-model") != 0) {
        sq_err_set(err, "%s: metadata is not a squint model", c->path);
        goto out;
    }
    if (yt_get_int64(r, "format_version", 1, 1000, &v, err) != 0)
        goto out;
    if (v != 1) {
        sq_err_set(err, "%s: model format version %lld is not supported", c->path, (long long)v);
        goto out;
    }
    if (!(conf = yt_require(r, "config", err)))
        goto out;
    if (sq_bert_config_from_yaml(conf, cfg, err) != 0)
        goto out;
    if (cfg->hidden % 2 != 0 || cfg->embed_dim % 2 != 0) {
        sq_err_set(err, "%s: hidden %d and embed_dim %d must be even", c->path, cfg->hidden,
                   cfg->embed_dim);
        goto out;
    }
    if (yt_get_string(r, "pooling", &s, err) != 0 || sq_pooling_parse(s, &info->pool.pooling) != 0) {
        sq_err_set(err, "%s: metadata pooling must be cls or mean", c->path);
        goto out;
    }
    if (yt_get_bool(r, "normalize", &info->pool.normalize, err) != 0 ||
        yt_get_int64(r, "max_seq", 3, cfg->max_pos, &v, err) != 0)
        goto out;
    info->max_seq = (int)v;
    info->pool.from_sentence_transformers = true;
    if (yt_get_string(r, "embeddings_type", &s, err) != 0 || sq_qtype_parse(s, emb_qt) != 0) {
        sq_err_set(err, "%s: metadata embeddings_type is missing or unknown", c->path);
        goto out;
    }
    rc = 0;
out:
    yt_free(doc);
    return rc;
}

static int load_linear(const sq_container *c, int l, sq_linear_kind k, const sq_bert_config *cfg,
                       sq_linear *lin, sq_err *err)
{
    const char *kn = sq_linear_kind_name(k);
    int N, K;
    if (!sq_linear_shape(cfg, l, k, &N, &K))
        return 0; /* the layer has no such linear */
    char name[96];
    snprintf(name, sizeof name, "layer.%d.%s.weight", l, kn);
    const sq_container_tensor *wt = sq_container_find(c, name);
    if (!wt)
        return sq_err_set(err, "%s: missing tensor \"%s\"", c->path, name);
    lin->in = K;
    lin->out = N;
    lin->borrowed = true;
    snprintf(name, sizeof name, "layer.%d.%s.bias", l, kn);
    if (!(lin->b = (float *)need(c, name, SQ_CDT_F32, (uint64_t)N, 0, err)))
        return -1;
    if (wt->dtype == SQ_CDT_F32) {
        snprintf(name, sizeof name, "layer.%d.%s.weight", l, kn);
        lin->qtype = SQ_QT_F32;
        lin->w = (float *)need(c, name, SQ_CDT_F32, (uint64_t)N, (uint64_t)K, err);
        return lin->w ? 0 : -1;
    }
    sq_qtype qt = wt->dtype == SQ_CDT_S8_PANEL ? SQ_QT_S8 : SQ_QT_S4G128;
    if ((wt->dtype != SQ_CDT_S8_PANEL && wt->dtype != SQ_CDT_S4G128_PANEL) || wt->ndim != 2 ||
        wt->dims[0] != (uint64_t)N || wt->dims[1] != (uint64_t)K)
        return sq_err_set(err, "%s: tensor \"%s\" has the wrong dtype or shape", c->path, wt->name);
    lin->qtype = qt;
    sq_qweight shape = {0};
    if (sq_qweight_shape(&shape, qt, N, K, err) != 0)
        return -1;
    /* int8: scale [N], wsum [N_pad]; int4: [N, groups] and [N_pad, groups]
     * (2-D even with one group), as formats/SQM.md says. */
    int G = sq_qweight_groups(&shape);
    uint64_t gdim = qt == SQ_QT_S4G128 ? (uint64_t)G : 0;
    snprintf(name, sizeof name, "layer.%d.%s.scale", l, kn);
    const float *scale = need(c, name, SQ_CDT_F32, (uint64_t)N, gdim, err);
    snprintf(name, sizeof name, "layer.%d.%s.wsum", l, kn);
    const int32_t *wsum = scale ? need(c, name, SQ_CDT_I32, (uint64_t)shape.n_pad, gdim, err) : NULL;
    snprintf(name, sizeof name, "layer.%d.%s.act_scale", l, kn);
    const float *as = wsum ? need(c, name, SQ_CDT_F32, 1, 0, err) : NULL;
    if (!as)
        return -1;
    if (!(isfinite(*as) && *as > 0))
        return sq_err_set(err, "%s: layer.%d.%s.act_scale is not a positive number", c->path, l, kn);
    /* The kernels read scales for the padding channels too: pad a copy with 0. */
    lin->scale_pad = calloc((size_t)shape.n_pad * G, sizeof *lin->scale_pad);
    if (!lin->scale_pad)
        return sq_err_set(err, "out of memory");
    memcpy(lin->scale_pad, scale, (size_t)N * G * sizeof(float));
    if (sq_qweight_view(&lin->qw, qt, N, K, wt->data, wt->size, lin->scale_pad, wsum, err) != 0)
        return -1;
    snprintf(name, sizeof name, "layer.%d.%s.smooth", l, kn);
    const sq_container_tensor *st = sq_container_find(c, name);
    const float *s = NULL;
    if (st) {
        if (!(s = need(c, name, SQ_CDT_F32, (uint64_t)K, 0, err)))
            return -1;
        for (int j = 0; j < K; j++)
            if (!(isfinite(s[j]) && s[j] > 0))
                return sq_err_set(err, "%s: %s holds a non-positive factor", c->path, name);
    }
    /* Optional int8 activation zero point (absent: symmetric). The shifted
     * codes reach |q + z| <= 254, so the int32 accumulator bound halves K. */
    int zero = 0;
    snprintf(name, sizeof name, "layer.%d.%s.act_zero", l, kn);
    if (sq_container_find(c, name)) {
        const int32_t *z = need(c, name, SQ_CDT_I32, 1, 0, err);
        if (!z)
            return -1;
        const char *why = sq_ref_act_zero_problem(*z, qt == SQ_QT_S8, K);
        if (why)
            return sq_err_set(err, "%s: %s is %d: %s", c->path, name, (int)*z, why);
        zero = *z;
    }
    if (sq_linear_prepare_quant(lin, s, *as, zero) != 0)
        return sq_err_set(err, "out of memory");
    return 0;
}

int sq_sqm_load_encoder(const sq_container *c, sq_encoder *enc, sq_sqm_info *info, sq_err *err)
{
    memset(enc, 0, sizeof *enc);
    memset(info, 0, sizeof *info);
    sq_qtype emb_qt;
    if (sq_container_verify(c, err) != 0 || parse_meta(c, &enc->cfg, info, &emb_qt, err) != 0)
        return -1;
    enc->borrowed = true;
    const sq_bert_config *cfg = &enc->cfg;
    const uint64_t V = (uint64_t)cfg->vocab_size, H = (uint64_t)cfg->hidden,
                   E = (uint64_t)cfg->embed_dim;
    enc->word_qt = emb_qt;
    if (emb_qt == SQ_QT_F32) {
        if (!(enc->word_emb = (float *)need(c, "embeddings.word", SQ_CDT_F32, V, E, err)))
            goto fail;
    } else if (emb_qt == SQ_QT_S8) {
        if (!(enc->word_q = need(c, "embeddings.word", SQ_CDT_I8, V, E, err)) ||
            !(enc->word_scale = need(c, "embeddings.word.scale", SQ_CDT_F32, V, 0, err)))
            goto fail;
    } else {
        uint64_t G = (uint64_t)sq_embed_s4_groups((int)E);
        if (!(enc->word_q = need(c, "embeddings.word", SQ_CDT_U8, V, E / 2, err)) ||
            !(enc->word_scale = need(c, "embeddings.word.scale", SQ_CDT_F32, V, G, err)))
            goto fail;
    }
    if (!(enc->pos_emb = (float *)need(c, "embeddings.position", SQ_CDT_F32, (uint64_t)cfg->max_pos, E, err)))
        goto fail;
    if (cfg->type_vocab > 0 &&
        !(enc->type_emb = (float *)need(c, "embeddings.token_type", SQ_CDT_F32, (uint64_t)cfg->type_vocab, E, err)))
        goto fail;
    if (cfg->emb_ln && (!(enc->emb_ln_g = (float *)need(c, "embeddings.ln.gamma", SQ_CDT_F32, E, 0, err)) ||
                        !(enc->emb_ln_b = (float *)need(c, "embeddings.ln.beta", SQ_CDT_F32, E, 0, err))))
        goto fail;
    if (cfg->head != SQ_HEAD_NONE) {
        sq_linear *hd = &enc->head;
        hd->in = hd->out = (int)H;
        hd->qtype = SQ_QT_F32;
        hd->borrowed = true;
        if (!(hd->w = (float *)need(c, "head.weight", SQ_CDT_F32, H, H, err)) ||
            !(hd->b = (float *)need(c, "head.bias", SQ_CDT_F32, H, 0, err)))
            goto fail;
    }
    enc->layers = calloc((size_t)cfg->layers, sizeof *enc->layers);
    if (!enc->layers) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    char name[96];
    for (int l = 0; l < cfg->layers; l++) {
        sq_encoder_layer *L = &enc->layers[l];
        uint64_t DA = (uint64_t)sq_ln_attn_dim(cfg, l);
#define LN(field, fmt, D)                                                                          \
    snprintf(name, sizeof name, fmt, l);                                                           \
    if (!(L->field = (float *)need(c, name, SQ_CDT_F32, D, 0, err)))                               \
        goto fail;
        LN(ln_attn_g, "layer.%d.ln_attn.gamma", DA)
        LN(ln_attn_b, "layer.%d.ln_attn.beta", DA)
        LN(ln_ffn_g, "layer.%d.ln_ffn.gamma", H)
        LN(ln_ffn_b, "layer.%d.ln_ffn.beta", H)
#undef LN
        for (int k = 0; k < SQ_LIN_KINDS; k++)
            if (load_linear(c, l, (sq_linear_kind)k, cfg, &L->lin[k], err) != 0)
                goto fail;
    }
    return 0;
fail:
    sq_encoder_free(enc);
    return -1;
}

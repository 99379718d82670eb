#include "sqm_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_yaml.h"
#include "qlinear_ref.h"
#include "quant_embed.h"
#include "qweight_check.h"
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
        sq_err_set_at(err, name, "%s: missing tensor \"%s\"", c->path, name);
        return NULL;
    }
    if (t->dtype != dt || t->ndim != nd || t->dims[0] != d0 || (nd == 2 && t->dims[1] != d1)) {
        sq_err_set_at(err, name, "%s: tensor \"%s\" has the wrong dtype or shape for this model",
                      c->path, name);
        return NULL;
    }
    return t->data;
}

/* need() for an f32 tensor whose every value must be finite (embeddings,
 * LayerNorms, biases: one NaN or inf there makes every embedding NaN).
 * positive: every value must also be > 0 (scales). */
static const float *need_finite(const sq_container *c, const char *name, uint64_t d0,
                                uint64_t d1, bool positive, sq_err *err)
{
    const float *v = need(c, name, SQ_CDT_F32, d0, d1, err);
    if (!v)
        return NULL;
    size_t n = (size_t)d0 * (d1 ? (size_t)d1 : 1);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || (positive && !(v[i] > 0))) {
            sq_err_set_at(err, name, "%s: tensor \"%s\": entry %zu is %g, not %s", c->path, name,
                          i, (double)v[i], positive ? "a finite value > 0" : "finite");
            return NULL;
        }
    return v;
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
    info->guard_rows = false;
    if (yt_get(r, "activation_guard")) {
        if (yt_get_string(r, "activation_guard", &s, err) != 0 ||
            (strcmp(s, "row") != 0 && strcmp(s, "clip") != 0)) {
            sq_err_set(err, "%s: metadata activation_guard must be row or clip", c->path);
            goto out;
        }
        info->guard_rows = strcmp(s, "row") == 0;
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
    char name[96], pre[64];
    snprintf(pre, sizeof pre, "layer.%d.%s", l, kn);
#define NAME(suffix) (snprintf(name, sizeof name, "%s.%s", pre, suffix), name)
    const sq_container_tensor *wt = sq_container_find(c, NAME("weight"));
    if (!wt)
        return sq_err_set_at(err, name, "%s: missing tensor \"%s\"", c->path, name);
    lin->in = K;
    lin->out = N;
    lin->borrowed = true;
    if (!(lin->b = (float *)need_finite(c, NAME("bias"), (uint64_t)N, 0, false, err)))
        return -1;
    if (wt->dtype == SQ_CDT_F32) {
        lin->qtype = SQ_QT_F32;
        lin->w = (float *)need_finite(c, NAME("weight"), (uint64_t)N, (uint64_t)K, false, err);
        return lin->w ? 0 : -1;
    }
    int qi = sq_qtype_from_cdtype(wt->dtype);
    const sq_qtype_traits *tr = qi >= 0 ? sq_qtype_get((sq_qtype)qi) : NULL;
    if (!tr || !tr->executable || wt->ndim != 2 || wt->dims[0] != (uint64_t)N ||
        wt->dims[1] != (uint64_t)K)
        return sq_err_set_at(err, wt->name, "%s: tensor \"%s\" has the wrong dtype or shape",
                             c->path, wt->name);
    const sq_qtype qt = (sq_qtype)qi;
    lin->qtype = qt;
    sq_qweight shape = {0};
    if (sq_qweight_shape(&shape, qt, N, K, err) != 0)
        return -1;
    /* int8: scale [N], wsum [N_pad]; int4: [N, groups] and [N_pad, groups]
     * (2-D even with one group), as formats/SQM.md says. */
    int G = sq_qweight_groups(&shape);
    uint64_t gdim = tr->block ? (uint64_t)G : 0;
    const float *scale = need(c, NAME("scale"), SQ_CDT_F32, (uint64_t)N, gdim, err);
    const int32_t *wsum =
        scale ? need(c, NAME("wsum"), SQ_CDT_I32, (uint64_t)shape.n_pad, gdim, err) : NULL;
    const float *as = wsum ? need(c, NAME("act_scale"), SQ_CDT_F32, 1, 0, err) : NULL;
    if (!as)
        return -1;
    if (!(isfinite(*as) && *as > 0))
        return sq_err_set_at(err, NAME("act_scale"),
                             "%s: tensor \"%s\" is %g, not a finite scale > 0", c->path, name,
                             (double)*as);
    /* The kernels read scales for the padding channels too: pad a copy with 0. */
    lin->scale_pad = calloc((size_t)shape.n_pad * G, sizeof *lin->scale_pad);
    if (!lin->scale_pad)
        return sq_err_set(err, "out of memory");
    memcpy(lin->scale_pad, scale, (size_t)N * G * sizeof(float));
    if (sq_qweight_view(&lin->qw, qt, N, K, wt->data, wt->size, lin->scale_pad, wsum, err) != 0)
        return -1;
    /* The panels, their sums and scales are what every kernel assumes
     * (qweight_check.h): checksums can be forged, so this is proven here. */
    char why[256];
    sq_qweight_problem prob = sq_qweight_check(&lin->qw, why, sizeof why);
    if (prob != SQ_QW_OK)
        return sq_err_set_at(err, NAME(sq_qweight_problem_suffix(prob)), "%s: tensor \"%s\": %s",
                             c->path, name, why);
    const float *s = NULL;
    if (sq_container_find(c, NAME("smooth")) &&
        !(s = need_finite(c, name, (uint64_t)K, 0, true, err)))
        return -1;
    /* Optional int8 activation zero point (absent: symmetric). The shifted
     * codes reach |q + z| <= 254, so the int32 accumulator bound halves K. */
    int zero = 0;
    if (sq_container_find(c, NAME("act_zero"))) {
        const int32_t *z = need(c, name, SQ_CDT_I32, 1, 0, err);
        if (!z)
            return -1;
        const char *why_z = sq_ref_act_zero_problem(*z, tr->act_zero, K);
        if (why_z)
            return sq_err_set_at(err, name, "%s: tensor \"%s\" is %d: %s", c->path, name, (int)*z,
                                 why_z);
        zero = *z;
    }
    if (sq_linear_prepare_quant(lin, s, *as, zero) != 0)
        return sq_err_set(err, "out of memory");
    /* What the runtime derives from the scales must be usable too: an
     * act_scale of 1e-45 or a smooth of 1e-38 gives an infinite multiplier
     * (every code saturates), act_scale * scale can overflow. */
    for (int j = 0; j < K; j++)
        if (!(isfinite(lin->act_mult[j]) && lin->act_mult[j] > 0))
            return sq_err_set_at(err, NAME(s ? "smooth" : "act_scale"),
                                 "%s: tensor \"%s\": input %d's quantization multiplier "
                                 "1 / (smooth * act_scale) = %g is not finite (smooth %g, "
                                 "act_scale %g)",
                                 c->path, name, j, (double)lin->act_mult[j],
                                 s ? (double)s[j] : 1.0, (double)*as);
    if (tr->acc == SQ_ACC_S32)
        for (int n = 0; n < N; n++)
            if (!(isfinite(lin->out_scale[n]) && lin->out_scale[n] > 0))
                return sq_err_set_at(err, NAME("scale"),
                                     "%s: tensor \"%s\": channel %d's output scale act_scale * "
                                     "scale = %g * %g is not a finite value > 0",
                                     c->path, name, n, (double)*as, (double)scale[n]);
#undef NAME
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
        if (!(enc->word_emb = (float *)need_finite(c, "embeddings.word", V, E, false, err)))
            goto fail;
    } else if (emb_qt == SQ_QT_S8) {
        if (!(enc->word_q = need(c, "embeddings.word", SQ_CDT_I8, V, E, err)) ||
            !(enc->word_scale = need_finite(c, "embeddings.word.scale", V, 0, false, err)))
            goto fail;
    } else {
        uint64_t G = (uint64_t)sq_embed_s4_groups((int)E);
        if (!(enc->word_q = need(c, "embeddings.word", SQ_CDT_U8, V, E / 2, err)) ||
            !(enc->word_scale = need_finite(c, "embeddings.word.scale", V, G, false, err)))
            goto fail;
    }
    if (!(enc->pos_emb = (float *)need_finite(c, "embeddings.position", (uint64_t)cfg->max_pos, E,
                                              false, err)))
        goto fail;
    if (cfg->type_vocab > 0 &&
        !(enc->type_emb = (float *)need_finite(c, "embeddings.token_type",
                                               (uint64_t)cfg->type_vocab, E, false, err)))
        goto fail;
    if (cfg->emb_ln &&
        (!(enc->emb_ln_g = (float *)need_finite(c, "embeddings.ln.gamma", E, 0, false, err)) ||
         !(enc->emb_ln_b = (float *)need_finite(c, "embeddings.ln.beta", E, 0, false, err))))
        goto fail;
    if (cfg->head != SQ_HEAD_NONE) {
        sq_linear *hd = &enc->head;
        hd->in = hd->out = (int)H;
        hd->qtype = SQ_QT_F32;
        hd->borrowed = true;
        if (!(hd->w = (float *)need_finite(c, "head.weight", H, H, false, err)) ||
            !(hd->b = (float *)need_finite(c, "head.bias", H, 0, false, err)))
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
    if (!(L->field = (float *)need_finite(c, name, D, 0, false, err)))                           \
        goto fail;
        LN(ln_attn_g, "layer.%d.ln_attn.gamma", DA)
        LN(ln_attn_b, "layer.%d.ln_attn.beta", DA)
        LN(ln_ffn_g, "layer.%d.ln_ffn.gamma", H)
        LN(ln_ffn_b, "layer.%d.ln_ffn.beta", H)
#undef LN
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            if (load_linear(c, l, (sq_linear_kind)k, cfg, &L->lin[k], err) != 0)
                goto fail;
            L->lin[k].guard = info->guard_rows && L->lin[k].qtype != SQ_QT_F32;
        }
    }
    return 0;
fail:
    sq_encoder_free(enc);
    return -1;
}

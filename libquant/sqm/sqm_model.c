#include "sqm_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_yaml.h"
#include "qlinear_ref.h"
#include "qweight_check.h"
#include "sqm_schema.h"
#include "decoder_config.h"
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

/* The data of tensor `name`, whose presence, dtype and shape the schema
 * check (sq_sqm_check_schema) has proven; NULL for an absent optional one. */
static const void *data_of(const sq_container *c, const char *name)
{
    const sq_container_tensor *t = sq_container_find(c, name);
    return t ? t->data : NULL;
}

const float *sq_sqm_finite_f32(const sq_container *c, const char *name, bool positive,
                               sq_err *err)
{
    const sq_container_tensor *t = sq_container_find(c, name);
    const float *v = t->data;
    size_t n = (size_t)(t->size / sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || (positive && !(v[i] > 0))) {
            sq_err_set_at(err, name, "%s: tensor \"%s\": entry %zu is %g, not %s", c->path, name,
                          i, (double)v[i], positive ? "a finite value > 0" : "finite");
            return NULL;
        }
    return v;
}

/* A key an hf-bpe tokenizer section must have (SQM.md 10.5): absent or of
 * the wrong kind, the message names the file and the key. */
static const yt_node *hf_key(const sq_container *c, const yt_node *tok, const char *key,
                             sq_err *err)
{
    const yt_node *n = yt_get(tok, key);
    if (!n)
        sq_err_set(err, "%s: metadata tokenizer.%s is missing (an hf-bpe or hf-bytelevel tokenizer needs it: "
                        "SQM.md 10.5)", c->path, key);
    return n;
}

static int hf_bool(const sq_container *c, const yt_node *tok, const char *key, bool *out,
                   sq_err *err)
{
    const yt_node *n = hf_key(c, tok, key, err);
    if (!n)
        return -1;
    if (yt_as_bool(n, key, out, err) != 0)
        return sq_err_prefix(err, "%s: metadata tokenizer", c->path);
    return 0;
}

/* A causal LM's metadata (SQM.md section 10): its config, the tokenizer's
 * vocabulary size, embeddings_type fp32 and the guard. */
/* Metadata attention (absent: f32, SQM.md 2.2) of a model whose attention
 * inputs are hidden or embed_dim wide, with heads heads. */
static int read_attention(const sq_container *c, const yt_node *r, int hidden, int embed_dim,
                          int heads, int positions, sq_sqm_info *info, sq_err *err)
{
    const char *s;
    info->attn_matmul = SQ_ATTN_F32;
    if (!yt_get(r, "attention"))
        return 0;
    if (yt_get_string(r, "attention", &s, err) != 0 ||
        sq_attn_matmul_parse(s, &info->attn_matmul) != 0)
        return sq_err_set(err, "%s: metadata attention must be one of %s", c->path,
                          sq_attn_matmul_names());
    const char *why = sq_attn_matmul_problem(info->attn_matmul, hidden, embed_dim, heads, positions);
    if (why)
        return sq_err_set(err, "%s: metadata attention %s: %s (hidden %d, embed_dim %d, %d heads, "
                               "%d positions)",
                          c->path, s, why, hidden, embed_dim, heads, positions);
    return 0;
}

/* An hf-bytelevel tokenizer's keys (SQM.md 10.5): its vocabulary may be
 * smaller than the model's (Qwen3: 151,669 ids, 151,936 rows). */
static int read_bytelevel_meta(const sq_container *c, const yt_node *tok, sq_sqm_schema_ctx *ctx,
                               sq_sqm_info *info, sq_err *err)
{
    int64_t v, v2;
    const yt_node *n;
    if (!(n = hf_key(c, tok, "vocab_size", err)))
        return -1;
    if (yt_as_int64(n, "tokenizer.vocab_size", 256, ctx->dec.vocab, &v, err) != 0)
        return sq_err_prefix(err, "%s: metadata (config.vocab_size %d)", c->path, ctx->dec.vocab);
    ctx->tok_vocab_size = v;
    if (ctx->dec.bos >= v || ctx->dec.eos >= v)
        return sq_err_set(err, "%s: metadata config.bos_token_id %d / eos_token_id %d beyond "
                               "tokenizer.vocab_size %d",
                          c->path, (int)ctx->dec.bos, (int)ctx->dec.eos, (int)v);
    const char *pat;
    if (hf_bool(c, tok, "nfc", &ctx->bl_nfc, err) ||
        hf_bool(c, tok, "add_prefix_space", &ctx->bl_add_prefix_space, err) ||
        hf_bool(c, tok, "ignore_merges", &ctx->bl_ignore_merges, err) ||
        !(n = hf_key(c, tok, "pattern", err)))
        return -1;
    if (yt_as_string(n, "tokenizer.pattern", &pat, err) != 0)
        return sq_err_prefix(err, "%s: metadata", c->path);
    if (strcmp(pat, "none") == 0)
        ctx->bl_pattern = 0;
    else if (strcmp(pat, "gpt2") == 0)
        ctx->bl_pattern = 1; /* SQ_PRETOK_GPT2 (sqm_tokenizer.c asserts it) */
    else if (strcmp(pat, "qwen2") == 0)
        ctx->bl_pattern = 2; /* SQ_PRETOK_QWEN2 */
    else
        return sq_err_set(err, "%s: metadata tokenizer.pattern \"%s\" is not none, gpt2 or qwen2",
                          c->path, pat);
    /* optional (10.8): the special tokens around each text of an embedding */
    const char *side[2] = {"single_prefix", "single_suffix"};
    int *cnt[2] = {&ctx->dec_wrap.n_prefix, &ctx->dec_wrap.n_suffix};
    int32_t *ids[2] = {ctx->dec_wrap.prefix, ctx->dec_wrap.suffix};
    for (int k = 0; k < 2; k++) {
        const yt_node *l = yt_get(tok, side[k]);
        if (!l)
            continue;
        if (k == 0)
            ctx->dec_has_wrap = true;
        char what[48];
        snprintf(what, sizeof what, "tokenizer.%s", side[k]);
        if (yt_expect(l, YT_SEQUENCE, what, err) != 0)
            return sq_err_prefix(err, "%s: metadata", c->path);
        if (yt_len(l) > SQ_TEMPLATE_MAX)
            return sq_err_set(err, "%s: metadata %s has more than %d ids", c->path, what,
                              SQ_TEMPLATE_MAX);
        for (size_t i = 0; i < yt_len(l); i++) {
            if (yt_as_int64(yt_at(l, i), what, 0, v - 1, &v2, err) != 0)
                return sq_err_prefix(err, "%s: metadata", c->path);
            ids[k][(*cnt[k])++] = (int32_t)v2;
        }
    }
    info->max_seq = ctx->dec.max_pos;
    return 0;
}

/* A causal embedding model (SQM.md 10.8): pooling last with normalize and
 * max_seq; absent, a plain causal LM. */
static int read_decoder_embedding(const sq_container *c, const yt_node *r,
                                  sq_sqm_schema_ctx *ctx, sq_sqm_info *info, sq_err *err)
{
    const char *s;
    int64_t v;
    if (!yt_get(r, "pooling")) {
        if (ctx->dec_wrap.n_prefix > 1)
            return sq_err_set(err, "%s: metadata tokenizer.single_prefix of a causal LM holds "
                                   "at most one id (its BOS, 10.5) unless it is an embedding "
                                   "model (10.8)",
                              c->path);
        return 0;
    }
    if (yt_get_string(r, "pooling", &s, err) != 0 || strcmp(s, "last") != 0)
        return sq_err_set(err, "%s: metadata pooling of a causal LM must be last (10.8)", c->path);
    if (yt_need_bool(r, "normalize", &info->pool.normalize, err) != 0 ||
        yt_need_int64(r, "max_seq", 3, ctx->dec.max_pos, &v, err) != 0)
        return sq_err_prefix(err, "%s: metadata (a causal embedding model, 10.8)", c->path);
    ctx->dec_embedding = true;
    info->pool.pooling = SQ_POOL_LAST;
    info->pool.from_sentence_transformers = true;
    info->max_seq = (int)v;
    return 0;
}

static int read_decoder_meta(const sq_container *c, const yt_node *r, const yt_node *conf,
                             sq_sqm_schema_ctx *ctx, sq_sqm_info *info, sq_err *err)
{
    const char *s;
    int64_t v;
    ctx->decoder = true;
    if (sq_decoder_config_from_yaml(conf, &ctx->dec, err) != 0)
        return -1;
    ctx->cfg.layers = ctx->dec.n_layers;
    ctx->cfg.vocab_size = ctx->dec.vocab;
    ctx->cfg.hidden = ctx->cfg.embed_dim = ctx->dec.dim;
    /* int8: a causal embedding model's token rows (10.8), checked below */
    if (yt_get_string(r, "embeddings_type", &s, err) != 0 ||
        (strcmp(s, "fp32") != 0 && strcmp(s, "int8") != 0))
        return sq_err_set(err, "%s: metadata embeddings_type of a causal LM must be fp32 (or "
                               "int8 for a causal embedding model, 10.8)", c->path);
    ctx->emb_qt = strcmp(s, "int8") == 0 ? SQ_QT_S8 : SQ_QT_F32;
    /* absent: fp32, every file written before the key existed (SQM.md 10.6) */
    ctx->cls_qt = SQ_QT_F32;
    if (yt_get(r, "classifier_type")) {
        if (yt_get_string(r, "classifier_type", &s, err) != 0 ||
            (strcmp(s, "fp32") != 0 && strcmp(s, "int8") != 0))
            return sq_err_set(err, "%s: metadata classifier_type must be fp32 or int8", c->path);
        ctx->cls_qt = strcmp(s, "int8") == 0 ? SQ_QT_S8 : SQ_QT_F32;
    }
    if (yt_get(r, "activation_guard")) {
        if (yt_get_string(r, "activation_guard", &s, err) != 0 ||
            (strcmp(s, "row") != 0 && strcmp(s, "clip") != 0))
            return sq_err_set(err, "%s: metadata activation_guard must be row or clip", c->path);
        info->guard_rows = strcmp(s, "row") == 0;
    }
    if (read_attention(c, r, ctx->dec.q_dim, ctx->dec.q_dim, ctx->dec.n_heads, ctx->dec.max_pos, info,
                       err) != 0)
        return -1;
    /* informative (10.4), but a value must be one the spec names; the
     * loader checks it against the act_scale tensors */
    ctx->dec_acts = 0;
    if (yt_get(r, "activations")) {
        if (yt_get_string(r, "activations", &s, err) != 0 ||
            (strcmp(s, "static") != 0 && strcmp(s, "dynamic") != 0))
            return sq_err_set(err, "%s: metadata activations must be static or dynamic", c->path);
        ctx->dec_acts = strcmp(s, "static") == 0 ? 1 : 2;
    }
    const yt_node *tok = yt_get(r, "tokenizer");
    if (!tok || yt_get_string(tok, "type", &s, err) != 0 ||
        (strcmp(s, "llama2c-bpe") != 0 && strcmp(s, "hf-bpe") != 0 &&
         strcmp(s, "hf-bytelevel") != 0))
        return sq_err_set(err, "%s: metadata tokenizer.type of a causal LM must be llama2c-bpe, "
                               "hf-bpe or hf-bytelevel",
                          c->path);
    ctx->hf_bpe = strcmp(s, "hf-bpe") == 0;
    ctx->bytelevel = strcmp(s, "hf-bytelevel") == 0;
    if (ctx->bytelevel) { /* SQM.md 10.5: every key required */
        if (read_bytelevel_meta(c, tok, ctx, info, err) != 0)
            return -1;
        return read_decoder_embedding(c, r, ctx, info, err);
    }
    if (yt_get_int64(tok, "vocab_size", 3, 1 << 22, &v, err) != 0 || v != ctx->dec.vocab)
        return sq_err_set(err, "%s: metadata tokenizer.vocab_size must equal config.vocab_size %d",
                          c->path, ctx->dec.vocab);
    ctx->tok_vocab_size = v;
    if (ctx->hf_bpe) { /* SQM.md 10.5: every key required */
        const yt_node *sp;
        int64_t unk;
        const yt_node *un;
        if (hf_bool(c, tok, "add_prefix", &ctx->hf_add_prefix, err) ||
            hf_bool(c, tok, "split", &ctx->hf_split, err) ||
            hf_bool(c, tok, "byte_fallback", &ctx->hf_byte_fallback, err) ||
            hf_bool(c, tok, "fuse_unk", &ctx->hf_fuse_unk, err) ||
            !(un = hf_key(c, tok, "unk_id", err)) || !(sp = hf_key(c, tok, "special_ids", err)))
            return -1;
        if (yt_as_int64(un, "tokenizer.unk_id", -1, v - 1, &unk, err) != 0 ||
            yt_expect(sp, YT_SEQUENCE, "tokenizer.special_ids", err) != 0)
            return sq_err_prefix(err, "%s: metadata", c->path);
        ctx->hf_unk = (int32_t)unk;
        for (size_t i = 0; i < yt_len(sp); i++)
            if (yt_as_int64(yt_at(sp, i), "tokenizer.special_ids", 0, v - 1, &unk, err) != 0)
                return sq_err_prefix(err, "%s: metadata", c->path);
    }
    info->max_seq = ctx->dec.max_pos;
    return 0;
}

int sq_sqm_read_meta(const sq_container *c, sq_sqm_schema_ctx *ctx, sq_sqm_info *info,
                     sq_err *err)
{
    sq_bert_config *cfg = &ctx->cfg;
    sq_qtype *emb_qt = &ctx->emb_qt;
    memset(ctx, 0, sizeof *ctx);
    memset(info, 0, sizeof *info);
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    const yt_node *r = yt_root(doc), *conf;
    const char *s;
    int64_t v;
    int rc = -1;
    memset(cfg, 0, sizeof *cfg);
    if (yt_get_string(r, "format", &s, err) != 0 || strcmp(s, "squint-model") != 0) {
        sq_err_set(err, "%s: metadata is not a squint model (no format: squint-model)", c->path);
        goto out;
    }
    if (yt_need_int64(r, "format_version", 1, 1000, &v, err) != 0)
        goto out;
    if (v != 1) {
        sq_err_set(err, "%s: model format version %lld is not supported", c->path, (long long)v);
        goto out;
    }
    if (!(conf = yt_require(r, "config", err)))
        goto out;
    const yt_node *arch = yt_get(r, "architecture");
    if (arch && yt_scalar(arch) && strcmp(yt_scalar(arch), "llama") == 0) {
        rc = read_decoder_meta(c, r, conf, ctx, info, err);
        /* int8 token rows leave no LM head: an embedding model's only (10.8) */
        if (rc == 0 && ctx->emb_qt != SQ_QT_F32 && (!ctx->dec_embedding || ctx->cls_qt != SQ_QT_F32))
            rc = sq_err_set(err, "%s: metadata embeddings_type int8 is for a causal embedding "
                                 "model (pooling: last) without a classifier (10.8)", c->path);
        goto out;
    }
    if (sq_bert_config_from_yaml(conf, cfg, err) != 0)
        goto out;
    /* the name follows from the config (sq_architecture_name): a file whose
     * name says otherwise was not written by squint */
    if (arch && (!yt_scalar(arch) || strcmp(yt_scalar(arch), sq_architecture_name(cfg)) != 0)) {
        sq_err_set(err, "%s: metadata architecture \"%s\" does not match its config (%s)",
                   c->path, yt_scalar(arch) ? yt_scalar(arch) : "(not a string)",
                   sq_architecture_name(cfg));
        goto out;
    }
    if (cfg->hidden % 2 != 0 || cfg->embed_dim % 2 != 0) {
        sq_err_set(err, "%s: hidden %d and embed_dim %d must be even", c->path, cfg->hidden,
                   cfg->embed_dim);
        goto out;
    }
    if (yt_get_string(r, "pooling", &s, err) != 0 || sq_pooling_parse(s, &info->pool.pooling) != 0) {
        sq_err_set(err, "%s: metadata pooling must be cls or mean", c->path);
        goto out;
    }
    if (yt_need_bool(r, "normalize", &info->pool.normalize, err) != 0 ||
        yt_need_int64(r, "max_seq", 3, sq_bert_max_tokens(cfg), &v, err) != 0)
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
    if (read_attention(c, r, cfg->hidden, cfg->embed_dim, cfg->heads, cfg->max_pos, info, err) != 0)
        goto out;
    /* What the tokenizer tensors depend on; the tokenizer's own parser
     * (sqm_tokenizer.c) refuses a bad type or vocab_size with its message. */
    const yt_node *tok = yt_get(r, "tokenizer");
    sq_err ignored;
    ctx->tok_vocab_size = -1;
    if (tok && yt_get_string(tok, "type", &s, &ignored) == 0)
        ctx->unigram = strcmp(s, "unigram") == 0, ctx->hf_unigram = strcmp(s, "hf-unigram") == 0,
        ctx->bytelevel = strcmp(s, "hf-bytelevel") == 0; /* an encoder's (ModernBERT, 2.4) */
    if (tok && yt_get_int64(tok, "vocab_size", 1, 1 << 22, &v, &ignored) == 0)
        ctx->tok_vocab_size = v;
    /* A classification head (SQM.md section 9): its label count sizes its
     * tensors; the rest of the block is sqm_class_head.c's. */
    const yt_node *ch = yt_get(r, "class_head"), *labels = ch ? yt_get(ch, "labels") : NULL;
    if (ch) {
        if (!labels || yt_kind_of(labels) != YT_SEQUENCE || yt_len(labels) < 2 ||
            yt_len(labels) > 1024) {
            sq_err_set(err, "%s: metadata class_head.labels must be a list of 2 to 1024 strings",
                       c->path);
            goto out;
        }
        ctx->class_head_classes = (int)yt_len(labels);
    }
    rc = 0;
out:
    yt_free(doc);
    return rc;
}

/* Linear `layer.l.K`: its tensors exist with the schema's dtypes and shapes
 * (sq_sqm_check_schema); what is proven here is their values. */
static int load_linear(const sq_container *c, int l, sq_linear_kind k, const sq_bert_config *cfg,
                       sq_linear *lin, sq_err *err)
{
    int N, K;
    if (!sq_linear_shape(cfg, l, k, &N, &K))
        return 0; /* the layer has no such linear */
    char pre[64];
    sq_sqm_linear_prefix(pre, sizeof pre, l, k);
    return sq_sqm_load_linear(c, pre, N, K, false, lin, err);
}

int sq_sqm_load_linear(const sq_container *c, const char *pre, int N, int K, bool allow_dynamic,
                       sq_linear *lin, sq_err *err)
{
    char name[96];
#define NAME(suffix) (snprintf(name, sizeof name, "%s.%s", pre, suffix), name)
    const sq_container_tensor *wt = sq_container_find(c, NAME("weight"));
    lin->in = K;
    lin->out = N;
    lin->borrowed = true;
    if (!(lin->b = (float *)sq_sqm_finite_f32(c, NAME("bias"), false, err)))
        return -1;
    const sq_qtype qt = (sq_qtype)sq_sqm_linear_qtype(wt->dtype);
    if (qt == SQ_QT_F32) {
        lin->qtype = SQ_QT_F32;
        lin->w = (float *)sq_sqm_finite_f32(c, NAME("weight"), false, err);
        return lin->w ? 0 : -1;
    }
    const sq_qtype_traits *tr = sq_qtype_get(qt);
    lin->qtype = qt;
    sq_qweight shape = {0};
    if (sq_qweight_shape(&shape, qt, N, K, err) != 0)
        return -1;
    int G = sq_qweight_groups(&shape);
    const float *scale = data_of(c, NAME("scale"));
    const int32_t *wsum = data_of(c, NAME("wsum"));
    const float *as = data_of(c, NAME("act_scale"));
    static const float one = 1.0f;
    if (allow_dynamic && *as == 0.0f) { /* per-row steps (SQM.md 10.4) */
        lin->dynamic = true;
        as = &one;
    }
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
    if (sq_container_find(c, NAME("smooth")) && !(s = sq_sqm_finite_f32(c, name, true, err)))
        return -1;
    /* Optional int8 activation zero point (absent: symmetric). The shifted
     * codes reach |q + z| <= 254, so the int32 accumulator bound halves K. */
    int zero = 0;
    const int32_t *z = data_of(c, NAME("act_zero"));
    if (z) { /* the schema admits it on int8 linears only */
        const char *why_z = sq_ref_act_zero_problem(*z, tr->act_zero, K);
        if (why_z)
            return sq_err_set_at(err, name, "%s: tensor \"%s\" is %d: %s", c->path, name, (int)*z,
                                 why_z);
        zero = *z;
    }
    /* Optional outlier channels (SQM.md 6.4): strictly increasing indices
     * < K, one finite fp32 row of N per index. */
    const sq_container_tensor *oi = sq_container_find(c, NAME("outlier_index"));
    if (oi) { /* the schema made outlier_weight [n, N] exist beside it */
        const int32_t *idx = oi->data;
        const uint64_t no = oi->dims[0];
        if (no > (uint64_t)K)
            return sq_err_set_at(err, name, "%s: tensor \"%s\" has %llu entries, more than the "
                                 "linear's %d inputs", c->path, name, (unsigned long long)no, K);
        for (uint64_t o = 0; o < no; o++)
            if (idx[o] < 0 || idx[o] >= K || (o > 0 && idx[o] <= idx[o - 1]))
                return sq_err_set_at(err, name, "%s: tensor \"%s\": entry %llu is %d, not an "
                                     "input channel in 0 .. %d above the previous entry",
                                     c->path, name, (unsigned long long)o, (int)idx[o], K - 1);
        const sq_container_tensor *ow = sq_container_find(c, NAME("outlier_weight"));
        if (ow->dims[0] != no)
            return sq_err_set_at(err, name, "%s: tensor \"%s\" has %llu rows, \"%s.outlier_index\" "
                                 "%llu entries", c->path, name, (unsigned long long)ow->dims[0],
                                 pre, (unsigned long long)no);
        if (!(lin->outlier_w = sq_sqm_finite_f32(c, name, false, err)))
            return -1;
        lin->outlier_idx = idx;
        lin->n_outliers = (int)no;
    }
    if (sq_linear_prepare_quant(lin, s, *as, zero) != 0)
        return sq_err_set(err, "out of memory");
    /* What the runtime derives from the scales must be usable too: an
     * act_scale of 1e-45 or a smooth of 1e-38 gives an infinite multiplier
     * (every code saturates), act_scale * scale can overflow. */
    for (int j = 0, o = 0; j < K; j++) {
        if (o < lin->n_outliers && lin->outlier_idx[o] == j) { /* multiplier 0 by design */
            o++;
            continue;
        }
        if (!(isfinite(lin->act_mult[j]) && lin->act_mult[j] > 0))
            return sq_err_set_at(err, NAME(s ? "smooth" : "act_scale"),
                                 "%s: tensor \"%s\": input %d's quantization multiplier "
                                 "1 / (smooth * act_scale) = %g is not finite (smooth %g, "
                                 "act_scale %g)",
                                 c->path, name, j, (double)lin->act_mult[j],
                                 s ? (double)s[j] : 1.0, (double)*as);
    }
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
    sq_sqm_schema_ctx ctx;
    /* Integrity, the metadata, then the structure (every tensor the config
     * implies, with its dtype and shape: sqm_schema.c); the rest is values. */
    if (sq_container_verify(c, err) != 0 || sq_sqm_read_meta(c, &ctx, info, err) != 0)
        return -1;
    if (ctx.decoder)
        return sq_err_set(err, "%s: a causal LM (architecture: llama): run it with generate or "
                               "perplexity", c->path);
    if (sq_sqm_check_schema(c, &ctx, 0, err) != 0)
        return -1;
    enc->cfg = ctx.cfg;
    enc->borrowed = true;
    const sq_bert_config *cfg = &enc->cfg;
    const int H = cfg->hidden;
    enc->word_qt = ctx.emb_qt;
    if (ctx.emb_qt == SQ_QT_F32) {
        if (!(enc->word_emb = (float *)sq_sqm_finite_f32(c, "embeddings.word", false, err)))
            goto fail;
    } else {
        enc->word_q = data_of(c, "embeddings.word");
        if (!(enc->word_scale = sq_sqm_finite_f32(c, "embeddings.word.scale", false, err)))
            goto fail;
    }
    if (cfg->positions != SQ_POS_ROTARY &&
        !(enc->pos_emb = (float *)sq_sqm_finite_f32(c, "embeddings.position", false, err)))
        goto fail;
    if (cfg->type_vocab > 0 &&
        !(enc->type_emb = (float *)sq_sqm_finite_f32(c, "embeddings.token_type", false, err)))
        goto fail;
    if (cfg->emb_ln &&
        (!(enc->emb_ln_g = (float *)sq_sqm_finite_f32(c, "embeddings.ln.gamma", false, err)) ||
         !(enc->emb_ln_b = (float *)sq_sqm_finite_f32(c, "embeddings.ln.beta", false, err))))
        goto fail;
    if (cfg->final_norm &&
        (!(enc->final_ln_g = (float *)sq_sqm_finite_f32(c, "encoder.final_norm.gamma", false,
                                                        err)) ||
         !(enc->final_ln_b = (float *)sq_sqm_finite_f32(c, "encoder.final_norm.beta", false,
                                                        err))))
        goto fail;
    if (cfg->rel_buckets > 0 &&
        (!(enc->rel_bias = (float *)sq_sqm_finite_f32(c, "relative_bias", false, err)) ||
         sq_encoder_build_rel_table(enc, err) != 0))
        goto fail;
    if (cfg->head != SQ_HEAD_NONE) {
        sq_linear *hd = &enc->head;
        hd->in = hd->out = H;
        hd->qtype = SQ_QT_F32;
        hd->borrowed = true;
        if (!(hd->w = (float *)sq_sqm_finite_f32(c, "head.weight", false, err)) ||
            !(hd->b = (float *)sq_sqm_finite_f32(c, "head.bias", false, err)))
            goto fail;
    }
    if (cfg->num_labels > 0) {
        sq_linear *sc = &enc->score;
        sc->in = H;
        sc->out = cfg->num_labels;
        sc->qtype = SQ_QT_F32;
        sc->borrowed = true;
        if (!(sc->w = (float *)sq_sqm_finite_f32(c, "score.weight", false, err)) ||
            !(sc->b = (float *)sq_sqm_finite_f32(c, "score.bias", false, err)))
            goto fail;
    }
    enc->layers = calloc((size_t)cfg->layers, sizeof *enc->layers);
    if (!enc->layers) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    char name[96];
    for (int l = 0; l < cfg->layers; l++) {
        sq_block *L = &enc->layers[l];
#define LN(field, fmt)                                                                             \
    snprintf(name, sizeof name, fmt, l);                                                           \
    if (!(L->field = (float *)sq_sqm_finite_f32(c, name, false, err)))                                 \
        goto fail;
        if (l > 0 || !cfg->first_attn_norm_absent) { /* ModernBERT: none on layer 0 */
            LN(n1_g, "layer.%d.ln_attn.gamma")
            LN(n1_b, "layer.%d.ln_attn.beta")
        }
        LN(n2_g, "layer.%d.ln_ffn.gamma")
        LN(n2_b, "layer.%d.ln_ffn.beta")
#undef LN
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            if (load_linear(c, l, (sq_linear_kind)k, cfg, &L->lin[k], err) != 0)
                goto fail;
            L->lin[k].guard = info->guard_rows && L->lin[k].qtype != SQ_QT_F32;
        }
    }
    enc->attn_matmul = info->attn_matmul;
    return 0;
fail:
    sq_encoder_free(enc);
    return -1;
}

int sq_sqm_labels(const sq_container *c, int n, char ***labels, sq_err *err)
{
    *labels = NULL;
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    const yt_node *seq = yt_get(yt_root(doc), "labels");
    char **l = NULL;
    int rc = -1;
    if (!seq) {
        sq_err_set(err, "%s: metadata lacks 'labels' (the %d class names of the classifier)",
                   c->path, n);
        goto out;
    }
    if (yt_expect(seq, YT_SEQUENCE, "labels", err) != 0)
        goto out;
    if (yt_len(seq) != (size_t)n) {
        yt_error(seq, err, "labels has %zu names, config.num_labels is %d", yt_len(seq), n);
        goto out;
    }
    if (!(l = calloc((size_t)n, sizeof *l))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const char *s;
        if (yt_as_string(yt_at(seq, (size_t)i), "a label", &s, err) != 0)
            goto out;
        if (!(l[i] = strdup(s))) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        const char *why = sq_label_problem(l, i);
        if (why) {
            yt_error(yt_at(seq, (size_t)i), err, "label %d (\"%.64s\") %s", i, s, why);
            goto out;
        }
    }
    *labels = l;
    l = NULL;
    rc = 0;
out:
    sq_labels_free(l, n);
    yt_free(doc);
    return rc;
}

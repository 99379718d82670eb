#include "quantizer.h"

#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "act_capture.h"
#include "quant_plan.h"
#include "calibrate.h"
#include "config_yaml.h"
#include "container.h"
#include "file_hash.h"
#include "outlier_select.h"
#include "pack.h"
#include "qlinear_eval.h"
#include "qlinear_ref.h"
#include "embed_quant.h"
#include "quant_embed.h"
#include "quant_weights.h"
#include "scale_select.h"
#include "smoothquant.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "squint_version.h"
#include "strbuf.h"
#include "yaml_tree.h"

void sq_quantize_report_free(sq_quantize_report *r)
{
    free(r->linears);
    memset(r, 0, sizeof *r);
}








/* ---------- writing the .sqm ---------- */

static void yaml_tokenizer(sq_strbuf *sb, const sq_wordpiece_spec *t)
{
    if (t->type == SQ_TOK_UNIGRAM) {
        sq_sb_printf(sb,
                     "tokenizer:\n  type: unigram\n  vocab_size: %d\n  unk_id: %d\n"
                     "  model_max_length: %d\n",
                     t->vocab_size, t->unk_id, t->model_max_length);
        return;
    }
    sq_sb_printf(sb,
                 "tokenizer:\n  type: wordpiece\n  vocab_size: %d\n  lowercase: %s\n"
                 "  strip_accents: %s\n  clean_text: %s\n  handle_chinese_chars: %s\n"
                 "  continuing_subword_prefix: ",
                 t->vocab_size, t->lowercase ? "true" : "false",
                 t->strip_accents < 0 ? "null" : t->strip_accents ? "true" : "false",
                 t->clean_text ? "true" : "false", t->handle_chinese_chars ? "true" : "false");
    sq_sb_yaml_str(sb, t->continuing_subword_prefix ? t->continuing_subword_prefix : "##");
    sq_sb_printf(sb,
                 "\n  max_input_chars_per_word: %d\n  unk_id: %d\n  cls_id: %d\n  sep_id: %d\n"
                 "  pad_id: %d\n  mask_id: %d\n  model_max_length: %d\n  added_tokens:",
                 t->max_input_chars_per_word, t->unk_id, t->cls_id, t->sep_id, t->pad_id,
                 t->mask_id, t->model_max_length);
    if (t->n_added == 0)
        sq_sb_printf(sb, " []");
    for (int i = 0; i < t->n_added; i++)
        sq_sb_printf(sb, "\n    - %d", t->added[i].id);
    sq_sb_printf(sb, "\n");
}

static char *build_metadata(const sq_embed_model *m, const sq_calib_stats *st, uint64_t st_hash,
                            uint64_t model_digest, const char *model_arg, const sq_recipe *r,
                            const sq_scale_params *sp, const sq_plan_linear *pl,
                            const sq_quantize_report *rep, const char *emb_type,
                            const sq_sqm_class_head *ch)
{
    const sq_bert_config *c = &m->enc.cfg;
    sq_pooling_config pc = m->pool;
    if (c->num_labels == 0) /* a classifier pools [CLS] through its pooler, whatever the recipe */
        sq_recipe_apply_pooling(r, &pc);
    sq_strbuf sb = {0};
    sq_sb_printf(&sb, "format: squint-model\nformat_version: 1\ntool: \"squint %s\"\n"
                      "architecture: %s\n", SQUINT_VERSION, sq_architecture_name(c));
    sq_sb_printf(&sb, "config:\n");
    sq_bert_config_to_yaml(&sb, c, "  ");
    sq_sb_printf(&sb, "pooling: %s\nnormalize: %s\nmax_seq: %d\nembeddings_type: %s\n",
                 sq_pooling_name(pc.pooling), pc.normalize ? "true" : "false", m->max_seq,
                 emb_type);
    sq_sb_printf(&sb, "activation_guard: %s\n", r->guard_rows ? "row" : "clip");
    if (r->attn_matmul != SQ_ATTN_F32) /* absent: f32 (every file written before the key existed) */
        sq_sb_printf(&sb, "attention: %s\n", sq_attn_matmul_name(r->attn_matmul));
    if (c->num_labels > 0) {
        sq_sb_printf(&sb, "labels:");
        for (int i = 0; i < c->num_labels; i++) {
            sq_sb_printf(&sb, "\n  - ");
            sq_sb_yaml_str(&sb, m->labels[i]);
        }
        sq_sb_printf(&sb, "\n");
    }
    yaml_tokenizer(&sb, &m->tok_spec);
    sq_sb_printf(&sb, "source:\n  path: ");
    sq_sb_yaml_str(&sb, model_arg);
    sq_sb_printf(&sb, "\n  digest: \"%016" PRIx64 "\"\n", model_digest);
    sq_plan_yaml_provenance(&sb, st, st_hash, sp, r);
    sq_sb_printf(&sb, "linears:\n");
    for (int i = 0; i < rep->n_linears; i++) {
        const sq_linear_report *lr = &rep->linears[i];
        if (pl[i].absent)
            continue;
        sq_sb_printf(&sb, "  - {name: %s, type: %s, shape: [%d, %d], smooth: %s", lr->name,
                     sq_qtype_get(lr->qtype)->name, lr->n, lr->k, lr->smooth ? "true" : "false");
        if (lr->smooth)
            sq_sb_printf(&sb, ", alpha: %.3g%s", (double)lr->alpha,
                         !pl[i].folded                          ? ""
                         : i % SQ_LIN_KINDS == SQ_LIN_ATTN_OUT ? ", folded_into_v: true"
                                                                : ", folded_into_layernorm: true");
        if (lr->qtype != SQ_QT_F32)
            sq_sb_printf(&sb, ", act_amax: %.9g, act_zero: %d, err: %.6g", (double)lr->act_amax,
                         lr->act_zero, lr->err);
        if (lr->smooth)
            sq_sb_printf(&sb, ", err_nosmooth: %.6g", lr->err_nosmooth);
        if (lr->n_outliers > 0)
            sq_sb_printf(&sb, ", outliers: %d", lr->n_outliers);
        sq_sb_printf(&sb, "}\n");
    }
    if (ch)
        sq_sqm_class_head_yaml(&sb, ch);
    if (sb.failed) {
        sq_sb_free(&sb);
        return NULL;
    }
    return sb.s;
}





#define ADD_REF(name, dt, nd, dims, ptr, size)                                                     \
    do {                                                                                           \
        if (sq_container_writer_add_tensor_ref(w, name, dt, nd, dims, ptr, size, err) != 0)        \
            goto fail;                                                                             \
    } while (0)

static int write_sqm(const sq_embed_model *m, const sq_plan_linear *pl, const char *meta,
                     sq_qtype emb_qt, const sq_sqm_class_head *ch, int zstd_level,
                     const char *path, sq_err *err)
{
    const sq_encoder *e = &m->enc;
    const sq_bert_config *c = &e->cfg;
    const int H = c->hidden;
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    sq_keep kp = {0};
    int rc = -1;
    if (!w) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    if (sq_container_writer_set_metadata(w, meta, strlen(meta), err) != 0)
        goto fail;
    /* tokenizer.vocab: token strings in id order, NUL after each */
    const sq_wordpiece_spec *ts = &m->tok_spec;
    uint64_t vbytes = 0;
    for (int i = 0; i < ts->vocab_size; i++)
        vbytes += strlen(ts->vocab[i]) + 1;
    char *vocab = sq_keep_add(&kp, malloc(vbytes ? vbytes : 1));
    if (!vocab) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int i = 0, o = 0; i < ts->vocab_size; i++) {
        size_t n = strlen(ts->vocab[i]) + 1;
        memcpy(vocab + o, ts->vocab[i], n);
        o += (int)n;
    }
    ADD_REF("tokenizer.vocab", SQ_CDT_U8, 1, &vbytes, vocab, vbytes);
    if (ts->type == SQ_TOK_UNIGRAM) {
        uint64_t nv = (uint64_t)ts->vocab_size;
        ADD_REF("tokenizer.scores", SQ_CDT_F64, 1, &nv, ts->scores, nv * 8);
    }

    const int E = c->embed_dim; /* embedding width (layer 0 input) */
    uint64_t V = (uint64_t)c->vocab_size, d2[2] = {V, (uint64_t)E};
    if (emb_qt == SQ_QT_F32) {
        ADD_REF("embeddings.word", SQ_CDT_F32, 2, d2, e->word_emb, V * E * 4);
    } else if (emb_qt == SQ_QT_S8) {
        int8_t *q = sq_keep_add(&kp, malloc(V * E));
        float *sc = sq_keep_add(&kp, malloc(V * 4));
        if (!q || !sc) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        sq_embed_quant_s8(e->word_emb, (int)V, E, q, sc);
        ADD_REF("embeddings.word", SQ_CDT_I8, 2, d2, q, V * E);
        ADD_REF("embeddings.word.scale", SQ_CDT_F32, 1, &V, sc, V * 4);
    } else {
        uint64_t G = (uint64_t)sq_embed_s4_groups(E), dq[2] = {V, (uint64_t)E / 2}, ds[2] = {V, G};
        uint8_t *q = sq_keep_add(&kp, calloc(V * E / 2, 1));
        float *sc = sq_keep_add(&kp, malloc(V * G * 4));
        if (!q || !sc) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        sq_embed_quant_s4(e->word_emb, (int)V, E, q, sc);
        ADD_REF("embeddings.word", SQ_CDT_U8, 2, dq, q, V * E / 2);
        ADD_REF("embeddings.word.scale", SQ_CDT_F32, 2, ds, sc, V * G * 4);
    }
    uint64_t dp[2] = {(uint64_t)c->max_pos, (uint64_t)E}, dt[2] = {(uint64_t)c->type_vocab, (uint64_t)E},
             de = (uint64_t)E, dh = (uint64_t)H;
    ADD_REF("embeddings.position", SQ_CDT_F32, 2, dp, e->pos_emb, dp[0] * E * 4);
    if (c->type_vocab > 0)
        ADD_REF("embeddings.token_type", SQ_CDT_F32, 2, dt, e->type_emb, dt[0] * E * 4);
    if (c->emb_ln) {
        ADD_REF("embeddings.ln.gamma", SQ_CDT_F32, 1, &de, e->emb_ln_g, de * 4);
        ADD_REF("embeddings.ln.beta", SQ_CDT_F32, 1, &de, e->emb_ln_b, de * 4);
    }
    if (c->head != SQ_HEAD_NONE) {
        uint64_t dhh[2] = {dh, dh};
        ADD_REF("head.weight", SQ_CDT_F32, 2, dhh, e->head.w, dh * dh * 4);
        ADD_REF("head.bias", SQ_CDT_F32, 1, &dh, e->head.b, dh * 4);
    }
    if (c->num_labels > 0) {
        uint64_t nl = (uint64_t)c->num_labels, dlh[2] = {nl, dh};
        ADD_REF("score.weight", SQ_CDT_F32, 2, dlh, e->score.w, nl * dh * 4);
        ADD_REF("score.bias", SQ_CDT_F32, 1, &nl, e->score.b, nl * 4);
    }
    char name[96];
    for (int l = 0; l < c->layers; l++) {
        const sq_encoder_layer *L = &e->layers[l];
        uint64_t da = (uint64_t)sq_ln_attn_dim(c, l);
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
        ADD_REF(NAME("layer.%d.ln_attn.gamma", l), SQ_CDT_F32, 1, &da, L->ln_attn_g, da * 4);
        ADD_REF(NAME("layer.%d.ln_attn.beta", l), SQ_CDT_F32, 1, &da, L->ln_attn_b, da * 4);
        ADD_REF(NAME("layer.%d.ln_ffn.gamma", l), SQ_CDT_F32, 1, &dh, L->ln_ffn_g, dh * 4);
        ADD_REF(NAME("layer.%d.ln_ffn.beta", l), SQ_CDT_F32, 1, &dh, L->ln_ffn_b, dh * 4);
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            const sq_plan_linear *p = &pl[l * SQ_LIN_KINDS + k];
            const sq_linear *lin = &L->lin[k];
            if (p->absent)
                continue;
            const char *kn = sq_linear_kind_name((sq_linear_kind)k);
            uint64_t N = (uint64_t)lin->out, K = (uint64_t)lin->in, dw[2] = {N, K};
            if (p->res.qtype == SQ_QT_F32) {
                ADD_REF(NAME("layer.%d.%s.weight", l, kn), SQ_CDT_F32, 2, dw, lin->w, N * K * 4);
                ADD_REF(NAME("layer.%d.%s.bias", l, kn), SQ_CDT_F32, 1, &N, lin->b, N * 4);
                continue;
            }
            if (sq_plan_add_packed(w, &kp, NAME("layer.%d.%s", l, kn), lin, p, err) != 0)
                goto fail;
#undef NAME
        }
    }
    if (ch) { /* the classification head, last (SQM.md 3.1, 9) */
        uint64_t dc[2] = {(uint64_t)ch->classes, (uint64_t)ch->dim};
        ADD_REF("class_head.weight", SQ_CDT_F64, 2, dc, ch->W, dc[0] * dc[1] * 8);
        ADD_REF("class_head.bias", SQ_CDT_F64, 1, dc, ch->b, dc[0] * 8);
    }
    sq_container_writer_set_zstd(w, zstd_level);
    if (sq_container_writer_write(w, path, err) != 0 || sq_sqm_check_written(path, err) != 0)
        goto out;
    rc = 0;
    goto out;
fail:
    sq_err_prefix(err, "%s", path);
out:
    sq_container_writer_free(w);
    sq_keep_free(&kp);
    return rc;
}

/* ---------- the driver ---------- */

static void warn_to_log(void *ctx, const char *msg)
{
    const sq_quantize_opts *o = ctx;
    sq_quantize_log(o, "warning: %s", msg);
}





int sq_quantize_model(sq_embed_model *m, const char *model_arg, const sq_calib_stats *st,
                      const char *st_path, const sq_quantize_opts *o, const char *out_path,
                      sq_quantize_report *rep, sq_err *err)
{
    memset(rep, 0, sizeof *rep);
    if (m->is_sqm)
        return sq_err_set(err, "%s is already a packed model: quantize the fp32 checkpoint",
                          model_arg);
    const sq_recipe *r = o->recipe;
    const sq_bert_config *c = &m->enc.cfg;
    if (o->class_head && o->class_head->dim != c->hidden)
        return sq_err_set(err, "%s: the head is for %d-dimensional embeddings, but %s gives %d",
                          o->class_head->source ? o->class_head->source : "the head",
                          o->class_head->dim, model_arg, c->hidden);
    const int L = c->layers, NL = L * SQ_LIN_KINDS;
    sq_plan_linear *pl = calloc((size_t)NL, sizeof *pl);
    float **w_orig = calloc((size_t)NL, sizeof *w_orig); /* attn_out before the V fold */
    sq_act_capture cap = {0}, cap2 = {0};
    sq_model_digest md = {0};
    char *meta = NULL;
    float *ones = NULL;
    int rc = -1;
    rep->linears = calloc((size_t)NL, sizeof *rep->linears);
    if (!pl || !w_orig || !rep->linears) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    rep->n_linears = NL;

    /* 0. The statistics must be of this very model. */
    if (sq_model_digest_dir(m->model_dir, &md, err) != 0)
        goto out;
    if (st->decoder || md.combined != st->model_digest || memcmp(&st->cfg, c, sizeof *c) != 0) {
        sq_err_set(err, "%s: statistics are of a different model (model digest %016" PRIx64
                        ", statistics recorded %016" PRIx64 "); recalibrate",
                   st_path, md.combined, st->model_digest);
        goto out;
    }
    for (int i = 0; i < md.n_files; i++)
        rep->bytes_in += md.files[i].size;

    /* 1. Recipe against the model. */
    if (sq_recipe_check_model(r, c, err) != 0)
        goto out;
    const char *attn_why = sq_attn_matmul_problem(r->attn_matmul, c->hidden, c->embed_dim, c->heads);
    if (attn_why) {
        sq_err_set(err, "the recipe's attention.matmul %s: %s; this model has hidden %d, "
                        "embed_dim %d and %d heads", sq_attn_matmul_name(r->attn_matmul), attn_why,
                   c->hidden, c->embed_dim, c->heads);
        goto out;
    }
    if (r->classifier_type != SQ_QT_F32) {
        sq_err_set(err, "%s: classifier type %s is for causal LMs (the lm_head of a llama "
                        "model); an encoder has no such classifier: remove the classifier "
                        "section", r->source ? r->source : "recipe",
                   sq_qtype_get(r->classifier_type)->name);
        goto out;
    }
    if (sq_recipe_check_overrides_layers(r, L, o->strict, warn_to_log, (void *)o, err) < 0)
        goto out;
    bool any_quant = false, any_smooth = false;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            int i = l * SQ_LIN_KINDS + k;
            sq_linear_report *lr = &rep->linears[i];
            const sq_linear *lin = &m->enc.layers[l].lin[k];
            if (lin->out == 0) { /* n == 0 marks it absent in the report */
                pl[i].absent = true;
                continue;
            }
            sq_linear_name(lr->name, sizeof lr->name, l, (sq_linear_kind)k);
            if (sq_recipe_resolve(r, lr->name, &pl[i].res, err) != 0)
                goto out;
            lr->qtype = pl[i].res.qtype;
            lr->n = lin->out;
            lr->k = lin->in;
            lr->smooth = pl[i].res.smooth;
            lr->alpha = pl[i].res.alpha.is_auto ? -1.0f : (float)pl[i].res.alpha.value;
            lr->err = lr->err_nosmooth = NAN;
            lr->bytes_fp32 = (uint64_t)lin->out * lin->in * 4 + (uint64_t)lin->out * 4;
            lr->bytes_packed = lr->qtype == SQ_QT_F32
                                   ? lr->bytes_fp32
                                   : sq_packed_size(lr->qtype, lin->out, lin->in);
            any_quant |= lr->qtype != SQ_QT_F32;
            any_smooth |= lr->smooth;
        }
    if (o->dry_run) {
        rc = 0;
        goto out;
    }
    const sq_scale_params sp = sq_plan_recipe_scale(r);
    const bool int4_search = o->int4_search || r->int4_scale_search;

    /* 1b. Outlier channels of each packed linear (outlier_select.h), from
     * the calibrated channel maxima and the weights as the checkpoint has
     * them; SmoothQuant and the static range then see the other channels. */
    bool any_outl = false;
    for (int i = 0; r->outl_enabled && i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (p->absent || p->res.qtype == SQ_QT_F32)
            continue;
        const sq_linear *lin = &m->enc.layers[i / SQ_LIN_KINDS].lin[i % SQ_LIN_KINDS];
        const sq_act_stats *xs = sq_calib_stats_at(st, i / SQ_LIN_KINDS, (sq_linear_kind)(i % SQ_LIN_KINDS));
        const int n = sq_plan_outliers(p, lin, xs, r, err);
        if (n < 0)
            goto out;
        if (n == 0)
            continue;
        rep->linears[i].n_outliers = p->n_outl;
        any_outl = true;
    }

    /* 2. Real activation rows of every linear input (a few sequences). */
    if (any_quant) {
        if (sq_act_capture_init(&cap, st, o->capture_rows, err) != 0)
            goto out;
        sq_observer obs = sq_act_capture_observer(&cap);
        sq_quantize_log(o, "replaying calibration samples for activation rows ...");
        if (sq_calib_replay(m, st, o->bundled_corpus, o->corpus, o->n_corpus, o->batch, &obs, 64,
                            err) != 0 ||
            sq_act_capture_check(&cap, err) != 0)
            goto out;
    }

    /* 3. SmoothQuant factors; attn_out folded into V first, since the fold
     * changes the V rows that qkv's factors look at. */
    sq_smooth_search search = {.step = (float)r->sq_auto_step};
    static const sq_linear_kind order[SQ_LIN_KINDS] = {SQ_LIN_ATTN_OUT, SQ_LIN_QKV, SQ_LIN_FFN_UP,
                                                       SQ_LIN_FFN_DOWN, SQ_LIN_RES};
    const bool pre_ln = c->norm == SQ_NORM_PRE;
    for (int l = 0; l < L; l++) {
        sq_encoder_layer *Ly = &m->enc.layers[l];
        for (int t = 0; t < SQ_LIN_KINDS; t++) {
            sq_linear_kind k = order[t];
            int i = l * SQ_LIN_KINDS + k;
            sq_plan_linear *p = &pl[i];
            if (p->absent || !p->res.smooth)
                continue;
            sq_linear *lin = &Ly->lin[k];
            const sq_act_stats *xs = sq_calib_stats_at(st, l, k);
            int K = lin->in, N = lin->out;
            float *wmax = calloc((size_t)K, sizeof *wmax);
            p->s = malloc((size_t)K * sizeof *p->s);
            if (!wmax || !p->s) {
                free(wmax);
                sq_err_set(err, "out of memory");
                goto out;
            }
            sq_smooth_weight_absmax(lin->w, N, K, wmax);
            const float *xmax = p->xmax_m ? p->xmax_m : xs->ch_max_abs;
            float alpha = (float)p->res.alpha.value;
            search.qtype = p->res.qtype; /* tune for the type the linear ships as */
            if (p->res.alpha.is_auto &&
                sq_plan_search_alpha(cap.rows[i], cap.n_rows[i], lin, p, xmax, wmax, &search, &alpha,
                             err) != 0) {
                free(wmax);
                sq_err_prefix(err, "%s", rep->linears[i].name);
                goto out;
            }
            sq_smooth_factors(xmax, wmax, K, alpha, p->s);
            free(wmax);
            p->alpha = alpha;
            rep->linears[i].alpha = alpha;
            if (k == SQ_LIN_ATTN_OUT) {
                w_orig[i] = malloc((size_t)N * K * sizeof(float));
                if (!w_orig[i]) {
                    sq_err_set(err, "out of memory");
                    goto out;
                }
                memcpy(w_orig[i], lin->w, (size_t)N * K * sizeof(float));
                if (sq_smooth_fold_v_out(&Ly->lin[SQ_LIN_QKV], lin, p->s, err) != 0)
                    goto out;
                p->folded = true;
            } else if (pre_ln && (k == SQ_LIN_QKV || k == SQ_LIN_FFN_UP)) {
                /* Pre-LN: this LayerNorm feeds only this linear, so 1/s goes
                 * exactly into its gamma and beta and s into W's columns. */
                w_orig[i] = malloc((size_t)N * K * sizeof(float));
                if (!w_orig[i]) {
                    sq_err_set(err, "out of memory");
                    goto out;
                }
                memcpy(w_orig[i], lin->w, (size_t)N * K * sizeof(float));
                if (k == SQ_LIN_QKV)
                    sq_smooth_fold_layernorm(Ly->ln_attn_g, Ly->ln_attn_b, lin, p->s);
                else
                    sq_smooth_fold_layernorm(Ly->ln_ffn_g, Ly->ln_ffn_b, lin, p->s);
                p->folded = true;
            }
        }
    }

    /* 4. Activation clip ranges. Smoothed inputs need the histogram of x / s:
     * replay the calibration with the smoothing applied (not for minmax,
     * whose range follows exactly from the per-channel maxima). */
    const bool range_b = (any_smooth || any_outl) && sp.method != SQ_CALIB_MINMAX;
    bool gptq = false; /* GPTQ's Gram matrices come from the same replay */
    for (int i = 0; i < NL; i++)
        gptq |= sq_plan_wants_gptq(&pl[i], r);
    const bool pass_b = range_b || gptq;
    const int kmax = c->ffn > c->hidden ? c->ffn : c->hidden;
    if (!(ones = malloc((size_t)kmax * sizeof *ones))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int j = 0; j < kmax; j++)
        ones[j] = 1.0f;
    if (pass_b) {
        if (sq_plan_capture_smoothed(&cap2, st, pl, NL, SQ_LIN_KINDS, ones, r, err) != 0)
            goto out;
        sq_observer obs2 = sq_act_capture_observer(&cap2);
        sq_quantize_log(o, "replaying calibration samples for the smoothed activation ranges%s ...",
                        gptq ? " and GPTQ's Gram matrices" : "");
        if (sq_calib_replay(m, st, o->bundled_corpus, o->corpus, o->n_corpus, o->batch, &obs2, 0,
                            err) != 0 ||
            sq_act_capture_check(&cap2, err) != 0)
            goto out;
        sq_plan_take_grams(pl, NL, SQ_LIN_KINDS, &cap2);
    }
    for (int i = 0; i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (p->res.qtype == SQ_QT_F32)
            continue;
        const sq_act_stats *xs = sq_calib_stats_at(st, i / SQ_LIN_KINDS, (sq_linear_kind)(i % SQ_LIN_KINDS));
        if (sq_plan_act(p, xs, range_b ? &cap2.stats[i] : NULL, r, &sp, ones, err) != 0)
            goto out;
        rep->linears[i].act_amax = p->act_amax;
        rep->linears[i].act_zero = p->act_zero;
    }

    /* 5. Quantize and pack every linear; measure its output error. */
    for (int i = 0; i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        sq_linear_report *lr = &rep->linears[i];
        if (p->absent)
            continue;
        int l = i / SQ_LIN_KINDS;
        sq_linear_kind k = (sq_linear_kind)(i % SQ_LIN_KINDS);
        const sq_linear *lin = &m->enc.layers[l].lin[k];
        const sq_act_stats *xs = sq_calib_stats_at(st, l, k);
        if (p->res.qtype != SQ_QT_F32) {
            if (sq_plan_quantize_linear(lin, p->folded ? NULL : p->s, p->s, xs, p->res.qtype, int4_search,
                                p, &p->qw, err) != 0) {
                sq_err_prefix(err, "%s", lr->name);
                goto out;
            }
            const float *wref = p->folded ? w_orig[i] : lin->w;
            if (sq_plan_quantized_error(cap.rows[i], cap.n_rows[i], wref, lin->b, lin->out, lin->in, p->s,
                                p->act_scale, p->act_zero, p, &p->qw, &lr->err, err) != 0)
                goto out;
            if (p->s) { /* the same linear without SmoothQuant, for the report */
                sq_linear plain = {.in = lin->in, .out = lin->out, .w = (float *)wref, .b = lin->b};
                sq_qweight qn = {0};
                float amax_n = 0, scale_n = 1;
                int zero_n = 0;
                bool ok = sq_plan_quantize_linear(&plain, NULL, NULL, xs, p->res.qtype, int4_search, NULL,
                                          &qn, err) == 0 &&
                          sq_plan_select_act(&xs->hist, &sp,
                                     r->zero_point && sq_qtype_get(p->res.qtype)->act_zero,
                                     xs->rows > 0, xs->min, &amax_n, &scale_n, &zero_n, err) == 0;
                ok = ok && sq_plan_quantized_error(cap.rows[i], cap.n_rows[i], wref, lin->b, lin->out,
                                           lin->in, NULL, scale_n, zero_n, NULL, &qn,
                                           &lr->err_nosmooth, err) == 0;
                sq_qweight_free(&qn);
                if (!ok)
                    goto out;
            }
            lr->bytes_packed = sq_plan_packed_bytes(&p->qw);
        }
        if (lr->qtype == SQ_QT_F32)
            sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " bytes (kept)", lr->name, lr->n, lr->k,
                  "fp32", lr->bytes_fp32);
        else {
            char extra[64] = "";
            if (lr->n_outliers > 0)
                snprintf(extra, sizeof extra, "  %d outlier channel%s in fp32", lr->n_outliers,
                         lr->n_outliers == 1 ? "" : "s");
            if (lr->smooth)
                sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " -> %8" PRIu64 " bytes  alpha %.2f  err %.4f (plain %.4f)%s",
                      lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
                      lr->bytes_packed, (double)lr->alpha, lr->err, lr->err_nosmooth, extra);
            else
                sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " -> %8" PRIu64 " bytes  err %.4f%s",
                      lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
                      lr->bytes_packed, lr->err, extra);
        }
    }

    /* 6. Write. */
    uint64_t st_size, st_hash = 0;
    if (st_path && sq_hash_file(st_path, &st_size, &st_hash, err) != 0)
        goto out;
    sq_qtype emb_qt = r->weight_type;
    meta = build_metadata(m, st, st_hash, md.combined, model_arg, r, &sp, pl, rep,
                          sq_qtype_get(emb_qt)->name, o->class_head);
    if (!meta) {
        sq_err_set(err, "out of memory building metadata");
        goto out;
    }
    if (write_sqm(m, pl, meta, emb_qt, o->class_head, o->zstd_level, out_path, err) != 0)
        goto out;
    uint64_t h;
    if (sq_hash_file(out_path, &rep->bytes_out, &h, err) != 0)
        goto out;
    rc = 0;
out:
    free(meta);
    free(ones);
    sq_act_capture_free(&cap);
    sq_act_capture_free(&cap2);
    sq_model_digest_free(&md);
    sq_plan_free(pl, NL, w_orig);
    if (rc != 0)
        sq_quantize_report_free(rep);
    return rc;
}

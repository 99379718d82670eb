/* An encoder's .sqm writer (formats/SQM.md sections 2-9): the fp32 model,
 * the quantizer's per-linear plans and the provenance -> one file, read back
 * against the schema before it counts as written. */
#include "encoder_sqm_write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_yaml.h"
#include "container.h"
#include "embed_quant.h"
#include "quant_embed.h"
#include "quant_plan.h"
#include "sqm_schema.h"
#include "squint_version.h"
#include "strbuf.h"
#include "yaml_tree.h"

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


/* What enc_tensors lists. */
typedef struct enc_src {
    const sq_embed_model *m;
    const sq_plan_linear *pl;
    sq_qtype emb_qt;
    const sq_sqm_class_head *ch;
} enc_src;

static int enc_tensors(const void *ctx, sq_container_writer *w, sq_keep *kp, sq_err *err)
{
    const enc_src *s = ctx;
    const sq_embed_model *m = s->m;
    const sq_plan_linear *pl = s->pl;
    const sq_qtype emb_qt = s->emb_qt;
    const sq_sqm_class_head *ch = s->ch;
    const sq_encoder *e = &m->enc;
    const sq_bert_config *c = &e->cfg;
    const int H = c->hidden;
    /* tokenizer.vocab: token strings in id order, NUL after each */
    const sq_wordpiece_spec *ts = &m->tok_spec;
    uint64_t vbytes = 0;
    for (int i = 0; i < ts->vocab_size; i++)
        vbytes += strlen(ts->vocab[i]) + 1;
    char *vocab = sq_keep_add(kp, malloc(vbytes ? vbytes : 1));
    if (!vocab) {
        return sq_err_set(err, "out of memory");
    }
    for (int i = 0, o = 0; i < ts->vocab_size; i++) {
        size_t n = strlen(ts->vocab[i]) + 1;
        memcpy(vocab + o, ts->vocab[i], n);
        o += (int)n;
    }
    sq_container_writer_add(w, "tokenizer.vocab", SQ_CDT_U8, 1, &vbytes, vocab, vbytes);
    if (ts->type == SQ_TOK_UNIGRAM) {
        uint64_t nv = (uint64_t)ts->vocab_size;
        sq_container_writer_add(w, "tokenizer.scores", SQ_CDT_F64, 1, &nv, ts->scores, nv * 8);
    }

    const int E = c->embed_dim; /* embedding width (layer 0 input) */
    uint64_t V = (uint64_t)c->vocab_size, d2[2] = {V, (uint64_t)E};
    if (emb_qt == SQ_QT_F32) {
        sq_container_writer_add(w, "embeddings.word", SQ_CDT_F32, 2, d2, e->word_emb, V * E * 4);
    } else if (emb_qt == SQ_QT_S8) {
        int8_t *q = sq_keep_add(kp, malloc(V * E));
        float *sc = sq_keep_add(kp, malloc(V * 4));
        if (!q || !sc) {
            return sq_err_set(err, "out of memory");
        }
        sq_embed_quant_s8(e->word_emb, (int)V, E, q, sc);
        sq_container_writer_add(w, "embeddings.word", SQ_CDT_I8, 2, d2, q, V * E);
        sq_container_writer_add(w, "embeddings.word.scale", SQ_CDT_F32, 1, &V, sc, V * 4);
    } else {
        uint64_t G = (uint64_t)sq_embed_s4_groups(E), dq[2] = {V, (uint64_t)E / 2}, ds[2] = {V, G};
        uint8_t *q = sq_keep_add(kp, calloc(V * E / 2, 1));
        float *sc = sq_keep_add(kp, malloc(V * G * 4));
        if (!q || !sc) {
            return sq_err_set(err, "out of memory");
        }
        sq_embed_quant_s4(e->word_emb, (int)V, E, q, sc);
        sq_container_writer_add(w, "embeddings.word", SQ_CDT_U8, 2, dq, q, V * E / 2);
        sq_container_writer_add(w, "embeddings.word.scale", SQ_CDT_F32, 2, ds, sc, V * G * 4);
    }
    uint64_t dp[2] = {(uint64_t)c->max_pos, (uint64_t)E}, dt[2] = {(uint64_t)c->type_vocab, (uint64_t)E},
             de = (uint64_t)E, dh = (uint64_t)H;
    sq_container_writer_add(w, "embeddings.position", SQ_CDT_F32, 2, dp, e->pos_emb, dp[0] * E * 4);
    if (c->type_vocab > 0)
        sq_container_writer_add(w, "embeddings.token_type", SQ_CDT_F32, 2, dt, e->type_emb, dt[0] * E * 4);
    if (c->emb_ln) {
        sq_container_writer_add(w, "embeddings.ln.gamma", SQ_CDT_F32, 1, &de, e->emb_ln_g, de * 4);
        sq_container_writer_add(w, "embeddings.ln.beta", SQ_CDT_F32, 1, &de, e->emb_ln_b, de * 4);
    }
    if (c->head != SQ_HEAD_NONE) {
        uint64_t dhh[2] = {dh, dh};
        sq_container_writer_add(w, "head.weight", SQ_CDT_F32, 2, dhh, e->head.w, dh * dh * 4);
        sq_container_writer_add(w, "head.bias", SQ_CDT_F32, 1, &dh, e->head.b, dh * 4);
    }
    if (c->num_labels > 0) {
        uint64_t nl = (uint64_t)c->num_labels, dlh[2] = {nl, dh};
        sq_container_writer_add(w, "score.weight", SQ_CDT_F32, 2, dlh, e->score.w, nl * dh * 4);
        sq_container_writer_add(w, "score.bias", SQ_CDT_F32, 1, &nl, e->score.b, nl * 4);
    }
    char name[96];
    for (int l = 0; l < c->layers; l++) {
        const sq_block *L = &e->layers[l];
        uint64_t da = (uint64_t)sq_ln_attn_dim(c, l);
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
        sq_container_writer_add(w, NAME("layer.%d.ln_attn.gamma", l), SQ_CDT_F32, 1, &da, L->n1_g, da * 4);
        sq_container_writer_add(w, NAME("layer.%d.ln_attn.beta", l), SQ_CDT_F32, 1, &da, L->n1_b, da * 4);
        sq_container_writer_add(w, NAME("layer.%d.ln_ffn.gamma", l), SQ_CDT_F32, 1, &dh, L->n2_g, dh * 4);
        sq_container_writer_add(w, NAME("layer.%d.ln_ffn.beta", l), SQ_CDT_F32, 1, &dh, L->n2_b, dh * 4);
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            const sq_plan_linear *p = &pl[l * SQ_LIN_KINDS + k];
            const sq_linear *lin = &L->lin[k];
            if (p->absent)
                continue;
            const char *kn = sq_linear_kind_name((sq_linear_kind)k);
            uint64_t N = (uint64_t)lin->out, K = (uint64_t)lin->in, dw[2] = {N, K};
            if (p->res.qtype == SQ_QT_F32) {
                sq_container_writer_add(w, NAME("layer.%d.%s.weight", l, kn), SQ_CDT_F32, 2, dw, lin->w, N * K * 4);
                sq_container_writer_add(w, NAME("layer.%d.%s.bias", l, kn), SQ_CDT_F32, 1, &N, lin->b, N * 4);
                continue;
            }
            if (sq_plan_add_packed(w, kp, NAME("layer.%d.%s", l, kn), lin, p, err) != 0)
                return -1;
#undef NAME
        }
    }
    if (ch) { /* the classification head, last (SQM.md 3.1, 9) */
        uint64_t dc[2] = {(uint64_t)ch->classes, (uint64_t)ch->dim};
        sq_container_writer_add(w, "class_head.weight", SQ_CDT_F64, 2, dc, ch->W, dc[0] * dc[1] * 8);
        sq_container_writer_add(w, "class_head.bias", SQ_CDT_F64, 1, dc, ch->b, dc[0] * 8);
    }
    return 0;
}

int sq_enc_sqm_write(const sq_embed_model *m, const sq_sqm_class_head *ch,
                     const sq_quant_result *res, int zstd_level, const char *path, sq_err *err)
{
    sq_qtype emb_qt = res->recipe->weight_type;
    char *meta = build_metadata(m, res->st, res->st_hash, res->model_digest, res->model_arg,
                                res->recipe, res->scale, res->plans, res->rep,
                                sq_qtype_get(emb_qt)->name, ch);
    const enc_src src = {m, res->plans, emb_qt, ch};
    int rc = sq_plan_write_sqm(meta, enc_tensors, &src, zstd_level, path, err);
    free(meta);
    return rc;
}

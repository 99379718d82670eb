/* An encoder's part of the .sqm writer (formats/SQM.md sections 2-9): its
 * metadata and provenance, and where each schema row's values are; the one
 * writer (sqm_write.h) takes the tensors' names, order and shapes from the
 * schema. */
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
#include "sqm_write.h"
#include "squint_version.h"
#include "strbuf.h"
#include "yaml_tree.h"

/* The added token ids with lstrip (or rstrip) as a flow list. */
static void strip_list(sq_strbuf *sb, const char *key, const sq_wordpiece_spec *t, bool left)
{
    sq_sb_printf(sb, "  %s: [", key);
    for (int i = 0, n = 0; i < t->n_added; i++)
        if (left ? t->added[i].lstrip : t->added[i].rstrip)
            sq_sb_printf(sb, n++ ? ", %d" : "%d", t->added[i].id);
    sq_sb_printf(sb, "]\n");
}

static void yaml_hf_unigram(sq_strbuf *sb, const sq_wordpiece_spec *t)
{
    static const char *const scheme[] = {"always", "first", "never"};
    sq_sb_printf(sb,
                 "tokenizer:\n  type: hf-unigram\n  vocab_size: %d\n  unk_id: %d\n  cls_id: %d\n"
                 "  sep_id: %d\n  pad_id: %d\n  mask_id: %d\n  model_max_length: %d\n"
                 "  collapse_spaces: %s\n  prepend_scheme: %s\n  split: %s\n  added_tokens: [",
                 t->vocab_size, t->unk_id, t->cls_id, t->sep_id, t->pad_id, t->mask_id,
                 t->model_max_length, t->collapse_spaces ? "true" : "false",
                 scheme[t->prepend_scheme], t->metaspace_split ? "true" : "false");
    for (int i = 0; i < t->n_added; i++)
        sq_sb_printf(sb, i ? ", %d" : "%d", t->added[i].id);
    sq_sb_printf(sb, "]\n");
    strip_list(sb, "lstrip_tokens", t, true);
    strip_list(sb, "rstrip_tokens", t, false);
}

/* An encoder's hf-bytelevel (SQM.md 2.4): 10.5's keys, the encoder's ids,
 * pair and strip lists; the rows tokenizer.vocab / .merges / .added. */
static void yaml_hf_bytelevel(sq_strbuf *sb, const sq_wordpiece_spec *t)
{
    static const char *const pattern[] = {"none", "gpt2", "qwen2"};
    sq_sb_printf(sb,
                 "tokenizer:\n  type: hf-bytelevel\n  vocab_size: %d\n  nfc: %s\n  pattern: %s\n"
                 "  add_prefix_space: %s\n  ignore_merges: %s\n  unk_id: %d\n  cls_id: %d\n"
                 "  sep_id: %d\n  pad_id: %d\n  mask_id: %d\n  model_max_length: %d\n"
                 "  pair: %s\n",
                 t->vocab_size, t->bl_nfc ? "true" : "false",
                 pattern[(unsigned)t->bl_pattern < 3 ? t->bl_pattern : 0],
                 t->bl_add_prefix_space ? "true" : "false",
                 t->bl_ignore_merges ? "true" : "false", t->unk_id, t->cls_id, t->sep_id,
                 t->pad_id, t->mask_id, t->model_max_length,
                 t->pair_double_sep ? "roberta" : "bert");
    strip_list(sb, "lstrip_tokens", t, true);
    strip_list(sb, "rstrip_tokens", t, false);
}

void sq_enc_sqm_tokenizer_yaml(sq_strbuf *sb, const sq_wordpiece_spec *t)
{
    if (t->type == SQ_TOK_HF_BYTELEVEL) {
        yaml_hf_bytelevel(sb, t);
        return;
    }
    if (t->type == SQ_TOK_HF_UNIGRAM) {
        yaml_hf_unigram(sb, t);
        return;
    }
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
    if (t->pair_double_sep) /* absent: BERT's pairs, as files before the key */
        sq_sb_printf(sb, "  pair: roberta\n");
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
    sq_enc_sqm_tokenizer_yaml(&sb, &m->tok_spec);
    sq_sb_printf(&sb, "source:\n  path: ");
    sq_sb_yaml_str(&sb, model_arg);
    sq_sb_printf(&sb, "\n  digest: \"%016" PRIx64 "\"\n", model_digest);
    sq_plan_yaml_provenance(&sb, st, st_hash, sp, r);
    sq_sb_printf(&sb, "linears:\n");
    for (int i = 0; i < rep->n_linears; i++) {
        const sq_linear_report *lr = &rep->linears[i];
        if (pl[i].absent)
            continue;
        sq_plan_yaml_linear(&sb, lr,
                            !pl[i].folded                          ? ""
                            : i % SQ_LIN_KINDS == SQ_LIN_ATTN_OUT ? ", folded_into_v: true"
                                                                   : ", folded_into_layernorm: true",
                            true, true);
    }
    if (ch)
        sq_sqm_class_head_yaml(&sb, ch);
    if (sb.failed) {
        sq_sb_free(&sb);
        return NULL;
    }
    return sb.s;
}

/* Where an encoder's tensors are (sqm_write.h: the schema says which). */
typedef struct enc_src {
    const sq_embed_model *m;
    const sq_plan_linear *pl;
    sq_qtype emb_qt;
    const sq_sqm_class_head *ch;
    const void *word_scale; /* the quantized embeddings' scales, made with their codes */
} enc_src;

/* tokenizer.vocab: token strings in id order, NUL after each. */
static int vocab_bytes(const sq_wordpiece_spec *ts, sq_keep *kp, sq_sqm_data *out, sq_err *err)
{
    uint64_t vbytes = 0;
    for (int i = 0; i < ts->vocab_size; i++)
        vbytes += strlen(ts->vocab[i]) + 1;
    char *vocab = sq_keep_add(kp, malloc(vbytes ? vbytes : 1));
    if (!vocab)
        return sq_err_set(err, "out of memory");
    for (int i = 0, o = 0; i < ts->vocab_size; i++) {
        size_t n = strlen(ts->vocab[i]) + 1;
        memcpy(vocab + o, ts->vocab[i], n);
        o += (int)n;
    }
    *out = (sq_sqm_data){vocab, vbytes};
    return 0;
}

/* hf-bytelevel: tokenizer.merges as stored (rank order), tokenizer.added
 * as (id, normalized, special) rows (none: the optional row left out). */
static int bytelevel_rows(const sq_wordpiece_spec *ts, enum sq_sqm_row row, sq_keep *kp,
                          sq_sqm_data *out, sq_err *err)
{
    if (row == SQ_ROW_TOK_MERGES) {
        if (ts->n_merges < 1)
            return sq_err_set(err, "the tokenizer has no merges (the format stores at least one)");
        *out = (sq_sqm_data){ts->merges, (uint64_t)ts->n_merges};
        return 0;
    }
    if (ts->n_added < 1)
        return 0;
    int32_t *v = sq_keep_add(kp, malloc((size_t)ts->n_added * 3 * sizeof *v));
    if (!v)
        return sq_err_set(err, "out of memory");
    for (int32_t r = 0; r < ts->n_added; r++) {
        v[3 * r] = ts->added[r].id;
        v[3 * r + 1] = ts->added[r].normalized;
        v[3 * r + 2] = ts->added[r].special;
    }
    *out = (sq_sqm_data){v, (uint64_t)ts->n_added};
    return 0;
}

/* embeddings.word as embeddings_type says; the scales kept for the next row. */
static int word_rows(enc_src *s, sq_keep *kp, sq_sqm_data *out, sq_err *err)
{
    const sq_encoder *e = &s->m->enc;
    const int V = e->cfg.vocab_size, E = e->cfg.embed_dim;
    if (s->emb_qt == SQ_QT_F32) {
        out->p = e->word_emb;
        return 0;
    }
    const bool s8 = s->emb_qt == SQ_QT_S8;
    const size_t G = s8 ? 1 : (size_t)sq_embed_s4_groups(E);
    void *q = sq_keep_add(kp, s8 ? malloc((size_t)V * E) : calloc((size_t)V * E / 2, 1));
    float *sc = sq_keep_add(kp, malloc((size_t)V * G * 4));
    if (!q || !sc)
        return sq_err_set(err, "out of memory");
    if (s8)
        sq_embed_quant_s8(e->word_emb, V, E, q, sc);
    else
        sq_embed_quant_s4(e->word_emb, V, E, q, sc);
    s->word_scale = sc;
    out->p = q;
    return 0;
}

static int enc_tensor(void *ctx, enum sq_sqm_row row, int l, sq_keep *kp, sq_sqm_data *out,
                      sq_err *err)
{
    enc_src *s = ctx;
    const sq_encoder *e = &s->m->enc;
    const sq_block *L = row >= SQ_ROW_LN_ATTN_GAMMA && row <= SQ_ROW_LN_FFN_BETA ? &e->layers[l] : NULL;
    *out = (sq_sqm_data){NULL, 0};
    switch (row) {
    case SQ_ROW_TOK_VOCAB: return vocab_bytes(&s->m->tok_spec, kp, out, err);
    case SQ_ROW_TOK_SCORES: out->p = s->m->tok_spec.scores; break;
    case SQ_ROW_TOK_MERGES:
    case SQ_ROW_TOK_ADDED: return bytelevel_rows(&s->m->tok_spec, row, kp, out, err);
    case SQ_ROW_TOK_CHARSMAP: /* absent without a Precompiled step (an optional row) */
        *out = (sq_sqm_data){s->m->tok_spec.charsmap, s->m->tok_spec.charsmap_len};
        break;
    case SQ_ROW_WORD: return word_rows(s, kp, out, err);
    case SQ_ROW_WORD_SCALE: out->p = s->word_scale; break;
    case SQ_ROW_POSITION: out->p = e->pos_emb; break;
    case SQ_ROW_TOKEN_TYPE: out->p = e->type_emb; break;
    case SQ_ROW_EMB_LN_GAMMA: out->p = e->emb_ln_g; break;
    case SQ_ROW_EMB_LN_BETA: out->p = e->emb_ln_b; break;
    case SQ_ROW_REL_BIAS: out->p = e->rel_bias; break;
    case SQ_ROW_FINAL_LN_GAMMA: out->p = e->final_ln_g; break;
    case SQ_ROW_FINAL_LN_BETA: out->p = e->final_ln_b; break;
    case SQ_ROW_HEAD_WEIGHT: out->p = e->head.w; break;
    case SQ_ROW_HEAD_BIAS: out->p = e->head.b; break;
    case SQ_ROW_SCORE_WEIGHT: out->p = e->score.w; break;
    case SQ_ROW_SCORE_BIAS: out->p = e->score.b; break;
    case SQ_ROW_LN_ATTN_GAMMA: out->p = L->n1_g; break;
    case SQ_ROW_LN_ATTN_BETA: out->p = L->n1_b; break;
    case SQ_ROW_LN_FFN_GAMMA: out->p = L->n2_g; break;
    case SQ_ROW_LN_FFN_BETA: out->p = L->n2_b; break;
    case SQ_ROW_CLASS_HEAD_WEIGHT: out->p = s->ch ? s->ch->W : NULL; break;
    case SQ_ROW_CLASS_HEAD_BIAS: out->p = s->ch ? s->ch->b : NULL; break;
    default: break;
    }
    return 0;
}

static const sq_linear *enc_linear(void *ctx, int l, sq_linear_kind k, const sq_plan_linear **plan)
{
    const enc_src *s = ctx;
    if (l < 0) /* only a causal LM has a packed classifier */
        return NULL;
    const sq_plan_linear *p = &s->pl[l * SQ_LIN_KINDS + k];
    if (p->absent)
        return NULL;
    *plan = p;
    return &s->m->enc.layers[l].lin[k];
}

int sq_enc_sqm_write(const sq_embed_model *m, const sq_sqm_class_head *ch,
                     const sq_quant_result *res, int zstd_level, const char *path, sq_err *err)
{
    sq_qtype emb_qt = res->recipe->weight_type;
    char *meta = build_metadata(m, res->st, res->st_hash, res->model_digest, res->model_arg,
                                res->recipe, res->scale, res->plans, res->rep,
                                sq_qtype_get(emb_qt)->name, ch);
    enc_src es = {m, res->plans, emb_qt, ch, NULL};
    const sq_sqm_source src = {enc_tensor, enc_linear, &es};
    int rc = sq_sqm_write(meta, &src, zstd_level, path, err);
    free(meta);
    return rc;
}

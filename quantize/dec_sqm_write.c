/* A causal LM's part of the .sqm writer (formats/SQM.md section 10): its
 * metadata and where each schema row's values are (the one writer,
 * sqm_write.h, walks the schema); the loader is libquant/sqm/sqm_decoder.c. */
#include "dec_sqm_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "embed_quant.h"
#include "quant_plan.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "sqm_write.h"
#include "squint_version.h"
#include "strbuf.h"
#include "tokenizer_bpe.h"
#include "tokenizer_bytelevel.h"
#include "yaml_tree.h"


/* The packed classifier's plan (SQM.md 10.6), after the layers', or NULL. */
static const sq_plan_linear *classifier_plan(const sq_llama_model *m, const sq_quant_result *res)
{
    const int NL = m->dec.cfg.n_layers * SQ_LIN_KINDS;
    return res->rep->n_linears > NL ? &res->plans[NL] : NULL;
}

static char *build_metadata(const sq_llama_model *m, bool dynamic_acts, const sq_quant_result *res)
{
    const sq_plan_linear *cls_plan = classifier_plan(m, res);
    const sq_decoder_config *c = &m->dec.cfg;
    const sq_calib_stats *st = res->st;
    sq_strbuf sb = {0};
    sq_sb_printf(&sb, "format: squint-model\nformat_version: 1\ntool: \"squint %s\"\n"
                      "architecture: llama\nconfig:\n", SQUINT_VERSION);
    sq_decoder_config_to_yaml(&sb, c, "  ");
    /* a causal embedding model runs no LM head: its token rows go in int8
     * (one scale per row, as an encoder's) and no classifier is written (10.8) */
    sq_sb_printf(&sb, "embeddings_type: %s\nactivation_guard: %s\nactivations: %s\n",
                 m->emb.on ? "int8" : "fp32", res->recipe->guard_rows ? "row" : "clip",
                 dynamic_acts ? "dynamic" : "static");
    if (cls_plan) /* written only when int8: fp32 files stay as they were */
        sq_sb_printf(&sb, "classifier_type: int8\n");
    if (res->recipe->attn_matmul != SQ_ATTN_F32) /* absent: f32, as files before the key */
        sq_sb_printf(&sb, "attention: %s\n", sq_attn_matmul_name(res->recipe->attn_matmul));
    const sq_bpe *tok = sq_tokenizer_bpe(m->tok);
    const sq_bl *bl = sq_tokenizer_bl(m->tok);
    if (bl) { /* SQM.md 10.5, hf-bytelevel */
        sq_bl_spec b;
        sq_bl_settings(bl, &b);
        static const char *const pattern[] = {"none", "gpt2", "qwen2"};
        sq_sb_printf(&sb, "tokenizer:\n  type: hf-bytelevel\n  vocab_size: %d\n  nfc: %s\n"
                          "  pattern: %s\n  add_prefix_space: %s\n  ignore_merges: %s\n",
                     (int)b.n_pieces, b.nfc ? "true" : "false",
                     pattern[(unsigned)b.pattern < 3 ? b.pattern : 0],
                     b.add_prefix_space ? "true" : "false", b.ignore_merges ? "true" : "false");
        if (m->has_template) { /* SQM.md 10.5: the tokenizer.json post-processor's */
            const sq_hf_single_template *w = &m->tmpl;
            sq_sb_printf(&sb, "  single_prefix: [");
            for (int i = 0; i < w->n_prefix; i++)
                sq_sb_printf(&sb, "%s%d", i ? ", " : "", (int)w->prefix[i]);
            sq_sb_printf(&sb, "]\n  single_suffix: [");
            for (int i = 0; i < w->n_suffix; i++)
                sq_sb_printf(&sb, "%s%d", i ? ", " : "", (int)w->suffix[i]);
            sq_sb_printf(&sb, "]\n");
        }
    } else if (sq_bpe_is_hf(tok)) {
        sq_bpe_hf h;
        sq_bpe_hf_settings(tok, &h);
        sq_sb_printf(&sb, "tokenizer:\n  type: hf-bpe\n  vocab_size: %d\n  add_prefix: %s\n"
                          "  split: %s\n  byte_fallback: %s\n  fuse_unk: %s\n  unk_id: %d\n"
                          "  special_ids: [",
                     (int)h.n_pieces, h.add_prefix ? "true" : "false", h.split ? "true" : "false",
                     h.byte_fallback ? "true" : "false", h.fuse_unk ? "true" : "false",
                     (int)h.unk);
        for (int32_t i = 0, k = 0; i < h.n_pieces; i++)
            if (sq_bpe_is_special(tok, i))
                sq_sb_printf(&sb, "%s%d", k++ ? ", " : "", (int)i);
        sq_sb_printf(&sb, "]\n");
    } else {
        sq_sb_printf(&sb, "tokenizer:\n  type: llama2c-bpe\n  vocab_size: %d\n",
                     (int)sq_bpe_vocab_size(tok));
    }
    if (m->emb.on && !bl) {
        sq_sb_free(&sb);
        return NULL; /* sq_dec_sqm_write refuses it first, with its reason */
    }
    if (m->emb.on) /* a causal embedding model (SQM.md 10.8) */
        sq_sb_printf(&sb, "pooling: last\nnormalize: %s\nmax_seq: %d\n",
                     m->emb.normalize ? "true" : "false", m->emb.max_seq);
    sq_sb_printf(&sb, "source:\n  path: ");
    sq_sb_yaml_str(&sb, res->model_arg);
    sq_sb_printf(&sb, "\n  digest: \"%016" PRIx64 "\"\n", res->model_digest);
    sq_plan_yaml_provenance(&sb, st, res->st_hash, res->scale, res->recipe);
    sq_sb_printf(&sb, "linears:\n");
    for (int i = 0; i < res->rep->n_linears; i++) {
        const sq_linear_report *lr = &res->rep->linears[i];
        if (lr->n == 0)
            continue; /* the layer has no such linear (res) */
        /* the classifier's activations are always dynamic (no static range) */
        const bool dyn = dynamic_acts || strcmp(lr->name, SQ_SQM_CLASSIFIER_PREFIX) == 0;
        sq_plan_yaml_linear(&sb, lr, "", !dyn, false);
    }
    if (sb.failed) {
        sq_sb_free(&sb);
        return NULL;
    }
    return sb.s;
}

/* Where a causal LM's tensors are (sqm_write.h: the schema says which). */
typedef struct dec_src {
    const sq_llama_model *m;
    const sq_quant_result *res;
    float *word_scale; /* int8 token rows: their scales, for the row after */
} dec_src;

/* tokenizer.vocab (pieces in id order, NUL after each), .scores as f64, or
 * .merges in rank order (SQM.md 10.5). */
static int tokenizer_rows(const sq_bpe *tok, enum sq_sqm_row row, sq_keep *kp, sq_sqm_data *out,
                          sq_err *err)
{
    const int32_t V = sq_bpe_vocab_size(tok);
    if (row == SQ_ROW_TOK_MERGES) {
        sq_bpe_hf hs;
        sq_bpe_hf_settings(tok, &hs);
        if (hs.n_merges < 1) /* the path is put in front by sq_sqm_write */
            return sq_err_set(err, "the tokenizer has no merges (the format stores at least one)");
        int32_t *merges = sq_keep_add(kp, malloc((size_t)hs.n_merges * 2 * sizeof *merges));
        if (!merges)
            return sq_err_set(err, "out of memory");
        for (int32_t r = 0; r < hs.n_merges; r++)
            sq_bpe_merge_pair(tok, r, &merges[2 * r], &merges[2 * r + 1]);
        *out = (sq_sqm_data){merges, (uint64_t)hs.n_merges};
        return 0;
    }
    if (row == SQ_ROW_TOK_SCORES) {
        double *scores = sq_keep_add(kp, malloc((size_t)V * sizeof *scores));
        if (!scores)
            return sq_err_set(err, "out of memory");
        for (int32_t i = 0; i < V; i++)
            scores[i] = (double)sq_bpe_score(tok, i);
        out->p = scores;
        return 0;
    }
    uint64_t vbytes = 0;
    for (int32_t i = 0; i < V; i++) {
        size_t n;
        sq_bpe_token(tok, i, &n);
        vbytes += n + 1;
    }
    char *vocab = sq_keep_add(kp, malloc(vbytes ? vbytes : 1));
    if (!vocab)
        return sq_err_set(err, "out of memory");
    for (int32_t i = 0, o = 0; i < V; i++) {
        size_t n;
        const char *t = sq_bpe_token(tok, i, &n);
        memcpy(vocab + o, t, n + 1);
        o += (int)n + 1;
    }
    *out = (sq_sqm_data){vocab, vbytes};
    return 0;
}

/* The hf-bytelevel rows (SQM.md 10.5): tokenizer.vocab (pieces in id order,
 * NUL after each), .merges in rank order, .added as (id, normalized,
 * special) rows (none: the optional tensor left out). */
static int bytelevel_rows(const sq_bl *bl, enum sq_sqm_row row, sq_keep *kp, sq_sqm_data *out,
                          sq_err *err)
{
    sq_bl_spec b;
    sq_bl_settings(bl, &b);
    if (row == SQ_ROW_TOK_MERGES || row == SQ_ROW_TOK_ADDED) {
        const int32_t n = row == SQ_ROW_TOK_MERGES ? b.n_merges : b.n_added, w = row == SQ_ROW_TOK_MERGES ? 2 : 3;
        if (n < 1) {
            if (row == SQ_ROW_TOK_ADDED)
                return 0;
            return sq_err_set(err, "the tokenizer has no merges (the format stores at least one)");
        }
        int32_t *v = sq_keep_add(kp, malloc((size_t)n * (size_t)w * sizeof *v));
        if (!v)
            return sq_err_set(err, "out of memory");
        for (int32_t r = 0; r < n; r++) {
            if (row == SQ_ROW_TOK_MERGES) {
                sq_bl_merge_pair(bl, r, &v[2 * r], &v[2 * r + 1]);
            } else {
                v[3 * r] = b.added[r].id;
                v[3 * r + 1] = b.added[r].normalized;
                v[3 * r + 2] = b.added[r].special;
            }
        }
        *out = (sq_sqm_data){v, (uint64_t)n};
        return 0;
    }
    if (row != SQ_ROW_TOK_VOCAB)
        return 0;
    uint64_t vbytes = 0;
    for (int32_t i = 0; i < b.n_pieces; i++) {
        const size_t n = strlen(sq_bl_token(bl, i));
        if (n == 0)
            return sq_err_set(err, "the tokenizer's piece %d is empty (the format cannot hold it)",
                              (int)i);
        vbytes += n + 1;
    }
    char *vocab = sq_keep_add(kp, malloc(vbytes));
    if (!vocab)
        return sq_err_set(err, "out of memory");
    uint64_t o = 0;
    for (int32_t i = 0; i < b.n_pieces; i++) {
        const char *t = sq_bl_token(bl, i);
        const size_t n = strlen(t);
        memcpy(vocab + o, t, n + 1);
        o += n + 1;
    }
    *out = (sq_sqm_data){vocab, vbytes};
    return 0;
}

static int dec_tensor(void *ctx, enum sq_sqm_row row, int l, sq_keep *kp, sq_sqm_data *out,
                      sq_err *err)
{
    dec_src *s = ctx;
    const sq_decoder *d = &s->m->dec;
    *out = (sq_sqm_data){NULL, 0};
    switch (row) {
    case SQ_ROW_TOK_VOCAB:
    case SQ_ROW_TOK_SCORES:
    case SQ_ROW_TOK_MERGES:
    case SQ_ROW_TOK_ADDED:
        if (sq_tokenizer_bl(s->m->tok))
            return bytelevel_rows(sq_tokenizer_bl(s->m->tok), row, kp, out, err);
        return row == SQ_ROW_TOK_ADDED ? 0
                                       : tokenizer_rows(sq_tokenizer_bpe(s->m->tok), row, kp, out, err);
    case SQ_ROW_WORD:
        if (s->m->emb.on) {
            const int V = d->cfg.vocab, D = d->cfg.dim;
            int8_t *q = sq_keep_add(kp, malloc((size_t)V * D));
            float *sc = sq_keep_add(kp, malloc((size_t)V * sizeof *sc));
            if (!q || !sc)
                return sq_err_set(err, "out of memory");
            sq_embed_quant_s8(d->tok_emb, V, D, q, sc);
            s->word_scale = sc;
            out->p = q;
        } else {
            out->p = d->tok_emb;
        }
        break;
    case SQ_ROW_WORD_SCALE: out->p = s->word_scale; break;
    case SQ_ROW_RMS_ATT: out->p = d->layers[l].n1_g; break;
    case SQ_ROW_RMS_FFN: out->p = d->layers[l].n2_g; break;
    case SQ_ROW_Q_NORM: out->p = d->layers[l].qn_g; break;
    case SQ_ROW_K_NORM: out->p = d->layers[l].kn_g; break;
    case SQ_ROW_FINAL_NORM: out->p = d->rms_final; break;
    case SQ_ROW_CLASSIFIER: out->p = d->classifier.w; break;
    default: break;
    }
    return 0;
}

static const sq_linear *dec_linear(void *ctx, int l, sq_linear_kind k, const sq_plan_linear **plan)
{
    const dec_src *s = ctx;
    const sq_decoder *d = &s->m->dec;
    if (l == SQ_SQM_CLASSIFIER) {
        *plan = classifier_plan(s->m, s->res);
        return *plan ? &d->classifier : NULL;
    }
    if (k >= SQ_DEC_LIN_KINDS)
        return NULL;
    *plan = &s->res->plans[l * SQ_LIN_KINDS + k];
    return &d->layers[l].lin[k];
}

int sq_dec_sqm_write(const sq_llama_model *m, bool dynamic_acts, const sq_quant_result *res,
                     int zstd_level, const char *path, sq_err *err)
{
    if (m->emb.on && !sq_tokenizer_bl(m->tok))
        return sq_err_set(err, "%s: a causal embedding model's .sqm needs a byte-level "
                               "tokenizer (SQM.md 10.8)",
                          path);
    char *meta = build_metadata(m, dynamic_acts, res);
    if (!meta)
        return sq_err_set(err, "out of memory");
    dec_src ds = {m, res, NULL};
    const sq_sqm_source src = {dec_tensor, dec_linear, &ds};
    int rc = sq_sqm_write(meta, &src, zstd_level, path, err);
    free(meta);
    return rc;
}


/* A causal LM's .sqm writer (formats/SQM.md section 10), from the quantizer's
 * plans; the loader is decoder/dec_sqm.c. */
#include "dec_sqm_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "quant_plan.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "squint_version.h"
#include "strbuf.h"
#include "tokenizer_bpe.h"
#include "yaml_tree.h"

#define NK SQ_DEC_LIN_KINDS

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
    sq_sb_printf(&sb, "embeddings_type: fp32\nactivation_guard: %s\nactivations: %s\n",
                 res->recipe->guard_rows ? "row" : "clip", dynamic_acts ? "dynamic" : "static");
    if (cls_plan) /* written only when int8: fp32 files stay as they were */
        sq_sb_printf(&sb, "classifier_type: int8\n");
    if (res->recipe->attn_matmul != SQ_ATTN_F32) /* absent: f32, as files before the key */
        sq_sb_printf(&sb, "attention: %s\n", sq_attn_matmul_name(res->recipe->attn_matmul));
    const sq_bpe *tok = sq_tokenizer_bpe(m->tok);
    if (sq_bpe_is_hf(tok)) {
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
    sq_sb_printf(&sb, "source:\n  path: ");
    sq_sb_yaml_str(&sb, res->model_arg);
    sq_sb_printf(&sb, "\n  digest: \"%016" PRIx64 "\"\n", res->model_digest);
    sq_plan_yaml_provenance(&sb, st, res->st_hash, res->scale, res->recipe);
    sq_sb_printf(&sb, "linears:\n");
    for (int i = 0; i < res->rep->n_linears; i++) {
        const sq_linear_report *lr = &res->rep->linears[i];
        if (lr->n == 0)
            continue; /* the layer has no such linear (res) */
        sq_sb_printf(&sb, "  - {name: %s, type: %s, shape: [%d, %d], smooth: %s", lr->name,
                     sq_qtype_get(lr->qtype)->name, lr->n, lr->k, lr->smooth ? "true" : "false");
        if (lr->smooth)
            sq_sb_printf(&sb, ", alpha: %.3g", (double)lr->alpha);
        /* the classifier's activations are always dynamic (no static range) */
        const bool dyn = dynamic_acts || strcmp(lr->name, SQ_SQM_CLASSIFIER_PREFIX) == 0;
        if (lr->qtype != SQ_QT_F32 && !dyn)
            sq_sb_printf(&sb, ", act_amax: %.9g, act_zero: %d, err: %.6g", (double)lr->act_amax,
                         lr->act_zero, lr->err);
        if (lr->n_outliers > 0)
            sq_sb_printf(&sb, ", outliers: %d", lr->n_outliers);
        sq_sb_printf(&sb, "}\n");
    }
    if (sb.failed) {
        sq_sb_free(&sb);
        return NULL;
    }
    return sb.s;
}


/* What dec_tensors lists. */
typedef struct dec_src {
    const sq_llama_model *m;
    const sq_quant_result *res;
} dec_src;

static int dec_tensors(const void *ctx, sq_container_writer *w, sq_keep *kp, sq_err *err)
{
    const dec_src *s = ctx;
    const sq_llama_model *m = s->m;
    const sq_quant_result *res = s->res;
    const sq_plan_linear *cls_plan = classifier_plan(m, res);
    const sq_decoder *d = &m->dec;
    const sq_decoder_config *c = &d->cfg;
    const int32_t V = sq_bpe_vocab_size(sq_tokenizer_bpe(m->tok));
    uint64_t vbytes = 0;
    for (int32_t i = 0; i < V; i++) {
        size_t n;
        sq_bpe_token(sq_tokenizer_bpe(m->tok), i, &n);
        vbytes += n + 1;
    }
    const bool hf = sq_bpe_is_hf(sq_tokenizer_bpe(m->tok));
    sq_bpe_hf hs;
    sq_bpe_hf_settings(sq_tokenizer_bpe(m->tok), &hs);
    char *vocab = sq_keep_add(kp, malloc(vbytes));
    double *scores = sq_keep_add(kp, malloc((size_t)V * sizeof *scores));
    int32_t *merges = sq_keep_add(kp, malloc(((size_t)hs.n_merges * 2 + 1) * sizeof *merges));
    if (!vocab || !scores || !merges)
        return sq_err_set(err, "out of memory");
    /* tokenizer.vocab: pieces in id order, NUL after each; scores as f64 */
    for (int32_t i = 0, o = 0; i < V; i++) {
        size_t n;
        const char *t = sq_bpe_token(sq_tokenizer_bpe(m->tok), i, &n);
        memcpy(vocab + o, t, n + 1);
        o += (int)n + 1;
        scores[i] = (double)sq_bpe_score(sq_tokenizer_bpe(m->tok), i);
    }
    uint64_t nv = (uint64_t)V, D = (uint64_t)c->dim, dve[2] = {(uint64_t)c->vocab, D};
    sq_container_writer_add(w, "tokenizer.vocab", SQ_CDT_U8, 1, &vbytes, vocab, vbytes);
    if (hf) {
        /* the merges, rank order (SQM.md 10.5) */
        if (hs.n_merges < 1) /* the path is put in front by sq_plan_write_sqm */
            return sq_err_set(err, "the tokenizer has no merges (the format stores at least one)");
        for (int32_t r = 0; r < hs.n_merges; r++)
            sq_bpe_merge_pair(sq_tokenizer_bpe(m->tok), r, &merges[2 * r], &merges[2 * r + 1]);
        uint64_t dm[2] = {(uint64_t)hs.n_merges, 2};
        sq_container_writer_add(w, "tokenizer.merges", SQ_CDT_I32, 2, dm, merges, dm[0] * 8);
    } else {
        sq_container_writer_add(w, "tokenizer.scores", SQ_CDT_F64, 1, &nv, scores, nv * 8);
    }
    sq_container_writer_add(w, "embeddings.word", SQ_CDT_F32, 2, dve, d->tok_emb, dve[0] * D * 4);
    char name[96];
#define NAME(...) (snprintf(name, sizeof name, __VA_ARGS__), name)
    for (int l = 0; l < c->n_layers; l++) {
        const sq_block *Ly = &d->layers[l];
        sq_container_writer_add(w, NAME("layer.%d.rms_att.weight", l), SQ_CDT_F32, 1, &D, Ly->n1_g, D * 4);
        sq_container_writer_add(w, NAME("layer.%d.rms_ffn.weight", l), SQ_CDT_F32, 1, &D, Ly->n2_g, D * 4);
        for (int k = 0; k < NK; k++) {
            const sq_plan_linear *p = &res->plans[l * SQ_LIN_KINDS + k];
            const sq_linear *lin = &Ly->lin[k];
            const char *kn = sq_linear_kind_name((sq_linear_kind)k);
            uint64_t N = (uint64_t)lin->out, K = (uint64_t)lin->in, dw[2] = {N, K};
            if (p->res.qtype == SQ_QT_F32) {
                sq_container_writer_add(w, NAME("layer.%d.%s.weight", l, kn), SQ_CDT_F32, 2, dw, lin->w, N * K * 4);
                sq_container_writer_add(w, NAME("layer.%d.%s.bias", l, kn), SQ_CDT_F32, 1, &N, lin->b, N * 4);
            } else if (sq_plan_add_packed(w, kp, NAME("layer.%d.%s", l, kn), lin, p, err) != 0) {
                return -1;
            }
        }
    }
    sq_container_writer_add(w, "final_norm.weight", SQ_CDT_F32, 1, &D, d->rms_final, D * 4);
    if (cls_plan) { /* packed; a tied model keeps embeddings.word for the lookup */
        if (sq_plan_add_packed(w, kp, SQ_SQM_CLASSIFIER_PREFIX, &d->classifier, cls_plan,
                               err) != 0)
            return -1;
    } else if (!c->tied_classifier) {
        sq_container_writer_add(w, "classifier.weight", SQ_CDT_F32, 2, dve, d->classifier.w, dve[0] * D * 4);
    }
#undef NAME
    return 0;
}

int sq_dec_sqm_write(const sq_llama_model *m, bool dynamic_acts, const sq_quant_result *res,
                     int zstd_level, const char *path, sq_err *err)
{
    char *meta = build_metadata(m, dynamic_acts, res);
    const dec_src src = {m, res};
    int rc = sq_plan_write_sqm(meta, dec_tensors, &src, zstd_level, path, err);
    free(meta);
    return rc;
}


/* Encoders (BERT family, USE Lite, cross-encoders) through the one quantize
 * driver: what is theirs is the recipe checks, the exact SmoothQuant folds (attn_out into V,
 * pre-LN qkv / ffn_up into their LayerNorm) and the writer. */
#include <string.h>

#include "encoder_sqm_write.h"
#include "quantizer.h"
#include "smoothquant.h"

/* The model, and the classification head its file will carry. */
typedef struct enc_target {
    sq_embed_model *m;
    const sq_sqm_class_head *class_head;
} enc_target;

static sq_embed_model *model_of(const sq_quant_target *t)
{
    return ((enc_target *)t->model)->m;
}

static sq_linear *enc_linear(const sq_quant_target *t, int l, sq_linear_kind k)
{
    return &model_of(t)->enc.layers[l].lin[k];
}

static bool enc_can_fold(const sq_quant_target *t, int l, sq_linear_kind k)
{
    const sq_embed_model *m = model_of(t);
    /* attn_out: exactly into V's rows; pre-LN: the LayerNorm before qkv and
     * ffn_up feeds only that linear, so 1/s goes into its gamma and beta
     * (none before ModernBERT's layer-0 qkv: n1 absent, nothing to fold into) */
    return k == SQ_LIN_ATTN_OUT ||
           (m->enc.cfg.norm == SQ_NORM_PRE &&
            ((k == SQ_LIN_QKV && m->enc.layers[l].n1_g) || k == SQ_LIN_FFN_UP));
}

static int enc_fold(const sq_quant_target *t, int l, sq_linear_kind k, const float *s, sq_err *err)
{
    sq_block *Ly = &model_of(t)->enc.layers[l];
    if (k == SQ_LIN_ATTN_OUT)
        return sq_smooth_fold_v_out(&Ly->lin[SQ_LIN_QKV], &Ly->lin[k], s, err);
    if (k == SQ_LIN_QKV)
        sq_smooth_fold_layernorm(Ly->n1_g, Ly->n1_b, &Ly->lin[k], s);
    else
        sq_smooth_fold_layernorm(Ly->n2_g, Ly->n2_b, &Ly->lin[k], s);
    return 0;
}

static bool enc_stats_match(const sq_quant_target *t, const sq_calib_stats *st)
{
    const sq_bert_config *c = &model_of(t)->enc.cfg;
    return !st->decoder && memcmp(&st->cfg, c, sizeof *c) == 0;
}

/* The recipe against the model: its shape, attention precision, no
 * classifier section (a causal LM's). */
static int enc_check_recipe(const sq_quant_target *t, const sq_recipe *r, sq_err *err)
{
    const sq_bert_config *c = &model_of(t)->enc.cfg;
    if (sq_recipe_check_model(r, c, err) != 0)
        return -1;
    const char *attn_why = sq_attn_matmul_problem(r->attn_matmul, c->hidden, c->embed_dim, c->heads,
                                                  c->max_pos);
    if (attn_why)
        return sq_err_set(err, "the recipe's attention.matmul %s: %s; this model has hidden %d, "
                               "embed_dim %d and %d heads", sq_attn_matmul_name(r->attn_matmul),
                          attn_why, c->hidden, c->embed_dim, c->heads);
    if (r->classifier_type != SQ_QT_F32)
        return sq_err_set(err, "%s: classifier type %s is for causal LMs (the lm_head of a llama "
                               "model); an encoder has no such classifier: remove the classifier "
                               "section", r->source ? r->source : "recipe",
                          sq_qtype_get(r->classifier_type)->name);
    return 0;
}

static int enc_write(const sq_quant_target *t, const sq_quant_result *res, int zstd_level,
                     const char *path, sq_err *err)
{
    const enc_target *e = t->model;
    return sq_enc_sqm_write(e->m, e->class_head, res, zstd_level, path, err);
}

int sq_quantize_model(sq_embed_model *m, const char *model_arg, const sq_calib_stats *st,
                      const char *st_path, const sq_quantize_opts *o, const char *out_path,
                      sq_quantize_report *rep, sq_err *err)
{
    memset(rep, 0, sizeof *rep);
    if (m->is_sqm)
        return sq_err_set(err, "%s is already a packed model: quantize the fp32 checkpoint",
                          model_arg);
    const sq_bert_config *c = &m->enc.cfg;
    if (o->class_head && o->class_head->dim != c->hidden)
        return sq_err_set(err, "%s: the head is for %d-dimensional embeddings, but %s gives %d",
                          o->class_head->source ? o->class_head->source : "the head",
                          o->class_head->dim, model_arg, c->hidden);
    enc_target e = {m, o->class_head};
    const sq_calib_target ct = sq_calib_target_encoder(m);
    const sq_quant_target t = {.model = &e, .n_layers = c->layers,
                               .kmax = c->ffn > c->hidden ? c->ffn : c->hidden, .calib = &ct,
                               .stats_match = enc_stats_match, .check_recipe = enc_check_recipe,
                               .linear = enc_linear, .can_fold = enc_can_fold, .fold = enc_fold,
                               .write = enc_write};
    return sq_quantize(&t, model_arg, st, st_path, o, out_path, rep, err);
}

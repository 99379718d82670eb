/* Causal LMs (Llama family) through the one quantize driver: what is theirs
 * is the recipe checks, the optional packed classifier and the writer.
 * Nothing is folded: every decoder linear keeps 1/s as a runtime
 * multiplier. */
#include <string.h>

#include "dec_sqm_write.h"
#include "quantizer.h"
#include "sqm_schema.h"

/* The model and its file's activation setting. */
typedef struct dec_target {
    sq_llama_model *m;
    bool dynamic_acts;
} dec_target;

static sq_llama_model *model_of(const sq_quant_target *t)
{
    return ((dec_target *)t->model)->m;
}

static sq_linear *dec_linear(const sq_quant_target *t, int l, sq_linear_kind k)
{
    return k < SQ_DEC_LIN_KINDS ? &model_of(t)->dec.layers[l].lin[k] : NULL;
}

static bool dec_stats_match(const sq_quant_target *t, const sq_calib_stats *st)
{
    const sq_decoder_config *c = &model_of(t)->dec.cfg;
    return st->decoder && memcmp(&st->dec, c, sizeof *c) == 0;
}

static int dec_check_recipe(const sq_quant_target *t, const sq_recipe *r, sq_err *err)
{
    /* llama: any causal LM (Qwen3 is one with q/k norms); qwen3: only a Qwen3 */
    const sq_decoder_config *c = &model_of(t)->dec.cfg;
    if (r->architecture[0] && strcmp(r->architecture, "llama") != 0 &&
        !(strcmp(r->architecture, "qwen3") == 0 && c->qk_norm))
        return sq_err_set(err, "%s: the recipe is for architecture %s, the model is a causal LM "
                               "(%s)", r->source ? r->source : "recipe", r->architecture,
                          c->qk_norm ? "qwen3" : "llama");
    const char *why = sq_attn_matmul_problem(r->attn_matmul, c->q_dim, c->q_dim, c->n_heads,
                                             c->max_pos);
    if (why)
        return sq_err_set(err, "%s: attention.matmul %s: %s; this model has hidden %d, %d "
                               "heads and %d positions",
                          r->source ? r->source : "recipe", sq_attn_matmul_name(r->attn_matmul),
                          why, c->dim, c->n_heads, c->max_pos);
    return 0;
}

static int dec_write(const sq_quant_target *t, const sq_quant_result *res, int zstd_level,
                     const char *path, sq_err *err)
{
    const dec_target *d = t->model;
    return sq_dec_sqm_write(d->m, d->dynamic_acts, res, zstd_level, path, err);
}

/* The widest linear input: dim, the FFN width or (attn_out) q_dim. */
static int dec_kmax(const sq_decoder_config *c)
{
    int k = c->hidden > c->dim ? c->hidden : c->dim;
    return c->q_dim > k ? c->q_dim : k;
}

int sq_dec_quantize(sq_llama_model *m, const char *model_arg, const sq_calib_stats *st,
                    const char *st_path, const sq_quantize_opts *o, bool dynamic_acts,
                    const char *out_path, sq_quantize_report *rep, sq_err *err)
{
    const sq_decoder_config *c = &m->dec.cfg;
    const sq_recipe *r = o->recipe;
    dec_target d = {m, dynamic_acts};
    const sq_calib_target ct = sq_calib_target_decoder(m);
    /* a causal embedding model never runs its LM head: a recipe's int8
     * classifier is left out (the tied or fp32 head stays as it is) */
    const bool head = r->classifier_type != SQ_QT_F32 && !m->emb.on;
    /* replays run 64 rows per prefill step (what the decoder quantizer has always
     * replayed with; the .sqm bytes depend on it) */
    const sq_quant_target t = {.model = &d, .n_layers = c->n_layers,
                               .kmax = dec_kmax(c),
                               .dynamic_acts = dynamic_acts, .calib = &ct, .replay_batch = 64,
                               .stats_match = dec_stats_match, .check_recipe = dec_check_recipe,
                               .linear = dec_linear,
                               .classifier = head ? &m->dec.classifier : NULL,
                               .classifier_qtype = head ? r->classifier_type : SQ_QT_F32,
                               .classifier_name = SQ_SQM_CLASSIFIER_PREFIX, .write = dec_write};
    return sq_quantize(&t, model_arg, st, st_path, o, out_path, rep, err);
}

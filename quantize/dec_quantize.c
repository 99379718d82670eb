#include "dec_quantize.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_capture.h"
#include "dec_calibrate.h"
#include "dec_sqm_write.h"
#include "file_hash.h"
#include "quant_plan.h"
#include "smoothquant.h"
#include "sqm_schema.h"

#define NK SQ_DEC_LIN_KINDS


static sq_linear *lin_at(sq_llama_model *m, int i)
{
    return &m->dec.layers[i / NK].lin[i % NK];
}

/* Stats index (layers * SQ_LIN_KINDS) of plan index i (layers * NK). */
static int st_index(int i)
{
    return (i / NK) * SQ_LIN_KINDS + i % NK;
}

int sq_dec_quantize(sq_llama_model *m, const char *model_arg, const sq_calib_stats *st,
                    const char *st_path, const sq_quantize_opts *o, bool dynamic_acts,
                    const char *out_path, sq_quantize_report *rep, sq_err *err)
{
    memset(rep, 0, sizeof *rep);
    const sq_recipe *r = o->recipe;
    const sq_decoder_config *c = &m->dec.cfg;
    const int L = c->n_layers, NL = L * NK;
    /* pl[NL], rep->linears[NL]: the classifier, when the recipe packs it */
    const bool cls_q = r->classifier_type != SQ_QT_F32;
    sq_plan_linear *pl = calloc((size_t)NL + 1, sizeof *pl);
    sq_act_capture cap = {0}, cap2 = {0};
    sq_model_digest md = {0};
    float *ones = NULL;
    int rc = -1;
    rep->linears = calloc((size_t)NL + 1, sizeof *rep->linears);
    if (!pl || !rep->linears) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    rep->n_linears = NL + cls_q;
    /* 0. The statistics must be of this very model. */
    if (sq_dec_model_digest(m, model_arg, &md, err) != 0)
        goto out;
    if (!st->decoder || md.combined != st->model_digest ||
        memcmp(&st->dec, c, sizeof *c) != 0) {
        sq_err_set(err, "%s: statistics are of a different model (model digest %016" PRIx64
                        ", statistics recorded %016" PRIx64 "); recalibrate",
                   st_path, md.combined, st->model_digest);
        goto out;
    }
    for (int i = 0; i < md.n_files; i++)
        rep->bytes_in += md.files[i].size;
    if (r->architecture[0] && strcmp(r->architecture, "llama") != 0) {
        sq_err_set(err, "%s: the recipe is for architecture %s, the model is a causal LM (llama)",
                   r->source ? r->source : "recipe", r->architecture);
        goto out;
    }
    if (r->attn_matmul != SQ_ATTN_F32) {
        sq_err_set(err, "%s: attention.matmul %s is for encoders; the decoder's attention "
                        "runs in f32", r->source ? r->source : "recipe",
                   sq_attn_matmul_name(r->attn_matmul));
        goto out;
    }
    if (sq_recipe_check_overrides_layers(r, L, o->strict, NULL, NULL, err) < 0)
        goto out;
    /* 1. The recipe per linear. */
    bool any_quant = false, any_smooth = false;
    for (int i = 0; i < NL; i++) {
        sq_linear_report *lr = &rep->linears[i];
        const sq_linear *lin = lin_at(m, i);
        sq_linear_name(lr->name, sizeof lr->name, i / NK, (sq_linear_kind)(i % NK));
        if (sq_recipe_resolve(r, lr->name, &pl[i].res, err) != 0)
            goto out;
        if (dynamic_acts)
            pl[i].res.smooth = false; /* per-row steps: no static range to flatten */
        lr->qtype = pl[i].res.qtype;
        lr->n = lin->out;
        lr->k = lin->in;
        lr->smooth = pl[i].res.smooth;
        lr->alpha = pl[i].res.alpha.is_auto ? -1.0f : (float)pl[i].res.alpha.value;
        lr->err = lr->err_nosmooth = NAN;
        lr->bytes_fp32 = (uint64_t)lin->out * lin->in * 4 + (uint64_t)lin->out * 4;
        any_quant |= lr->qtype != SQ_QT_F32;
        any_smooth |= lr->smooth;
    }
    if (cls_q) { /* SQM.md 10.6: per-channel weights, dynamic acts, no smoothing */
        sq_linear_report *lr = &rep->linears[NL];
        const sq_linear *lin = &m->dec.classifier;
        snprintf(lr->name, sizeof lr->name, "%s", SQ_SQM_CLASSIFIER_PREFIX);
        pl[NL].res = (sq_resolved_linear){.qtype = r->classifier_type, .last_override = -1};
        lr->qtype = r->classifier_type;
        lr->n = lin->out;
        lr->k = lin->in;
        lr->alpha = -1.0f;
        lr->err = lr->err_nosmooth = NAN;
        lr->bytes_fp32 = (uint64_t)lin->out * lin->in * 4;
    }
    if (o->dry_run) {
        rc = 0;
        goto out;
    }
    const sq_scale_params sp = sq_plan_recipe_scale(r);
    const bool int4_search = o->int4_search || r->int4_scale_search;
    /* 1b. Outlier channels (static ranges only). */
    bool any_outl = false;
    for (int i = 0; r->outl_enabled && !dynamic_acts && i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (p->res.qtype == SQ_QT_F32)
            continue;
        const sq_linear *lin = lin_at(m, i);
        const int n = sq_plan_outliers(p, lin, &st->lin[st_index(i)], r, err);
        if (n < 0)
            goto out;
        if (n == 0)
            continue;
        rep->linears[i].n_outliers = p->n_outl;
        any_outl = true;
    }
    /* 2. Real input rows of every linear (a few sequences). */
    if (any_quant) {
        if (sq_act_capture_init(&cap, st, o->capture_rows, err) != 0)
            goto out;
        sq_observer obs = sq_act_capture_observer(&cap);
        sq_quantize_log(o, "replaying calibration samples for activation rows ...");
        if (sq_dec_calib_replay(m, st, o->corpus, o->n_corpus, &obs, 64, err) != 0 ||
            sq_act_capture_check(&cap, err) != 0)
            goto out;
    }
    /* 3. SmoothQuant factors (kept as runtime multipliers). */
    sq_smooth_search search = {.step = (float)r->sq_auto_step};
    for (int i = 0; i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (!p->res.smooth)
            continue;
        const sq_linear *lin = lin_at(m, i);
        const sq_act_stats *xs = &st->lin[st_index(i)];
        const int K = lin->in, N = lin->out;
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
        search.qtype = p->res.qtype;
        const int si = st_index(i);
        if (p->res.alpha.is_auto &&
            sq_plan_search_alpha(cap.rows[si], cap.n_rows[si], lin, p, xmax, wmax, &search,
                                 &alpha, err) != 0) {
            free(wmax);
            sq_err_prefix(err, "%s", rep->linears[i].name);
            goto out;
        }
        sq_smooth_factors(xmax, wmax, K, alpha, p->s);
        free(wmax);
        p->alpha = alpha;
        rep->linears[i].alpha = alpha;
    }
    /* 4. Activation ranges: smoothed inputs need the histogram of x / s. */
    const bool range_b = (any_smooth || any_outl) && sp.method != SQ_CALIB_MINMAX;
    bool gptq = false; /* GPTQ's Gram matrices come from the same replay */
    for (int i = 0; i < NL; i++)
        gptq |= sq_plan_wants_gptq(&pl[i], r);
    const bool pass_b = range_b || gptq;
    const int kmax = c->hidden > c->dim ? c->hidden : c->dim;
    if (!(ones = malloc((size_t)kmax * sizeof *ones))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int j = 0; j < kmax; j++)
        ones[j] = 1.0f;
    if (pass_b) {
        if (sq_plan_capture_smoothed(&cap2, st, pl, NL, NK, ones, r, err) != 0)
            goto out;
        sq_observer obs2 = sq_act_capture_observer(&cap2);
        sq_quantize_log(o, "replaying calibration samples for the smoothed activation ranges%s ...",
                        gptq ? " and GPTQ's Gram matrices" : "");
        if (sq_dec_calib_replay(m, st, o->corpus, o->n_corpus, &obs2, 0, err) != 0 ||
            sq_act_capture_check(&cap2, err) != 0)
            goto out;
        sq_plan_take_grams(pl, NL, NK, &cap2);
    }
    for (int i = 0; i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (p->res.qtype == SQ_QT_F32)
            continue;
        if (dynamic_acts) { /* 0: per-row steps at run time */
            p->act_scale = 0.0f;
            continue;
        }
        const int si = st_index(i);
        if (sq_plan_act(p, &st->lin[si], range_b ? &cap2.stats[si] : NULL, r, &sp, ones, err) != 0)
            goto out;
        rep->linears[i].act_amax = p->act_amax;
        rep->linears[i].act_zero = p->act_zero;
    }
    /* 5. Quantize and pack; the output error on the captured rows (static
     * ranges: as the runtime computes it). */
    for (int i = 0; i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        sq_linear_report *lr = &rep->linears[i];
        if (p->res.qtype == SQ_QT_F32) {
            sq_quantize_log(o, "%-18s [%5d x %5d] fp32 (kept)", lr->name, lr->n, lr->k);
            continue;
        }
        const sq_linear *lin = lin_at(m, i);
        const int si = st_index(i);
        if (sq_plan_quantize_linear(lin, p->s, p->s, &st->lin[si], p->res.qtype, int4_search, p,
                                    &p->qw, err) != 0) {
            sq_err_prefix(err, "%s", lr->name);
            goto out;
        }
        if (!dynamic_acts &&
            sq_plan_quantized_error(cap.rows[si], cap.n_rows[si], lin->w, lin->b, lin->out,
                                    lin->in, p->s, p->act_scale, p->act_zero, p, &p->qw, &lr->err,
                                    err) != 0)
            goto out;
        lr->bytes_packed = sq_plan_packed_bytes(&p->qw);
        sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %8" PRIu64 " -> %7" PRIu64 " bytes  alpha %.2f  err %.4f%s",
              lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
              lr->bytes_packed, lr->smooth ? (double)lr->alpha : 0.0, lr->err,
              p->n_outl ? "  (outlier channels in fp32)" : "");
    }
    /* 5b. The classifier: the same per-linear quantizer, no calibration
     * statistics (int8 per-channel scales depend on the weights alone). */
    if (cls_q) {
        sq_plan_linear *p = &pl[NL];
        sq_linear_report *lr = &rep->linears[NL];
        p->act_scale = 0.0f; /* per-token steps at run time */
        if (sq_plan_quantize_linear(&m->dec.classifier, NULL, NULL, NULL, p->res.qtype, false,
                                    p, &p->qw, err) != 0) {
            sq_err_prefix(err, "%s", lr->name);
            goto out;
        }
        lr->bytes_packed = sq_plan_packed_bytes(&p->qw);
        sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %8" PRIu64 " -> %7" PRIu64 " bytes  dynamic acts",
                        lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
                        lr->bytes_packed);
    }
    /* 6. Write. */
    uint64_t st_size, st_hash = 0;
    if (st_path && sq_hash_file(st_path, &st_size, &st_hash, err) != 0)
        goto out;
    sq_dec_sqm_src src = {.m = m, .plans = pl, .rep = rep, .st = st, .st_hash = st_hash,
                          .cls_plan = cls_q ? &pl[NL] : NULL,
                          .model_digest = md.combined, .model_arg = model_arg, .recipe = r,
                          .scale = &sp, .dynamic_acts = dynamic_acts};
    if (sq_dec_sqm_write(&src, o->zstd_level, out_path, err) != 0)
        goto out;
    uint64_t h;
    if (sq_hash_file(out_path, &rep->bytes_out, &h, err) != 0)
        goto out;
    rc = 0;
out:
    free(ones);
    sq_act_capture_free(&cap);
    sq_act_capture_free(&cap2);
    sq_model_digest_free(&md);
    sq_plan_free(pl, NL + 1, NULL);
    if (rc != 0)
        sq_quantize_report_free(rep);
    return rc;
}

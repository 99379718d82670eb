/* The one quantize driver (quantizer.h): steps 1-5 for any model family. */
#include "quantizer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_capture.h"
#include "file_hash.h"
#include "pack.h"
#include "quant_plan.h"
#include "smoothquant.h"

void sq_quantize_report_free(sq_quantize_report *r)
{
    free(r->linears);
    memset(r, 0, sizeof *r);
}

void sq_quantize_warn(void *o, const char *msg)
{
    sq_quantize_log(o, "warning: %s", msg);
}

/* The calibration samples through the fp32 model again, obs seeing every
 * linear's input (max_sequences 0: all). */
static int replay(const sq_quant_target *t, const sq_calib_stats *st, const sq_quantize_opts *o,
                  const sq_observer *obs, int64_t max_sequences, sq_err *err)
{
    return sq_calib_replay(t->calib, st, o->bundled_corpus, o->corpus, o->n_corpus,
                           t->replay_batch ? t->replay_batch : o->batch, obs, max_sequences, err);
}

/* Step 1: the recipe per linear, and the report's sizes. */
static int resolve_linears(const sq_quant_target *t, const sq_recipe *r, sq_plan_linear *pl,
                           sq_quantize_report *rep, bool *any_quant, bool *any_smooth,
                           sq_err *err)
{
    for (int l = 0; l < t->n_layers; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            const int i = l * SQ_LIN_KINDS + k;
            sq_linear_report *lr = &rep->linears[i];
            const sq_linear *lin = t->linear(t, l, (sq_linear_kind)k);
            if (!lin || lin->out == 0) { /* n == 0 marks it absent in the report */
                pl[i].absent = true;
                continue;
            }
            sq_linear_name(lr->name, sizeof lr->name, l, (sq_linear_kind)k);
            if (sq_recipe_resolve(r, lr->name, &pl[i].res, err) != 0)
                return -1;
            if (t->dynamic_acts)
                pl[i].res.smooth = false; /* per-row steps: no static range to flatten */
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
            *any_quant |= lr->qtype != SQ_QT_F32;
            *any_smooth |= lr->smooth;
        }
    if (t->classifier) { /* SQM.md 10.6: per-channel weights, dynamic acts, no smoothing */
        const int i = t->n_layers * SQ_LIN_KINDS;
        sq_linear_report *lr = &rep->linears[i];
        const sq_linear *lin = t->classifier;
        snprintf(lr->name, sizeof lr->name, "%s", t->classifier_name);
        pl[i].res = (sq_resolved_linear){.qtype = t->classifier_qtype, .last_override = -1};
        lr->qtype = t->classifier_qtype;
        lr->n = lin->out;
        lr->k = lin->in;
        lr->alpha = -1.0f;
        lr->err = lr->err_nosmooth = NAN;
        lr->bytes_fp32 = (uint64_t)lin->out * lin->in * 4;
        lr->bytes_packed = sq_packed_size(lr->qtype, lin->out, lin->in);
    }
    return 0;
}

/* Step 3 for one linear: SmoothQuant's factors (alpha searched on the
 * captured rows when the recipe says auto), folded into the model where the
 * family can do so exactly (its weights kept in *w_orig for the error). */
static int smooth_linear(const sq_quant_target *t, int l, sq_linear_kind k, sq_plan_linear *p,
                         const sq_act_stats *xs, const sq_act_capture *cap, int i,
                         sq_smooth_search *search, sq_linear_report *lr, float **w_orig,
                         sq_err *err)
{
    sq_linear *lin = t->linear(t, l, k);
    const int K = lin->in, N = lin->out;
    float *wmax = calloc((size_t)K, sizeof *wmax);
    p->s = malloc((size_t)K * sizeof *p->s);
    if (!wmax || !p->s) {
        free(wmax);
        return sq_err_set(err, "out of memory");
    }
    sq_smooth_weight_absmax(lin->w, N, K, wmax);
    const float *xmax = p->xmax_m ? p->xmax_m : xs->ch_max_abs;
    float alpha = (float)p->res.alpha.value;
    search->qtype = p->res.qtype; /* tune for the type the linear ships as */
    if (p->res.alpha.is_auto &&
        sq_plan_search_alpha(cap->rows[i], cap->n_rows[i], lin, p, xmax, wmax, search, &alpha,
                             err) != 0) {
        free(wmax);
        return sq_err_prefix(err, "%s", lr->name);
    }
    sq_smooth_factors(xmax, wmax, K, alpha, p->s);
    free(wmax);
    p->alpha = alpha;
    lr->alpha = alpha;
    if (!t->can_fold || !t->can_fold(t, l, k))
        return 0;
    if (!(w_orig[i] = malloc((size_t)N * K * sizeof(float))))
        return sq_err_set(err, "out of memory");
    memcpy(w_orig[i], lin->w, (size_t)N * K * sizeof(float));
    if (t->fold(t, l, k, p->s, err) != 0)
        return -1;
    p->folded = true;
    return 0;
}

/* Step 5 for one linear: quantize and pack it, and its output error on the
 * captured rows as the runtime computes it (static ranges), with and without
 * SmoothQuant. */
static int quantize_linear(const sq_quant_target *t, const sq_recipe *r,
                           const sq_scale_params *sp, bool int4_search, sq_plan_linear *p,
                           const sq_linear *lin, const sq_act_stats *xs, const float *wref,
                           const sq_act_capture *cap, int i, sq_linear_report *lr, sq_err *err)
{
    if (sq_plan_quantize_linear(lin, p->folded ? NULL : p->s, p->s, xs, p->res.qtype, int4_search,
                                p, &p->qw, err) != 0)
        return sq_err_prefix(err, "%s", lr->name);
    lr->bytes_packed = sq_plan_packed_bytes(&p->qw);
    if (t->dynamic_acts)
        return 0;
    if (sq_plan_quantized_error(cap->rows[i], cap->n_rows[i], wref, lin->b, lin->out, lin->in,
                                p->s, p->act_scale, p->act_zero, p, &p->qw, &lr->err, err) != 0)
        return -1;
    if (!p->s)
        return 0;
    /* the same linear without SmoothQuant, for the report */
    sq_linear plain = {.in = lin->in, .out = lin->out, .w = (float *)wref, .b = lin->b};
    sq_qweight qn = {0};
    float amax_n = 0, scale_n = 1;
    int zero_n = 0;
    bool ok = sq_plan_quantize_linear(&plain, NULL, NULL, xs, p->res.qtype, int4_search, NULL, &qn,
                                      err) == 0 &&
              sq_plan_select_act(&xs->hist, sp, r->zero_point && sq_qtype_get(p->res.qtype)->act_zero,
                                 xs->rows > 0, xs->min, &amax_n, &scale_n, &zero_n, err) == 0;
    ok = ok && sq_plan_quantized_error(cap->rows[i], cap->n_rows[i], wref, lin->b, lin->out,
                                       lin->in, NULL, scale_n, zero_n, NULL, &qn,
                                       &lr->err_nosmooth, err) == 0;
    sq_qweight_free(&qn);
    return ok ? 0 : -1;
}

static void log_linear(const sq_quantize_opts *o, const sq_linear_report *lr, bool dynamic)
{
    if (lr->qtype == SQ_QT_F32) {
        sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " bytes (kept)", lr->name, lr->n,
                        lr->k, "fp32", lr->bytes_fp32);
        return;
    }
    char extra[64] = "";
    if (lr->n_outliers > 0)
        snprintf(extra, sizeof extra, "  %d outlier channel%s in fp32", lr->n_outliers,
                 lr->n_outliers == 1 ? "" : "s");
    if (dynamic)
        sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " -> %8" PRIu64 " bytes  dynamic acts",
                        lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
                        lr->bytes_packed);
    else if (lr->smooth)
        sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " -> %8" PRIu64 " bytes  alpha %.2f  err %.4f (plain %.4f)%s",
                        lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
                        lr->bytes_packed, (double)lr->alpha, lr->err, lr->err_nosmooth, extra);
    else
        sq_quantize_log(o, "%-18s [%5d x %5d] %-9s %9" PRIu64 " -> %8" PRIu64 " bytes  err %.4f%s",
                        lr->name, lr->n, lr->k, sq_qtype_get(lr->qtype)->name, lr->bytes_fp32,
                        lr->bytes_packed, lr->err, extra);
}

/* Steps 1-5 for every linear of t (and its classifier) into pl [n] and
 * the report; w_orig [n] gets each folded linear's weights before the fold
 * (for its error). A dry run stops after step 1. */
static int quantize_linears(const sq_quant_target *t, const sq_calib_stats *st,
                            const sq_quantize_opts *o, const sq_scale_params *scale,
                            sq_plan_linear *pl, float **w_orig, sq_quantize_report *rep,
                            sq_err *err)
{
    const sq_recipe *r = o->recipe;
    const int L = t->n_layers, NL = L * SQ_LIN_KINDS;
    sq_act_capture cap = {0}, cap2 = {0};
    float *ones = NULL;
    int rc = -1;

    /* 1. The recipe per linear. */
    bool any_quant = false, any_smooth = false;
    if (resolve_linears(t, r, pl, rep, &any_quant, &any_smooth, err) != 0)
        goto out;
    if (o->dry_run)
        return 0;
    const bool int4_search = o->int4_search || r->int4_scale_search;

    /* 1b. Outlier channels of each packed linear (outlier_select.h), from
     * the calibrated channel maxima and the weights as the checkpoint has
     * them; SmoothQuant and the static range then see the other channels. */
    bool any_outl = false;
    for (int i = 0; r->outl_enabled && !t->dynamic_acts && i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (p->absent || p->res.qtype == SQ_QT_F32)
            continue;
        const int l = i / SQ_LIN_KINDS;
        const sq_linear_kind k = (sq_linear_kind)(i % SQ_LIN_KINDS);
        const int n = sq_plan_outliers(p, t->linear(t, l, k), sq_calib_stats_at(st, l, k), r, err);
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
        if (replay(t, st, o, &obs, 64, err) != 0 || sq_act_capture_check(&cap, err) != 0)
            goto out;
    }

    /* 3. SmoothQuant factors; attn_out first in each layer, since its fold
     * (into V) changes the V rows that qkv's factors look at. */
    sq_smooth_search search = {.step = (float)r->sq_auto_step};
    static const sq_linear_kind order[SQ_LIN_KINDS] = {SQ_LIN_ATTN_OUT, SQ_LIN_QKV, SQ_LIN_FFN_UP,
                                                       SQ_LIN_FFN_DOWN, SQ_LIN_RES};
    for (int l = 0; l < L; l++)
        for (int j = 0; j < SQ_LIN_KINDS; j++) {
            const sq_linear_kind k = order[j];
            const int i = l * SQ_LIN_KINDS + k;
            if (pl[i].absent || !pl[i].res.smooth)
                continue;
            if (smooth_linear(t, l, k, &pl[i], sq_calib_stats_at(st, l, k), &cap, i, &search,
                              &rep->linears[i], w_orig, err) != 0)
                goto out;
        }

    /* 4. Activation clip ranges. Smoothed inputs need the histogram of x / s:
     * replay the calibration with the smoothing applied (not for minmax,
     * whose range follows exactly from the per-channel maxima). */
    const bool range_b = (any_smooth || any_outl) && scale->method != SQ_CALIB_MINMAX;
    bool gptq = false; /* GPTQ's Gram matrices come from the same replay */
    for (int i = 0; i < NL; i++)
        gptq |= sq_plan_wants_gptq(&pl[i], r);
    if (!(ones = malloc((size_t)t->kmax * sizeof *ones))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int j = 0; j < t->kmax; j++)
        ones[j] = 1.0f;
    if (range_b || gptq) {
        if (sq_plan_capture_smoothed(&cap2, st, pl, NL, ones, r, err) != 0)
            goto out;
        sq_observer obs2 = sq_act_capture_observer(&cap2);
        sq_quantize_log(o, "replaying calibration samples for the smoothed activation ranges%s ...",
                        gptq ? " and GPTQ's Gram matrices" : "");
        if (replay(t, st, o, &obs2, 0, err) != 0 || sq_act_capture_check(&cap2, err) != 0)
            goto out;
        sq_plan_take_grams(pl, NL, &cap2);
    }
    for (int i = 0; i < NL; i++) {
        sq_plan_linear *p = &pl[i];
        if (p->absent || p->res.qtype == SQ_QT_F32)
            continue;
        if (t->dynamic_acts) { /* 0: per-row steps at run time */
            p->act_scale = 0.0f;
            continue;
        }
        const sq_act_stats *xs = sq_calib_stats_at(st, i / SQ_LIN_KINDS, (sq_linear_kind)(i % SQ_LIN_KINDS));
        if (sq_plan_act(p, xs, range_b ? &cap2.stats[i] : NULL, r, scale, ones, err) != 0)
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
        const int l = i / SQ_LIN_KINDS;
        const sq_linear_kind k = (sq_linear_kind)(i % SQ_LIN_KINDS);
        const sq_linear *lin = t->linear(t, l, k);
        if (p->res.qtype != SQ_QT_F32 &&
            quantize_linear(t, r, scale, int4_search, p, lin, sq_calib_stats_at(st, l, k),
                            p->folded ? w_orig[i] : lin->w, &cap, i, lr, err) != 0)
            goto out;
        log_linear(o, lr, t->dynamic_acts);
    }
    /* 5b. The classifier: the same per-linear quantizer, no calibration
     * statistics (int8 per-channel scales depend on the weights alone). */
    if (t->classifier) {
        sq_plan_linear *p = &pl[NL];
        sq_linear_report *lr = &rep->linears[NL];
        p->act_scale = 0.0f; /* per-token steps at run time */
        if (sq_plan_quantize_linear(t->classifier, NULL, NULL, NULL, p->res.qtype, false, p,
                                    &p->qw, err) != 0) {
            sq_err_prefix(err, "%s", lr->name);
            goto out;
        }
        lr->bytes_packed = sq_plan_packed_bytes(&p->qw);
        log_linear(o, lr, true);
    }
    rc = 0;
out:
    free(ones);
    sq_act_capture_free(&cap);
    sq_act_capture_free(&cap2);
    return rc;
}

int sq_quantize(const sq_quant_target *t, const char *model_arg, const sq_calib_stats *st,
                const char *st_path, const sq_quantize_opts *o, const char *out_path,
                sq_quantize_report *rep, sq_err *err)
{
    memset(rep, 0, sizeof *rep);
    const int NL = t->n_layers * SQ_LIN_KINDS, n = NL + (t->classifier != NULL);
    sq_plan_linear *pl = calloc((size_t)n, sizeof *pl);
    float **w_orig = calloc((size_t)n, sizeof *w_orig);
    sq_model_digest md = {0};
    int rc = -1;
    rep->linears = calloc((size_t)n, sizeof *rep->linears);
    if (!pl || !w_orig || !rep->linears) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    rep->n_linears = n;
    /* 0. The statistics must be of this very model; the recipe must fit it. */
    if (t->calib->digest(t->calib, model_arg, &md, err) != 0)
        goto out;
    if (!t->stats_match(t, st) || md.combined != st->model_digest) {
        sq_err_set(err, "%s: statistics are of a different model (model digest %016" PRIx64
                        ", statistics recorded %016" PRIx64 "); recalibrate",
                   st_path, md.combined, st->model_digest);
        goto out;
    }
    for (int i = 0; i < md.n_files; i++)
        rep->bytes_in += md.files[i].size;
    if (t->check_recipe(t, o->recipe, err) != 0 ||
        sq_recipe_check_overrides_layers(o->recipe, t->n_layers, o->strict, sq_quantize_warn,
                                         (void *)o, err) < 0)
        goto out;
    /* 1-5. Every linear. */
    const sq_scale_params sp = sq_plan_recipe_scale(o->recipe);
    if (quantize_linears(t, st, o, &sp, pl, w_orig, rep, err) != 0)
        goto out;
    if (o->dry_run) {
        rc = 0;
        goto out;
    }
    /* 6. Write, with the provenance. */
    uint64_t st_size, st_hash = 0, h;
    if (st_path && sq_hash_file(st_path, &st_size, &st_hash, err) != 0)
        goto out;
    const sq_quant_result res = {.plans = pl, .rep = rep, .st = st, .st_hash = st_hash,
                                 .model_digest = md.combined, .model_arg = model_arg,
                                 .recipe = o->recipe, .scale = &sp};
    if (t->write(t, &res, o->zstd_level, out_path, err) != 0 ||
        sq_hash_file(out_path, &rep->bytes_out, &h, err) != 0)
        goto out;
    rc = 0;
out:
    sq_model_digest_free(&md);
    sq_plan_free(pl, n, w_orig);
    if (rc != 0)
        sq_quantize_report_free(rep);
    return rc;
}

#include "quant_plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "gptq.h"
#include "outlier_select.h"
#include "pack.h"
#include "qlinear_eval.h"
#include "qlinear_ref.h"
#include "quant_weights.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "strbuf.h"
#include "yaml_tree.h"

sq_scale_params sq_plan_recipe_scale(const sq_recipe *r)
{
    sq_scale_params p;
    sq_scale_params_default(&p, r->observer);
    p.percentile = r->percentile;
    p.skip_zeros = r->skip_zeros;
    return p;
}

/* Relative output error of the quantized linear as the runtime computes
 * it (the linear.c path on the packed weights, qlinear_eval.h) against
 * x W^T + b in fp32. */
int sq_plan_quantized_error(const float *x, int rows, const float *w_ref, const float *bias, int N,
                           int K, const float *s, float act_scale, int act_zero,
                           const sq_plan_linear *p, const sq_qweight *qw, double *out, sq_err *err)
{
    float *ref = malloc((size_t)rows * N * sizeof *ref);
    if (!ref)
        return sq_err_set(err, "out of memory");
    sq_fp32_linear(x, rows, K, w_ref, N, bias, ref);
    int rc = sq_qlinear_error(x, rows, qw, bias, s, act_scale, act_zero, p ? p->n_outl : 0,
                              p ? p->outl_idx : NULL, p ? p->outl_w : NULL, ref, out, err);
    free(ref);
    return rc;
}

/* Quantize W (times diag(scale_s) when given) to qt. The int4 importance of
 * input j is the calibration sum of x_j^2 / imp_s_j^2 (the smoothed input).
 * With p (n_outl > 0): the outlier columns of W diag(scale_s) go to
 * p->outl_w [n_outl][N] and are zeroed before quantizing, so no outlier
 * sets a row's weight scale. */
int sq_plan_quantize_linear(const sq_linear *lin, const float *scale_s, const float *imp_s,
                           const sq_act_stats *xs, sq_qtype qt, bool int4_search,
                           sq_plan_linear *p, sq_qweight *qw, sq_err *err)
{
    const int K = lin->in, N = lin->out;
    float *w = malloc((size_t)N * K * sizeof *w), *imp = malloc((size_t)K * sizeof *imp);
    if (!w || !imp) {
        free(w);
        free(imp);
        return sq_err_set(err, "out of memory");
    }
    memcpy(w, lin->w, (size_t)N * K * sizeof *w);
    for (int j = 0; j < K; j++)
        imp[j] = xs ? (float)(xs->ch_sumsq[j] / (imp_s ? (double)imp_s[j] * imp_s[j] : 1.0))
                    : 1.0f;
    if (scale_s)
        sq_smooth_scale_weights(w, N, K, scale_s);
    if (p && p->n_outl > 0) {
        free(p->outl_w);
        if (!(p->outl_w = malloc((size_t)p->n_outl * N * sizeof *p->outl_w))) {
            free(w);
            free(imp);
            return sq_err_set(err, "out of memory");
        }
        for (int o = 0; o < p->n_outl; o++) {
            const int j = p->outl_idx[o];
            for (int n = 0; n < N; n++) {
                p->outl_w[(size_t)o * N + n] = w[(size_t)n * K + j];
                w[(size_t)n * K + j] = 0.0f;
            }
            imp[j] = 0.0f;
        }
    }
    sq_quant_opts qo = {.importance = imp, .int4_search = int4_search};
    double *u = NULL;
    if (p && p->gram && sq_qtype_get(qt)->block) {
        if (!(u = malloc((size_t)K * K * sizeof *u))) {
            free(w);
            free(imp);
            return sq_err_set(err, "out of memory");
        }
        if (sq_gptq_factor(p->gram, K, SQ_GPTQ_DAMP, u, err) != 0) {
            free(u);
            free(w);
            free(imp);
            return -1;
        }
        qo.gptq_u = u;
    }
    int rc = sq_quantize_weights(w, N, K, qt, &qo, qw, err);
    free(u);
    free(w);
    free(imp);
    return rc;
}

/* SmoothQuant's alpha search (smoothquant.h) on the channels that stay in
 * the integer GEMM: with outlier channels, on copies of the sample rows and
 * of W whose outlier columns are 0 (the fp32 side path is exact whatever
 * alpha is). */
int sq_plan_search_alpha(const float *x, int rows, const sq_linear *lin, const sq_plan_linear *p,
                        const float *xmax, const float *wmax, const sq_smooth_search *search,
                        float *alpha, sq_err *err)
{
    const int K = lin->in, N = lin->out;
    if (p->n_outl == 0)
        return sq_smooth_search_alpha(x, rows, K, lin->w, N, lin->b, xmax, wmax, search, alpha,
                                      NULL, NULL, err);
    float *xz = malloc(((size_t)rows * K + 1) * sizeof *xz), *wz = malloc((size_t)N * K * sizeof *wz);
    if (!xz || !wz) {
        free(xz);
        free(wz);
        return sq_err_set(err, "out of memory");
    }
    memcpy(xz, x, (size_t)rows * K * sizeof *xz);
    memcpy(wz, lin->w, (size_t)N * K * sizeof *wz);
    for (int o = 0; o < p->n_outl; o++) {
        const int j = p->outl_idx[o];
        for (int r = 0; r < rows; r++)
            xz[(size_t)r * K + j] = 0.0f;
        for (int n = 0; n < N; n++)
            wz[(size_t)n * K + j] = 0.0f;
    }
    int rc = sq_smooth_search_alpha(xz, rows, K, wz, N, lin->b, xmax, wmax, search, alpha, NULL,
                                    NULL, err);
    free(xz);
    free(wz);
    return rc;
}

int sq_plan_capture_smoothed(sq_act_capture *cap, const sq_calib_stats *st,
                             const sq_plan_linear *pl, int n, const float *ones,
                             const sq_recipe *r, sq_err *err)
{
    if (sq_act_capture_init(cap, st, 0, err) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        const sq_plan_linear *p = &pl[i];
        cap->smooth[i] = p->s ? (p->folded ? ones : p->s) : p->n_outl > 0 ? ones : NULL;
        cap->skip[i] = p->skip;
        if (sq_plan_wants_gptq(p, r) && sq_act_capture_want_gram(cap, i, err) != 0)
            return -1;
    }
    return 0;
}

void sq_plan_take_grams(sq_plan_linear *pl, int n, const sq_act_capture *cap)
{
    for (int i = 0; i < n; i++)
        pl[i].gram = cap->gram[i];
}

bool sq_plan_wants_gptq(const sq_plan_linear *p, const sq_recipe *r)
{
    return r->int4_gptq && !p->absent && sq_qtype_get(p->res.qtype)->block > 0;
}

uint64_t sq_plan_packed_bytes(const sq_qweight *q)
{
    int cols = sq_qweight_groups(q);
    return q->data_size + (uint64_t)q->n * cols * 4 + (uint64_t)q->n_pad * cols * 4;
}



void *sq_keep_add(sq_keep *k, void *p)
{
    if (!p)
        return NULL;
    if (k->n == k->cap) {
        int nc = k->cap ? k->cap * 2 : 64;
        void **a = realloc(k->p, (size_t)nc * sizeof *a);
        if (!a) {
            free(p);
            return NULL;
        }
        k->p = a;
        k->cap = nc;
    }
    k->p[k->n++] = p;
    return p;
}

void sq_keep_free(sq_keep *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->p[i]);
    free(k->p);
}

float sq_plan_safe_amax(float a)
{
    return isfinite(a) && a > 0 ? a : 1e-6f; /* an all-zero input: any scale works */
}

/* The int8 step and zero point of an input clipped at amax whose smallest
 * calibrated value is lo (lo_known false: unknown). A symmetric code range
 * spends half its codes on negatives; ReLU outputs have none and GELU
 * outputs none below -0.17, so where the input is (nearly) one-sided the
 * 255 codes cover [lo, amax] instead: step (amax - lo) / 254, zero point z
 * (sq_ref_round_s8_zp), up to half the step. Two-sided inputs, where the
 * gain would be under 25%, stay symmetric. */
void sq_plan_act_range(float amax, bool use_zero, bool lo_known, float lo, float *scale, int *zero)
{
    *scale = amax / 127.0f;
    *zero = 0;
    if (!use_zero || !lo_known || !(lo == lo))
        return;
    lo = fmaxf(fminf(lo, 0.0f), -amax);
    if (lo < -0.6f * amax)
        return;
    double z = round(127.0 * ((double)amax + lo) / ((double)amax - lo));
    if (z < 1.0)
        return;
    *zero = z > SQ_REF_MAX_ZERO ? SQ_REF_MAX_ZERO : (int)z;
    *scale = (amax - lo) / 254.0f;
}

/* The clip (amax), step and zero point of one int8 input from its |x|
 * histogram. The error-driven methods (mse, entropy) weigh clipping against
 * the step; an input that gets a zero point has twice the levels (about
 * 2 qmax steps over [0, amax]), so its clip is chosen again for those. */
int sq_plan_select_act(const sq_hist *h, const sq_scale_params *sp, bool use_zero, bool lo_known,
                      float lo, float *amax, float *scale, int *zero, sq_err *err)
{
    float a = 0;
    if (sq_select_amax(h, sp, &a, err) != 0)
        return -1;
    *amax = sq_plan_safe_amax(a);
    sq_plan_act_range(*amax, use_zero, lo_known, lo, scale, zero);
    if (*zero != 0 && (sp->method == SQ_CALIB_MSE || sp->method == SQ_CALIB_ENTROPY)) {
        sq_scale_params wide = *sp;
        wide.qmax = 2 * sp->qmax;
        if (sq_select_amax(h, &wide, &a, err) != 0)
            return -1;
        *amax = sq_plan_safe_amax(a);
        sq_plan_act_range(*amax, use_zero, lo_known, lo, scale, zero);
    }
    return 0;
}

void sq_plan_free(sq_plan_linear *pl, int n, float **w_orig)
{
    for (int i = 0; pl && i < n; i++) {
        free(pl[i].s);
        free(pl[i].outl_idx);
        free(pl[i].outl_w);
        free(pl[i].xmax_m);
        free(pl[i].skip);
        sq_qweight_free(&pl[i].qw);
        if (w_orig)
            free(w_orig[i]);
    }
    free(pl);
    free(w_orig);
}

void sq_quantize_log(const sq_quantize_opts *o, const char *fmt, ...)
{
    if (!o->log)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->log(o->log_ctx, line);
}

int sq_plan_outliers(sq_plan_linear *p, const sq_linear *lin, const sq_act_stats *xs,
                     const sq_recipe *r, sq_err *err)
{
    const int K = lin->in;
    if (!(p->outl_idx = malloc((size_t)r->outl_max * sizeof *p->outl_idx)) ||
        (p->n_outl = sq_select_outliers(xs->ch_max_abs, lin->w, lin->out, K, r->outl_ratio,
                                        r->outl_max, p->outl_idx)) < 0)
        return sq_err_set(err, "out of memory");
    if (p->n_outl == 0)
        return 0;
    p->xmax_m = malloc((size_t)K * sizeof *p->xmax_m);
    p->skip = calloc((size_t)K, 1);
    if (!p->xmax_m || !p->skip)
        return sq_err_set(err, "out of memory");
    memcpy(p->xmax_m, xs->ch_max_abs, (size_t)K * sizeof *p->xmax_m);
    for (int t = 0; t < p->n_outl; t++) {
        p->xmax_m[p->outl_idx[t]] = 0.0f; /* s_j = 1: the fp32 side path needs no smoothing */
        p->skip[p->outl_idx[t]] = 1;
    }
    return p->n_outl;
}

int sq_plan_act(sq_plan_linear *p, const sq_act_stats *xs, const sq_act_stats *smoothed,
                const sq_recipe *r, const sq_scale_params *sp, const float *ones, sq_err *err)
{
    /* The input's minimum as the int8 step sees it: x itself, or x / s
     * (the smoothed replay); without that replay only a non-negative
     * x is known to stay non-negative under x / s (s > 0). */
    /* Smoothed or with outlier channels: not the input the .sqc saw. */
    const bool remapped = p->s || p->n_outl > 0;
    bool lo_known = xs->rows > 0;
    float lo = xs->min;
    if (remapped && smoothed)
        lo = smoothed->min, lo_known = smoothed->rows > 0;
    else if (remapped)
        lo_known = lo_known && lo >= 0.0f;
    bool use_zero = r->zero_point && sq_qtype_get(p->res.qtype)->act_zero;
    if (remapped && !smoothed) { /* minmax: the range follows from the channel maxima */
        p->act_amax = sq_plan_safe_amax(sq_smooth_act_absmax(p->xmax_m ? p->xmax_m : xs->ch_max_abs,
                                                             p->s ? p->s : ones, xs->channels));
        sq_plan_act_range(p->act_amax, use_zero, lo_known, lo, &p->act_scale, &p->act_zero);
        return 0;
    }
    return sq_plan_select_act(remapped ? &smoothed->hist : &xs->hist, sp, use_zero, lo_known, lo,
                              &p->act_amax, &p->act_scale, &p->act_zero, err);
}

void sq_plan_yaml_provenance(sq_strbuf *sb, const sq_calib_stats *st, uint64_t st_hash,
                             const sq_scale_params *sp, const sq_recipe *r)
{
    sq_sb_printf(sb, "calibration:\n  digest: \"%016" PRIx64 "\"\n  date: ", st_hash);
    sq_sb_yaml_str(sb, st->date ? st->date : "");
    sq_sb_printf(sb, "\n  observer: {method: %s, percentile: %.17g}\n  corpus:",
                 sq_calib_method_name(sp->method), sp->percentile);
    if (st->n_corpus_files == 0)
        sq_sb_printf(sb, " []");
    for (int i = 0; i < st->n_corpus_files; i++) {
        sq_sb_printf(sb, "\n    - {name: ");
        sq_sb_yaml_str(sb, st->corpus_files[i].name);
        sq_sb_printf(sb, ", size: %" PRIu64 ", xxh64: \"%016" PRIx64 "\"}",
                     st->corpus_files[i].size, st->corpus_files[i].xxh64);
    }
    sq_sb_printf(sb, "\n  samples: %" PRIu64 "\n  seed: %" PRIu64 "\n  max_seq: %d\n",
                 st->samples_requested, st->seed, st->max_seq);
    char *ry = sq_recipe_to_yaml(r);
    sq_sb_printf(sb, "recipe: |\n");
    for (const char *p = ry ? ry : ""; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        sq_sb_printf(sb, "  %.*s\n", (int)n, p);
        p += n + (e ? 1 : 0);
    }
    free(ry);
}


void sq_plan_yaml_linear(sq_strbuf *sb, const sq_linear_report *lr, const char *fold_note,
                         bool with_range, bool with_nosmooth)
{
    sq_sb_printf(sb, "  - {name: %s, type: %s, shape: [%d, %d], smooth: %s", lr->name,
                 sq_qtype_get(lr->qtype)->name, lr->n, lr->k, lr->smooth ? "true" : "false");
    if (lr->smooth)
        sq_sb_printf(sb, ", alpha: %.3g%s", (double)lr->alpha, fold_note);
    if (with_range && lr->qtype != SQ_QT_F32)
        sq_sb_printf(sb, ", act_amax: %.9g, act_zero: %d, err: %.6g", (double)lr->act_amax,
                     lr->act_zero, lr->err);
    if (with_nosmooth && lr->smooth)
        sq_sb_printf(sb, ", err_nosmooth: %.6g", lr->err_nosmooth);
    if (lr->n_outliers > 0)
        sq_sb_printf(sb, ", outliers: %d", lr->n_outliers);
    sq_sb_printf(sb, "}\n");
}

#include "smoothquant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlinear_eval.h"
#include "qlinear_ref.h"

void sq_smooth_weight_absmax(const float *w, int n, int k, float *wmax)
{
    for (int r = 0; r < n; r++) {
        const float *wr = w + (size_t)r * k;
        for (int j = 0; j < k; j++)
            wmax[j] = fmaxf(wmax[j], fabsf(wr[j]));
    }
}

void sq_smooth_factors(const float *xmax, const float *wmax, int k, float alpha, float *s)
{
    for (int j = 0; j < k; j++) {
        double xm = xmax[j], wm = wmax[j];
        if (!(xm > 0.0 && wm > 0.0 && isfinite(xm) && isfinite(wm))) {
            s[j] = 1.0f;
            continue;
        }
        double v = pow(xm, alpha) / pow(wm, 1.0 - alpha);
        if (!(v >= SQ_SMOOTH_MIN)) /* also catches NaN */
            v = SQ_SMOOTH_MIN;
        else if (v > SQ_SMOOTH_MAX)
            v = SQ_SMOOTH_MAX;
        s[j] = (float)v;
    }
}

void sq_smooth_scale_weights(float *w, int n, int k, const float *s)
{
    for (int r = 0; r < n; r++) {
        float *wr = w + (size_t)r * k;
        for (int j = 0; j < k; j++)
            wr[j] *= s[j];
    }
}

void sq_smooth_divide_rows(const float *x, int rows, int k, const float *s, float *out)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * k;
        float *o = out + (size_t)r * k;
        for (int j = 0; j < k; j++)
            o[j] = xr[j] / s[j];
    }
}

float sq_smooth_act_absmax(const float *xmax, const float *s, int k)
{
    float m = 0.0f;
    for (int j = 0; j < k; j++)
        m = fmaxf(m, fabsf(xmax[j]) / s[j]);
    return m;
}

int sq_smooth_fold_v_out(sq_linear *qkv, sq_linear *attn_out, const float *s, sq_err *err)
{
    const int D = attn_out->in; /* attention width; attn_out may widen to H > D */
    if (qkv->in != D || qkv->out != 3 * D)
        return sq_err_set(err, "V -> out fold: qkv is [%d][%d] and attn_out [%d][%d], expected "
                               "[3D][D] and [H][D]", qkv->out, qkv->in, attn_out->out,
                          attn_out->in);
    for (int j = 0; j < D; j++) {
        float *vrow = qkv->w + (size_t)(2 * D + j) * D;
        for (int i = 0; i < D; i++)
            vrow[i] /= s[j];
        qkv->b[2 * D + j] /= s[j];
    }
    sq_smooth_scale_weights(attn_out->w, attn_out->out, D, s);
    return 0;
}

void sq_smooth_fold_layernorm(float *gamma, float *beta, sq_linear *lin, const float *s)
{
    for (int j = 0; j < lin->in; j++) {
        gamma[j] /= s[j];
        beta[j] /= s[j];
    }
    sq_smooth_scale_weights(lin->w, lin->out, lin->in, s);
}

/* The grid: i / N exactly when 1/step is (nearly) a whole number N, so
 * 0.5 is exactly on it for even N; otherwise i * step with the last point
 * clamped to 1. */
int sq_smooth_alpha_count(float step)
{
    if (!(step > 0.0f && step <= 1.0f))
        return 0;
    return (int)ceil(1.0 / step - 1e-4) + 1;
}

static float alpha_at(float step, int i, int count)
{
    double inv = 1.0 / step, N = floor(inv + 0.5);
    if (fabs(inv - N) < 1e-4)
        return (float)(i / N);
    return i == count - 1 ? 1.0f : (float)(i * (double)step);
}

/* The activation range of one candidate (see the header). xs is scratch. */
static float candidate_amax(const sq_smooth_search *opt, const float *x, int rows, int k,
                            const float *xmax, const float *s, float *xs)
{
    sq_smooth_divide_rows(x, rows, k, s, xs);
    if (opt->amax_fn) {
        float a = opt->amax_fn(opt->amax_ctx, xs, rows, k);
        if (a > 0.0f && isfinite(a))
            return a;
    }
    float a = sq_smooth_act_absmax(xmax, s, k);
    for (size_t i = 0; i < (size_t)rows * k; i++)
        a = fmaxf(a, fabsf(xs[i]));
    return a;
}

static int error_for(const sq_smooth_search *opt, const float *x, int rows, int k,
                     const float *w, int n, const float *bias, const float *xmax,
                     const float *s, const float *ref, float *xs, double *e, sq_err *err)
{
    float amax = candidate_amax(opt, x, rows, k, xmax, s, xs);
    /* An all-zero input: any positive scale quantizes it exactly. */
    float act_scale = amax > 0.0f ? amax / (float)SQ_REF_QMAX : 1.0f;
    if (sq_qtype_get(opt->qtype)->gemm)
        return sq_qlinear_error_fp32(x, rows, k, w, n, bias, s, act_scale, opt->qtype, ref, e,
                                     err);
    return sq_ref_linear_error(x, rows, k, w, n, bias, s, act_scale, ref, e, err);
}

int sq_smooth_search_alpha(const float *x, int rows, int k, const float *w, int n,
                           const float *bias, const float *xmax, const float *wmax,
                           const sq_smooth_search *opt, float *best_alpha, double *errors,
                           double *error_none, sq_err *err)
{
    if (rows <= 0 || k <= 0 || n <= 0)
        return sq_err_set(err, "alpha search: empty shape (%d rows, K %d, N %d)", rows, k, n);
    int count = sq_smooth_alpha_count(opt->step);
    if (count == 0)
        return sq_err_set(err, "alpha search: step %g is not in (0, 1]", (double)opt->step);
    size_t nx = (size_t)rows * k;
    float *ref = malloc((size_t)rows * n * sizeof *ref);
    float *xs = malloc(nx * sizeof *xs);
    float *own_wmax = wmax ? NULL : calloc((size_t)k, sizeof *own_wmax);
    float *s = malloc((size_t)k * sizeof *s);
    double *errs = malloc((size_t)count * sizeof *errs);
    int rc = -1;
    if (!ref || !xs || (!wmax && !own_wmax) || !s || !errs) {
        sq_err_set(err, "alpha search: out of memory");
        goto out;
    }
    if (!wmax) {
        sq_smooth_weight_absmax(w, n, k, own_wmax);
        wmax = own_wmax;
    }
    sq_fp32_linear(x, rows, k, w, n, bias, ref); /* shared by every candidate */

    for (int i = 0; i < count; i++) {
        sq_smooth_factors(xmax, wmax, k, alpha_at(opt->step, i, count), s);
        if (error_for(opt, x, rows, k, w, n, bias, xmax, s, ref, xs, &errs[i], err) != 0)
            goto out;
    }
    if (error_none) {
        for (int j = 0; j < k; j++)
            s[j] = 1.0f;
        if (error_for(opt, x, rows, k, w, n, bias, xmax, s, ref, xs, error_none, err) != 0)
            goto out;
    }

    double emin = errs[0];
    for (int i = 1; i < count; i++)
        emin = fmin(emin, errs[i]);
    int best = -1;
    for (int i = 0; i < count; i++) {
        if (!(errs[i] <= emin * (1.0 + 1e-6)))
            continue;
        float a = alpha_at(opt->step, i, count);
        /* Ascending alphas: a later one wins only when clearly closer to
         * 0.5 (0.45 and 0.55 are equally close up to float rounding). */
        if (best < 0 || fabsf(a - 0.5f) < fabsf(alpha_at(opt->step, best, count) - 0.5f) - 1e-6f)
            best = i;
    }
    if (best < 0) {
        sq_err_set(err, "alpha search: the output error is not finite");
        goto out;
    }
    *best_alpha = alpha_at(opt->step, best, count);
    if (errors)
        memcpy(errors, errs, (size_t)count * sizeof *errs);
    rc = 0;
out:
    free(ref);
    free(xs);
    free(own_wmax);
    free(s);
    free(errs);
    return rc;
}

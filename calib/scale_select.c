#include "scale_select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[] = {
    [SQ_CALIB_MINMAX] = "minmax",
    [SQ_CALIB_PERCENTILE] = "percentile",
    [SQ_CALIB_ENTROPY] = "entropy",
    [SQ_CALIB_MSE] = "mse",
};
#define N_METHODS ((int)(sizeof method_names / sizeof method_names[0]))

int sq_qmax_for_bits(int bits)
{
    if (bits < 2 || bits > 16)
        return -1;
    return (1 << (bits - 1)) - 1;
}

void sq_scale_params_default(sq_scale_params *p, sq_calib_method m)
{
    p->method = m;
    p->percentile = SQ_DEFAULT_PERCENTILE;
    p->qmax = sq_qmax_for_bits(8);
    p->skip_zeros = 0;
}

const char *sq_calib_method_name(sq_calib_method m)
{
    return (int)m >= 0 && (int)m < N_METHODS ? method_names[m] : "?";
}

int sq_calib_method_parse(const char *name, sq_calib_method *out, sq_err *err)
{
    for (int m = 0; m < N_METHODS; m++)
        if (strcmp(name, method_names[m]) == 0) {
            *out = (sq_calib_method)m;
            return 0;
        }
    return sq_err_set(err,
                      "unknown calibration method '%s' (known: minmax, percentile, entropy, mse)",
                      name);
}

int sq_scale_params_parse(const char *spec, sq_scale_params *p, sq_err *err)
{
    char name[32];
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len >= sizeof name)
        return sq_err_set(err, "unknown calibration method '%s' (known: minmax, percentile, "
                               "entropy, mse)", spec);
    memcpy(name, spec, len);
    name[len] = '\0';
    sq_calib_method m = SQ_CALIB_MINMAX;
    if (sq_calib_method_parse(name, &m, err) < 0)
        return -1;
    sq_scale_params_default(p, m);
    if (!colon)
        return 0;
    if (m != SQ_CALIB_PERCENTILE)
        return sq_err_set(err, "calibration method '%s' takes no parameter (got '%s')", name,
                          colon + 1);
    char *end;
    double v = strtod(colon + 1, &end);
    if (end == colon + 1 || *end != '\0' || !(v > 0.0 && v <= 100.0))
        return sq_err_set(err, "bad percentile '%s' in '%s': want a number in (0, 100]",
                          colon + 1, spec);
    p->percentile = v;
    return 0;
}

float sq_amax_minmax(const sq_hist *h)
{
    return h->max_abs;
}

/* Upper edge of bin k, capped at the largest value seen. */
static float edge_amax(const sq_hist *h, int k)
{
    double e = (k + 1) * sq_hist_bin_width(h);
    return e < h->max_abs ? (float)e : h->max_abs;
}

float sq_amax_percentile(const sq_hist *h, double percentile, int skip_zeros)
{
    if (h->max_abs <= 0)
        return 0.0f;
    uint64_t drop = skip_zeros ? h->zeros : 0;
    double target = percentile / 100.0 * (double)(h->total - drop);
    uint64_t cum = 0;
    for (int k = 0; k < SQ_HIST_BINS; k++) {
        cum += h->count[k] - (k == 0 ? drop : 0);
        if ((double)cum >= target && cum > 0)
            return edge_amax(h, k);
    }
    return h->max_abs;
}

double sq_hist_kl_candidate(const sq_hist *h, int i, int qmax, int skip_zeros)
{
    const long L = (long)qmax + 1;
    if (i < 1 || i > SQ_HIST_BINS || L < 2)
        return INFINITY;
    /* c: the first i bins as counted; p: the same with the tail folded into
     * the last one. Bin k belongs to level floor(k * L / i) (with L >= i
     * every bin is a level of its own). */
    double c[SQ_HIST_BINS], mass[SQ_HIST_BINS];
    int group[SQ_HIST_BINS], nonzero[SQ_HIST_BINS];
    double tail = 0, qsum = 0;
    for (int k = i; k < SQ_HIST_BINS; k++)
        tail += (double)h->count[k];
    for (int k = 0; k < i; k++) {
        c[k] = (double)h->count[k] - (k == 0 && skip_zeros ? (double)h->zeros : 0);
        qsum += c[k];
        mass[k] = 0;
        nonzero[k] = 0;
    }
    double psum = qsum + tail;
    if (qsum <= 0)
        return INFINITY;
    for (int k = 0; k < i; k++) {
        int g = L >= i ? k : (int)(k * L / i);
        double pk = c[k] + (k == i - 1 ? tail : 0);
        group[k] = g;
        mass[g] += c[k];
        nonzero[g] += pk > 0;
    }
    /* Q(k) = mass of k's level spread over the level's bins that P covers,
     * normalized by the in-range mass (the tail is not part of Q). */
    double kl = 0;
    for (int k = 0; k < i; k++) {
        double pk = (c[k] + (k == i - 1 ? tail : 0)) / psum;
        if (pk <= 0)
            continue;
        double qk = mass[group[k]] / nonzero[group[k]] / qsum;
        if (qk <= 0)
            return INFINITY;
        kl += pk * log(pk / qk);
    }
    return kl;
}

float sq_amax_entropy(const sq_hist *h, int qmax, int skip_zeros)
{
    if (h->max_abs <= 0)
        return 0.0f;
    int used = sq_hist_used_bins(h);
    int first = qmax + 1;
    if (used <= first)
        return h->max_abs; /* fewer bins than levels: nothing to clip */
    double best = INFINITY;
    int best_i = used;
    for (int i = first; i <= used; i++) {
        double kl = sq_hist_kl_candidate(h, i, qmax, skip_zeros);
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    return edge_amax(h, best_i - 1);
}

/* H(y) = integral over [0, y] of (frac(t) - 1/2)^2 dt, y >= 0. */
static double sawtooth_sq_integral(double y)
{
    double f = y - floor(y), g = f - 0.5;
    return floor(y) / 12.0 + (g * g * g + 0.125) / 3.0;
}

/* Integral over [a, b] (0 <= a <= b) of (t - dq(t))^2 for the quantizer with
 * step s and clip amax = qmax * s. Below amax the error is the sawtooth
 * t - s * round(t / s); above it, t - amax. */
static double sq_err_integral(double a, double b, double s, double amax)
{
    double sum = 0;
    double ub = b < amax ? b : amax;
    if (a < ub) /* t - s round(t/s) = s (frac(t/s + 1/2) - 1/2) */
        sum += s * s * s *
               (sawtooth_sq_integral(ub / s + 0.5) - sawtooth_sq_integral(a / s + 0.5));
    double la = a > amax ? a : amax;
    if (la < b)
        sum += ((b - amax) * (b - amax) * (b - amax) - (la - amax) * (la - amax) * (la - amax)) /
               3.0;
    return sum;
}

double sq_hist_quant_sse(const sq_hist *h, double amax, int qmax)
{
    if (!(amax > 0))
        return INFINITY;
    double w = sq_hist_bin_width(h);
    double s = amax / qmax;
    int used = sq_hist_used_bins(h);
    double sse = 0;
    for (int k = 0; k < used; k++) {
        double n = (double)h->count[k] - (k == 0 ? (double)h->zeros : 0);
        if (n <= 0)
            continue;
        /* values spread evenly over the bin, which ends at the largest |x| */
        double a = k * w, b = (k + 1) * w;
        if (b > h->max_abs)
            b = h->max_abs;
        if (b <= a) {
            double d = a - (a < amax ? s * nearbyint(a / s) : amax);
            sse += n * d * d;
            continue;
        }
        sse += n * sq_err_integral(a, b, s, amax) / (b - a);
    }
    return sse;
}

float sq_amax_mse(const sq_hist *h, int qmax)
{
    if (h->max_abs <= 0)
        return 0.0f;
    int used = sq_hist_used_bins(h);
    double best = INFINITY;
    float best_amax = h->max_abs;
    for (int k = 0; k < used; k++) {
        float a = edge_amax(h, k);
        double e = sq_hist_quant_sse(h, a, qmax);
        if (e < best) {
            best = e;
            best_amax = a;
        }
    }
    return best_amax;
}

int sq_select_amax(const sq_hist *h, const sq_scale_params *p, float *amax, sq_err *err)
{
    if (p->qmax < 1)
        return sq_err_set(err, "scale selection: qmax %d must be >= 1", p->qmax);
    switch (p->method) {
    case SQ_CALIB_MINMAX:
        *amax = sq_amax_minmax(h);
        return 0;
    case SQ_CALIB_PERCENTILE:
        if (!(p->percentile > 0 && p->percentile <= 100))
            return sq_err_set(err, "scale selection: percentile %g outside (0, 100]",
                              p->percentile);
        *amax = sq_amax_percentile(h, p->percentile, p->skip_zeros);
        return 0;
    case SQ_CALIB_ENTROPY:
        *amax = sq_amax_entropy(h, p->qmax, p->skip_zeros);
        return 0;
    case SQ_CALIB_MSE:
        *amax = sq_amax_mse(h, p->qmax);
        return 0;
    }
    return sq_err_set(err, "scale selection: unknown method %d", (int)p->method);
}

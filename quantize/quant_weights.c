/* Per-channel int8 and group-128 int4 weight quantization (rules in
 * quant_weights.h), packed panel by panel. */
#include "quant_weights.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "pack.h"
#include "par_threads.h"

/* int4 scale search grid: f = 1 + SEARCH_STEP * i for |i| <= SEARCH_STEPS. */
#define SEARCH_STEPS 20
#define SEARCH_STEP 0.01

static int8_t round_clamp(float x, int lim)
{
    float r = roundf(x); /* half away from zero */
    return (int8_t)(r > (float)lim ? lim : r < (float)-lim ? -lim : (int)r);
}

static float amax_of(const float *w, int len)
{
    float m = 0.0f;
    for (int i = 0; i < len; i++)
        m = fmaxf(m, fabsf(w[i]));
    return m;
}

/* amax / qmax, kept positive when it would underflow (then every value
 * clamps, which is the best a float scale can do there). */
static float rtn_scale(float amax, int qmax)
{
    return fmaxf(amax / (float)qmax, FLT_TRUE_MIN);
}

static void rtn(const float *w, int len, float s, int qmax, int8_t *q)
{
    for (int i = 0; i < len; i++)
        q[i] = round_clamp(w[i] / s, qmax);
}

static void quant_row_s8(const float *w, int k, int8_t *q, float *scale)
{
    float amax = amax_of(w, k);
    if (amax == 0.0f) {
        memset(q, 0, (size_t)k);
        *scale = 1.0f;
        return;
    }
    *scale = rtn_scale(amax, 127);
    rtn(w, k, *scale, 127, q);
}

/* sum imp (w - q s)^2 over one group (imp NULL: weights 1). */
static double group_err(const float *w, int len, const float *imp, const int8_t *q, float s)
{
    double e = 0.0;
    for (int i = 0; i < len; i++) {
        double d = (double)w[i] - (double)q[i] * (double)s;
        e += (imp ? (double)imp[i] : 1.0) * d * d;
    }
    return e;
}

/* Quantize one int4 group of len <= 128 inputs into q; returns its scale. */
static float quant_group_s4(const float *w, int len, const float *imp, bool search, int8_t *q)
{
    float amax = amax_of(w, len);
    if (amax == 0.0f) {
        memset(q, 0, (size_t)len);
        return 1.0f;
    }
    float s0 = rtn_scale(amax, 7), best_s = s0;
    rtn(w, len, s0, 7, q);
    if (!search)
        return s0;
    double best = group_err(w, len, imp, q, s0);
    int8_t cand[SQ_INT4_GROUP];
    for (int step = -SEARCH_STEPS; step <= SEARCH_STEPS; step++) {
        float sc = (float)((double)s0 * (1.0 + SEARCH_STEP * step));
        rtn(w, len, sc, 7, cand);
        /* Candidate scales for these values: the grid point and the
         * weighted least-squares optimum sum(imp w q) / sum(imp q^2). */
        double num = 0.0, den = 0.0;
        for (int i = 0; i < len; i++) {
            double wi = imp ? (double)imp[i] : 1.0;
            num += wi * (double)w[i] * cand[i];
            den += wi * (double)cand[i] * cand[i];
        }
        float tries[2] = {sc, den > 0.0 && num > 0.0 ? (float)(num / den) : 0.0f};
        for (int t = 0; t < 2; t++) {
            if (!(tries[t] > 0.0f) || !isfinite(tries[t]))
                continue;
            double e = group_err(w, len, imp, cand, tries[t]);
            if (e < best) { /* strictly better only: ties keep RTN */
                best = e;
                best_s = tries[t];
                memcpy(q, cand, (size_t)len);
            }
        }
    }
    return best_s;
}

static void quant_row_s4(const float *w, int k, int groups, const float *imp, bool search,
                         int8_t *q, float *scales)
{
    for (int g = 0; g < groups; g++) {
        int off = g * SQ_INT4_GROUP;
        int len = k - off < SQ_INT4_GROUP ? k - off : SQ_INT4_GROUP;
        scales[g] = quant_group_s4(w + off, len, imp ? imp + off : NULL, search, q + off);
    }
}

/* GPTQ (gptq.h): the row's values are updated in w (k doubles, the row on
 * entry) as the columns left of them are rounded; a group's scale is chosen
 * when the group is reached, on its values at that point. */
static void quant_row_s4_gptq(double *w, int k, int groups, const float *imp, bool search,
                              const double *u, int8_t *q, float *scales)
{
    float cur[SQ_INT4_GROUP];
    for (int g = 0; g < groups; g++) {
        const int off = g * SQ_INT4_GROUP;
        const int len = k - off < SQ_INT4_GROUP ? k - off : SQ_INT4_GROUP;
        for (int i = 0; i < len; i++)
            cur[i] = (float)w[off + i];
        const float s = quant_group_s4(cur, len, imp ? imp + off : NULL, search, q + off);
        scales[g] = s;
        for (int i = off; i < off + len; i++) {
            q[i] = round_clamp((float)w[i] / s, 7);
            const double *ui = u + (size_t)i * k;
            const double e = (w[i] - (double)q[i] * s) / ui[i];
            for (int j = i + 1; j < k; j++)
                w[j] -= e * ui[j];
        }
    }
}

static int check_inputs(const float *w, int n, int k, const float *imp, sq_err *err)
{
    for (size_t i = 0; i < (size_t)n * (size_t)k; i++)
        if (!isfinite(w[i]))
            return sq_err_set(err, "weight [%zu, %zu] is not finite (%g)", i / (size_t)k,
                              i % (size_t)k, (double)w[i]);
    if (imp)
        for (int i = 0; i < k; i++)
            if (!isfinite(imp[i]) || imp[i] < 0.0f)
                return sq_err_set(err, "importance of input %d is %g (must be finite, >= 0)", i,
                                  (double)imp[i]);
    return 0;
}

int sq_quantize_weights(const float *w, int n, int k, sq_qtype qt, const sq_quant_opts *opts,
                        sq_qweight *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    const sq_quant_opts none = {0};
    if (!opts)
        opts = &none;
    const sq_qtype_traits *t = sq_qtype_get(qt);
    if (!t || !t->packed_size)
        return sq_err_set(err, "cannot quantize weights to %s", t ? t->name : "an unknown type");
    if (sq_qweight_shape(out, qt, n, k, err) != 0 || check_inputs(w, n, k, opts->importance, err))
        return -1;
    if (sq_qweight_alloc(out, qt, n, k, err) != 0)
        return -1;
    int groups = sq_qweight_groups(out), panels = out->n_pad / SQ_PANEL_N;
    /* scalar steps per weight: rounding (int8), a scale search over the
     * group (int4), a pass over the row's later columns (GPTQ) */
    const double steps = opts->gptq_u ? 2.0 * k : t->block ? 32.0 : 4.0;
    int threads = sq_par_threads(SQ_WORK_SCALAR, steps * n * k, panels);
    size_t per_thread = (size_t)SQ_PANEL_N * (size_t)out->k_pad;
    int8_t *buf = malloc((size_t)threads * per_thread);
    double *wd = opts->gptq_u ? malloc((size_t)threads * (size_t)k * sizeof *wd) : NULL;
    if (!buf || (opts->gptq_u && !wd)) {
        free(wd);
        sq_qweight_free(out);
        return sq_err_set(err, "out of memory quantizing a [%d, %d] weight", n, k);
    }
#pragma omp parallel num_threads(threads)
    {
        int8_t *rows = buf + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(dynamic, 1)
        for (int p = 0; p < panels; p++) {
            int live = n - p * SQ_PANEL_N < SQ_PANEL_N ? n - p * SQ_PANEL_N : SQ_PANEL_N;
            for (int i = 0; i < live; i++) {
                size_t row = (size_t)p * SQ_PANEL_N + (size_t)i;
                const float *wr = w + row * (size_t)k;
                int8_t *qr = rows + (size_t)i * (size_t)k;
                if (!t->block) /* one scale per channel */
                    quant_row_s8(wr, k, qr, &out->scale[row]);
                else if (opts->gptq_u) {
                    double *wt = wd + (size_t)omp_get_thread_num() * (size_t)k;
                    for (int j = 0; j < k; j++)
                        wt[j] = wr[j];
                    quant_row_s4_gptq(wt, k, groups, opts->importance, opts->int4_search,
                                      opts->gptq_u, qr, &out->scale[row * (size_t)groups]);
                } else
                    quant_row_s4(wr, k, groups, opts->importance, opts->int4_search, qr,
                                 &out->scale[row * (size_t)groups]);
            }
            t->pack_panel(out, p, rows, (size_t)k);
        }
    }
    free(buf);
    free(wd);
    return 0;
}

void sq_dequantize_weights(const sq_qweight *q, float *out)
{
    const sq_qtype_traits *t = sq_qtype_get(q->qtype);
    int groups = sq_qweight_groups(q);
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)q->n * q->k, q->n))
    for (int n = 0; n < q->n; n++)
        for (int k = 0; k < q->k; k++) {
            int g = t->block ? k / t->block : 0;
            out[(size_t)n * (size_t)q->k + (size_t)k] =
                (float)t->get(q, n, k) * q->scale[(size_t)n * (size_t)groups + (size_t)g];
        }
}

double sq_sqnr_db(const float *ref, const float *test, size_t n)
{
    double sig = 0.0, noise = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)ref[i] - (double)test[i];
        sig += (double)ref[i] * ref[i];
        noise += d * d;
    }
    if (noise == 0.0)
        return SQ_SQNR_CAP_DB;
    if (sig == 0.0)
        return -SQ_SQNR_CAP_DB;
    double db = 10.0 * log10(sig / noise);
    return db > SQ_SQNR_CAP_DB ? SQ_SQNR_CAP_DB : db < -SQ_SQNR_CAP_DB ? -SQ_SQNR_CAP_DB : db;
}

double sq_weighted_sq_error(const float *ref, const float *test, int n, int k, const float *imp)
{
    double e = 0.0;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < k; c++) {
            size_t i = (size_t)r * (size_t)k + (size_t)c;
            double d = (double)ref[i] - (double)test[i];
            e += (imp ? (double)imp[c] : 1.0) * d * d;
        }
    return e;
}

/* The runtime quantized linear's output error (qlinear_eval.h). */
#include "qlinear_eval.h"

#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "qlinear_ref.h"
#include "quant_weights.h"

int sq_qlinear_error(const float *x, int rows, const sq_qweight *qw, const float *bias,
                     const float *s, float act_scale, int act_zero, int n_outliers,
                     const int32_t *idx, const float *ow, const float *ref, double *rel_err,
                     sq_err *err)
{
    const int N = qw->n, K = qw->k;
    /* A borrowed view of qw and bias: sq_linear_free releases only what
     * sq_linear_prepare_quant allocated. */
    sq_linear l = {.in = K, .out = N, .qtype = qw->qtype, .qw = *qw, .borrowed = true,
                   .n_outliers = n_outliers, .outlier_idx = idx, .outlier_w = ow};
    l.qw.borrowed = 1;
    float *zeros = bias ? NULL : calloc((size_t)N, sizeof *zeros);
    l.b = bias ? (float *)(uintptr_t)bias : zeros;
    sq_linear_scratch sc = {.qa = malloc((size_t)rows * qw->k_pad),
                            .acc = malloc((size_t)rows * N * sizeof *sc.acc),
                            .row_scale = NULL};
    float *y = malloc((size_t)rows * N * sizeof *y);
    int rc = -1;
    if (!l.b || !sc.qa || !sc.acc || !y || sq_linear_prepare_quant(&l, s, act_scale, act_zero)) {
        sq_err_set(err, "quantized linear error: out of memory for %d x %d", rows, N);
        goto out;
    }
    sq_linear_forward(&l, x, rows, y, &sc);
    *rel_err = sq_rel_error(y, ref, (size_t)rows * N);
    rc = 0;
out:
    sq_linear_free(&l);
    free(zeros);
    free(sc.qa);
    free(sc.acc);
    free(y);
    return rc;
}

int sq_qlinear_error_fp32(const float *x, int rows, int k, const float *w, int n,
                          const float *bias, const float *s, float act_scale, sq_qtype qt,
                          const float *ref, double *rel_err, sq_err *err)
{
    float *ws = malloc((size_t)n * k * sizeof *ws);
    if (!ws)
        return sq_err_set(err, "quantized linear error: out of memory for %d x %d", n, k);
    /* W' = W diag(s): the weight side of smoothing. */
    for (int c = 0; c < n; c++)
        for (int j = 0; j < k; j++)
            ws[(size_t)c * k + j] = w[(size_t)c * k + j] * (s ? s[j] : 1.0f);
    sq_qweight qw;
    int rc = sq_quantize_weights(ws, n, k, qt, NULL, &qw, err);
    free(ws);
    if (rc == 0)
        rc = sq_qlinear_error(x, rows, &qw, bias, s, act_scale, 0, 0, NULL, NULL, ref, rel_err,
                              err);
    sq_qweight_free(&qw);
    return rc;
}

int sq_ref_linear_error(const float *x, int rows, int k, const float *w, int n,
                        const float *bias, const float *s, float act_scale, const float *ref,
                        double *rel_err, sq_err *err)
{
    size_t ny = (size_t)rows * n;
    float *ws = malloc((size_t)n * k * sizeof *ws);
    float *m = malloc((size_t)k * sizeof *m);
    float *wsc = malloc((size_t)n * sizeof *wsc);
    int8_t *qw = malloc((size_t)n * k);
    float *y = malloc(ny * sizeof *y);
    float *own_ref = ref ? NULL : malloc(ny * sizeof *own_ref);
    int rc = -1;
    if (!ws || !m || !wsc || !qw || !y || (!ref && !own_ref)) {
        sq_err_set(err, "int8 linear error: out of memory for %d x %d", n, k);
        goto out;
    }
    if (!ref) {
        sq_fp32_linear(x, rows, k, w, n, bias, own_ref);
        ref = own_ref;
    }
    /* W' = W diag(s): the weight side of smoothing, then per-channel s8. */
    for (int c = 0; c < n; c++)
        for (int j = 0; j < k; j++)
            ws[(size_t)c * k + j] = w[(size_t)c * k + j] * (s ? s[j] : 1.0f);
    sq_ref_quantize_weights(ws, n, k, qw, wsc);
    sq_ref_act_multipliers(s, k, act_scale, m);
    if (sq_ref_linear(x, rows, k, m, act_scale, qw, wsc, n, bias, y, err) != 0)
        goto out;
    *rel_err = sq_rel_error(y, ref, ny);
    rc = 0;
out:
    free(ws);
    free(m);
    free(wsc);
    free(qw);
    free(y);
    free(own_ref);
    return rc;
}

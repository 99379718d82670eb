#include "act_capture.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

int sq_act_capture_init(sq_act_capture *c, const sq_calib_stats *st, int max_rows, sq_err *err)
{
    memset(c, 0, sizeof *c);
    int n = sq_calib_stats_layers(st) * SQ_LIN_KINDS;
    c->layers = sq_calib_stats_layers(st);
    c->max_rows = max_rows;
    c->rows = calloc((size_t)n, sizeof *c->rows);
    c->n_rows = calloc((size_t)n, sizeof *c->n_rows);
    c->cols = calloc((size_t)n, sizeof *c->cols);
    c->smooth = calloc((size_t)n, sizeof *c->smooth);
    c->skip = calloc((size_t)n, sizeof *c->skip);
    c->stats = calloc((size_t)n, sizeof *c->stats);
    c->gram = calloc((size_t)n, sizeof *c->gram);
    if (!c->rows || !c->n_rows || !c->cols || !c->smooth || !c->skip || !c->stats || !c->gram) {
        sq_act_capture_free(c);
        return sq_err_set(err, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        int N;
        if (!sq_calib_stats_shape(st, i / SQ_LIN_KINDS, (sq_linear_kind)(i % SQ_LIN_KINDS), &N,
                                  &c->cols[i]))
            continue; /* absent linear: cols 0, no rows */
        c->rows[i] = malloc(((size_t)max_rows * c->cols[i] + 1) * sizeof(float));
        if (!c->rows[i] || sq_act_stats_init(&c->stats[i], c->cols[i], err) != 0) {
            sq_act_capture_free(c);
            return sq_err_set(err, "out of memory");
        }
    }
    return 0;
}

void sq_act_capture_free(sq_act_capture *c)
{
    int n = c->layers * SQ_LIN_KINDS;
    for (int i = 0; c->rows && i < n; i++)
        free(c->rows[i]);
    for (int i = 0; c->stats && i < n; i++)
        sq_act_stats_free(&c->stats[i]);
    for (int i = 0; c->gram && i < n; i++)
        free(c->gram[i]);
    free(c->gram);
    free(c->rows);
    free(c->n_rows);
    free(c->cols);
    free(c->smooth);
    free(c->skip);
    free(c->stats);
    memset(c, 0, sizeof *c);
}

int sq_act_capture_want_gram(sq_act_capture *c, int i, sq_err *err)
{
    const size_t k = (size_t)c->cols[i];
    if (k == 0 || c->gram[i])
        return 0;
    if (!(c->gram[i] = calloc(k * k, sizeof *c->gram[i])))
        return sq_err_set(err, "out of memory for a %zu x %zu Gram matrix (GPTQ)", k, k);
    return 0;
}

/* G += y^T y over rows of y (upper triangle), in double, 64 rows at a time. */
static int add_gram(double *g, const float *y, int rows, int cols)
{
    enum { CHUNK = 64 };
    double *d = malloc((size_t)CHUNK * cols * sizeof *d);
    if (!d)
        return -1;
    for (int r0 = 0; r0 < rows; r0 += CHUNK) {
        const int n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        for (size_t i = 0; i < (size_t)n * cols; i++)
            d[i] = y[(size_t)r0 * cols + i];
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, cols, n, 1.0, d, cols, 1.0, g, cols);
    }
    free(d);
    return 0;
}

static void on_input(void *ctx, int layer, sq_linear_kind kind, const float *x, int rows, int cols)
{
    sq_act_capture *c = ctx;
    int i = layer * SQ_LIN_KINDS + kind;
    if (c->failed)
        return;
    int take = c->max_rows - c->n_rows[i];
    if (take > rows)
        take = rows;
    if (take > 0) {
        memcpy(c->rows[i] + (size_t)c->n_rows[i] * cols, x, (size_t)take * cols * sizeof(float));
        c->n_rows[i] += take;
    }
    if (!c->smooth[i]) {
        if (c->gram[i] && add_gram(c->gram[i], x, rows, cols) != 0) {
            c->failed = true;
            sq_err_set(&c->first_err, "out of memory");
        }
        return;
    }
    float *y = malloc((size_t)rows * cols * sizeof *y);
    sq_err e;
    if (!y) {
        c->failed = true;
        sq_err_set(&c->first_err, "out of memory");
        return;
    }
    const float *s = c->smooth[i];
    const uint8_t *skip = c->skip[i];
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++)
            y[(size_t)r * cols + j] = skip && skip[j] ? 0.0f : x[(size_t)r * cols + j] / s[j];
    if (c->gram[i] && add_gram(c->gram[i], y, rows, cols) != 0) {
        c->failed = true;
        sq_err_set(&c->first_err, "out of memory");
    } else if (sq_act_stats_observe(&c->stats[i], y, rows, cols, &e) != 0) {
        c->failed = true;
        c->first_err = e;
        sq_err_prefix(&c->first_err, "layer %d %s input", layer, sq_linear_kind_name(kind));
    }
    free(y);
}

sq_observer sq_act_capture_observer(sq_act_capture *c)
{
    sq_observer o = {.linear_input = on_input, .attn_probs = NULL, .ctx = c};
    return o;
}

int sq_act_capture_check(const sq_act_capture *c, sq_err *err)
{
    if (c->failed)
        return sq_err_set(err, "%s", c->first_err.msg);
    return 0;
}

bool sq_act_capture_full(const sq_act_capture *c)
{
    for (int i = 0; i < c->layers * SQ_LIN_KINDS; i++)
        if (c->cols[i] > 0 && c->n_rows[i] < c->max_rows)
            return false;
    return true;
}

#include "act_capture.h"

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
    if (!c->rows || !c->n_rows || !c->cols || !c->smooth || !c->skip || !c->stats) {
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
    free(c->rows);
    free(c->n_rows);
    free(c->cols);
    free(c->smooth);
    free(c->skip);
    free(c->stats);
    memset(c, 0, sizeof *c);
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
    if (!c->smooth[i])
        return;
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
    if (sq_act_stats_observe(&c->stats[i], y, rows, cols, &e) != 0) {
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

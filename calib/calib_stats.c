#include "calib_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "squint_version.h"

int sq_calib_stats_layers(const sq_calib_stats *st)
{
    return st->decoder ? st->dec.n_layers : st->cfg.layers;
}

bool sq_calib_stats_shape(const sq_calib_stats *st, int l, sq_linear_kind k, int *N, int *K)
{
    return st->decoder ? sq_decoder_linear_shape(&st->dec, k, N, K)
                       : sq_linear_shape(&st->cfg, l, k, N, K);
}

/* The arrays for the shapes st describes (cfg or dec set). */
static int init_arrays(sq_calib_stats *st, sq_err *err)
{
    const int L = sq_calib_stats_layers(st);
    int n = L * SQ_LIN_KINDS;
    st->lin = calloc((size_t)n, sizeof *st->lin);
    st->attn_pmin = malloc((size_t)L * sizeof(float));
    st->attn_pmax = malloc((size_t)L * sizeof(float));
    if (!st->lin || !st->attn_pmin || !st->attn_pmax) {
        sq_calib_stats_free(st);
        return sq_err_set(err, "out of memory");
    }
    for (int l = 0; l < L; l++) {
        st->attn_pmin[l] = 1.0f;
        st->attn_pmax[l] = 0.0f;
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            int N, C;
            if (!sq_calib_stats_shape(st, l, (sq_linear_kind)k, &N, &C))
                continue; /* absent linear: zeroed statistics, never written */
            if (sq_act_stats_init(&st->lin[l * SQ_LIN_KINDS + k], C, err) != 0) {
                sq_calib_stats_free(st);
                return -1;
            }
        }
    }
    sq_scale_params_default(&st->scale, SQ_CALIB_PERCENTILE);
    st->runs = 1;
    return 0;
}

int sq_calib_stats_init(sq_calib_stats *st, const sq_bert_config *cfg, sq_err *err)
{
    memset(st, 0, sizeof *st);
    st->cfg = *cfg;
    return init_arrays(st, err);
}

int sq_calib_stats_init_decoder(sq_calib_stats *st, const sq_decoder_config *dec, sq_err *err)
{
    memset(st, 0, sizeof *st);
    st->decoder = true;
    st->dec = *dec;
    return init_arrays(st, err);
}

static void free_digests(sq_file_digest *f, int n)
{
    for (int i = 0; i < n; i++)
        free(f[i].name);
    free(f);
}

void sq_calib_stats_free(sq_calib_stats *st)
{
    if (st->lin)
        for (int i = 0; i < sq_calib_stats_layers(st) * SQ_LIN_KINDS; i++)
            sq_act_stats_free(&st->lin[i]);
    free(st->lin);
    free(st->attn_pmin);
    free(st->attn_pmax);
    free(st->model_source);
    free_digests(st->model_files, st->n_model_files);
    free_digests(st->corpus_files, st->n_corpus_files);
    free(st->corpus_format);
    free(st->corpus_field);
    free(st->corpus_pair_field);
    free(st->qasper_parts);
    free(st->date);
    memset(st, 0, sizeof *st);
}

sq_act_stats *sq_calib_stats_at(const sq_calib_stats *st, int layer, sq_linear_kind k)
{
    return &st->lin[layer * SQ_LIN_KINDS + k];
}

static void on_linear_input(void *ctx, int layer, sq_linear_kind kind, const float *x, int rows,
                            int cols)
{
    sq_calib_stats *st = ctx;
    sq_err e;
    if (sq_act_stats_observe(sq_calib_stats_at(st, layer, kind), x, rows, cols, &e) != 0 &&
        !st->failed) {
        st->failed = true;
        st->first_err = e;
        sq_err_prefix(&st->first_err, "layer %d %s input", layer, sq_linear_kind_name(kind));
    }
}

static void on_attn_probs(void *ctx, int layer, float pmin, float pmax)
{
    sq_calib_stats *st = ctx;
    if (pmin < st->attn_pmin[layer])
        st->attn_pmin[layer] = pmin;
    if (pmax > st->attn_pmax[layer])
        st->attn_pmax[layer] = pmax;
}

sq_observer sq_calib_stats_observer(sq_calib_stats *st)
{
    sq_observer o = {.linear_input = on_linear_input, .attn_probs = on_attn_probs, .ctx = st};
    return o;
}

int sq_calib_stats_check(const sq_calib_stats *st, sq_err *err)
{
    if (st->failed)
        return sq_err_set(err, "%s", st->first_err.msg);
    return 0;
}

static int append_digests(sq_file_digest **dst, int *n, const sq_file_digest *src, int m)
{
    if (m == 0)
        return 0;
    sq_file_digest *a = realloc(*dst, (size_t)(*n + m) * sizeof *a);
    if (!a)
        return -1;
    *dst = a;
    for (int i = 0; i < m; i++) {
        a[*n + i] = src[i];
        a[*n + i].name = strdup(src[i].name);
        if (!a[*n + i].name)
            return -1;
    }
    *n += m;
    return 0;
}

int sq_calib_stats_merge(sq_calib_stats *dst, const sq_calib_stats *src, sq_err *err)
{
    if (dst->model_digest != src->model_digest)
        return sq_err_set(err,
                          "statistics are from different models (model digest %016" PRIx64
                          " vs %016" PRIx64 ")",
                          dst->model_digest, src->model_digest);
    if (dst->decoder != src->decoder || memcmp(&dst->cfg, &src->cfg, sizeof dst->cfg) != 0 ||
        memcmp(&dst->dec, &src->dec, sizeof dst->dec) != 0)
        return sq_err_set(err, "statistics are from models of different shapes");
    for (int i = 0; i < sq_calib_stats_layers(dst) * SQ_LIN_KINDS; i++)
        if (dst->lin[i].channels > 0 && sq_act_stats_merge(&dst->lin[i], &src->lin[i], err) != 0)
            return -1;
    for (int l = 0; l < sq_calib_stats_layers(dst); l++) {
        if (src->attn_pmin[l] < dst->attn_pmin[l])
            dst->attn_pmin[l] = src->attn_pmin[l];
        if (src->attn_pmax[l] > dst->attn_pmax[l])
            dst->attn_pmax[l] = src->attn_pmax[l];
    }
    if (append_digests(&dst->corpus_files, &dst->n_corpus_files, src->corpus_files,
                       src->n_corpus_files) != 0)
        return sq_err_set(err, "out of memory");
    dst->corpus_bundled = dst->corpus_bundled || src->corpus_bundled;
    dst->samples_requested += src->samples_requested;
    dst->n_texts += src->n_texts;
    dst->n_sequences += src->n_sequences;
    dst->n_tokens += src->n_tokens;
    dst->runs += src->runs;
    if (src->max_seq > dst->max_seq)
        dst->max_seq = src->max_seq;
    return 0;
}

char *sq_calib_date_now(void)
{
    time_t t = time(NULL);
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde) {
        char *end;
        long long v = strtoll(sde, &end, 10);
        if (!*end && v >= 0)
            t = (time_t)v;
    }
    struct tm tm;
    gmtime_r(&t, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return strdup(buf);
}

/* .sqc save/load: calib_stats <-> the shared container. Layout in calib/SQC.md. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_stats.h"
#include "config_yaml.h"
#include "container.h"
#include "squint_version.h"
#include "strbuf.h"
#include "yaml_tree.h"

/* ---------- save ---------- */

static void yaml_digests(sq_strbuf *sb, const char *indent, const sq_file_digest *f, int n)
{
    if (n == 0) {
        sq_sb_printf(sb, " []\n");
        return;
    }
    sq_sb_printf(sb, "\n");
    for (int i = 0; i < n; i++) {
        sq_sb_printf(sb, "%s- name: ", indent);
        sq_sb_yaml_str(sb, f[i].name);
        sq_sb_printf(sb, "\n%s  size: %" PRIu64 "\n%s  xxh64: \"%016" PRIx64 "\"\n", indent,
                     f[i].size, indent, f[i].xxh64);
    }
}

static void yaml_opt_str(sq_strbuf *sb, const char *key, const char *v)
{
    sq_sb_printf(sb, "  %s: ", key);
    if (v)
        sq_sb_yaml_str(sb, v);
    else
        sq_sb_printf(sb, "null");
    sq_sb_printf(sb, "\n");
}

static char *build_metadata(const sq_calib_stats *st)
{
    sq_strbuf sb = {0};
    const sq_bert_config *c = &st->cfg;
    sq_sb_printf(&sb, "format: squint-calibration\nformat_version: %d\ntool: \"squint %s\"\n",
                 SQ_SQC_FORMAT_VERSION, SQUINT_VERSION);
    sq_sb_printf(&sb, "date: \"%s\"\nruns: %d\n", st->date ? st->date : "", st->runs);
    sq_sb_printf(&sb, "model:\n  source: ");
    sq_sb_yaml_str(&sb, st->model_source ? st->model_source : "");
    sq_sb_printf(&sb, "\n  digest: \"%016" PRIx64 "\"\n", st->model_digest);
    if (st->decoder) { /* calib/SQC.md: a causal LM's shape */
        sq_sb_printf(&sb, "  config:\n    architecture: llama\n");
        sq_decoder_config_to_yaml(&sb, &st->dec, "    ");
    } else {
        sq_sb_printf(&sb, "  config:\n    architecture: bert\n");
        sq_bert_config_to_yaml(&sb, c, "    ");
    }
    sq_sb_printf(&sb, "  files:");
    yaml_digests(&sb, "    ", st->model_files, st->n_model_files);
    sq_sb_printf(&sb, "corpus:\n  bundled: %s\n", st->corpus_bundled ? "true" : "false");
    yaml_opt_str(&sb, "format", st->corpus_format);
    yaml_opt_str(&sb, "field", st->corpus_field);
    if (st->corpus_pair_field) /* absent for single-text corpora: their files stay as they were */
        yaml_opt_str(&sb, "pair_field", st->corpus_pair_field);
    yaml_opt_str(&sb, "qasper_parts", st->qasper_parts);
    sq_sb_printf(&sb, "  files:");
    yaml_digests(&sb, "    ", st->corpus_files, st->n_corpus_files);
    sq_sb_printf(&sb,
                 "sampling:\n  samples: %" PRIu64 "\n  seed: %" PRIu64 "\n  max_seq: %d\n"
                 "  windows: %s\n  texts: %" PRIu64 "\n  sequences: %" PRIu64
                 "\n  tokens: %" PRIu64 "\n",
                 st->samples_requested, st->seed, st->max_seq, st->windows ? "true" : "false",
                 st->n_texts, st->n_sequences, st->n_tokens);
    sq_sb_printf(&sb, "observer:\n  method: %s\n  percentile: %.17g\n  skip_zeros: %s\n",
                 sq_calib_method_name(st->scale.method), st->scale.percentile,
                 st->scale.skip_zeros ? "true" : "false");
    /* A readable summary; the tensors hold the authoritative numbers. */
    sq_sb_printf(&sb, "summary:\n");
    for (int l = 0; l < sq_calib_stats_layers(st); l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            const sq_act_stats *a = sq_calib_stats_at(st, l, (sq_linear_kind)k);
            if (a->channels == 0)
                continue; /* the layer has no such linear */
            float amax = 0;
            sq_err e;
            if (a->rows > 0 && sq_select_amax(&a->hist, &st->scale, &amax, &e) != 0)
                amax = 0;
            sq_sb_printf(&sb,
                         "  - {tensor: layer.%d.%s, channels: %d, rows: %" PRIu64
                         ", min: %.9g, max: %.9g, amax: %.9g}\n",
                         l, sq_linear_kind_name((sq_linear_kind)k), a->channels, a->rows,
                         a->rows ? (double)a->min : 0.0, a->rows ? (double)a->max : 0.0,
                         (double)amax);
        }
    if (sb.failed) {
        sq_sb_free(&sb);
        return NULL;
    }
    return sb.s;
}

typedef struct {
    uint64_t counts[5]; /* rows, nonfinite, hist total, hist zeros, hist exp (two's complement) */
    float range[3];     /* min, max, hist max_abs */
} tensor_info;

int sq_calib_stats_save(const sq_calib_stats *st, const char *path, sq_err *err)
{
    const int L = sq_calib_stats_layers(st);
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQC);
    char *meta = build_metadata(st);
    tensor_info *info = calloc((size_t)L * SQ_LIN_KINDS, sizeof *info);
    float *attn = malloc((size_t)L * 2 * sizeof *attn);
    int rc = -1;
    if (!w || !meta || !info || !attn) {
        sq_err_set(err, "%s: out of memory", path);
        goto out;
    }
    if (sq_container_writer_set_metadata(w, meta, strlen(meta), err) != 0)
        goto fail;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            const sq_act_stats *a = sq_calib_stats_at(st, l, (sq_linear_kind)k);
            if (a->channels == 0)
                continue;
            tensor_info *ti = &info[l * SQ_LIN_KINDS + k];
            ti->counts[0] = a->rows;
            ti->counts[1] = a->nonfinite;
            ti->counts[2] = a->hist.total;
            ti->counts[3] = a->hist.zeros;
            ti->counts[4] = (uint64_t)(int64_t)a->hist.exp;
            ti->range[0] = a->rows ? a->min : 0;
            ti->range[1] = a->rows ? a->max : 0;
            ti->range[2] = a->hist.max_abs;
            char name[96];
            const char *kn = sq_linear_kind_name((sq_linear_kind)k);
            uint64_t C = (uint64_t)a->channels, B = SQ_HIST_BINS, five = 5, three = 3;
#define ADD(suffix, dt, dims, ptr, size)                                                           \
    (snprintf(name, sizeof name, "layer.%d.%s.%s", l, kn, suffix),                                 \
     sq_container_writer_add(w, name, dt, 1, dims, ptr, size))
            ADD("max_abs", SQ_CDT_F32, &C, a->ch_max_abs, C * 4);
            ADD("sumsq", SQ_CDT_F64, &C, a->ch_sumsq, C * 8);
            ADD("hist", SQ_CDT_U64, &B, a->hist.count, B * 8);
            ADD("counts", SQ_CDT_U64, &five, ti->counts, 5 * 8);
            ADD("range", SQ_CDT_F32, &three, ti->range, 3 * 4);
#undef ADD
        }
    for (int l = 0; l < L; l++) {
        attn[2 * l] = st->attn_pmin[l];
        attn[2 * l + 1] = st->attn_pmax[l];
    }
    uint64_t adims[2] = {(uint64_t)L, 2};
    sq_container_writer_add(w, "attn_probs.range", SQ_CDT_F32, 2, adims, attn, (uint64_t)L * 8);
    if (sq_container_writer_write(w, path, err) != 0)
        goto out;
    rc = 0;
    goto out;
fail:
    sq_err_prefix(err, "%s", path);
out:
    sq_container_writer_free(w);
    free(meta);
    free(info);
    free(attn);
    return rc;
}

/* ---------- load ---------- */

static const void *tensor_exact(const sq_container *c, const char *name, unsigned dtype,
                                uint64_t d0, uint64_t d1, sq_err *err)
{
    const sq_container_tensor *t = sq_container_find(c, name);
    if (!t) {
        sq_err_set(err, "%s: missing tensor \"%s\"", c->path, name);
        return NULL;
    }
    int nd = d1 ? 2 : 1;
    if (t->dtype != dtype || t->ndim != nd || t->dims[0] != d0 || (nd == 2 && t->dims[1] != d1)) {
        sq_err_set(err, "%s: tensor \"%s\" has the wrong dtype or shape", c->path, name);
        return NULL;
    }
    return t->data;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int parse_digests(const yt_node *seq, sq_file_digest **out, int *n, sq_err *err)
{
    *out = NULL;
    *n = 0;
    if (!seq || yt_is_null(seq))
        return 0;
    if (yt_expect(seq, YT_SEQUENCE, "files", err) != 0)
        return -1;
    size_t m = yt_len(seq);
    if (m > 100000)
        return yt_error(seq, err, "too many files");
    *out = calloc(m ? m : 1, sizeof **out);
    if (!*out)
        return sq_err_set(err, "out of memory");
    for (size_t i = 0; i < m; i++) {
        const yt_node *f = yt_at(seq, i);
        const char *name, *hex;
        int64_t size;
        if (yt_expect(f, YT_MAPPING, "file entry", err) != 0 ||
            yt_get_string(f, "name", &name, err) != 0 || yt_get_int64(f, "size", 0, INT64_MAX, &size, err) != 0 ||
            yt_get_string(f, "xxh64", &hex, err) != 0)
            return yt_error(f, err, "file entry needs name, size and xxh64");
        char *end;
        (*out)[i].xxh64 = strtoull(hex, &end, 16);
        if (strlen(hex) != 16 || *end)
            return yt_error(f, err, "xxh64 must be 16 hex digits");
        (*out)[i].size = (uint64_t)size;
        (*out)[i].name = strdup(name);
        (*n)++;
    }
    return 0;
}

static int parse_metadata(const sq_container *c, sq_calib_stats *st, sq_bert_config *cfg,
                          bool *decoder, sq_decoder_config *dec, sq_err *err)
{
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    const yt_node *r = yt_root(doc), *model, *conf, *corpus, *samp, *obs;
    const char *s;
    int64_t v;
    int rc = -1;
    memset(cfg, 0, sizeof *cfg);
    if (yt_expect(r, YT_MAPPING, "metadata", err) != 0)
        goto out;
    if (yt_get_string(r, "format", &s, err) != 0 || strcmp(s, "squint-calibration") != 0) {
        sq_err_set(err, "%s: metadata is not squint calibration statistics", c->path);
        goto out;
    }
    if (yt_need_int64(r, "format_version", 1, 1000, &v, err) != 0)
        goto out;
    if (v != SQ_SQC_FORMAT_VERSION) {
        sq_err_set(err, "%s: statistics format version %lld is not supported (this squint reads %d)",
                   c->path, (long long)v, SQ_SQC_FORMAT_VERSION);
        goto out;
    }
    if (!(model = yt_require(r, "model", err)) || !(conf = yt_require(model, "config", err)) ||
        !(corpus = yt_require(r, "corpus", err)) || !(samp = yt_require(r, "sampling", err)) ||
        !(obs = yt_require(r, "observer", err)))
        goto out;
    const yt_node *arch = yt_get(conf, "architecture");
    *decoder = arch && yt_scalar(arch) && strcmp(yt_scalar(arch), "llama") == 0;
    if (*decoder ? sq_decoder_config_from_yaml(conf, dec, err) != 0
                 : sq_bert_config_from_yaml(conf, cfg, err) != 0)
        goto out;
    if (yt_need_string(model, "digest", &s, err) != 0)
        goto out;
    char *end;
    st->model_digest = strtoull(s, &end, 16);
    if (strlen(s) != 16 || *end) {
        yt_error(yt_get(model, "digest"), err, "digest must be 16 hex digits");
        goto out;
    }
    if (yt_get_string(model, "source", &s, err) == 0)
        st->model_source = strdup(s);
    if (parse_digests(yt_get(model, "files"), &st->model_files, &st->n_model_files, err) != 0 ||
        parse_digests(yt_get(corpus, "files"), &st->corpus_files, &st->n_corpus_files, err) != 0)
        goto out;
    if (yt_get_bool(corpus, "bundled", &st->corpus_bundled, err) < 0)
        goto out;
    const yt_node *n;
    if ((n = yt_get(corpus, "format")) && !yt_is_null(n))
        st->corpus_format = dup_or_null(yt_scalar(n));
    if ((n = yt_get(corpus, "field")) && !yt_is_null(n))
        st->corpus_field = dup_or_null(yt_scalar(n));
    if ((n = yt_get(corpus, "pair_field")) && !yt_is_null(n))
        st->corpus_pair_field = dup_or_null(yt_scalar(n));
    if ((n = yt_get(corpus, "qasper_parts")) && !yt_is_null(n))
        st->qasper_parts = dup_or_null(yt_scalar(n));
    int64_t x;
#define SI(field, key, hi)                                                                         \
    if (yt_get_int64(samp, key, 0, hi, &x, err) < 0)                                               \
        goto out;                                                                                  \
    st->field = (__typeof__(st->field))x;
    SI(samples_requested, "samples", INT64_MAX)
    SI(seed, "seed", INT64_MAX)
    SI(max_seq, "max_seq", SQ_MAX_POSITIONS)
    SI(n_texts, "texts", INT64_MAX)
    SI(n_sequences, "sequences", INT64_MAX)
    SI(n_tokens, "tokens", INT64_MAX)
#undef SI
    if (yt_get_bool(samp, "windows", &st->windows, err) < 0)
        goto out;
    if (yt_get_int64(r, "runs", 1, INT32_MAX, &x, err) < 0)
        goto out;
    st->runs = (int)x;
    if (yt_get_string(r, "date", &s, err) == 0)
        st->date = strdup(s);
    if (yt_get_string(obs, "method", &s, err) != 0 ||
        sq_calib_method_parse(s, &st->scale.method, err) != 0) {
        sq_err_prefix(err, "%s", c->path);
        goto out;
    }
    double pct = st->scale.percentile;
    if (yt_get_double(obs, "percentile", 0, 100, &pct, err) < 0)
        goto out;
    sq_scale_params_default(&st->scale, st->scale.method);
    st->scale.percentile = pct;
    bool sz = false;
    if (yt_get_bool(obs, "skip_zeros", &sz, err) < 0)
        goto out;
    st->scale.skip_zeros = sz;
    rc = 0;
out:
    yt_free(doc);
    return rc;
}

/* Copy one tensor's statistics out of the file, validating the histogram. */
static int load_act(const sq_container *c, int l, int k, sq_act_stats *a, sq_err *err)
{
    char name[96];
    const char *kn = sq_linear_kind_name((sq_linear_kind)k);
    uint64_t C = (uint64_t)a->channels;
#define GET(var, suffix, dt, d0)                                                                   \
    snprintf(name, sizeof name, "layer.%d.%s.%s", l, kn, suffix);                                  \
    const void *var = tensor_exact(c, name, dt, d0, 0, err);                                       \
    if (!var)                                                                                      \
        return -1;
    GET(mx, "max_abs", SQ_CDT_F32, C)
    GET(ss, "sumsq", SQ_CDT_F64, C)
    GET(hi, "hist", SQ_CDT_U64, SQ_HIST_BINS)
    GET(cn, "counts", SQ_CDT_U64, 5)
    GET(rg, "range", SQ_CDT_F32, 3)
#undef GET
    memcpy(a->ch_max_abs, mx, C * 4);
    memcpy(a->ch_sumsq, ss, C * 8);
    memcpy(a->hist.count, hi, SQ_HIST_BINS * 8);
    const uint64_t *counts = cn;
    const float *range = rg;
    a->rows = counts[0];
    a->nonfinite = counts[1];
    a->hist.total = counts[2];
    a->hist.zeros = counts[3];
    int64_t exp = (int64_t)counts[4];
    a->min = range[0];
    a->max = range[1];
    a->hist.max_abs = range[2];
    uint64_t sum = 0;
    for (int i = 0; i < SQ_HIST_BINS; i++) {
        if (a->hist.count[i] > UINT64_MAX - sum)
            return sq_err_set(err, "%s: layer.%d.%s histogram counts overflow", c->path, l, kn);
        sum += a->hist.count[i];
    }
    bool bad = sum != a->hist.total || a->hist.zeros > a->hist.total ||
               exp < SQ_HIST_MIN_EXP || exp > 128 || !(a->hist.max_abs >= 0) ||
               (a->hist.max_abs > 0 && (double)a->hist.max_abs >= ldexp(1.0, (int)exp)) ||
               !(a->min <= a->max || a->rows == 0);
    for (uint64_t i = 0; i < C && !bad; i++)
        bad = !(a->ch_max_abs[i] >= 0 && a->ch_max_abs[i] <= a->hist.max_abs) ||
              !(a->ch_sumsq[i] >= 0 && isfinite(a->ch_sumsq[i])); /* inf: int4 importance */
    if (bad)
        return sq_err_set(err, "%s: statistics of layer.%d.%s are inconsistent (corrupt file?)",
                          c->path, l, kn);
    a->hist.exp = (int)exp;
    return 0;
}

int sq_calib_stats_load(const char *path, sq_calib_stats *st, sq_err *err)
{
    memset(st, 0, sizeof *st);
    sq_container c;
    if (sq_container_open(path, SQ_KIND_SQC, &c, err) != 0)
        return -1;
    sq_calib_stats tmp = {0};
    sq_bert_config cfg;
    sq_decoder_config dec = {0};
    bool decoder = false;
    int rc = -1;
    if (sq_container_verify(&c, err) != 0)
        goto out;
    if (parse_metadata(&c, &tmp, &cfg, &decoder, &dec, err) != 0)
        goto out;
    if ((decoder ? sq_calib_stats_init_decoder(st, &dec, err) : sq_calib_stats_init(st, &cfg, err)) != 0)
        goto out;
    /* move provenance fields from tmp */
    sq_act_stats *lin = st->lin;
    float *pmin = st->attn_pmin, *pmax = st->attn_pmax;
    *st = tmp;
    memset(&tmp, 0, sizeof tmp);
    st->cfg = cfg;
    st->decoder = decoder;
    st->dec = dec;
    st->lin = lin;
    st->attn_pmin = pmin;
    st->attn_pmax = pmax;
    const int L = sq_calib_stats_layers(st);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++)
            if (st->lin[l * SQ_LIN_KINDS + k].channels > 0 &&
                load_act(&c, l, k, &st->lin[l * SQ_LIN_KINDS + k], err) != 0)
                goto out;
    const float *attn = tensor_exact(&c, "attn_probs.range", SQ_CDT_F32, (uint64_t)L, 2, err);
    if (!attn)
        goto out;
    for (int l = 0; l < L; l++) {
        st->attn_pmin[l] = attn[2 * l];
        st->attn_pmax[l] = attn[2 * l + 1];
    }
    rc = 0;
out:
    sq_calib_stats_free(&tmp);
    if (rc != 0)
        sq_calib_stats_free(st);
    sq_container_close(&c);
    return rc;
}

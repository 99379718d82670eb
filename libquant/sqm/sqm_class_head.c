/* A .sqm's classification head: its metadata block and tensors
 * (formats/SQM.md section 9). */
#include "sqm_class_head.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqm_model.h"
#include "sqm_schema.h"
#include "utf8.h"
#include "yaml_tree.h"

bool sq_class_label_valid(const char *label, size_t n)
{
    return n >= 1 && n <= SQ_CLASS_HEAD_MAX_LABEL_BYTES && memchr(label, '\0', n) == NULL &&
           sq_utf8_valid_prefix(label, n) == n;
}

void sq_sqm_class_head_free(sq_sqm_class_head *h)
{
    if (h->labels)
        for (int c = 0; c < h->classes; c++)
            free(h->labels[c]);
    free(h->labels);
    free(h->source);
    memset(h, 0, sizeof *h);
}

static int parse_hex64(const char *s, uint64_t *out)
{
    if (strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
        return -1;
    *out = strtoull(s, NULL, 16);
    return 0;
}

/* The metadata block: kind, labels, normalized, provenance. */
static int parse_meta(const sq_container *c, const yt_node *m, sq_sqm_class_head *h, sq_err *err)
{
    const char *s;
    if (yt_expect(m, YT_MAPPING, "class_head", err) != 0)
        return -1;
    if (yt_need_string(m, "kind", &s, err) != 0)
        return -1;
    if (strcmp(s, "softmax-linear") != 0)
        return sq_err_set(err, "%s: metadata class_head.kind is '%s', not softmax-linear", c->path,
                          s);
    const yt_node *labels = yt_get(m, "labels");
    if (!labels || yt_kind_of(labels) != YT_SEQUENCE || yt_len(labels) < SQ_CLASS_HEAD_MIN_LABELS ||
        yt_len(labels) > SQ_CLASS_HEAD_MAX_LABELS)
        return sq_err_set(err, "%s: metadata class_head.labels must be a list of %d to %d strings",
                          c->path, SQ_CLASS_HEAD_MIN_LABELS, SQ_CLASS_HEAD_MAX_LABELS);
    h->classes = (int)yt_len(labels);
    if (!(h->labels = calloc((size_t)h->classes, sizeof *h->labels)))
        return sq_err_set(err, "out of memory");
    for (int k = 0; k < h->classes; k++) {
        const char *l = yt_scalar(yt_at(labels, (size_t)k));
        if (!l || !sq_class_label_valid(l, strlen(l)) || yt_is_plain(yt_at(labels, (size_t)k)))
            return sq_err_set(err, "%s: metadata class_head.labels[%d] must be a quoted string of "
                                   "1 to %d bytes of UTF-8",
                              c->path, k, SQ_CLASS_HEAD_MAX_LABEL_BYTES);
        for (int j = 0; j < k; j++)
            if (strcmp(h->labels[j], l) == 0)
                return sq_err_set(err, "%s: metadata class_head.labels: '%s' appears twice",
                                  c->path, l);
        if (!(h->labels[k] = strdup(l)))
            return sq_err_set(err, "out of memory");
    }
    if (yt_need_bool(m, "normalized", &h->normalized, err) != 0)
        return -1;
    if (yt_get(m, "source")) {
        if (yt_get_string(m, "source", &s, err) != 0)
            return -1;
        if (!(h->source = strdup(s)))
            return sq_err_set(err, "out of memory");
    }
    if (yt_get(m, "xxh64")) {
        if (yt_get_string(m, "xxh64", &s, err) != 0 || parse_hex64(s, &h->xxh64) != 0)
            return sq_err_set(err, "%s: metadata class_head.xxh64 must be 16 lowercase hex digits",
                              c->path);
        h->has_xxh64 = true;
    }
    return 0;
}

static int finite_or_fail(const sq_container *c, const char *name, const double *v, size_t n,
                          sq_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return sq_err_set_at(err, name, "%s: tensor \"%s\": entry %zu is %g, not finite",
                                 c->path, name, i, v[i]);
    return 0;
}

int sq_sqm_class_head_read(const sq_container *c, sq_sqm_class_head *h, sq_err *err)
{
    memset(h, 0, sizeof *h);
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    /* The loader's metadata parse gives the schema context (C, H), the
     * schema the tensors' dtypes and shapes. */
    if (sq_sqm_read_meta(c, &ctx, &info, err) != 0)
        return -1;
    if (sq_sqm_check_row(c, &ctx, SQ_ROW_CLASS_HEAD_WEIGHT, err) != 0 ||
        sq_sqm_check_row(c, &ctx, SQ_ROW_CLASS_HEAD_BIAS, err) != 0)
        return -1;
    if (ctx.class_head_classes == 0)
        return 0;
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    int rc = parse_meta(c, yt_get(yt_root(doc), "class_head"), h, err);
    yt_free(doc);
    if (rc == 0) {
        const sq_container_tensor *w = sq_container_find(c, "class_head.weight"),
                                  *b = sq_container_find(c, "class_head.bias");
        h->dim = ctx.cfg.hidden;
        h->W = w->data;
        h->b = b->data;
        rc = finite_or_fail(c, w->name, h->W, (size_t)h->classes * (size_t)h->dim, err) != 0 ||
                     finite_or_fail(c, b->name, h->b, (size_t)h->classes, err) != 0
                 ? -1
                 : 0;
    }
    if (rc != 0) {
        sq_sqm_class_head_free(h);
        return -1;
    }
    return 1;
}

bool sq_sqm_has_class_head(const sq_container *c)
{
    sq_err err;
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, &err);
    bool has = doc && yt_get(yt_root(doc), "class_head") != NULL;
    yt_free(doc);
    return has;
}

void sq_sqm_class_head_yaml(sq_strbuf *sb, const sq_sqm_class_head *h)
{
    sq_sb_printf(sb, "class_head:\n  kind: softmax-linear\n  labels:\n");
    for (int k = 0; k < h->classes; k++) {
        sq_sb_printf(sb, "    - ");
        sq_sb_yaml_str(sb, h->labels[k]);
        sq_sb_printf(sb, "\n");
    }
    sq_sb_printf(sb, "  normalized: %s\n", h->normalized ? "true" : "false");
    if (h->source) {
        sq_sb_printf(sb, "  source: ");
        sq_sb_yaml_str(sb, h->source);
        sq_sb_printf(sb, "\n");
    }
    if (h->has_xxh64)
        sq_sb_printf(sb, "  xxh64: \"%016" PRIx64 "\"\n", h->xxh64);
}

/* The checks of `squint verify` (sqm_verify.h): checksums, then for a model
 * the schema and values every loader proves. */
#include "sqm_verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "container.h"
#include "embed_model.h"
#include "yaml_tree.h"

static int report_set(sq_verify_report *r, int status, const char *part, const char *tensor)
{
    r->status = status;
    r->part = part;
    snprintf(r->tensor, sizeof r->tensor, "%s", tensor ? tensor : "");
    return status;
}

static int damaged(sq_verify_report *r, const char *part, const char *tensor, const char *fmt,
                   ...) SQ_PRINTF(4, 5);
static int damaged(sq_verify_report *r, const char *part, const char *tensor, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err.msg, sizeof r->err.msg, fmt, ap);
    va_end(ap);
    return report_set(r, SQ_EXIT_FAIL, part, tensor);
}

/* ---- model consistency (formats/SQM.md) ---- */

static bool shape_is(const sq_container_tensor *t, int ndim, uint64_t d0, uint64_t d1)
{
    return t->ndim == ndim && (ndim < 1 || t->dims[0] == d0) && (ndim < 2 || t->dims[1] == d1);
}

static const char *qtype_of_cdtype(unsigned code)
{
    int qt = code == SQ_CDT_F32 ? SQ_QT_F32 : sq_qtype_from_cdtype(code);
    return qt >= 0 ? sq_qtype_get((sq_qtype)qt)->name : NULL;
}

/* The metadata's `linears` list names existing weights of its type and shape. */
static int check_linears_list(const sq_container *c, const yt_node *list, sq_verify_report *r)
{
    if (!list)
        return 0;
    if (yt_kind_of(list) != YT_SEQUENCE)
        return damaged(r, "metadata", NULL, "metadata: 'linears' is not a list");
    for (size_t i = 0; i < yt_len(list); i++) {
        const yt_node *e = yt_at(list, i);
        const char *name = NULL, *type = NULL;
        sq_err err;
        if (yt_get_string(e, "name", &name, &err) != 0 || !name)
            return damaged(r, "metadata", NULL, "metadata: linears[%zu] has no name", i);
        char wname[SQ_CONTAINER_MAX_NAME + 16];
        snprintf(wname, sizeof wname, "%s.weight", name);
        const sq_container_tensor *w = sq_container_find(c, wname);
        if (!w)
            return damaged(r, "tensor", wname, "metadata lists linear %s but tensor \"%s\" is "
                           "missing", name, wname);
        const char *have = qtype_of_cdtype(w->dtype);
        if (yt_get_string(e, "type", &type, &err) == 0 && have && strcmp(type, have) != 0)
            return damaged(r, "metadata", NULL, "metadata: linear %s is %s but \"%s\" is %s",
                           name, type, wname, sq_cdtype_name(w->dtype));
        const yt_node *shape = yt_get(e, "shape");
        int64_t d[2];
        if (shape && yt_len(shape) == 2 &&
            yt_as_int64(yt_at(shape, 0), "N", 0, INT64_MAX, &d[0], &err) == 0 &&
            yt_as_int64(yt_at(shape, 1), "K", 0, INT64_MAX, &d[1], &err) == 0 &&
            !shape_is(w, 2, (uint64_t)d[0], (uint64_t)d[1]))
            return damaged(r, "metadata", NULL,
                           "metadata: linear %s has shape [%lld, %lld] but \"%s\" differs", name,
                           (long long)d[0], (long long)d[1], wname);
    }
    return 0;
}

static int check_model(const sq_container *c, sq_verify_report *r)
{
    sq_err err;
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, "metadata", &err);
    if (!doc)
        return damaged(r, "metadata", NULL, "metadata does not parse: %s", err.msg);
    const yt_node *root = yt_root(doc);
    const char *format = NULL;
    int rc = 0;
    if (yt_kind_of(root) != YT_MAPPING || yt_get_string(root, "format", &format, &err) != 0 ||
        !format || strcmp(format, "squint-model") != 0)
        rc = damaged(r, "metadata", NULL, "metadata: 'format' is not squint-model");
    /* What `embed` itself checks when it loads the file (one set of checks
     * for both): the tensors against the schema (libquant/sqm/sqm_schema.c:
     * presence, dtypes, shapes), finite values, panels consistent with their
     * wsum and scales, the tokenizer. */
    if (rc == 0 && sq_sqm_check_runnable(c, &err) != 0) {
        if (err.subject[0])
            rc = damaged(r, "tensor", err.subject, "%s", err.msg);
        else
            rc = damaged(r, "model", NULL, "%s", err.msg);
    }
    /* Then the provenance the loader does not read: the `linears` list. */
    if (rc == 0)
        rc = check_linears_list(c, yt_get(root, "linears"), r);
    yt_free(doc);
    return rc;
}

/* ---- integrity ---- */

int sq_verify_container(const sq_container *c, sq_verify_report *r)
{
    memset(r, 0, sizeof *r);
    r->part = "";
    if (sq_container_verify(c, &r->err) != 0) {
        /* Name the tensor ourselves rather than parse the message. */
        for (size_t i = 0; i < c->n_tensors; i++) {
            const sq_container_tensor *t = &c->tensors[i];
            if (XXH64(t->data, (size_t)t->size, 0) != t->xxh64)
                return report_set(r, SQ_EXIT_FAIL, "tensor", t->name);
        }
        /* The tensors are intact: the rest of the data section or the trailer. */
        return report_set(r, SQ_EXIT_FAIL, strstr(r->err.msg, "padding") ? "padding" : "trailer",
                          NULL);
    }
    if (c->kind == SQ_KIND_SQM && check_model(c, r) != 0)
        return r->status;
    return report_set(r, SQ_EXIT_OK, "", NULL);
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Why a plain file failed to open, from its raw bytes (SPEC.md sections 3
 * and 8): a file that carries the magic or the trailer is a damaged squint
 * file (exit 1, naming the first part whose checksum or size fails); anything
 * else is not one (exit 2). The open error stays the message. */
static void diagnose_plain(const uint8_t *p, size_t n, sq_verify_report *r)
{
    const size_t H = SQ_CONTAINER_HEADER_SIZE, T = SQ_CONTAINER_TRAILER_SIZE;
    bool magic = n >= 4 && memcmp(p, SQ_CONTAINER_MAGIC, 4) == 0;
    bool trailer = n >= H + T && memcmp(p + n - T, SQ_CONTAINER_TRAILER_MAGIC, 8) == 0;
    if (!magic && !trailer)
        return (void)report_set(r, SQ_EXIT_BADINPUT, "", NULL);
    if (n < H + T)
        return (void)report_set(r, SQ_EXIT_FAIL, "file size", NULL);
    if (rd64(p + 120) != XXH64(p, 120, 0))
        return (void)report_set(r, SQ_EXIT_FAIL, "header", NULL);
    if ((p[8] | p[9] << 8) != SQ_CONTAINER_VERSION_MAJOR) /* another major version */
        return (void)report_set(r, SQ_EXIT_BADINPUT, "", NULL);
    if (rd64(p + 64) != n)
        return (void)report_set(r, SQ_EXIT_FAIL, "file size", NULL);
    if (!trailer)
        return (void)report_set(r, SQ_EXIT_FAIL, "trailer", NULL);
    uint64_t mo = rd64(p + 16), ms = rd64(p + 24), d_o = rd64(p + 32), ds = rd64(p + 40);
    uint64_t xo = rd64(p + 48), body = n - T;
    if (mo > body || ms > body - mo || d_o > body || ds > body - d_o || xo > body ||
        d_o + ds > xo)
        return (void)report_set(r, SQ_EXIT_BADINPUT, "", NULL); /* intact but invalid */
    if (rd64(p + 72) != XXH64(p + mo, ms, 0))
        return (void)report_set(r, SQ_EXIT_FAIL, "metadata", NULL);
    if (rd64(p + 80) != XXH64(p + d_o, ds, 0))
        return (void)report_set(r, SQ_EXIT_FAIL, "directory", NULL);
    for (uint64_t i = d_o + ds; i < xo; i++)
        if (p[i])
            return (void)report_set(r, SQ_EXIT_FAIL, "padding", NULL);
    report_set(r, SQ_EXIT_BADINPUT, "", NULL);
}

static void diagnose_open_failure(const char *path, sq_verify_report *r)
{
    sq_mapped_file mf;
    sq_err err;
    if (sq_map_file(path, &mf, &err) != 0)
        return (void)report_set(r, SQ_EXIT_BADINPUT, "", NULL);
    static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    if (mf.size >= 4 && memcmp(mf.data, zstd_magic, 4) == 0)
        /* A stream that fails to decode (its content checksum, a cut) is a
         * damaged file; one that decodes to something else is not ours. */
        report_set(r, strstr(r->err.msg, "zstd") ? SQ_EXIT_FAIL : SQ_EXIT_BADINPUT,
                   strstr(r->err.msg, "zstd") ? "zstd stream" : "", NULL);
    else
        diagnose_plain(mf.data, mf.size, r);
    sq_unmap_file(&mf);
}

int sq_verify_file(const char *path, sq_verify_report *r)
{
    sq_container c;
    memset(r, 0, sizeof *r);
    if (sq_container_open(path, 0, &c, &r->err) != 0) {
        diagnose_open_failure(path, r);
        return r->status;
    }
    sq_verify_container(&c, r);
    sq_container_close(&c);
    return r->status;
}

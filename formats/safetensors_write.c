#include "safetensors_write.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors_write.c assumes a little-endian host (tensor bytes are written as given)"
#endif

static int cmp_by_name(const void *a, const void *b)
{
    const sq_stw_tensor *ta = *(const sq_stw_tensor *const *)a;
    const sq_stw_tensor *tb = *(const sq_stw_tensor *const *)b;
    return strcmp(ta->name, tb->name);
}

/* numel * dtype size with overflow checks; -1 on a bad shape. */
static int tensor_nbytes(const sq_stw_tensor *t, uint64_t *out)
{
    uint64_t n = (uint64_t)sq_st_dtype_size(t->dtype);
    if (n == 0 || t->ndim < 0 || t->ndim > SQ_ST_MAX_DIMS)
        return -1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return -1;
        uint64_t s = (uint64_t)t->shape[d];
        if (s != 0 && n > UINT64_MAX / 2 / s)
            return -1;
        n *= s;
    }
    *out = n;
    return 0;
}

/* Builds the header JSON: "__metadata__" first (when given), then the
 * tensors in name order with consecutive data offsets. */
static char *build_header(const char *path, const sq_stw_tensor *const *sorted, int n,
                          const uint64_t *nbytes, const char *const *metadata, sq_err *err)
{
    json_t *root = json_object();
    if (!root) {
        sq_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    if (metadata && metadata[0]) {
        json_t *meta = json_object();
        if (!meta || json_object_set_new(root, "__metadata__", meta) != 0)
            goto oom;
        for (int i = 0; metadata[i]; i += 2) {
            if (!metadata[i + 1]) {
                sq_err_set(err, "%s: metadata key \"%s\" has no value", path, metadata[i]);
                goto fail;
            }
            json_t *v = json_string(metadata[i + 1]);
            if (!v || json_object_set_new(meta, metadata[i], v) != 0) {
                sq_err_set(err, "%s: metadata \"%s\" is not valid UTF-8", path, metadata[i]);
                goto fail;
            }
        }
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const sq_stw_tensor *t = sorted[i];
        json_t *o = json_object(), *shape = json_array(), *offs = json_array();
        if (!o || !shape || !offs) {
            json_decref(o);
            json_decref(shape);
            json_decref(offs);
            goto oom;
        }
        json_object_set_new(o, "dtype", json_string(sq_st_dtype_name(t->dtype)));
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        json_object_set_new(o, "shape", shape);
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + nbytes[i])));
        json_object_set_new(o, "data_offsets", offs);
        off += nbytes[i];
        /* json_object_set_new fails on invalid UTF-8 keys (and frees o). */
        if (json_object_set_new(root, t->name, o) != 0) {
            sq_err_set(err, "%s: tensor name \"%s\" is not valid UTF-8", path, t->name);
            goto fail;
        }
    }
    char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!s)
        sq_err_set(err, "%s: cannot serialize the header", path);
    return s;
oom:
    sq_err_set(err, "%s: out of memory", path);
fail:
    json_decref(root);
    return NULL;
}

static int write_all(sq_atomic_file *af, const void *p, size_t n, sq_err *err)
{
    if (n && fwrite(p, 1, n, af->fp) != n)
        return sq_err_set(err, "%s: write failed: %s", af->path, strerror(errno));
    return 0;
}

int sq_safetensors_write(const char *path, const sq_stw_tensor *tensors, int n,
                         const char *const *metadata, sq_err *err)
{
    if (n < 0 || n > SQ_ST_MAX_TENSORS)
        return sq_err_set(err, "%s: bad tensor count %d (max %d)", path, n, SQ_ST_MAX_TENSORS);
    if (n > 0 && !tensors)
        return sq_err_set(err, "%s: no tensor array given", path);

    int rc = -1;
    char *header = NULL, *buf = NULL;
    const sq_stw_tensor **sorted = malloc(sizeof *sorted * (size_t)(n ? n : 1));
    uint64_t *nbytes = malloc(sizeof *nbytes * (size_t)(n ? n : 1));
    sq_atomic_file af = {0};
    if (!sorted || !nbytes) {
        sq_err_set(err, "%s: out of memory", path);
        goto out;
    }

    /* Validate everything before creating any file. */
    uint64_t max_bytes = 0;
    for (int i = 0; i < n; i++) {
        const sq_stw_tensor *t = &tensors[i];
        sorted[i] = t;
        if (!t->name || !t->name[0]) {
            sq_err_set(err, "%s: tensor %d has an empty name", path, i);
            goto out;
        }
        if (strlen(t->name) > SQ_ST_MAX_NAME || strcmp(t->name, "__metadata__") == 0) {
            sq_err_set(err, "%s: tensor name \"%.64s\" is not allowed", path, t->name);
            goto out;
        }
        if (tensor_nbytes(t, &nbytes[i]) != 0) {
            sq_err_set(err, "%s: tensor \"%s\": bad dtype or shape", path, t->name);
            goto out;
        }
        if (!t->data && !t->fill && nbytes[i] > 0) {
            sq_err_set(err, "%s: tensor \"%s\" has neither data nor a fill callback", path,
                       t->name);
            goto out;
        }
        if (!t->data && nbytes[i] > max_bytes)
            max_bytes = nbytes[i];
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
            sq_err_set(err, "%s: duplicate tensor name \"%s\"", path, sorted[i]->name);
            goto out;
        }
    /* nbytes[] was filled in the caller's order; recompute it in sorted order. */
    for (int i = 0; i < n; i++)
        tensor_nbytes(sorted[i], &nbytes[i]);
    if (max_bytes > SIZE_MAX / 2) {
        sq_err_set(err, "%s: tensor too large for this machine", path);
        goto out;
    }

    header = build_header(path, sorted, n, nbytes, metadata, err);
    if (!header)
        goto out;
    size_t hlen = strlen(header);
    size_t padded = (hlen + 7) & ~(size_t)7; /* data must start 8-byte aligned */
    if (padded > SQ_ST_MAX_HEADER) {
        sq_err_set(err, "%s: header too large (%zu bytes)", path, padded);
        goto out;
    }
    if (max_bytes > 0 && !(buf = malloc((size_t)max_bytes))) {
        sq_err_set(err, "%s: out of memory (%llu bytes for one tensor)", path,
                   (unsigned long long)max_bytes);
        goto out;
    }

    if (sq_atomic_open(&af, path, err) != 0)
        goto out;
    uint8_t len8[8];
    for (int b = 0; b < 8; b++)
        len8[b] = (uint8_t)((uint64_t)padded >> (8 * b));
    if (write_all(&af, len8, 8, err) || write_all(&af, header, hlen, err) ||
        write_all(&af, "       ", padded - hlen, err))
        goto abort;
    for (int i = 0; i < n; i++) {
        const sq_stw_tensor *t = sorted[i];
        if (nbytes[i] == 0)
            continue;
        const void *src = t->data;
        if (!src) {
            if (t->fill(t->fill_ctx, t, buf, (size_t)nbytes[i], err) != 0) {
                sq_err_prefix(err, "%s: tensor \"%s\"", path, t->name);
                goto abort;
            }
            src = buf;
        }
        if (write_all(&af, src, (size_t)nbytes[i], err))
            goto abort;
    }
    rc = sq_atomic_commit(&af, err);
    goto out;
abort:
    sq_atomic_abort(&af);
out:
    free(buf);
    free(header);
    free(nbytes);
    free(sorted);
    return rc;
}

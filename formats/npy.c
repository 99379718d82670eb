#include "npy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

int sq_npy_write_header_f32(FILE *fp, const int64_t *shape, int ndim)
{
    return sq_npy_write_header(fp, "<f4", shape, ndim);
}

int sq_npy_write_header(FILE *fp, const char *descr, const int64_t *shape, int ndim)
{
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                      (ndim == 1 || i + 1 < ndim) ? ", " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    if (n <= 0 || (size_t)n >= sizeof dict - 70)
        return -1;
    /* magic(6) + version(2) + len(2) + dict + pad + '\n' must be a multiple of 64. */
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    unsigned short hlen = (unsigned short)(n + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    if (fwrite(pre, 1, 10, fp) != 10 || fwrite(dict, 1, (size_t)n, fp) != (size_t)n)
        return -1;
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', fp) == EOF)
            return -1;
    return fputc('\n', fp) == EOF ? -1 : 0;
}

/* ---- reader ---- */

#define NPY_MAX_FILE ((size_t)8 << 30) /* 8 GiB: 5.6M x 384 embeddings */

typedef struct npy_cursor {
    const char *p, *end;
} npy_cursor;

static void skip_ws(npy_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int eat(npy_cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted string ('...' or "...") without escapes, into out. */
static int quoted(npy_cursor *c, char *out, size_t n)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return -1;
    char q = *c->p++;
    size_t i = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || i + 1 >= n)
            return -1;
        out[i++] = *c->p++;
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    out[i] = 0;
    return 0;
}

static int integer(npy_cursor *c, int64_t *v)
{
    skip_ws(c);
    int64_t x = 0;
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (x > (INT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (*c->p++ - '0');
    }
    if (c->p == start)
        return -1;
    if (c->p < c->end && *c->p == 'L') /* Python 2 longs */
        c->p++;
    *v = x;
    return 0;
}

int sq_npy_parse_f32_2d(const unsigned char *buf, size_t len, const char *name, float **data,
                        int64_t *rows, int64_t *cols, sq_err *err)
{
    *data = NULL;
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return sq_err_set(err, "%s: not a .npy file (no \\x93NUMPY magic)", name);
    unsigned major = buf[6];
    size_t hl, off;
    if (major == 1) {
        hl = (size_t)buf[8] | (size_t)buf[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return sq_err_set(err, "%s: truncated .npy header", name);
        hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        off = 12;
    } else {
        return sq_err_set(err, "%s: .npy format version %u.%u is not supported", name, major,
                          buf[7]);
    }
    if (hl > len - off)
        return sq_err_set(err, "%s: .npy header of %zu bytes runs past the end of the file",
                          name, hl);
    npy_cursor c = {(const char *)buf + off, (const char *)buf + off + hl};
    /* The dictionary, then only spaces and the final newline. */
    char key[32], descr[32] = "";
    int seen_descr = 0, seen_order = 0, seen_shape = 0, fortran = 0, ndim = 0;
    int64_t dims[2] = {0, 0};
    if (!eat(&c, '{'))
        return sq_err_set(err, "%s: .npy header is not a dictionary", name);
    while (!eat(&c, '}')) {
        if (quoted(&c, key, sizeof key) != 0 || !eat(&c, ':'))
            return sq_err_set(err, "%s: malformed .npy header dictionary", name);
        if (!strcmp(key, "descr") && !seen_descr++) {
            if (quoted(&c, descr, sizeof descr) != 0)
                return sq_err_set(err, "%s: .npy descr is not a string", name);
        } else if (!strcmp(key, "fortran_order") && !seen_order++) {
            skip_ws(&c);
            if (c.end - c.p >= 4 && !memcmp(c.p, "True", 4))
                fortran = 1, c.p += 4;
            else if (c.end - c.p >= 5 && !memcmp(c.p, "False", 5))
                c.p += 5;
            else
                return sq_err_set(err, "%s: .npy fortran_order is not True or False", name);
        } else if (!strcmp(key, "shape") && !seen_shape++) {
            if (!eat(&c, '('))
                return sq_err_set(err, "%s: .npy shape is not a tuple", name);
            while (!eat(&c, ')')) {
                int64_t v;
                if (ndim >= 2 || integer(&c, &v) != 0)
                    return sq_err_set(err, "%s: .npy shape must be two non-negative integers "
                                           "(rows, dim)", name);
                dims[ndim++] = v;
                if (!eat(&c, ',') && (skip_ws(&c), c.p < c.end && *c.p != ')'))
                    return sq_err_set(err, "%s: malformed .npy shape", name);
            }
        } else {
            return sq_err_set(err, "%s: unexpected or repeated key '%s' in the .npy header", name,
                              key);
        }
        if (!eat(&c, ',') && (skip_ws(&c), c.p < c.end && *c.p != '}'))
            return sq_err_set(err, "%s: malformed .npy header dictionary", name);
    }
    while (c.p < c.end && (*c.p == ' ' || *c.p == '\n'))
        c.p++;
    if (c.p != c.end || !seen_descr || !seen_order || !seen_shape)
        return sq_err_set(err, "%s: .npy header needs exactly descr, fortran_order and shape",
                          name);
    if (strcmp(descr, "<f4") != 0)
        return sq_err_set(err, "%s: .npy dtype '%s' is not little-endian float32 ('<f4')", name,
                          descr);
    if (fortran)
        return sq_err_set(err, "%s: .npy array is in Fortran order; write it C-contiguous", name);
    if (ndim != 2)
        return sq_err_set(err, "%s: .npy array has %d dimensions, expected 2 (rows, dim)", name,
                          ndim);
    size_t body = len - off - hl;
    if (dims[0] > INT32_MAX || dims[1] > INT32_MAX ||
        (uint64_t)dims[0] * (uint64_t)dims[1] > (uint64_t)(body / 4) ||
        (uint64_t)dims[0] * (uint64_t)dims[1] * 4 != body)
        return sq_err_set(err, "%s: .npy shape (%lld, %lld) needs %llu data bytes, the file "
                               "holds %zu", name, (long long)dims[0], (long long)dims[1],
                          (unsigned long long)((uint64_t)dims[0] * (uint64_t)dims[1] * 4), body);
    size_t n = (size_t)dims[0] * (size_t)dims[1];
    float *v = malloc(n ? n * sizeof *v : 1);
    if (!v)
        return sq_err_set(err, "%s: out of memory for %zu floats", name, n);
    memcpy(v, buf + off + hl, n * sizeof *v); /* little-endian hosts only, as everywhere */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            free(v);
            return sq_err_set(err, "%s: .npy value %zu (row %zu) is not finite", name, i,
                              i / (size_t)dims[1]);
        }
    *data = v;
    *rows = dims[0];
    *cols = dims[1];
    return 0;
}

int sq_npy_read_f32_2d(const char *path, float **data, int64_t *rows, int64_t *cols, sq_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    *data = NULL;
    if (sq_read_regular_file(path, NPY_MAX_FILE, &buf, &len, err) != 0)
        return -1;
    int rc = sq_npy_parse_f32_2d((const unsigned char *)buf, len, path, data, rows, cols, err);
    free(buf);
    return rc;
}

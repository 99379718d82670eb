/* The squint container: dtype table, reader (plain and zstd) and writer.
 * formats/SPEC.md is the normative description; the section names below
 * follow it. */
#include "container.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the container reader hands out pointers to little-endian data: little-endian hosts only"
#endif

#define HDR SQ_CONTAINER_HEADER_SIZE
#define TRL SQ_CONTAINER_TRAILER_SIZE
/* Smallest directory entry: name_len(2) + 1 name byte + dtype(1) + ndim(1)
 * + offset, size, xxh64 (24). */
#define MIN_ENTRY 29u

/* Header field offsets (SPEC.md "Header"). */
enum {
    H_MAGIC = 0,
    H_KIND = 4,
    H_MAJOR = 8,
    H_MINOR = 10,
    H_FLAGS = 12,
    H_META_OFF = 16,
    H_META_SIZE = 24,
    H_DIR_OFF = 32,
    H_DIR_SIZE = 40,
    H_DATA_OFF = 48,
    H_DATA_SIZE = 56,
    H_FILE_SIZE = 64,
    H_META_HASH = 72,
    H_DIR_HASH = 80,
    H_RESERVED = 88,
    H_HDR_HASH = 120,
};

static const uint8_t zero_block[SQ_CONTAINER_ALIGN];

/* ---- little-endian fields ---- */
static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void wr(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint64_t align_up(uint64_t v)
{
    return (v + SQ_CONTAINER_ALIGN - 1) & ~(uint64_t)(SQ_CONTAINER_ALIGN - 1);
}

/* Offset of the first invalid UTF-8 sequence (overlong forms, surrogates and
 * code points above U+10FFFF are invalid), or n when s is valid. */
static size_t utf8_invalid_at(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i < len)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += len;
    }
    return n;
}

/* ---- dtype table (SPEC.md "Dtype codes") ---- */

/* Packed weight panels (SPEC.md 6.1): dims are the logical [N, K] of the
 * weight matrix, from which the padded layout follows (N up to a multiple of
 * 16, K up to a multiple of k_align). Logical dims keep the exact N and K in
 * the directory, which physical panel dims would round away. */
static int panel_size(const char *name, uint64_t k_align, uint64_t bytes_div, int ndim,
                      const uint64_t *dims, uint64_t *size, sq_err *err)
{
    if (ndim != 2)
        return sq_err_set(err, "%s needs 2 dimensions [N, K], not %d", name, ndim);
    if (dims[0] == 0 || dims[1] == 0) {
        *size = 0;
        return 0;
    }
    if (dims[0] > UINT64_MAX - 15 || dims[1] > UINT64_MAX - (k_align - 1))
        return sq_err_set(err, "shape x %s size overflows 64 bits", name);
    uint64_t n_pad = (dims[0] + 15) / 16 * 16, k_pad = (dims[1] + k_align - 1) / k_align * k_align;
    if (n_pad > UINT64_MAX / k_pad)
        return sq_err_set(err, "shape x %s size overflows 64 bits", name);
    *size = n_pad * k_pad / bytes_div;
    return 0;
}

static int s8_panel_size(int ndim, const uint64_t *dims, uint64_t *size, sq_err *err)
{
    return panel_size("s8-panel", 4, 1, ndim, dims, size, err);
}

static int s4g128_panel_size(int ndim, const uint64_t *dims, uint64_t *size, sq_err *err)
{
    return panel_size("s4g128-panel", 128, 2, ndim, dims, size, err);
}

static const struct {
    const char *name;
    unsigned elem; /* bytes per element; 0 = packed (size rule below) */
    /* Size rule of a packed type; NULL while the code is only reserved. */
    int (*packed_size)(int ndim, const uint64_t *dims, uint64_t *size, sq_err *err);
} dtypes[128] = {
    [SQ_CDT_F32] = {"f32", 4, NULL},
    [SQ_CDT_F64] = {"f64", 8, NULL},
    [SQ_CDT_I32] = {"i32", 4, NULL},
    [SQ_CDT_U32] = {"u32", 4, NULL},
    [SQ_CDT_I64] = {"i64", 8, NULL},
    [SQ_CDT_U64] = {"u64", 8, NULL},
    [SQ_CDT_I8] = {"i8", 1, NULL},
    [SQ_CDT_U8] = {"u8", 1, NULL},
    [SQ_CDT_F16] = {"f16", 2, NULL},
    [SQ_CDT_BF16] = {"bf16", 2, NULL},
    [SQ_CDT_S8_PANEL] = {"s8-panel", 0, s8_panel_size},
    [SQ_CDT_S4G128_PANEL] = {"s4g128-panel", 0, s4g128_panel_size},
};

const char *sq_cdtype_name(unsigned code)
{
    return code < 128 ? dtypes[code].name : NULL;
}

unsigned sq_cdtype_elem_size(unsigned code)
{
    return code < 128 ? dtypes[code].elem : 0;
}

int sq_cdtype_size(unsigned code, int ndim, const uint64_t *dims, uint64_t *size, sq_err *err)
{
    if (code >= 128 || !dtypes[code].name)
        return sq_err_set(err, "unknown dtype code 0x%02x", code);
    if (ndim < 0 || ndim > SQ_CONTAINER_MAX_DIMS)
        return sq_err_set(err, "%d dimensions (at most %d)", ndim, SQ_CONTAINER_MAX_DIMS);
    if (dtypes[code].elem == 0) {
        if (!dtypes[code].packed_size)
            return sq_err_set(err,
                              "dtype %s (0x%02x) is reserved for packed weights and not defined "
                              "by this reader",
                              dtypes[code].name, code);
        return dtypes[code].packed_size(ndim, dims, size, err);
    }
    /* A zero dimension makes the tensor empty whatever the others are;
     * otherwise the product must fit in 64 bits. */
    for (int i = 0; i < ndim; i++)
        if (dims[i] == 0) {
            *size = 0;
            return 0;
        }
    uint64_t bytes = dtypes[code].elem;
    for (int i = 0; i < ndim; i++) {
        if (bytes > UINT64_MAX / dims[i])
            return sq_err_set(err, "shape x %s size overflows 64 bits", dtypes[code].name);
        bytes *= dims[i];
    }
    *size = bytes;
    return 0;
}

static bool kind_valid(uint32_t kind)
{
    bool ended = false;
    for (int i = 0; i < 4; i++) {
        unsigned ch = (kind >> (8 * i)) & 0xff;
        if (ch == 0) {
            if (i == 0)
                return false;
            ended = true;
        } else if (ended || !((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))) {
            return false;
        }
    }
    return true;
}

const char *sq_kind_describe(uint32_t kind, char buf[8])
{
    if (kind == SQ_KIND_SQC)
        return "statistics";
    if (kind == SQ_KIND_SQM)
        return "model";
    for (int i = 0; i < 4; i++) {
        unsigned ch = (kind >> (8 * i)) & 0xff;
        buf[i] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : (ch == 0 ? '\0' : '?');
        if (ch == 0)
            break;
        buf[i + 1] = '\0';
    }
    buf[4] = '\0';
    return buf;
}

/* ---- name index: open addressing over tensor indices (+1, 0 = empty) ---- */
static size_t name_slot(const char *name, size_t len, size_t cap)
{
    return (size_t)XXH64(name, len, 0) & (cap - 1);
}

static uint32_t *index_build_empty(size_t n, size_t *cap_out)
{
    size_t cap = 8;
    while (cap < 2 * n + 2)
        cap *= 2;
    *cap_out = cap;
    return calloc(cap, sizeof(uint32_t));
}

/* Insert tensor i (whose name is name[len]); returns the index of an
 * existing tensor with the same name, or -1 when inserted. names(k) gives
 * tensor k's name. */
typedef const char *(*name_of_fn)(const void *ctx, size_t k);
static long index_insert(uint32_t *idx, size_t cap, const char *name, size_t i, name_of_fn name_of,
                         const void *ctx)
{
    size_t s = name_slot(name, strlen(name), cap);
    while (idx[s]) {
        if (strcmp(name_of(ctx, idx[s] - 1), name) == 0)
            return (long)(idx[s] - 1);
        s = (s + 1) & (cap - 1);
    }
    idx[s] = (uint32_t)i + 1;
    return -1;
}

static long index_find(const uint32_t *idx, size_t cap, const char *name, name_of_fn name_of,
                       const void *ctx)
{
    if (!idx)
        return -1;
    size_t s = name_slot(name, strlen(name), cap);
    while (idx[s]) {
        if (strcmp(name_of(ctx, idx[s] - 1), name) == 0)
            return (long)(idx[s] - 1);
        s = (s + 1) & (cap - 1);
    }
    return -1;
}

/* ================= reader ================= */

static const char *reader_name_of(const void *ctx, size_t k)
{
    return ((const sq_container *)ctx)->tensors[k].name;
}

static void shape_text(const sq_container_tensor *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && k < n; i++)
        k +=
            (size_t)snprintf(buf + k, n - k, i ? ", %llu" : "%llu", (unsigned long long)t->dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* Check a section's [off, off + size) fits in the file body. */
static int check_section(const char *path, const char *what, uint64_t off, uint64_t size,
                         uint64_t body_end, sq_err *err)
{
    if (off > UINT64_MAX - size)
        return sq_err_set(err, "%s: %s offset %llu + size %llu overflows 64 bits", path, what,
                          (unsigned long long)off, (unsigned long long)size);
    if (off + size > body_end)
        return sq_err_set(err,
                          "%s: %s [%llu, %llu) points past the end of the file body (trailer "
                          "starts at %llu)",
                          path, what, (unsigned long long)off, (unsigned long long)(off + size),
                          (unsigned long long)body_end);
    return 0;
}

/* Sections are contiguous: `what` must start at `want`, right after `prev`
 * (which ends at prev_end). */
static int check_placement(const char *path, const char *prev, uint64_t prev_end, const char *what,
                           uint64_t off, uint64_t want, sq_err *err)
{
    if (off < prev_end)
        return sq_err_set(err, "%s: %s offset %llu overlaps the %s (which ends at %llu)", path,
                          what, (unsigned long long)off, prev, (unsigned long long)prev_end);
    if (off != want)
        return sq_err_set(err, "%s: %s offset %llu, expected %llu (sections are contiguous)", path,
                          what, (unsigned long long)off, (unsigned long long)want);
    return 0;
}

static int check_header(sq_container *c, const char *path, uint32_t expected, sq_err *err)
{
    const uint8_t *p = c->bytes;
    size_t n = c->size;
    if (n == 0)
        return sq_err_set(err, "%s: empty file (not a squint container)", path);
    if (memcmp(p, SQ_CONTAINER_MAGIC, n < 4 ? n : 4) != 0)
        return sq_err_set(err, "%s: not a squint container (bad magic)", path);
    if (n < HDR + TRL)
        return sq_err_set(err, "%s: truncated: %zu bytes, shorter than a header and trailer (%d)",
                          path, n, HDR + TRL);
    /* The version is read before the header checksum: a future major version
     * may lay the header out differently. */
    c->version_major = (unsigned)rd(p + H_MAJOR, 2);
    c->version_minor = (unsigned)rd(p + H_MINOR, 2);
    if (c->version_major != SQ_CONTAINER_VERSION_MAJOR)
        return sq_err_set(err,
                          "%s: container format version %u.%u is not supported (this reader "
                          "reads %d.x)",
                          path, c->version_major, c->version_minor, SQ_CONTAINER_VERSION_MAJOR);
    uint64_t want = rd(p + H_HDR_HASH, 8), got = XXH64(p, H_HDR_HASH, 0);
    if (want != got)
        return sq_err_set(err,
                          "%s: header checksum mismatch (stored %016llx, computed %016llx): "
                          "header corrupted",
                          path, (unsigned long long)want, (unsigned long long)got);
    c->kind = (uint32_t)rd(p + H_KIND, 4);
    char kb[8], eb[8];
    if (!kind_valid(c->kind))
        return sq_err_set(err, "%s: invalid kind bytes %02x %02x %02x %02x", path, p[4], p[5], p[6],
                          p[7]);
    if (expected && c->kind != expected)
        return sq_err_set(err, "%s is a squint %s file, not a %s file", path,
                          sq_kind_describe(c->kind, kb), sq_kind_describe(expected, eb));
    c->flags = (uint32_t)rd(p + H_FLAGS, 4);
    if (c->flags)
        return sq_err_set(err, "%s: unknown flags 0x%08x (written by a newer squint?)", path,
                          c->flags);
    uint64_t fsize = rd(p + H_FILE_SIZE, 8);
    if (fsize > n)
        return sq_err_set(err, "%s: truncated: the header says %llu bytes but there are %zu", path,
                          (unsigned long long)fsize, n);
    if (fsize < n)
        return sq_err_set(err, "%s: %zu bytes but the header says %llu (trailing data?)", path, n,
                          (unsigned long long)fsize);
    return 0;
}

static int check_sections(sq_container *c, const char *path, sq_err *err)
{
    const uint8_t *p = c->bytes;
    uint64_t body_end = c->size - TRL;
    uint64_t mo = rd(p + H_META_OFF, 8), ms = rd(p + H_META_SIZE, 8);
    uint64_t d_o = rd(p + H_DIR_OFF, 8), ds = rd(p + H_DIR_SIZE, 8);
    uint64_t xo = rd(p + H_DATA_OFF, 8), xs = rd(p + H_DATA_SIZE, 8);
    if (check_section(path, "metadata", mo, ms, body_end, err) ||
        check_section(path, "directory", d_o, ds, body_end, err) ||
        check_section(path, "data section", xo, xs, body_end, err))
        return -1;
    if (ms > SQ_CONTAINER_MAX_METADATA)
        return sq_err_set(err, "%s: metadata is %llu bytes (limit %llu)", path,
                          (unsigned long long)ms, (unsigned long long)SQ_CONTAINER_MAX_METADATA);
    if (ds > SQ_CONTAINER_MAX_DIRECTORY)
        return sq_err_set(err, "%s: directory is %llu bytes (limit %llu)", path,
                          (unsigned long long)ds, (unsigned long long)SQ_CONTAINER_MAX_DIRECTORY);
    if (xo % SQ_CONTAINER_ALIGN)
        return sq_err_set(err, "%s: data section offset %llu is not a multiple of %d", path,
                          (unsigned long long)xo, SQ_CONTAINER_ALIGN);
    if (check_placement(path, "header", HDR, "metadata", mo, HDR, err) ||
        check_placement(path, "metadata", mo + ms, "directory", d_o, mo + ms, err) ||
        check_placement(path, "directory", d_o + ds, "data section", xo, align_up(d_o + ds), err))
        return -1;
    if (xo + xs != body_end)
        return sq_err_set(err, "%s: data section ends at %llu but the trailer starts at %llu", path,
                          (unsigned long long)(xo + xs), (unsigned long long)body_end);
    for (uint64_t i = d_o + ds; i < xo; i++)
        if (p[i])
            return sq_err_set(err, "%s: non-zero padding byte at offset %llu before the data", path,
                              (unsigned long long)i);
    if (memcmp(p + body_end, SQ_CONTAINER_TRAILER_MAGIC, 8) != 0)
        return sq_err_set(err, "%s: bad trailer magic (truncated or corrupted file)", path);

    uint64_t want = rd(p + H_META_HASH, 8), got = XXH64(p + mo, ms, 0);
    if (want != got)
        return sq_err_set(err,
                          "%s: metadata checksum mismatch (stored %016llx, computed %016llx): "
                          "metadata corrupted",
                          path, (unsigned long long)want, (unsigned long long)got);
    size_t bad = utf8_invalid_at(p + mo, ms);
    if (bad != ms)
        return sq_err_set(err, "%s: metadata is not valid UTF-8 (at byte %zu)", path, bad);
    if (memchr(p + mo, 0, ms))
        return sq_err_set(err, "%s: metadata contains a NUL byte", path);
    want = rd(p + H_DIR_HASH, 8), got = XXH64(p + d_o, ds, 0);
    if (want != got)
        return sq_err_set(err,
                          "%s: directory checksum mismatch (stored %016llx, computed "
                          "%016llx): directory corrupted",
                          path, (unsigned long long)want, (unsigned long long)got);
    c->metadata = malloc(ms + 1);
    if (!c->metadata)
        return sq_err_set(err, "%s: out of memory", path);
    memcpy(c->metadata, p + mo, ms);
    c->metadata[ms] = '\0';
    c->metadata_len = ms;
    c->data_offset = xo;
    c->data_size = xs;
    return 0;
}

/* Tensor ranges sorted by offset (qsort has no context pointer, so the
 * sort works on copies of the fields it needs). */
typedef struct span {
    uint64_t offset, size;
    uint32_t idx;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static span *sorted_spans(const sq_container *c)
{
    span *s = malloc((c->n_tensors ? c->n_tensors : 1) * sizeof *s);
    if (!s)
        return NULL;
    for (size_t i = 0; i < c->n_tensors; i++)
        s[i] = (span){c->tensors[i].offset, c->tensors[i].size, (uint32_t)i};
    qsort(s, c->n_tensors, sizeof *s, cmp_span);
    return s;
}

/* Non-empty tensor ranges must not overlap. */
static int check_overlaps(sq_container *c, const char *path, sq_err *err)
{
    if (c->n_tensors < 2)
        return 0;
    span *order = sorted_spans(c);
    if (!order)
        return sq_err_set(err, "%s: out of memory", path);
    const sq_container_tensor *prev = NULL;
    int rc = 0;
    for (size_t i = 0; i < c->n_tensors && rc == 0; i++) {
        const sq_container_tensor *t = &c->tensors[order[i].idx];
        if (t->size == 0)
            continue;
        if (prev && t->offset < prev->offset + prev->size)
            rc = sq_err_set(err, "%s: tensors \"%s\" [%llu, %llu) and \"%s\" [%llu, %llu) overlap",
                            path, prev->name, (unsigned long long)prev->offset,
                            (unsigned long long)(prev->offset + prev->size), t->name,
                            (unsigned long long)t->offset,
                            (unsigned long long)(t->offset + t->size));
        prev = t;
    }
    free(order);
    return rc;
}

static int parse_directory(sq_container *c, const char *path, sq_err *err)
{
    const uint8_t *p = c->bytes + rd(c->bytes + H_DIR_OFF, 8);
    uint64_t end = rd(c->bytes + H_DIR_SIZE, 8), pos = 0;
    if (end < 4)
        return sq_err_set(err, "%s: directory is %llu bytes, too short for its count", path,
                          (unsigned long long)end);
    uint32_t count = (uint32_t)rd(p, 4);
    pos = 4;
    if (count > SQ_CONTAINER_MAX_TENSORS)
        return sq_err_set(err, "%s: %u tensors (limit %u)", path, count, SQ_CONTAINER_MAX_TENSORS);
    if ((uint64_t)count * MIN_ENTRY > end - 4)
        return sq_err_set(err, "%s: directory of %llu bytes cannot hold %u entries", path,
                          (unsigned long long)end, count);
    c->tensors = calloc(count ? count : 1, sizeof *c->tensors);
    c->names = malloc(end); /* each name takes len + 2 bytes there, len + 1 here */
    c->index = index_build_empty(count, &c->index_cap);
    if (!c->tensors || !c->names || !c->index)
        return sq_err_set(err, "%s: out of memory", path);
    char *arena = c->names;
#define NEED(k)                                                                                    \
    do {                                                                                           \
        if (end - pos < (uint64_t)(k))                                                             \
            return sq_err_set(err, "%s: directory truncated in entry %u", path, i);                \
    } while (0)
    for (uint32_t i = 0; i < count; i++) {
        sq_container_tensor *t = &c->tensors[i];
        NEED(2);
        unsigned nlen = (unsigned)rd(p + pos, 2);
        pos += 2;
        if (nlen == 0 || nlen > SQ_CONTAINER_MAX_NAME)
            return sq_err_set(err, "%s: directory entry %u: name length %u is outside [1, %d]",
                              path, i, nlen, SQ_CONTAINER_MAX_NAME);
        NEED(nlen);
        if (memchr(p + pos, 0, nlen))
            return sq_err_set(err, "%s: directory entry %u: name contains a NUL byte", path, i);
        if (utf8_invalid_at(p + pos, nlen) != nlen)
            return sq_err_set(err, "%s: directory entry %u: name is not valid UTF-8", path, i);
        memcpy(arena, p + pos, nlen);
        arena[nlen] = '\0';
        t->name = arena;
        arena += nlen + 1;
        pos += nlen;
        NEED(2);
        t->dtype = p[pos];
        t->ndim = p[pos + 1];
        pos += 2;
        if (t->ndim > SQ_CONTAINER_MAX_DIMS)
            return sq_err_set(err, "%s: tensor \"%s\": %d dimensions (at most %d)", path, t->name,
                              t->ndim, SQ_CONTAINER_MAX_DIMS);
        NEED(8 * (unsigned)t->ndim + 24);
        for (int d = 0; d < t->ndim; d++, pos += 8)
            t->dims[d] = rd(p + pos, 8);
        t->offset = rd(p + pos, 8);
        t->size = rd(p + pos + 8, 8);
        t->xxh64 = rd(p + pos + 16, 8);
        pos += 24;

        uint64_t want;
        if (sq_cdtype_size(t->dtype, t->ndim, t->dims, &want, err) != 0)
            return sq_err_prefix(err, "%s: tensor \"%s\"", path, t->name);
        if (t->size != want) {
            char shape[256];
            shape_text(t, shape, sizeof shape);
            return sq_err_set(err, "%s: tensor \"%s\": size %llu bytes but shape %s x %s is %llu",
                              path, t->name, (unsigned long long)t->size, shape,
                              sq_cdtype_name(t->dtype), (unsigned long long)want);
        }
        if (t->offset % SQ_CONTAINER_ALIGN)
            return sq_err_set(err, "%s: tensor \"%s\": data offset %llu is not a multiple of %d",
                              path, t->name, (unsigned long long)t->offset, SQ_CONTAINER_ALIGN);
        if (t->offset > c->data_size || t->size > c->data_size - t->offset)
            return sq_err_set(err,
                              "%s: tensor \"%s\": data [%llu, %llu) lies outside the data section "
                              "(%llu bytes)",
                              path, t->name, (unsigned long long)t->offset,
                              (unsigned long long)t->offset + t->size,
                              (unsigned long long)c->data_size);
        t->data = c->bytes + c->data_offset + t->offset;
        long dup = index_insert(c->index, c->index_cap, t->name, i, reader_name_of, c);
        if (dup >= 0)
            return sq_err_set(err,
                              "%s: duplicate tensor name \"%s\" (directory entries %ld and %u)",
                              path, t->name, dup, i);
        c->n_tensors = i + 1;
    }
#undef NEED
    if (pos != end)
        return sq_err_set(err, "%s: %llu unexpected bytes after the last directory entry", path,
                          (unsigned long long)(end - pos));
    return check_overlaps(c, path, err);
}

static int validate(sq_container *c, const char *path, uint32_t expected, sq_err *err)
{
    if (check_header(c, path, expected, err) || check_sections(c, path, err) ||
        parse_directory(c, path, err))
        return -1;
    return 0;
}

static void *aligned_buffer(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, SQ_CONTAINER_ALIGN, n ? n : 1) == 0 ? p : NULL;
}

static bool is_zstd(const uint8_t *p, size_t n)
{
    return n >= 4 && rd(p, 4) == ZSTD_MAGICNUMBER;
}

/* Decompress every frame of src into a 64-byte aligned buffer. Memory
 * follows what the stream really produces, never what it merely claims:
 *  - the declared sizes of all frames (ZSTD_findDecompressedSize) and, once
 *    decoded, the container header's file_size bound the output; a stream
 *    declaring more than the limit is refused before anything is allocated,
 *    and the two must agree;
 *  - the buffer starts at min(bound, max(64 KiB, 4 x the compressed size))
 *    (one allocation for any real model) and doubles only as output
 *    arrives, so a small file claiming gigabytes fails after allocating
 *    about what it actually decoded;
 *  - frames of content size 0 (an empty first frame) are fine. */
enum { ZSTD_MIN_CAP = 65536 };

/* The sum of the content sizes every frame declares; UNKNOWN when a frame
 * declares none, ERROR on a malformed first frame or a sum past 2^64. (zstd's own
 * ZSTD_findDecompressedSize is not in its stable API.) */
static unsigned long long declared_size(const uint8_t *src, size_t n)
{
    unsigned long long total = 0;
    bool unknown = false, first = true;
    while (n > 0) {
        unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
        if (fcs == ZSTD_CONTENTSIZE_ERROR) /* the decoder names a later bad frame */
            return first ? ZSTD_CONTENTSIZE_ERROR : ZSTD_CONTENTSIZE_UNKNOWN;
        if (fcs == ZSTD_CONTENTSIZE_UNKNOWN)
            unknown = true;
        else if (total + fcs < total)
            return ZSTD_CONTENTSIZE_ERROR;
        else
            total += fcs;
        size_t fsz = ZSTD_findFrameCompressedSize(src, n);
        if (ZSTD_isError(fsz) || fsz == 0 || fsz > n)
            break; /* a truncated or damaged frame: the decoder says which */
        src += fsz;
        n -= fsz;
        first = false;
    }
    return unknown ? ZSTD_CONTENTSIZE_UNKNOWN : total;
}

static int zstd_decode(const uint8_t *src, size_t n, const char *path, uint64_t limit, void **out,
                       size_t *out_len, sq_err *err)
{
    unsigned long long declared = declared_size(src, n);
    if (declared == ZSTD_CONTENTSIZE_ERROR)
        return sq_err_set(err, "%s: corrupt zstd stream (bad frame header)", path);
    bool known = declared != ZSTD_CONTENTSIZE_UNKNOWN;
    if (known && declared > limit)
        return sq_err_set(err, "%s: zstd stream declares %llu bytes, over the %llu-byte limit",
                          path, declared, (unsigned long long)limit);
    uint64_t bound = known ? (uint64_t)declared : limit;
    bool header_seen = false;
    uint64_t want = n < UINT64_MAX / 4 ? 4 * (uint64_t)n : UINT64_MAX;
    if (want < ZSTD_MIN_CAP)
        want = ZSTD_MIN_CAP;
    size_t cap = (size_t)(want < bound ? want : bound);
    uint8_t *buf = aligned_buffer(cap);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    int rc = 0;
    if (!buf || !dctx) {
        rc = sq_err_set(err, "%s: out of memory for %zu bytes of decompressed data", path, cap);
        goto done;
    }
    ZSTD_inBuffer in = {src, n, 0};
    ZSTD_outBuffer ob = {buf, cap, 0};
    for (;;) {
        size_t in_before = in.pos, out_before = ob.pos;
        size_t r = ZSTD_decompressStream(dctx, &ob, &in);
        if (ZSTD_isError(r)) {
            rc = sq_err_set(err, "%s: corrupt zstd stream: %s", path, ZSTD_getErrorName(r));
            goto done;
        }
        if (!header_seen && ob.pos >= SQ_CONTAINER_HEADER_SIZE) {
            /* The container header says how big the whole file is: it bounds
             * the output from here on. */
            header_seen = true;
            if (memcmp(buf, "SQNT", 4) != 0) {
                rc = sq_err_set(err, "%s: the zstd stream does not hold a squint container "
                                     "(decompressed bytes do not start with \"SQNT\")", path);
                goto done;
            }
            uint64_t fsz = rd(buf + 64, 8);
            if (fsz > limit) {
                rc = sq_err_set(err, "%s: container header declares %llu bytes, over the "
                                     "%llu-byte decompression limit",
                                path, (unsigned long long)fsz, (unsigned long long)limit);
                goto done;
            }
            if (known && fsz != declared) {
                rc = sq_err_set(err, "%s: zstd frames declare %llu bytes but the container "
                                     "header says the file has %llu",
                                path, declared, (unsigned long long)fsz);
                goto done;
            }
            if (fsz < ob.pos) {
                rc = sq_err_set(err, "%s: zstd stream decompresses to more than the %llu bytes "
                                     "its container header declares",
                                path, (unsigned long long)fsz);
                goto done;
            }
            bound = fsz;
        }
        if (r == 0 && in.pos == in.size)
            break;
        if (ob.pos == ob.size) {
            if (in.pos != in_before || ob.pos != out_before)
                continue; /* progress: maybe it finishes without more room */
            if (cap >= bound) {
                /* Full at the bound: one more byte of room tells a stream
                 * with more output than declared from one that is waiting
                 * for input that never comes (truncated in its checksum). */
                uint8_t probe;
                ZSTD_outBuffer pb = {&probe, 1, 0};
                size_t probe_in = in.pos;
                size_t pr = ZSTD_decompressStream(dctx, &pb, &in);
                if (ZSTD_isError(pr)) {
                    rc = sq_err_set(err, "%s: corrupt zstd stream: %s", path,
                                    ZSTD_getErrorName(pr));
                    goto done;
                }
                if (pb.pos == 0 && in.pos == in.size) {
                    if (pr == 0)
                        break; /* it was complete */
                    rc = sq_err_set(err, "%s: truncated zstd stream", path);
                    goto done;
                }
                if (pb.pos == 0 && in.pos != probe_in)
                    continue; /* more frames (empty ones) after the content */
                if (header_seen || known)
                    rc = sq_err_set(err, "%s: zstd stream decompresses to more than the %llu "
                                         "bytes it declares",
                                    path, (unsigned long long)bound);
                else
                    rc = sq_err_set(err, "%s: zstd stream decompresses to more than the "
                                         "%llu-byte limit",
                                    path, (unsigned long long)limit);
                goto done;
            }
            uint64_t grow = cap < ZSTD_MIN_CAP ? ZSTD_MIN_CAP : 2 * (uint64_t)cap;
            size_t ncap = (size_t)(grow < bound ? grow : bound);
            uint8_t *nb = aligned_buffer(ncap);
            if (!nb) {
                rc = sq_err_set(err, "%s: out of memory for %zu bytes of decompressed data", path,
                                ncap);
                goto done;
            }
            memcpy(nb, buf, ob.pos);
            free(buf);
            buf = nb;
            cap = ncap;
            ob.dst = buf;
            ob.size = cap;
            continue;
        }
        if (in.pos == in.size) {
            rc = sq_err_set(err, "%s: truncated zstd stream", path);
            goto done;
        }
    }
    *out = buf;
    *out_len = ob.pos;
    buf = NULL;
done:
    free(buf);
    ZSTD_freeDCtx(dctx);
    return rc;
}

static int open_bytes(sq_container *c, const char *name, const sq_container_opts *opts, sq_err *err)
{
    uint64_t limit =
        opts && opts->max_decompressed ? opts->max_decompressed : SQ_CONTAINER_MAX_DECOMPRESSED;
    if (is_zstd(c->bytes, c->size)) {
        size_t len = 0;
        if (zstd_decode(c->bytes, c->size, name, limit, &c->owned, &len, err) != 0)
            return -1;
        /* The mapping (if any) is no longer needed. */
        sq_unmap_file(&c->mf);
        c->bytes = c->owned;
        c->size = len;
        c->compressed = 1;
    }
    return validate(c, name, opts ? opts->kind : 0, err);
}

int sq_container_open_ex(const char *path, const sq_container_opts *opts, sq_container *c,
                         sq_err *err)
{
    memset(c, 0, sizeof *c);
    if (sq_map_file(path, &c->mf, err) != 0)
        return -1;
    c->bytes = c->mf.data;
    c->size = c->mf.size;
    c->path = strdup(path);
    if (!c->path) {
        sq_container_close(c);
        return sq_err_set(err, "%s: out of memory", path);
    }
    if (open_bytes(c, path, opts, err) != 0) {
        sq_container_close(c);
        return -1;
    }
    return 0;
}

int sq_container_open(const char *path, uint32_t expected_kind, sq_container *c, sq_err *err)
{
    sq_container_opts o = {.kind = expected_kind};
    return sq_container_open_ex(path, &o, c, err);
}

int sq_container_open_buffer(const void *data, size_t size, const char *name,
                             const sq_container_opts *opts, sq_container *c, sq_err *err)
{
    memset(c, 0, sizeof *c);
    c->bytes = data;
    c->size = size;
    c->path = strdup(name);
    if (!c->path)
        return sq_err_set(err, "%s: out of memory", name);
    if (open_bytes(c, name, opts, err) != 0) {
        sq_container_close(c);
        return -1;
    }
    return 0;
}

void sq_container_close(sq_container *c)
{
    sq_unmap_file(&c->mf);
    free(c->owned);
    free(c->path);
    free(c->metadata);
    free(c->tensors);
    free(c->names);
    free(c->index);
    memset(c, 0, sizeof *c);
}

const sq_container_tensor *sq_container_find(const sq_container *c, const char *name)
{
    long i = index_find(c->index, c->index_cap, name, reader_name_of, c);
    return i < 0 ? NULL : &c->tensors[i];
}

const sq_container_tensor *sq_container_tensor_at(const sq_container *c, size_t i)
{
    return i < c->n_tensors ? &c->tensors[i] : NULL;
}

/* Bytes of the data section that no tensor covers must be zero. */
static int check_data_padding(const sq_container *c, sq_err *err)
{
    span *order = sorted_spans(c);
    if (!order)
        return sq_err_set(err, "%s: out of memory", c->path);
    const uint8_t *d = c->bytes + c->data_offset;
    uint64_t cur = 0;
    int rc = 0;
    for (size_t i = 0; i <= c->n_tensors && rc == 0; i++) {
        uint64_t start = c->data_size, end = c->data_size;
        if (i < c->n_tensors) {
            start = order[i].offset;
            end = start + order[i].size;
        }
        for (uint64_t k = cur; k < start; k++)
            if (d[k]) {
                rc = sq_err_set(err, "%s: non-zero padding byte at file offset %llu", c->path,
                                (unsigned long long)(c->data_offset + k));
                break;
            }
        if (end > cur)
            cur = end;
    }
    free(order);
    return rc;
}

int sq_container_verify(const sq_container *c, sq_err *err)
{
    for (size_t i = 0; i < c->n_tensors; i++) {
        const sq_container_tensor *t = &c->tensors[i];
        uint64_t got = XXH64(t->data, (size_t)t->size, 0);
        if (got != t->xxh64)
            return sq_err_set(err,
                              "%s: tensor \"%s\": checksum mismatch (directory %016llx, data "
                              "%016llx): data corrupted",
                              c->path, t->name, (unsigned long long)t->xxh64,
                              (unsigned long long)got);
    }
    if (check_data_padding(c, err) != 0)
        return -1;
    size_t body = c->size - TRL;
    uint64_t want = rd(c->bytes + body + 8, 8), got = XXH64(c->bytes, body, 0);
    if (want != got)
        return sq_err_set(err,
                          "%s: whole-file checksum mismatch (trailer %016llx, computed "
                          "%016llx): file corrupted",
                          c->path, (unsigned long long)want, (unsigned long long)got);
    return 0;
}

/* ================= writer ================= */

typedef struct wtensor {
    char *name;
    unsigned dtype;
    int ndim;
    uint64_t dims[SQ_CONTAINER_MAX_DIMS];
    const void *data; /* the caller's buffer or `copy` */
    void *copy;
    uint64_t size;
    uint64_t xxh64; /* valid when `copy` (hashed once at add) */
    uint64_t offset;
} wtensor;

struct sq_container_writer {
    uint32_t kind;
    bool failed;       /* an sq_container_writer_add failed: first_err says why */
    sq_err first_err;
    char *meta;
    size_t meta_len;
    wtensor *t;
    size_t n, cap;
    uint32_t *index;
    size_t index_cap;
    int zstd_level;
};

static const char *writer_name_of(const void *ctx, size_t k)
{
    return ((const sq_container_writer *)ctx)->t[k].name;
}

sq_container_writer *sq_container_writer_new(uint32_t kind)
{
    sq_container_writer *w = calloc(1, sizeof *w);
    if (w)
        w->kind = kind;
    return w;
}

void sq_container_writer_free(sq_container_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->t[i].name);
        free(w->t[i].copy);
    }
    free(w->t);
    free(w->index);
    free(w->meta);
    free(w);
}

int sq_container_writer_set_metadata(sq_container_writer *w, const char *text, size_t len,
                                     sq_err *err)
{
    if (len > SQ_CONTAINER_MAX_METADATA)
        return sq_err_set(err, "metadata is %zu bytes (limit %llu)", len,
                          (unsigned long long)SQ_CONTAINER_MAX_METADATA);
    size_t bad = utf8_invalid_at((const uint8_t *)text, len);
    if (bad != len)
        return sq_err_set(err, "metadata is not valid UTF-8 (at byte %zu)", bad);
    if (memchr(text, 0, len))
        return sq_err_set(err, "metadata contains a NUL byte");
    char *m = malloc(len + 1);
    if (!m)
        return sq_err_set(err, "out of memory");
    memcpy(m, text, len);
    m[len] = '\0';
    free(w->meta);
    w->meta = m;
    w->meta_len = len;
    return 0;
}

void sq_container_writer_set_zstd(sq_container_writer *w, int level)
{
    if (level > ZSTD_maxCLevel())
        level = ZSTD_maxCLevel();
    if (level < ZSTD_minCLevel())
        level = ZSTD_minCLevel();
    w->zstd_level = level;
}

static int writer_grow(sq_container_writer *w, sq_err *err)
{
    if (w->n == w->cap) {
        size_t ncap = w->cap ? 2 * w->cap : 16;
        wtensor *nt = realloc(w->t, ncap * sizeof *nt);
        if (!nt)
            return sq_err_set(err, "out of memory");
        w->t = nt;
        w->cap = ncap;
    }
    if (2 * (w->n + 1) + 2 > w->index_cap) { /* keep the load factor under 1/2 */
        size_t cap;
        uint32_t *idx = index_build_empty(2 * (w->n + 1), &cap);
        if (!idx)
            return sq_err_set(err, "out of memory");
        for (size_t i = 0; i < w->n; i++)
            index_insert(idx, cap, w->t[i].name, i, writer_name_of, w);
        free(w->index);
        w->index = idx;
        w->index_cap = cap;
    }
    return 0;
}

static int add_tensor(sq_container_writer *w, const char *name, unsigned dtype, int ndim,
                      const uint64_t *dims, const void *data, uint64_t size, bool copy, sq_err *err)
{
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen > SQ_CONTAINER_MAX_NAME)
        return sq_err_set(err, "tensor name \"%.64s\": length %zu is outside [1, %d]", name, nlen,
                          SQ_CONTAINER_MAX_NAME);
    if (utf8_invalid_at((const uint8_t *)name, nlen) != nlen)
        return sq_err_set(err, "tensor name is not valid UTF-8");
    if (w->n >= SQ_CONTAINER_MAX_TENSORS)
        return sq_err_set(err, "tensor \"%s\": more than %u tensors", name,
                          SQ_CONTAINER_MAX_TENSORS);
    uint64_t want;
    if (sq_cdtype_size(dtype, ndim, dims, &want, err) != 0)
        return sq_err_prefix(err, "tensor \"%s\"", name);
    if (size != want)
        return sq_err_set(err, "tensor \"%s\": %llu bytes given but the shape needs %llu", name,
                          (unsigned long long)size, (unsigned long long)want);
    if (size && !data)
        return sq_err_set(err, "tensor \"%s\": no data", name);
    if (index_find(w->index, w->index_cap, name, writer_name_of, w) >= 0)
        return sq_err_set(err, "duplicate tensor name \"%s\"", name);
    if (writer_grow(w, err) != 0)
        return -1;
    wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name)
        return sq_err_set(err, "out of memory");
    if (copy) {
        t->copy = malloc(size ? (size_t)size : 1);
        if (!t->copy) {
            free(t->name);
            return sq_err_set(err, "tensor \"%s\": out of memory for %llu bytes", name,
                              (unsigned long long)size);
        }
        if (size)
            memcpy(t->copy, data, (size_t)size);
        t->data = t->copy;
        t->xxh64 = XXH64(t->copy, (size_t)size, 0);
    } else {
        t->data = data;
    }
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
    t->size = size;
    index_insert(w->index, w->index_cap, t->name, w->n, writer_name_of, w);
    w->n++;
    return 0;
}

int sq_container_writer_add_tensor(sq_container_writer *w, const char *name, unsigned dtype,
                                   int ndim, const uint64_t *dims, const void *data, uint64_t size,
                                   sq_err *err)
{
    return add_tensor(w, name, dtype, ndim, dims, data, size, true, err);
}

int sq_container_writer_add_tensor_ref(sq_container_writer *w, const char *name, unsigned dtype,
                                       int ndim, const uint64_t *dims, const void *data,
                                       uint64_t size, sq_err *err)
{
    return add_tensor(w, name, dtype, ndim, dims, data, size, false, err);
}

void sq_container_writer_add(sq_container_writer *w, const char *name, unsigned dtype, int ndim,
                             const uint64_t *dims, const void *data, uint64_t size)
{
    if (!w->failed &&
        add_tensor(w, name, dtype, ndim, dims, data, size, false, &w->first_err) != 0)
        w->failed = true;
}

/* Output: optionally through zstd, hashing what goes in (until the trailer). */
typedef struct sink {
    FILE *fp;
    ZSTD_CCtx *z;
    void *zbuf;
    size_t zcap;
    XXH64_state_t *h;
    bool hashing;
} sink;

static int sink_emit(sink *s, const void *p, size_t n)
{
    return n == 0 || fwrite(p, 1, n, s->fp) == n ? 0 : -1;
}

static int sink_put(sink *s, const void *p, size_t n)
{
    if (s->hashing)
        XXH64_update(s->h, p, n);
    if (!s->z)
        return sink_emit(s, p, n);
    ZSTD_inBuffer in = {p, n, 0};
    while (in.pos < in.size) {
        ZSTD_outBuffer ob = {s->zbuf, s->zcap, 0};
        size_t r = ZSTD_compressStream2(s->z, &ob, &in, ZSTD_e_continue);
        if (ZSTD_isError(r) || sink_emit(s, s->zbuf, ob.pos) != 0)
            return -1;
    }
    return 0;
}

static int sink_finish(sink *s)
{
    if (!s->z)
        return 0;
    ZSTD_inBuffer in = {NULL, 0, 0};
    size_t r;
    do {
        ZSTD_outBuffer ob = {s->zbuf, s->zcap, 0};
        r = ZSTD_compressStream2(s->z, &ob, &in, ZSTD_e_end);
        if (ZSTD_isError(r) || sink_emit(s, s->zbuf, ob.pos) != 0)
            return -1;
    } while (r != 0);
    return 0;
}

static int sink_zeros(sink *s, uint64_t n)
{
    while (n) {
        size_t k = n < sizeof zero_block ? (size_t)n : sizeof zero_block;
        if (sink_put(s, zero_block, k) != 0)
            return -1;
        n -= k;
    }
    return 0;
}

/* Serialize the directory (SPEC.md "Directory"). */
static uint8_t *build_directory(const sq_container_writer *w, uint64_t *len_out)
{
    uint64_t len = 4;
    for (size_t i = 0; i < w->n; i++)
        len += 2 + strlen(w->t[i].name) + 2 + 8 * (uint64_t)w->t[i].ndim + 24;
    uint8_t *d = malloc((size_t)len), *p = d;
    if (!d)
        return NULL;
    wr(p, w->n, 4);
    p += 4;
    for (size_t i = 0; i < w->n; i++) {
        const wtensor *t = &w->t[i];
        size_t nlen = strlen(t->name);
        wr(p, nlen, 2);
        memcpy(p + 2, t->name, nlen);
        p += 2 + nlen;
        p[0] = (uint8_t)t->dtype;
        p[1] = (uint8_t)t->ndim;
        p += 2;
        for (int k = 0; k < t->ndim; k++, p += 8)
            wr(p, t->dims[k], 8);
        wr(p, t->offset, 8);
        wr(p + 8, t->size, 8);
        wr(p + 16, t->xxh64, 8);
        p += 24;
    }
    *len_out = len;
    return d;
}

static int write_body(sq_container_writer *w, sink *s, const uint8_t *hdr, const uint8_t *dir,
                      uint64_t dir_len, uint64_t data_off)
{
    if (sink_put(s, hdr, HDR) || sink_put(s, w->meta ? w->meta : "", w->meta_len) ||
        sink_put(s, dir, dir_len) || sink_zeros(s, data_off - (HDR + w->meta_len + dir_len)))
        return -1;
    uint64_t cur = 0;
    for (size_t i = 0; i < w->n; i++) {
        const wtensor *t = &w->t[i];
        if (sink_zeros(s, t->offset - cur) || sink_put(s, t->data, (size_t)t->size))
            return -1;
        cur = t->offset + t->size;
    }
    uint8_t trailer[TRL];
    memcpy(trailer, SQ_CONTAINER_TRAILER_MAGIC, 8);
    wr(trailer + 8, XXH64_digest(s->h), 8);
    s->hashing = false;
    if (sink_put(s, trailer, TRL) || sink_finish(s))
        return -1;
    return 0;
}

int sq_container_writer_write(sq_container_writer *w, const char *path, sq_err *err)
{
    if (w->failed) {
        *err = w->first_err;
        return sq_err_prefix(err, "%s", path);
    }
    if (!kind_valid(w->kind))
        return sq_err_set(err, "%s: invalid container kind 0x%08x", path, w->kind);
    /* Layout (SPEC.md "Layout"): tensors in insertion order, each at the next
     * 64-byte boundary. Referenced tensors are hashed now. */
    uint64_t cur = 0;
    for (size_t i = 0; i < w->n; i++) {
        wtensor *t = &w->t[i];
        t->offset = align_up(cur);
        cur = t->offset + t->size;
        if (!t->copy)
            t->xxh64 = XXH64(t->data, (size_t)t->size, 0);
    }
    uint64_t dir_len;
    uint8_t *dir = build_directory(w, &dir_len);
    if (!dir)
        return sq_err_set(err, "%s: out of memory", path);
    uint64_t meta_off = HDR, dir_off = meta_off + w->meta_len;
    uint64_t data_off = align_up(dir_off + dir_len), data_size = cur;
    uint8_t hdr[HDR] = {0};
    memcpy(hdr + H_MAGIC, SQ_CONTAINER_MAGIC, 4);
    wr(hdr + H_KIND, w->kind, 4);
    wr(hdr + H_MAJOR, SQ_CONTAINER_VERSION_MAJOR, 2);
    wr(hdr + H_MINOR, SQ_CONTAINER_VERSION_MINOR, 2);
    wr(hdr + H_META_OFF, meta_off, 8);
    wr(hdr + H_META_SIZE, w->meta_len, 8);
    wr(hdr + H_DIR_OFF, dir_off, 8);
    wr(hdr + H_DIR_SIZE, dir_len, 8);
    wr(hdr + H_DATA_OFF, data_off, 8);
    wr(hdr + H_DATA_SIZE, data_size, 8);
    wr(hdr + H_FILE_SIZE, data_off + data_size + TRL, 8);
    wr(hdr + H_META_HASH, XXH64(w->meta ? w->meta : "", w->meta_len, 0), 8);
    wr(hdr + H_DIR_HASH, XXH64(dir, (size_t)dir_len, 0), 8);
    wr(hdr + H_HDR_HASH, XXH64(hdr, H_HDR_HASH, 0), 8);

    sq_atomic_file af;
    sink s = {.hashing = true};
    int rc = -1;
    s.h = XXH64_createState();
    if (!s.h || XXH64_reset(s.h, 0) != XXH_OK) {
        sq_err_set(err, "%s: out of memory", path);
        goto out_nofile;
    }
    if (w->zstd_level) {
        s.z = ZSTD_createCCtx();
        s.zcap = ZSTD_CStreamOutSize();
        s.zbuf = malloc(s.zcap);
        if (!s.z || !s.zbuf ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s.z, ZSTD_c_compressionLevel, w->zstd_level)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(s.z, ZSTD_c_checksumFlag, 1)) ||
            ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(s.z, data_off + data_size + TRL))) {
            sq_err_set(err, "%s: cannot set up zstd compression", path);
            goto out_nofile;
        }
    }
    if (sq_atomic_open(&af, path, err) != 0)
        goto out_nofile;
    s.fp = af.fp;
    errno = 0;
    if (write_body(w, &s, hdr, dir, dir_len, data_off) != 0) {
        sq_err_set(err, "%s: write failed: %s", path, errno ? strerror(errno) : "zstd error");
        sq_atomic_abort(&af);
        goto out_nofile;
    }
    rc = sq_atomic_commit(&af, err);
out_nofile:
    XXH64_freeState(s.h);
    ZSTD_freeCCtx(s.z);
    free(s.zbuf);
    free(dir);
    return rc;
}

/* SentencePiece's precompiled normalizer (precompiled_norm.h). Written from
 * the format's description (sentencepiece normalizer.h, darts-clone's unit
 * layout) and the Rust tokenizers crate's documented behaviour. */
#include "precompiled_norm.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "unicode_props.h"

struct sq_pcnorm {
    uint8_t *blob; /* the whole blob, as given */
    size_t blob_len;
    const uint8_t *units; /* n_units little-endian uint32 */
    size_t n_units;
    const char *strings; /* replacement strings region */
    size_t strings_len;
};

static uint32_t unit_at(const sq_pcnorm *p, size_t i)
{
    const uint8_t *u = p->units + 4 * i;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

/* darts-clone unit fields */
static bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1u; }
static uint32_t unit_value(uint32_t u) { return u & 0x7FFFFFFFu; }
static uint32_t unit_label(uint32_t u) { return u & (0x80000000u | 0xFFu); }
static size_t unit_offset(uint32_t u) { return (size_t)(u >> 10) << ((u & (1u << 9)) >> 6); }

sq_pcnorm *sq_pcnorm_new(const uint8_t *blob, size_t len, const char *what, sq_err *err)
{
    if (!blob || len < 4) {
        sq_err_set(err, "%s: precompiled_charsmap is shorter than its 4-byte trie size", what);
        return NULL;
    }
    if (len > SQ_PCNORM_MAX_BLOB) {
        sq_err_set(err, "%s: precompiled_charsmap has %zu bytes, more than the limit of %u", what,
                   len, SQ_PCNORM_MAX_BLOB);
        return NULL;
    }
    size_t tsize = (size_t)blob[0] | (size_t)blob[1] << 8 | (size_t)blob[2] << 16 |
                   (size_t)blob[3] << 24;
    if (tsize == 0 || tsize % 4 != 0 || tsize > len - 4) {
        sq_err_set(err,
                   "%s: precompiled_charsmap trie size %zu is not a positive multiple of 4 "
                   "within the %zu bytes after it",
                   what, tsize, len - 4);
        return NULL;
    }
    const uint8_t *strings = blob + 4 + tsize;
    size_t slen = len - 4 - tsize;
    if (!sq_utf8_valid(strings, slen)) {
        sq_err_set(err, "%s: precompiled_charsmap replacement strings are not valid UTF-8", what);
        return NULL;
    }
    sq_pcnorm *p = calloc(1, sizeof *p);
    uint8_t *copy = malloc(len);
    if (!p || !copy) {
        free(p);
        free(copy);
        sq_err_set(err, "%s: out of memory", what);
        return NULL;
    }
    memcpy(copy, blob, len);
    p->blob = copy;
    p->blob_len = len;
    p->units = copy + 4;
    p->n_units = tsize / 4;
    p->strings = (const char *)copy + 4 + tsize;
    p->strings_len = slen;
    return p;
}

void sq_pcnorm_free(sq_pcnorm *p)
{
    if (!p)
        return;
    free(p->blob);
    free(p);
}

const uint8_t *sq_pcnorm_blob(const sq_pcnorm *p, size_t *len)
{
    *len = p->blob_len;
    return p->blob;
}

/* The replacement string at offset v: NULL when v is outside the region or
 * inside a UTF-8 character. It ends at a NUL byte or at the region's end. */
static const char *replacement(const sq_pcnorm *p, uint32_t v, size_t *rlen)
{
    if (v >= p->strings_len || ((uint8_t)p->strings[v] & 0xC0u) == 0x80u)
        return NULL;
    const char *s = p->strings + v;
    const char *nul = memchr(s, 0, p->strings_len - v);
    *rlen = nul ? (size_t)(nul - s) : p->strings_len - v;
    return s;
}

const char *sq_pcnorm_lookup(const sq_pcnorm *p, const uint8_t *s, size_t n, size_t *rlen)
{
    size_t pos = unit_offset(unit_at(p, 0));
    for (size_t i = 0; i < n && s[i] != 0; i++) {
        pos ^= s[i];
        if (pos >= p->n_units)
            return NULL;
        uint32_t u = unit_at(p, pos);
        if (unit_label(u) != s[i])
            return NULL;
        pos ^= unit_offset(u);
        if (unit_has_leaf(u)) {
            if (pos >= p->n_units)
                return NULL;
            /* the shortest key: the first leaf on the way (Rust takes results[0]) */
            return replacement(p, unit_value(unit_at(p, pos)), rlen);
        }
    }
    return NULL;
}

typedef struct {
    char *v;
    size_t n, cap;
} outbuf;

static int put(outbuf *o, const char *s, size_t n)
{
    if (o->n + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 64;
        while (cap < o->n + n + 1)
            cap *= 2;
        char *v = realloc(o->v, cap);
        if (!v)
            return -1;
        o->v = v;
        o->cap = cap;
    }
    memcpy(o->v + o->n, s, n);
    o->n += n;
    return 0;
}

/* One grapheme cluster g[0, n). */
static int apply_cluster(const sq_pcnorm *p, const uint8_t *g, size_t n, outbuf *o)
{
    size_t rl;
    const char *r;
    if (n < 6 && (r = sq_pcnorm_lookup(p, g, n, &rl)) != NULL)
        return put(o, r, rl);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t cl = sq_utf8_decode(g + i, n - i, &cp);
        r = sq_pcnorm_lookup(p, g + i, cl, &rl);
        if (put(o, r ? r : (const char *)g + i, r ? rl : cl) != 0)
            return -1;
        i += cl;
    }
    return 0;
}

int sq_pcnorm_apply(const sq_pcnorm *p, const char *text, size_t len, char **out,
                    size_t *out_len)
{
    outbuf o = {0};
    const uint8_t *s = (const uint8_t *)text;
    if (put(&o, "", 0) != 0)
        return -1;
    size_t start = 0, i = 0;
    utf8proc_int32_t state = 0;
    uint32_t prev = 0;
    bool have_prev = false;
    while (i < len) {
        uint32_t cp;
        size_t cl = sq_utf8_decode(s + i, len - i, &cp);
        if (have_prev &&
            utf8proc_grapheme_break_stateful((utf8proc_int32_t)prev, (utf8proc_int32_t)cp,
                                             &state)) {
            if (apply_cluster(p, s + start, i - start, &o) != 0)
                goto oom;
            start = i;
        }
        prev = cp;
        have_prev = true;
        i += cl;
    }
    if (start < len && apply_cluster(p, s + start, len - start, &o) != 0)
        goto oom;
    o.v[o.n] = '\0';
    *out = o.v;
    *out_len = o.n;
    return 0;
oom:
    free(o.v);
    return -1;
}

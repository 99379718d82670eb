/* NFKC (UAX #15) over code point arrays; see unicode_nfkc.h. The tables come
 * from scripts/unicode/gen_nfkc.mjs, which runs a JavaScript copy of this
 * algorithm over them and compares it with node's ICU before writing them. */
#include "unicode_nfkc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_nfkc_data.h"

#define SBASE 0xAC00u
#define LBASE 0x1100u
#define VBASE 0x1161u
#define TBASE 0x11A7u
#define LCOUNT 19u
#define VCOUNT 21u
#define TCOUNT 28u
#define NCOUNT (VCOUNT * TCOUNT)
#define SCOUNT (LCOUNT * NCOUNT)

/* Runs of combining marks longer than this are sorted with qsort (hostile
 * input), shorter ones by insertion sort. */
#define SHORT_RUN 32

int sq_u32buf_reserve(sq_u32buf *b, size_t extra)
{
    if (b->cap - b->n >= extra)
        return 0;
    if (extra > SIZE_MAX / sizeof(uint32_t) / 2 - b->n)
        return -1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->n < extra)
        cap *= 2;
    uint32_t *v = realloc(b->v, cap * sizeof *v);
    if (!v)
        return -1;
    b->v = v;
    b->cap = cap;
    return 0;
}

const char *sq_nfkc_unicode_version(void) { return SQ_NFKC_UNICODE_VERSION; }

static inline uint32_t record(uint32_t cp)
{
    if (cp >= 0x110000u)
        return 0;
    uint32_t mid = nfkc_mid[((uint32_t)nfkc_top[cp >> NFKC_SHIFT0] << (NFKC_SHIFT0 - NFKC_SHIFT1)) |
                            ((cp >> NFKC_SHIFT1) & ((1u << (NFKC_SHIFT0 - NFKC_SHIFT1)) - 1))];
    return nfkc_leaf[(mid << NFKC_SHIFT1) | (cp & ((1u << NFKC_SHIFT1) - 1))];
}

static inline int ccc_of(uint32_t cp) { return cp < 0x300 ? 0 : (int)(record(cp) & 0xFF); }

int sq_nfkc_ccc(uint32_t cp) { return ccc_of(cp); }

/* The primary composite of (a, b), or 0 when there is none. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a - LBASE < LCOUNT && b - VBASE < VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a - SBASE < SCOUNT && (a - SBASE) % TCOUNT == 0 && b - TBASE - 1 < TCOUNT - 1)
        return a + (b - TBASE);
    uint64_t key = ((uint64_t)a << 21) | b;
    size_t lo = 0, hi = NFKC_NPAIRS;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((nfkc_pairs[mid] >> 21) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < NFKC_NPAIRS && (nfkc_pairs[lo] >> 21) == key)
        return (uint32_t)(nfkc_pairs[lo] & 0x1FFFFF);
    return 0;
}

static int reorder_compose(sq_u32buf *out);

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Stable sort of v[0..n) by combining class (all non-zero). */
static int sort_run(uint32_t *v, size_t n)
{
    if (n <= SHORT_RUN) {
        for (size_t i = 1; i < n; i++) {
            uint32_t c = v[i];
            int cc = ccc_of(c);
            size_t j = i;
            while (j > 0 && ccc_of(v[j - 1]) > cc) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = c;
        }
        return 0;
    }
    /* key: ccc (8 bits) | position (32 bits) | code point (21 bits) */
    uint64_t *keys = malloc(n * sizeof *keys);
    if (!keys)
        return -1;
    for (size_t start = 0; start < n; start += (size_t)1 << 32) {
        size_t m = n - start < ((size_t)1 << 32) ? n - start : (size_t)1 << 32;
        for (size_t i = 0; i < m; i++)
            keys[i] = ((uint64_t)ccc_of(v[start + i]) << 53) | ((uint64_t)i << 21) | v[start + i];
        qsort(keys, m, sizeof *keys, cmp_u64);
        for (size_t i = 0; i < m; i++)
            v[start + i] = (uint32_t)(keys[i] & 0x1FFFFF);
    }
    free(keys);
    return 0;
}

int sq_nfkc(const uint32_t *in, size_t n, sq_u32buf *out)
{
    out->n = 0;
    if (sq_u32buf_reserve(out, n) != 0)
        return -1;
    /* 1. Full compatibility decomposition. ASCII is its own NFKC (nothing
     *    composes with it unless a non-ASCII mark follows, which sets busy). */
    bool busy = false;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = in[i];
        if (out->n == out->cap && sq_u32buf_reserve(out, n - i) != 0)
            return -1; /* earlier decompositions used the room */
        if (cp < 0x80) {
            out->v[out->n++] = cp;
            continue;
        }
        busy = true;
        if (cp - SBASE < SCOUNT) {
            if (sq_u32buf_reserve(out, 3) != 0)
                return -1;
            uint32_t s = cp - SBASE;
            out->v[out->n++] = LBASE + s / NCOUNT;
            out->v[out->n++] = VBASE + (s % NCOUNT) / TCOUNT;
            if (s % TCOUNT)
                out->v[out->n++] = TBASE + s % TCOUNT;
            continue;
        }
        uint32_t r = record(cp);
        uint32_t len = (r >> NFKC_LEN_SHIFT) & 31;
        if (!len) {
            out->v[out->n++] = cp;
            continue;
        }
        if (sq_u32buf_reserve(out, len) != 0)
            return -1;
        memcpy(out->v + out->n, nfkc_pool + ((r >> NFKC_OFF_SHIFT) & 0x1FFFF), len * sizeof(uint32_t));
        out->n += len;
    }
    return busy ? reorder_compose(out) : 0;
}

/* The full canonical decomposition of cp (NULL when it has none; Hangul
 * syllables are not looked up here), *len code points. */
static const uint32_t *canon_of(uint32_t cp, uint32_t *len)
{
    size_t lo = 0, hi = NFC_NCANON;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((nfc_canon[mid] >> 21) < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == NFC_NCANON || (nfc_canon[lo] >> 21) != cp)
        return NULL;
    *len = (uint32_t)(nfc_canon[lo] & 7);
    return nfc_canon_pool + ((nfc_canon[lo] >> 3) & 0x3FFFF);
}

int sq_nfc(const uint32_t *in, size_t n, sq_u32buf *out)
{
    out->n = 0;
    if (sq_u32buf_reserve(out, n) != 0)
        return -1;
    /* 1. Full canonical decomposition. A precomposed Hangul syllable stays:
     *    it is a starter, and the one composition it takes part in (LV + T)
     *    is compose()'s. ASCII is its own NFC unless a non-ASCII mark
     *    follows (busy). */
    bool busy = false;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = in[i];
        if (out->n == out->cap && sq_u32buf_reserve(out, n - i) != 0)
            return -1;
        if (cp < 0x80) {
            out->v[out->n++] = cp;
            continue;
        }
        busy = true;
        uint32_t len = 0;
        const uint32_t *d = NULL;
        if (cp - SBASE >= SCOUNT && ((record(cp) >> NFKC_LEN_SHIFT) & 31))
            d = canon_of(cp, &len);
        if (!d) {
            out->v[out->n++] = cp;
            continue;
        }
        if (sq_u32buf_reserve(out, len) != 0)
            return -1;
        memcpy(out->v + out->n, d, len * sizeof(uint32_t));
        out->n += len;
    }
    return busy ? reorder_compose(out) : 0;
}

/* Steps 2 and 3 of both forms, in place over out. */
static int reorder_compose(sq_u32buf *out)
{
    uint32_t *v = out->v;
    size_t m = out->n;
    /* 2. Canonical ordering: stable sort of each run of non-starters. */
    for (size_t i = 0; i < m;) {
        if (ccc_of(v[i]) == 0) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < m && ccc_of(v[j]) != 0)
            j++;
        if (j - i > 1 && sort_run(v + i, j - i) != 0)
            return -1;
        i = j;
    }
    /* 3. Canonical composition, in place (the output never outgrows the
     *    input). A mark combines with the last starter unless blocked by a
     *    character in between of class 0 or of a class >= its own. */
    size_t w = 0, sp = SIZE_MAX;
    int last_cc = 0;
    for (size_t r = 0; r < m; r++) {
        uint32_t c = v[r];
        uint32_t rec = c < 0x300 ? 0 : record(c);
        int cc = (int)(rec & 0xFF);
        if (sp != SIZE_MAX && (rec & NFKC_SECOND_BIT) &&
            (w - 1 == sp || (last_cc != 0 && last_cc < cc))) {
            uint32_t comp = compose(v[sp], c);
            if (comp) {
                v[sp] = comp;
                continue;
            }
        }
        if (cc == 0)
            sp = w;
        v[w++] = c;
        last_cc = cc;
    }
    out->n = w;
    return 0;
}

/* Byte-level BPE: the byte alphabet, the added-token cut, the normalizer and
 * pre-tokenizer steps and the merges (tokenizer_bytelevel.h). The vocabulary,
 * its lookup and the merge loop are tokenizer_bpe.c's HF kind, run over the
 * byte-alphabet spelling of each split (which holds no ' ' and no U+2581,
 * the only characters that kind treats specially). */
#include "tokenizer_bytelevel.h"

#include <stdlib.h>
#include <string.h>

#include "tokenizer_bpe.h"
#include "unicode_nfkc.h"
#include "unicode_props.h"

/* A byte trie of the added tokens of one kind (raw or normalized). */
typedef struct trie_node {
    int32_t child, sibling; /* node indices, -1 none */
    int32_t id;             /* the token ending here, -1 none */
    uint8_t byte;
} trie_node;

typedef struct trie {
    trie_node *v;
    int32_t n, cap;
} trie;

struct sq_bl {
    sq_bpe *bpe;          /* pieces, lookup, merges */
    int32_t n;
    int32_t byte_id[256]; /* the piece of each byte's alphabet character */
    uint16_t byte_cp[256];
    char *dblob;          /* decoded bytes of every id, back to back */
    size_t *doff;
    uint32_t *dlen;
    uint8_t *special;
    uint8_t *strip;       /* per id: 1 lstrip, 2 rstrip (added tokens) */
    trie raw, norm;
    bool nfc, add_prefix_space, ignore_merges;
    sq_pretok_pattern pattern;
    int32_t bos, eos;
    size_t max_piece;
    sq_bl_added *added;   /* the spec's added tokens (for the .sqm form) */
    int32_t n_added;
};

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes are themselves, the
 * others U+0100 + their rank among the non-printable ones. */
static bool printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

static void byte_alphabet(uint16_t cp[256])
{
    int k = 0;
    for (int b = 0; b < 256; b++)
        cp[b] = printable(b) ? (uint16_t)b : (uint16_t)(0x100 + k++);
}

/* The byte a character of the alphabet stands for, -1 for any other. */
static int byte_of_cp(const sq_bl *t, uint32_t cp)
{
    if (cp < 256 && printable((int)cp))
        return (int)cp;
    if (cp >= 0x100 && cp < 0x100 + 68) {
        for (int b = 0; b < 256; b++)
            if (t->byte_cp[b] == cp)
                return b;
    }
    return -1;
}

static int trie_add(trie *tr, const char *s, int32_t id)
{
    if (tr->n == 0) {
        tr->cap = 64;
        if (!(tr->v = malloc((size_t)tr->cap * sizeof *tr->v)))
            return -1;
        tr->v[0] = (trie_node){-1, -1, -1, 0};
        tr->n = 1;
    }
    int32_t at = 0;
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        int32_t c = tr->v[at].child;
        while (c >= 0 && tr->v[c].byte != *p)
            c = tr->v[c].sibling;
        if (c < 0) {
            if (tr->n == tr->cap) {
                trie_node *nv = realloc(tr->v, (size_t)tr->cap * 2 * sizeof *nv);
                if (!nv)
                    return -1;
                tr->v = nv;
                tr->cap *= 2;
            }
            c = tr->n++;
            tr->v[c] = (trie_node){-1, tr->v[at].child, -1, *p};
            tr->v[at].child = c;
        }
        at = c;
    }
    if (tr->v[at].id < 0)
        tr->v[at].id = id;
    return 0;
}

/* The longest token of tr that s[i..n) starts with: its id, *end its end. */
static int32_t trie_longest(const trie *tr, const uint8_t *s, size_t n, size_t i, size_t *end)
{
    int32_t best = -1, at = 0;
    if (tr->n == 0)
        return -1;
    for (size_t k = i; k < n; k++) {
        int32_t c = tr->v[at].child;
        while (c >= 0 && tr->v[c].byte != s[k])
            c = tr->v[c].sibling;
        if (c < 0)
            break;
        at = c;
        if (tr->v[at].id >= 0) {
            best = tr->v[at].id;
            *end = k + 1;
        }
    }
    return best;
}

void sq_bl_free(sq_bl *t)
{
    if (!t)
        return;
    sq_bpe_free(t->bpe);
    free(t->dblob);
    free(t->doff);
    free(t->dlen);
    free(t->special);
    free(t->strip);
    free(t->raw.v);
    free(t->norm.v);
    free(t->added);
    free(t);
}

sq_bl *sq_bl_new(const sq_bl_spec *sp, const char *name, sq_err *err)
{
    if (sp->pattern != 0 && sp->pattern != SQ_PRETOK_GPT2 && sp->pattern != SQ_PRETOK_QWEN2) {
        sq_err_set(err, "%s: unknown pre-tokenizer pattern %d", name, (int)sp->pattern);
        return NULL;
    }
    if (sp->n_added < 0 || sp->n_added > sp->n_pieces) {
        sq_err_set(err, "%s: %d added tokens for %d pieces", name, (int)sp->n_added,
                   (int)sp->n_pieces);
        return NULL;
    }
    int32_t *special = malloc(((size_t)sp->n_added + 2) * sizeof *special);
    if (!special) {
        sq_err_set(err, "%s: out of memory", name);
        return NULL;
    }
    int32_t ns = 0;
    for (int32_t i = 0; i < sp->n_added; i++) {
        if (sp->added[i].id < 0 || sp->added[i].id >= sp->n_pieces) {
            free(special);
            sq_err_set(err, "%s: added token id %d is outside the vocabulary of %d", name,
                       (int)sp->added[i].id, (int)sp->n_pieces);
            return NULL;
        }
        if (sp->added[i].special)
            special[ns++] = sp->added[i].id;
    }
    if (sp->bos >= 0 && sp->bos < sp->n_pieces)
        special[ns++] = sp->bos;
    if (sp->eos >= 0 && sp->eos < sp->n_pieces)
        special[ns++] = sp->eos;
    sq_bpe_hf h = {sp->pieces, sp->n_pieces, sp->merges, sp->n_merges, false, false, false, false,
                   -1, sp->bos, sp->eos, special, ns};
    sq_bpe *bpe = sq_bpe_from_hf(&h, name, err); /* checks ids, pieces, merges */
    free(special);
    if (!bpe)
        return NULL;
    sq_bl *t = calloc(1, sizeof *t);
    if (!t) {
        sq_bpe_free(bpe);
        sq_err_set(err, "%s: out of memory", name);
        return NULL;
    }
    t->bpe = bpe;
    t->n = sp->n_pieces;
    t->nfc = sp->nfc;
    t->pattern = sp->pattern;
    t->add_prefix_space = sp->add_prefix_space;
    t->ignore_merges = sp->ignore_merges;
    t->bos = sp->bos, t->eos = sp->eos;
    if (sp->n_added > 0) {
        if (!(t->added = malloc((size_t)sp->n_added * sizeof *t->added)))
            goto oom;
        memcpy(t->added, sp->added, (size_t)sp->n_added * sizeof *t->added);
        t->n_added = sp->n_added;
    }
    byte_alphabet(t->byte_cp);
    for (int b = 0; b < 256; b++) {
        uint8_t u[4];
        int l = sq_utf8_encode(t->byte_cp[b], u);
        t->byte_id[b] = sq_bpe_lookup(bpe, (const char *)u, (size_t)l);
        if (t->byte_id[b] < 0) {
            sq_err_set(err, "%s: the vocabulary has no piece \"%.*s\" for byte 0x%02X (a "
                            "byte-level vocabulary holds all 256)",
                       name, l, (const char *)u, (unsigned)b);
            goto fail;
        }
    }
    /* decoded bytes of each id: never longer than its piece */
    size_t total = 0, raw_max = 0;
    for (int32_t i = 0; i < t->n; i++) {
        size_t l;
        sq_bpe_token(bpe, i, &l);
        total += l + 1;
    }
    t->dblob = malloc(total);
    t->doff = malloc((size_t)t->n * sizeof *t->doff);
    t->dlen = malloc((size_t)t->n * sizeof *t->dlen);
    t->special = calloc((size_t)t->n, 1);
    t->strip = calloc((size_t)t->n, 1);
    if (!t->dblob || !t->doff || !t->dlen || !t->special || !t->strip)
        goto oom;
    size_t at = 0;
    for (int32_t i = 0; i < t->n; i++) {
        size_t l;
        const uint8_t *p = (const uint8_t *)sq_bpe_token(bpe, i, &l);
        t->doff[i] = at;
        size_t k = 0, w = at;
        while (k < l) {
            uint32_t cp;
            k += sq_utf8_decode(p + k, l - k, &cp);
            int b = byte_of_cp(t, cp);
            if (b < 0)
                break;
            t->dblob[w++] = (char)b;
        }
        if (k < l || w - at == 0) { /* not all in the alphabet: the text itself */
            memcpy(t->dblob + at, p, l);
            w = at + l;
        }
        t->dlen[i] = (uint32_t)(w - at);
        t->dblob[w] = 0;
        at = w + 1;
        t->special[i] = sq_bpe_is_special(bpe, i);
        if (l > raw_max)
            raw_max = l;
    }
    /* A token stands for at most raw_max bytes of normalized text; NFC
     * composition shrinks text at most 3 to 1 (a Hangul L V T run). */
    t->max_piece = raw_max * (sp->nfc ? 3 : 1);
    if (t->max_piece < 4)
        t->max_piece = 4;
    for (int32_t i = 0; i < sp->n_added; i++) {
        const sq_bl_added *a = &sp->added[i];
        t->strip[a->id] |= (uint8_t)((a->lstrip ? 1 : 0) | (a->rstrip ? 2 : 0));
        if (trie_add(a->normalized ? &t->norm : &t->raw, sq_bpe_token(bpe, a->id, NULL), a->id) !=
            0)
            goto oom;
    }
    return t;
oom:
    sq_err_set(err, "%s: out of memory", name);
fail:
    sq_bl_free(t);
    return NULL;
}

/* ---- encoding ---- */

typedef struct scratch {
    int32_t *ids;
    int64_t n, cap;
    sq_u32buf cps, norm;
    size_t *offs;
    size_t offs_cap;
    char *bytes;          /* normalized text / mapped split */
    size_t bytes_cap;
    char *mapped;
    size_t mapped_cap;
} scratch;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int push_id(scratch *s, int32_t id)
{
    if (s->n == s->cap) {
        int64_t c = s->cap ? s->cap * 2 : 256;
        int32_t *v = realloc(s->ids, (size_t)c * sizeof *v);
        if (!v)
            return -1;
        s->ids = v;
        s->cap = c;
    }
    s->ids[s->n++] = id;
    return 0;
}

/* Step 4 over one split's bytes. */
static int bpe_split(const sq_bl *t, const uint8_t *p, size_t n, scratch *s)
{
    if (n == 0)
        return 0;
    if (grow((void **)&s->mapped, &s->mapped_cap, 2 * n + 1, 1) != 0)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += (size_t)sq_utf8_encode(t->byte_cp[p[i]], (uint8_t *)s->mapped + m);
    if (t->ignore_merges) {
        int32_t id = sq_bpe_lookup(t->bpe, s->mapped, m);
        if (id >= 0)
            return push_id(s, id);
    }
    if (n == 1)
        return push_id(s, t->byte_id[p[0]]);
    int32_t *ids = NULL;
    int64_t k = sq_bpe_encode(t->bpe, s->mapped, m, false, false, &ids);
    if (k < 0)
        return -1;
    int rc = 0;
    for (int64_t i = 0; i < k && rc == 0; i++)
        rc = push_id(s, ids[i]);
    free(ids);
    return rc;
}

/* Step 3 over one piece of normalized text (valid UTF-8). */
static int pretokenize(const sq_bl *t, const uint8_t *p, size_t n, scratch *s)
{
    if (n == 0)
        return 0;
    const uint8_t *src = p;
    if (t->add_prefix_space && p[0] != ' ') {
        /* copy behind a space; s->bytes may hold p: use a fresh buffer */
        uint8_t *q = malloc(n + 1);
        if (!q)
            return -1;
        q[0] = ' ';
        memcpy(q + 1, p, n);
        src = q;
        n++;
    }
    int rc = 0;
    if (!t->pattern) {
        rc = bpe_split(t, src, n, s);
    } else {
        s->cps.n = 0;
        if (sq_u32buf_reserve(&s->cps, n) != 0 ||
            grow((void **)&s->offs, &s->offs_cap, n + 1, sizeof *s->offs) != 0) {
            rc = -1;
            goto out;
        }
        size_t m = 0;
        for (size_t i = 0; i < n;) {
            s->offs[m] = i;
            i += sq_utf8_decode(src + i, n - i, &s->cps.v[m++]);
        }
        s->offs[m] = n;
        for (size_t i = 0; i < m && rc == 0;) {
            size_t e = sq_pretok_match(t->pattern, s->cps.v, m, i);
            rc = bpe_split(t, src + s->offs[i], s->offs[e] - s->offs[i], s);
            i = e;
        }
    }
out:
    if (src != p)
        free((void *)src);
    return rc;
}

/* The start of the whitespace run that ends at p[end] (not before from). */
static size_t ws_back(const uint8_t *p, size_t from, size_t end)
{
    while (end > from) {
        size_t k = end - 1;
        while (k > from && (p[k] & 0xC0) == 0x80) /* the start of the last character */
            k--;
        uint32_t cp;
        sq_utf8_decode(p + k, end - k, &cp);
        if (!sq_uni_is_whitespace(cp))
            break;
        end = k;
    }
    return end;
}

/* The end of the whitespace run that starts at p[i]. */
static size_t ws_forward(const uint8_t *p, size_t n, size_t i)
{
    while (i < n) {
        uint32_t cp;
        size_t l = sq_utf8_decode(p + i, n - i, &cp);
        if (!sq_uni_is_whitespace(cp))
            break;
        i += l;
    }
    return i;
}

/* Cut the tokens of tr out of p[0..n), leftmost-longest (with their lstrip /
 * rstrip whitespace); the text between them goes to next. */
static int cut(const sq_bl *t, const trie *tr, const uint8_t *p, size_t n, scratch *s,
               int (*next)(const sq_bl *, const uint8_t *, size_t, scratch *))
{
    size_t from = 0;
    for (size_t i = 0; i < n;) {
        size_t end = 0;
        int32_t id = trie_longest(tr, p, n, i, &end);
        if (id < 0) {
            i++;
            continue;
        }
        size_t start = t->strip[id] & 1 ? ws_back(p, from, i) : i;
        if (t->strip[id] & 2)
            end = ws_forward(p, n, end);
        if (next(t, p + from, start - from, s) != 0 || push_id(s, id) != 0)
            return -1;
        i = from = end;
    }
    return next(t, p + from, n - from, s);
}

static int cut_normalized(const sq_bl *t, const uint8_t *p, size_t n, scratch *s)
{
    return cut(t, &t->norm, p, n, s, pretokenize);
}

/* Step 2 over a segment of raw text (valid UTF-8). */
static int normalize_segment(const sq_bl *t, const uint8_t *p, size_t n, scratch *s)
{
    if (n == 0)
        return 0;
    if (!t->nfc)
        return cut_normalized(t, p, n, s);
    s->cps.n = 0;
    if (sq_u32buf_reserve(&s->cps, n) != 0)
        return -1;
    for (size_t i = 0; i < n;)
        i += sq_utf8_decode(p + i, n - i, &s->cps.v[s->cps.n++]);
    if (sq_nfc(s->cps.v, s->cps.n, &s->norm) != 0)
        return -1;
    if (grow((void **)&s->bytes, &s->bytes_cap, 4 * s->norm.n + 1, 1) != 0)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < s->norm.n; i++)
        m += (size_t)sq_utf8_encode(s->norm.v[i], (uint8_t *)s->bytes + m);
    /* pretokenize reuses cps, not bytes: bytes stays intact below */
    return cut_normalized(t, (const uint8_t *)s->bytes, m, s);
}

/* The text with each maximal ill-formed subpart as U+FFFD (malloc'd). */
static char *lossy(const char *text, size_t len, size_t *out_len)
{
    char *o = malloc(3 * len + 1);
    if (!o)
        return NULL;
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += sq_utf8_decode((const uint8_t *)text + i, len - i, &cp);
        w += (size_t)sq_utf8_encode(cp, (uint8_t *)o + w);
    }
    *out_len = w;
    return o;
}

int64_t sq_bl_encode(const sq_bl *t, const char *text, size_t len, bool bos, bool eos,
                     int32_t **ids_out)
{
    *ids_out = NULL;
    if (len > (1u << 28))
        return -1;
    scratch s = {0};
    char *fixed = NULL;
    int64_t count = -1;
    if (!sq_utf8_valid((const uint8_t *)text, len)) {
        if (!(fixed = lossy(text, len, &len)))
            return -1;
        text = fixed;
    }
    if (bos && t->bos >= 0 && push_id(&s, t->bos) != 0)
        goto out;
    if (cut(t, &t->raw, (const uint8_t *)text, len, &s, normalize_segment) != 0)
        goto out;
    if (eos && t->eos >= 0 && push_id(&s, t->eos) != 0)
        goto out;
    if (s.n == 0 && push_id(&s, 0) == 0) /* a non-NULL array for an empty result */
        s.n = 0;
    if (!s.ids)
        goto out;
    count = s.n;
    *ids_out = s.ids;
    s.ids = NULL;
out:
    free(fixed);
    free(s.ids);
    free(s.cps.v);
    free(s.norm.v);
    free(s.offs);
    free(s.bytes);
    free(s.mapped);
    return count;
}

/* ---- decoding and lookups ---- */

const char *sq_bl_decode_piece(const sq_bl *t, int32_t id, size_t *len)
{
    *len = 0;
    if (id < 0 || id >= t->n || t->special[id])
        return "";
    *len = t->dlen[id];
    return t->dblob + t->doff[id];
}

int32_t sq_bl_vocab_size(const sq_bl *t) { return t->n; }
int32_t sq_bl_bos(const sq_bl *t) { return t->bos; }
int32_t sq_bl_eos(const sq_bl *t) { return t->eos; }
bool sq_bl_is_special(const sq_bl *t, int32_t id) { return id >= 0 && id < t->n && t->special[id]; }
const char *sq_bl_token(const sq_bl *t, int32_t id) { return sq_bpe_token(t->bpe, id, NULL); }
int32_t sq_bl_lookup(const sq_bl *t, const char *s, size_t len)
{
    return sq_bpe_lookup(t->bpe, s, len);
}
size_t sq_bl_max_piece_bytes(const sq_bl *t) { return t->max_piece; }

void sq_bl_settings(const sq_bl *t, sq_bl_spec *out)
{
    sq_bpe_hf h;
    sq_bpe_hf_settings(t->bpe, &h);
    *out = (sq_bl_spec){NULL, t->n, NULL, h.n_merges, t->nfc, t->pattern, t->add_prefix_space,
                        t->ignore_merges, t->added, t->n_added, t->bos, t->eos};
}

void sq_bl_merge_pair(const sq_bl *t, int32_t r, int32_t *a, int32_t *b)
{
    sq_bpe_merge_pair(t->bpe, r, a, b);
}

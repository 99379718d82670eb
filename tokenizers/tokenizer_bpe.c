#include "tokenizer_bpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

struct sq_bpe {
    int32_t n;
    char *blob;        /* every piece, NUL-terminated, back to back */
    size_t *off;       /* [n] piece start in blob */
    uint32_t *len;     /* [n] */
    float *score;      /* [n] */
    int16_t *byte_of;  /* [n] the byte of a <0xXX> piece, else -1 */
    int32_t byte_id[256]; /* the <0xXX> token of each byte (-1 when absent) */
    int32_t *slots;    /* open addressing: id or -1; cap a power of two */
    size_t cap;
    char bytes[256];   /* byte b decodes to bytes + b */
    int32_t bos, eos, unk; /* -1: none */
    uint8_t *special;  /* [n] 1: decodes to nothing */
    /* The HF kind (hf true): ranked merges, and the decoded pieces ("▁" as
     * ' '; for llama2.c they are the pieces themselves). */
    bool hf, add_prefix, split, byte_fallback, fuse_unk;
    int32_t n_merges;
    int32_t *merges;   /* [n_merges][3] left, right, merged id; the rank is the row */
    int32_t *mslots;   /* open addressing over (left, right): row or -1 */
    size_t mcap;
    char *dblob;       /* decoded pieces, NUL-terminated (== blob for llama2.c) */
    size_t *doff;
    uint32_t *dlen;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

int32_t sq_bpe_lookup(const sq_bpe *t, const char *s, size_t len)
{
    for (size_t i = hash_bytes(s, len) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        int32_t id = t->slots[i];
        if (id < 0)
            return -1;
        if (t->len[id] == len && memcmp(t->blob + t->off[id], s, len) == 0)
            return id;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* "<0xXX>" with upper-case hex, as SentencePiece names its byte pieces. */
static int byte_piece(const char *p, size_t len)
{
    if (len != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    int hi = hexval(p[3]), lo = hexval(p[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static int32_t rd_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

sq_bpe *sq_bpe_from_memory(const uint8_t *data, size_t size, const char *name, sq_err *err)
{
    if (size < 4) {
        sq_err_set(err, "%s: %zu bytes: too short for a llama2.c tokenizer", name, size);
        return NULL;
    }
    int32_t maxlen = rd_i32(data);
    if (maxlen < 1 || maxlen > SQ_BPE_MAX_TOKEN_LEN) {
        sq_err_set(err, "%s: max_token_length %d is outside [1, %d]: not a llama2.c tokenizer",
                   name, maxlen, SQ_BPE_MAX_TOKEN_LEN);
        return NULL;
    }
    /* First pass: count and validate the records. */
    int64_t n = 0;
    size_t pos = 4, text = 0;
    while (pos < size) {
        if (size - pos < 8) {
            sq_err_set(err, "%s: token %lld: record truncated at byte %zu", name, (long long)n, pos);
            return NULL;
        }
        float sc;
        memcpy(&sc, data + pos, 4);
        int32_t l = rd_i32(data + pos + 4);
        if (!isfinite(sc)) {
            sq_err_set(err, "%s: token %lld: non-finite score", name, (long long)n);
            return NULL;
        }
        if (l < 1 || l > maxlen) {
            sq_err_set(err, "%s: token %lld: length %d is outside [1, max_token_length %d]", name,
                       (long long)n, l, maxlen);
            return NULL;
        }
        if (size - pos - 8 < (size_t)l) {
            sq_err_set(err, "%s: token %lld: %d bytes announced, %zu left (truncated file)", name,
                       (long long)n, l, size - pos - 8);
            return NULL;
        }
        if (memchr(data + pos + 8, 0, (size_t)l)) {
            sq_err_set(err, "%s: token %lld holds a NUL byte", name, (long long)n);
            return NULL;
        }
        pos += 8 + (size_t)l;
        text += (size_t)l + 1;
        if (++n > (1 << 22)) {
            sq_err_set(err, "%s: more than %d tokens", name, 1 << 22);
            return NULL;
        }
    }
    if (n < 3) {
        sq_err_set(err, "%s: %lld tokens: a llama2.c vocabulary has at least <unk>, <s>, </s>",
                   name, (long long)n);
        return NULL;
    }
    sq_bpe *t = calloc(1, sizeof *t);
    if (!t)
        goto oom;
    t->n = (int32_t)n;
    t->cap = 16;
    while (t->cap < (size_t)n * 2)
        t->cap *= 2;
    t->blob = malloc(text);
    t->off = malloc((size_t)n * sizeof *t->off);
    t->len = malloc((size_t)n * sizeof *t->len);
    t->score = malloc((size_t)n * sizeof *t->score);
    t->byte_of = malloc((size_t)n * sizeof *t->byte_of);
    t->slots = malloc(t->cap * sizeof *t->slots);
    if (!t->blob || !t->off || !t->len || !t->score || !t->byte_of || !t->slots)
        goto oom;
    memset(t->slots, 0xff, t->cap * sizeof *t->slots);
    for (int b = 0; b < 256; b++) {
        t->byte_id[b] = -1;
        t->bytes[b] = (char)b;
    }
    pos = 4;
    size_t at = 0;
    for (int32_t i = 0; i < t->n; i++) {
        memcpy(&t->score[i], data + pos, 4);
        uint32_t l = (uint32_t)rd_i32(data + pos + 4);
        memcpy(t->blob + at, data + pos + 8, l);
        t->blob[at + l] = 0;
        t->off[i] = at;
        t->len[i] = l;
        pos += 8 + l;
        at += l + 1;
        int b = byte_piece(t->blob + t->off[i], l);
        t->byte_of[i] = (int16_t)b;
        if (b >= 0 && t->byte_id[b] < 0)
            t->byte_id[b] = i;
        if (sq_bpe_lookup(t, t->blob + t->off[i], l) >= 0)
            continue; /* a duplicate piece: the first id keeps it */
        size_t s = hash_bytes(t->blob + t->off[i], l) & (t->cap - 1);
        while (t->slots[s] >= 0)
            s = (s + 1) & (t->cap - 1);
        t->slots[s] = i;
    }
    for (int b = 0; b < 256; b++)
        if (t->byte_id[b] < 0)
            t->byte_id[b] = SQ_BPE_UNK;
    t->bos = SQ_BPE_BOS, t->eos = SQ_BPE_EOS, t->unk = SQ_BPE_UNK;
    if (!(t->special = calloc((size_t)n, 1)))
        goto oom;
    t->special[SQ_BPE_BOS] = t->special[SQ_BPE_EOS] = 1;
    t->dblob = t->blob, t->doff = t->off, t->dlen = t->len;
    return t;
oom:
    sq_bpe_free(t);
    sq_err_set(err, "%s: out of memory", name);
    return NULL;
}

sq_bpe *sq_bpe_load(const char *path, sq_err *err)
{
    char *buf;
    size_t len;
    if (sq_read_regular_file(path, SQ_BPE_MAX_FILE, &buf, &len, err) != 0)
        return NULL;
    sq_bpe *t = sq_bpe_from_memory((const uint8_t *)buf, len, path, err);
    free(buf);
    return t;
}

void sq_bpe_free(sq_bpe *t)
{
    if (!t)
        return;
    free(t->blob);
    free(t->off);
    free(t->len);
    free(t->score);
    free(t->byte_of);
    free(t->slots);
    free(t->special);
    free(t->merges);
    free(t->mslots);
    if (t->dblob != t->blob) {
        free(t->dblob);
        free(t->doff);
        free(t->dlen);
    }
    free(t);
}

int32_t sq_bpe_vocab_size(const sq_bpe *t) { return t->n; }

const char *sq_bpe_token(const sq_bpe *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n)
        return NULL;
    if (len)
        *len = t->len[id];
    return t->blob + t->off[id];
}

float sq_bpe_score(const sq_bpe *t, int32_t id)
{
    return id >= 0 && id < t->n && !t->hf ? t->score[id] : 0.0f;
}

bool sq_bpe_is_hf(const sq_bpe *t) { return t->hf; }
bool sq_bpe_is_special(const sq_bpe *t, int32_t id) { return id >= 0 && id < t->n && t->special[id]; }
int32_t sq_bpe_bos(const sq_bpe *t) { return t->bos; }
int32_t sq_bpe_eos(const sq_bpe *t) { return t->eos; }

/* ---- the HF kind ---- */

static uint64_t pair_hash(int32_t a, int32_t b)
{
    uint64_t h = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

/* The merge row of (a, b), -1 when none. */
static int32_t merge_of(const sq_bpe *t, int32_t a, int32_t b)
{
    for (size_t i = pair_hash(a, b) & (t->mcap - 1);; i = (i + 1) & (t->mcap - 1)) {
        int32_t r = t->mslots[i];
        if (r < 0 || (t->merges[3 * r] == a && t->merges[3 * r + 1] == b))
            return r;
    }
}

void sq_bpe_hf_settings(const sq_bpe *t, sq_bpe_hf *o)
{
    memset(o, 0, sizeof *o);
    o->n_pieces = t->n;
    o->n_merges = t->n_merges;
    o->add_prefix = t->add_prefix, o->split = t->split;
    o->byte_fallback = t->byte_fallback, o->fuse_unk = t->fuse_unk;
    o->unk = t->unk, o->bos = t->bos, o->eos = t->eos;
}

void sq_bpe_merge_pair(const sq_bpe *t, int32_t r, int32_t *a, int32_t *b)
{
    *a = t->merges[3 * r];
    *b = t->merges[3 * r + 1];
}

static const char META[] = "\xe2\x96\x81"; /* U+2581 */

sq_bpe *sq_bpe_from_hf(const sq_bpe_hf *sp, const char *name, sq_err *err)
{
    const int32_t n = sp->n_pieces;
    if (n < 1 || n > (1 << 22)) {
        sq_err_set(err, "%s: %d pieces (1 .. %d)", name, (int)n, 1 << 22);
        return NULL;
    }
    if (sp->n_merges < 0 || sp->n_merges > SQ_BPE_MAX_MERGES) {
        sq_err_set(err, "%s: %d merges (0 .. %d)", name, (int)sp->n_merges, SQ_BPE_MAX_MERGES);
        return NULL;
    }
    const int32_t ids[3] = {sp->unk, sp->bos, sp->eos};
    static const char *const idn[3] = {"unk", "bos", "eos"};
    for (int i = 0; i < 3; i++)
        if (ids[i] < -1 || ids[i] >= n) {
            sq_err_set(err, "%s: %s id %d is outside the vocabulary of %d", name, idn[i],
                       (int)ids[i], (int)n);
            return NULL;
        }
    size_t text = 0, dtext = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t l = strlen(sp->pieces[i]);
        if (l < 1 || l > SQ_BPE_MAX_TOKEN_LEN) {
            sq_err_set(err, "%s: piece %d has %zu bytes (1 .. %d)", name, (int)i, l,
                       SQ_BPE_MAX_TOKEN_LEN);
            return NULL;
        }
        text += l + 1;
        dtext += l + 1; /* "▁" -> ' ' only shortens */
    }
    sq_bpe *t = calloc(1, sizeof *t);
    if (!t)
        goto oom;
    t->n = n;
    t->hf = true;
    t->add_prefix = sp->add_prefix, t->split = sp->split;
    t->byte_fallback = sp->byte_fallback, t->fuse_unk = sp->fuse_unk;
    t->unk = sp->unk, t->bos = sp->bos, t->eos = sp->eos;
    t->cap = 16;
    while (t->cap < (size_t)n * 2)
        t->cap *= 2;
    t->mcap = 16;
    while (t->mcap < (size_t)sp->n_merges * 2)
        t->mcap *= 2;
    t->blob = malloc(text);
    t->off = malloc((size_t)n * sizeof *t->off);
    t->len = malloc((size_t)n * sizeof *t->len);
    t->score = calloc((size_t)n, sizeof *t->score);
    t->byte_of = malloc((size_t)n * sizeof *t->byte_of);
    t->slots = malloc(t->cap * sizeof *t->slots);
    t->special = calloc((size_t)n, 1);
    t->dblob = malloc(dtext);
    t->doff = malloc((size_t)n * sizeof *t->doff);
    t->dlen = malloc((size_t)n * sizeof *t->dlen);
    t->merges = malloc(((size_t)sp->n_merges * 3 + 1) * sizeof *t->merges);
    t->mslots = malloc(t->mcap * sizeof *t->mslots);
    if (!t->blob || !t->off || !t->len || !t->score || !t->byte_of || !t->slots ||
        !t->special || !t->dblob || !t->doff || !t->dlen || !t->merges || !t->mslots)
        goto oom;
    memset(t->slots, 0xff, t->cap * sizeof *t->slots);
    memset(t->mslots, 0xff, t->mcap * sizeof *t->mslots);
    for (int b = 0; b < 256; b++) {
        t->byte_id[b] = -1;
        t->bytes[b] = (char)b;
    }
    size_t at = 0, dat = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *p = sp->pieces[i];
        uint32_t l = (uint32_t)strlen(p);
        memcpy(t->blob + at, p, l + 1);
        t->off[i] = at;
        t->len[i] = l;
        at += l + 1;
        t->doff[i] = dat;
        for (uint32_t k = 0; k < l;) {
            if (l - k >= 3 && memcmp(p + k, META, 3) == 0) {
                t->dblob[dat++] = ' ';
                k += 3;
            } else {
                t->dblob[dat++] = p[k++];
            }
        }
        t->dblob[dat++] = 0;
        t->dlen[i] = (uint32_t)(dat - 1 - t->doff[i]);
        int b = byte_piece(p, l);
        t->byte_of[i] = (int16_t)b;
        if (b >= 0 && t->byte_id[b] < 0)
            t->byte_id[b] = i;
        if (sq_bpe_lookup(t, p, l) >= 0) {
            sq_err_set(err, "%s: piece \"%.64s\" appears twice (ids %d and %d)", name, p,
                       (int)sq_bpe_lookup(t, p, l), (int)i);
            goto fail;
        }
        size_t s = hash_bytes(p, l) & (t->cap - 1);
        while (t->slots[s] >= 0)
            s = (s + 1) & (t->cap - 1);
        t->slots[s] = i;
    }
    for (int32_t i = 0; i < sp->n_special; i++) {
        if (sp->special[i] < 0 || sp->special[i] >= n) {
            sq_err_set(err, "%s: special id %d is outside the vocabulary of %d", name,
                       (int)sp->special[i], (int)n);
            goto fail;
        }
        t->special[sp->special[i]] = 1;
    }
    char cat[2 * SQ_BPE_MAX_TOKEN_LEN];
    for (int32_t r = 0; r < sp->n_merges; r++) {
        const int32_t a = sp->merges[2 * r], b = sp->merges[2 * r + 1];
        if (a < 0 || a >= n || b < 0 || b >= n) {
            sq_err_set(err, "%s: merge %d (%d, %d) names an id outside the vocabulary of %d",
                       name, (int)r, (int)a, (int)b, (int)n);
            goto fail;
        }
        memcpy(cat, t->blob + t->off[a], t->len[a]);
        memcpy(cat + t->len[a], t->blob + t->off[b], t->len[b]);
        int32_t m = sq_bpe_lookup(t, cat, (size_t)t->len[a] + t->len[b]);
        if (m < 0) {
            sq_err_set(err, "%s: merge %d \"%.64s\" + \"%.64s\" makes no piece of the vocabulary",
                       name, (int)r, t->blob + t->off[a], t->blob + t->off[b]);
            goto fail;
        }
        t->merges[3 * r] = a, t->merges[3 * r + 1] = b, t->merges[3 * r + 2] = m;
        t->n_merges = r; /* rows 0 .. r-1 are in the table */
        if (merge_of(t, a, b) >= 0) {
            sq_err_set(err, "%s: merge %d \"%.64s\" + \"%.64s\" appears twice", name, (int)r,
                       t->blob + t->off[a], t->blob + t->off[b]);
            goto fail;
        }
        size_t s = pair_hash(a, b) & (t->mcap - 1);
        while (t->mslots[s] >= 0)
            s = (s + 1) & (t->mcap - 1);
        t->mslots[s] = r;
    }
    t->n_merges = sp->n_merges;
    return t;
oom:
    sq_err_set(err, "%s: out of memory", name);
fail:
    sq_bpe_free(t);
    return NULL;
}

/* ---- encoding ---- */

typedef struct sym {
    int32_t start, len, id, prev, next;
    bool mergeable, alive, word_start;
} sym;

/* A candidate merge: key lower first (llama2.c: minus the score of the
 * merged piece; HF: the merge's rank), then the leftmost pair. */
typedef struct cand {
    double key;
    int32_t left, right, len, id;
} cand;

static bool cand_before(const cand *a, const cand *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

typedef struct heap {
    cand *v;
    size_t n, cap;
} heap;

static int heap_push(heap *h, cand c)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        cand *v = realloc(h->v, nc * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0 && cand_before(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
    return 0;
}

static cand heap_pop(heap *h)
{
    cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && cand_before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!cand_before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0)
        h->v[i] = last;
    return top;
}

static int try_pair(const sq_bpe *t, const char *buf, const sym *s, int32_t a, int32_t b, heap *h)
{
    if (a < 0 || b < 0 || !s[a].mergeable || !s[b].mergeable || s[b].word_start)
        return 0;
    int32_t len = s[a].len + s[b].len;
    if (t->hf) {
        int32_t r = merge_of(t, s[a].id, s[b].id);
        return r < 0 ? 0 : heap_push(h, (cand){(double)r, a, b, len, t->merges[3 * r + 2]});
    }
    int32_t id = sq_bpe_lookup(t, buf + s[a].start, (size_t)len);
    if (id < 0 || !(t->score[id] > -1e10f))
        return 0;
    return heap_push(h, (cand){-(double)t->score[id], a, b, len, id});
}

/* The text as the vocabulary spells it: llama2.c: ' ' in front (the dummy
 * prefix of a non-empty text); HF: every ' ' as "▁", and "▁" in front with
 * add_prefix. *n gets its length. */
static char *normalize(const sq_bpe *t, const char *text, size_t len, size_t *n)
{
    if (!t->hf) {
        char *buf = malloc(len + 2);
        if (buf && len) {
            buf[0] = ' ';
            memcpy(buf + 1, text, len);
        }
        *n = len ? len + 1 : 0;
        return buf;
    }
    size_t spaces = 0;
    for (size_t i = 0; i < len; i++)
        spaces += text[i] == ' ';
    char *buf = malloc(len + 2 * spaces + 4), *o = buf;
    if (!buf)
        return NULL;
    if (len && t->add_prefix)
        memcpy(o, META, 3), o += 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ')
            memcpy(o, META, 3), o += 3;
        else
            *o++ = text[i];
    }
    *n = (size_t)(o - buf);
    return buf;
}

int64_t sq_bpe_encode(const sq_bpe *t, const char *text, size_t len, bool bos, bool eos,
                      int32_t **ids_out)
{
    *ids_out = NULL;
    if (len > (1u << 28))
        return -1;
    size_t n = 0;
    char *buf = normalize(t, text, len, &n);
    sym *s = malloc((n + 1) * sizeof *s);
    int32_t *ids = malloc((n + 2) * sizeof *ids);
    heap h = {0};
    int64_t count = -1;
    if (!buf || !s || !ids)
        goto out;
    int32_t ns = 0;
    for (size_t i = 0; i < n;) {
        size_t g = 1; /* a byte and the continuation bytes after it, 4 at most */
        while (g < 4 && i + g < n && ((uint8_t)buf[i + g] & 0xC0) == 0x80)
            g++;
        const bool ws = t->split && g == 3 && memcmp(buf + i, META, 3) == 0;
        int32_t id = sq_bpe_lookup(t, buf + i, g);
        bool bytes_ok = true;
        for (size_t k = 0; t->hf && k < g; k++)
            bytes_ok = bytes_ok && t->byte_id[(uint8_t)buf[i + k]] >= 0;
        if (id >= 0) {
            s[ns] = (sym){(int32_t)i, (int32_t)g, id, ns - 1, ns + 1, true, true, ws};
            ns++;
        } else if (!t->hf || (t->byte_fallback && bytes_ok)) {
            /* llama2.c: byte pieces never merge; HF: they merge when a merge says so */
            for (size_t k = 0; k < g; k++, ns++)
                s[ns] = (sym){(int32_t)(i + k), 1, t->byte_id[(uint8_t)buf[i + k]], ns - 1,
                              ns + 1, t->hf, true, ws && k == 0};
        } else if (t->unk >= 0) {
            if (t->fuse_unk && ns > 0 && s[ns - 1].id == t->unk && !ws) {
                s[ns - 1].len += (int32_t)g;
            } else {
                s[ns] = (sym){(int32_t)i, (int32_t)g, t->unk, ns - 1, ns + 1, true, true, ws};
                ns++;
            }
        } /* else: no unk to give, the character is dropped (as the tokenizers library) */
        i += g;
    }
    if (ns > 0)
        s[ns - 1].next = -1;
    for (int32_t i = 0; i + 1 < ns; i++)
        if (try_pair(t, buf, s, i, i + 1, &h) != 0)
            goto out;
    while (h.n > 0) {
        cand c = heap_pop(&h);
        sym *a = &s[c.left], *b = &s[c.right];
        if (!a->alive || !b->alive || a->next != c.right || a->len + b->len != c.len)
            continue; /* stale: one side has merged since */
        a->len = c.len;
        a->id = c.id;
        b->alive = false;
        a->next = b->next;
        if (b->next >= 0)
            s[b->next].prev = c.left;
        if (try_pair(t, buf, s, a->prev, c.left, &h) != 0 ||
            try_pair(t, buf, s, c.left, a->next, &h) != 0)
            goto out;
    }
    count = 0;
    if (bos && t->bos >= 0)
        ids[count++] = t->bos;
    for (int32_t i = ns > 0 ? 0 : -1; i >= 0; i = s[i].next)
        ids[count++] = s[i].id;
    if (eos && t->eos >= 0)
        ids[count++] = t->eos;
    *ids_out = ids;
    ids = NULL;
out:
    free(buf);
    free(s);
    free(ids);
    free(h.v);
    return count;
}

/* ---- decoding ---- */

const char *sq_bpe_decode_piece(const sq_bpe *t, int32_t prev, int32_t id, size_t *len)
{
    *len = 0;
    if (id < 0 || id >= t->n || t->special[id])
        return "";
    if (t->byte_of[id] >= 0) {
        *len = 1;
        return t->bytes + t->byte_of[id];
    }
    const char *p = t->dblob + t->doff[id];
    size_t l = t->dlen[id];
    if (prev >= 0 && prev == t->bos && l > 0 && p[0] == ' ') {
        p++;
        l--;
    }
    *len = l;
    return p;
}

char *sq_bpe_decode(const sq_bpe *t, int32_t prev, const int32_t *ids, int64_t n, size_t *len)
{
    size_t total = 0, l;
    for (int64_t i = 0; i < n; i++) {
        sq_bpe_decode_piece(t, i ? ids[i - 1] : prev, ids[i], &l);
        total += l;
    }
    char *out = malloc(total + 1);
    if (!out)
        return NULL;
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *p = sq_bpe_decode_piece(t, i ? ids[i - 1] : prev, ids[i], &l);
        memcpy(out + at, p, l);
        at += l;
    }
    out[at] = 0;
    if (len)
        *len = at;
    return out;
}

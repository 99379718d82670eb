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
    int32_t byte_id[256]; /* the <0xXX> token of each byte (SQ_BPE_UNK when absent) */
    int32_t *slots;    /* open addressing: id or -1; cap a power of two */
    size_t cap;
    char bytes[256];   /* byte b decodes to bytes + b */
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
    return id >= 0 && id < t->n ? t->score[id] : 0.0f;
}

/* ---- encoding ---- */

typedef struct sym {
    int32_t start, len, id, prev, next;
    bool mergeable, alive;
} sym;

typedef struct cand {
    float score;
    int32_t left, right, len, id;
} cand;

/* a before b: the higher score, then the leftmost pair. */
static bool cand_before(const cand *a, const cand *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
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
    if (a < 0 || b < 0 || !s[a].mergeable || !s[b].mergeable)
        return 0;
    int32_t len = s[a].len + s[b].len;
    int32_t id = sq_bpe_lookup(t, buf + s[a].start, (size_t)len);
    if (id < 0 || !(t->score[id] > -1e10f))
        return 0;
    return heap_push(h, (cand){t->score[id], a, b, len, id});
}

int64_t sq_bpe_encode(const sq_bpe *t, const char *text, size_t len, bool bos, bool eos,
                      int32_t **ids_out)
{
    *ids_out = NULL;
    if (len > (1u << 30))
        return -1;
    /* The dummy prefix is the first character of the text. */
    size_t n = len ? len + 1 : 0;
    char *buf = malloc(n + 1);
    sym *s = malloc((n + 1) * sizeof *s);
    int32_t *ids = malloc((n + 2) * sizeof *ids);
    heap h = {0};
    int64_t count = -1;
    if (!buf || !s || !ids)
        goto out;
    if (len) {
        buf[0] = ' ';
        memcpy(buf + 1, text, len);
    }
    int32_t ns = 0;
    for (size_t i = 0; i < n;) {
        size_t g = 1; /* a byte and the continuation bytes after it, 4 at most */
        while (g < 4 && i + g < n && ((uint8_t)buf[i + g] & 0xC0) == 0x80)
            g++;
        int32_t id = sq_bpe_lookup(t, buf + i, g);
        if (id >= 0) {
            s[ns] = (sym){(int32_t)i, (int32_t)g, id, ns - 1, ns + 1, true, true};
            ns++;
        } else {
            for (size_t k = 0; k < g; k++, ns++)
                s[ns] = (sym){(int32_t)(i + k), 1, t->byte_id[(uint8_t)buf[i + k]], ns - 1,
                              ns + 1, false, true};
        }
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
    if (bos)
        ids[count++] = SQ_BPE_BOS;
    for (int32_t i = ns > 0 ? 0 : -1; i >= 0; i = s[i].next)
        ids[count++] = s[i].id;
    if (eos)
        ids[count++] = SQ_BPE_EOS;
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
    if (id < 0 || id >= t->n || id == SQ_BPE_BOS || id == SQ_BPE_EOS)
        return "";
    if (t->byte_of[id] >= 0) {
        *len = 1;
        return t->bytes + t->byte_of[id];
    }
    const char *p = t->blob + t->off[id];
    size_t l = t->len[id];
    if (prev == SQ_BPE_BOS && l > 0 && p[0] == ' ') {
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

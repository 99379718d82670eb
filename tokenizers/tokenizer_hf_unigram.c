/* The Hugging Face Unigram tokenizer (tokenizer_hf_unigram.h). Our own
 * code, written from the behaviour of the Rust tokenizers library
 * (AddedVocabulary, Precompiled, Replace, Metaspace, Unigram with fuse_unk)
 * and checked against it (tests/tokenizer/README.md). */
#include "tokenizer_hf_unigram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "precompiled_norm.h"
#include "unicode_props.h"

#define META "\xE2\x96\x81" /* U+2581 */

typedef struct {
    const char *s;
    size_t len;
    int32_t id;
    bool lstrip, rstrip;
} added_tok;

struct sq_hfu {
    int32_t n;
    char *blob;       /* pieces, NUL-separated */
    uint32_t *off;    /* [n + 1] byte offsets into blob */
    double *score;
    char *dblob;      /* decoded pieces (U+2581 -> ' '), NUL-separated */
    uint32_t *doff;   /* [n] */
    int32_t *table;   /* open addressing: id + 1, 0 empty */
    uint64_t mask;
    size_t max_len;   /* longest piece in bytes */
    double unk_score;
    int32_t unk_id;
    sq_pcnorm *norm;  /* NULL: no Precompiled step */
    bool collapse, split;
    sq_prepend_scheme prepend;
    added_tok *added; /* sorted by length, longest first */
    int32_t n_added;
    bool first_byte[256]; /* some added token starts with this byte */
    bool *is_added;   /* [n] */
};

static uint64_t fnv_step(uint64_t h, uint8_t b) { return (h ^ b) * 0x100000001B3ull; }
#define FNV0 0xCBF29CE484222325ull

static int32_t table_find(const sq_hfu *u, uint64_t h, const char *s, size_t len)
{
    for (uint64_t i = h & u->mask;; i = (i + 1) & u->mask) {
        int32_t v = u->table[i];
        if (v == 0)
            return -1;
        int32_t id = v - 1;
        if (u->off[id + 1] - u->off[id] - 1 == len && memcmp(u->blob + u->off[id], s, len) == 0)
            return id;
    }
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = FNV0;
    for (size_t i = 0; i < len; i++)
        h = fnv_step(h, (uint8_t)s[i]);
    return h;
}

int32_t sq_hfu_lookup(const sq_hfu *u, const char *s, size_t len)
{
    return table_find(u, hash_bytes(s, len), s, len);
}

void sq_hfu_free(sq_hfu *u)
{
    if (!u)
        return;
    free(u->blob);
    free(u->off);
    free(u->score);
    free(u->dblob);
    free(u->doff);
    free(u->table);
    sq_pcnorm_free(u->norm);
    free(u->added);
    free(u->is_added);
    free(u);
}

static int cmp_added(const void *a, const void *b)
{
    const added_tok *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static sq_hfu *fail(sq_hfu *u, sq_err *err, const char *what, const char *msg, long at)
{
    if (at >= 0)
        sq_err_set(err, "%s: %s (id %ld)", what, msg, at);
    else
        sq_err_set(err, "%s: %s", what, msg);
    sq_hfu_free(u);
    return NULL;
}

sq_hfu *sq_hfu_new(const sq_wordpiece_spec *spec, const char *what, sq_err *err)
{
    if (!spec || spec->type != SQ_TOK_HF_UNIGRAM || !spec->vocab || !spec->scores ||
        spec->vocab_size < 1 || spec->vocab_size > SQ_HFU_MAX_VOCAB)
        return fail(NULL, err, what, "not a Hugging Face Unigram vocabulary of 1 .. 4194304 pieces",
                    -1);
    sq_hfu *u = calloc(1, sizeof *u);
    if (!u)
        return fail(u, err, what, "out of memory", -1);
    const int32_t n = spec->vocab_size;
    u->n = n;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *p = spec->vocab[i];
        size_t l = p ? strlen(p) : 0;
        if (l == 0 || l > SQ_HFU_MAX_PIECE_BYTES)
            return fail(u, err, what, "a piece is empty or longer than 1024 bytes", i);
        if (!sq_utf8_valid((const uint8_t *)p, l))
            return fail(u, err, what, "a piece is not valid UTF-8", i);
        if (!isfinite(spec->scores[i]))
            return fail(u, err, what, "a piece score is not finite", i);
        total += l + 1;
        if (l > u->max_len)
            u->max_len = l;
    }
    if (total > UINT32_MAX)
        return fail(u, err, what, "the pieces hold more than 4 GiB", -1);
    uint64_t cap = 1;
    while (cap < 2 * (uint64_t)n)
        cap <<= 1;
    u->mask = cap - 1;
    u->blob = malloc(total);
    u->dblob = malloc(total);
    u->off = malloc(((size_t)n + 1) * sizeof *u->off);
    u->doff = malloc((size_t)n * sizeof *u->doff);
    u->score = malloc((size_t)n * sizeof *u->score);
    u->table = calloc(cap, sizeof *u->table);
    u->is_added = calloc((size_t)n, sizeof *u->is_added);
    if (!u->blob || !u->dblob || !u->off || !u->doff || !u->score || !u->table || !u->is_added)
        return fail(u, err, what, "out of memory", -1);
    size_t o = 0, d = 0;
    double min_score = INFINITY;
    for (int32_t i = 0; i < n; i++) {
        const char *p = spec->vocab[i];
        size_t l = strlen(p);
        u->off[i] = (uint32_t)o;
        memcpy(u->blob + o, p, l + 1);
        if (table_find(u, hash_bytes(p, l), p, l) >= 0)
            return fail(u, err, what, "a piece appears twice", i);
        uint64_t h = hash_bytes(p, l) & u->mask;
        while (u->table[h])
            h = (h + 1) & u->mask;
        u->table[h] = i + 1;
        o += l + 1;
        u->off[i + 1] = (uint32_t)o;
        /* decoded: U+2581 -> ' ' */
        u->doff[i] = (uint32_t)d;
        for (size_t k = 0; k < l;) {
            if (k + 3 <= l && memcmp(p + k, META, 3) == 0) {
                u->dblob[d++] = ' ';
                k += 3;
            } else {
                u->dblob[d++] = p[k++];
            }
        }
        u->dblob[d++] = '\0';
        u->score[i] = spec->scores[i];
        if (spec->scores[i] < min_score)
            min_score = spec->scores[i];
    }
    u->unk_score = min_score - 10.0;
    if (spec->unk_id < 0 || spec->unk_id >= n)
        return fail(u, err, what, "unk_id is not a vocab id", spec->unk_id);
    u->unk_id = spec->unk_id;
    if (spec->charsmap) {
        u->norm = sq_pcnorm_new(spec->charsmap, spec->charsmap_len, what, err);
        if (!u->norm) {
            sq_hfu_free(u);
            return NULL;
        }
    }
    u->collapse = spec->collapse_spaces;
    u->split = spec->metaspace_split;
    u->prepend = spec->prepend_scheme;
    if (u->prepend != SQ_PREPEND_ALWAYS && u->prepend != SQ_PREPEND_FIRST &&
        u->prepend != SQ_PREPEND_NEVER)
        return fail(u, err, what, "prepend_scheme is not always, first or never", -1);
    if (spec->n_added < 0 || spec->n_added > SQ_HFU_MAX_ADDED)
        return fail(u, err, what, "too many added tokens", -1);
    u->added = calloc((size_t)spec->n_added + 1, sizeof *u->added);
    if (!u->added)
        return fail(u, err, what, "out of memory", -1);
    for (int32_t i = 0; i < spec->n_added; i++) {
        const sq_added_token *a = &spec->added[i];
        if (a->id < 0 || a->id >= n || !a->content || strcmp(a->content, spec->vocab[a->id]) != 0)
            return fail(u, err, what, "an added token is not the vocab entry of its id", a->id);
        if (u->is_added[a->id])
            return fail(u, err, what, "an added token appears twice", a->id);
        u->is_added[a->id] = true;
        u->added[i] = (added_tok){u->blob + u->off[a->id], strlen(a->content), a->id, a->lstrip,
                                  a->rstrip};
    }
    u->n_added = spec->n_added;
    for (int32_t i = 0; i < u->n_added; i++)
        u->first_byte[(uint8_t)u->added[i].s[0]] = true;
    qsort(u->added, (size_t)u->n_added, sizeof *u->added, cmp_added);
    return u;
}

int32_t sq_hfu_vocab_size(const sq_hfu *u) { return u->n; }

const char *sq_hfu_piece(const sq_hfu *u, int32_t id)
{
    return id >= 0 && id < u->n ? u->blob + u->off[id] : NULL;
}

bool sq_hfu_is_added(const sq_hfu *u, int32_t id) { return id >= 0 && id < u->n && u->is_added[id]; }

const char *sq_hfu_decode_piece(const sq_hfu *u, int32_t id, bool first, size_t *len)
{
    if (id < 0 || id >= u->n || u->is_added[id]) {
        *len = 0;
        return "";
    }
    const char *s = u->dblob + u->doff[id];
    if (first && u->prepend != SQ_PREPEND_NEVER && s[0] == ' ')
        s++;
    *len = strlen(s);
    return s;
}

/* ---- encoding ---------------------------------------------------------- */

typedef struct {
    int32_t *v;
    int64_t n, cap;
} idbuf;

static int push_id(idbuf *b, int32_t id)
{
    if (b->n == b->cap) {
        int64_t cap = b->cap ? b->cap * 2 : 64;
        int32_t *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = id;
    return 0;
}

typedef struct {
    double score;
    int64_t start; /* -1: no path yet */
    int32_t id;
} node;

static size_t char_len(const char *s, size_t n)
{
    uint32_t cp;
    return sq_utf8_decode((const uint8_t *)s, n, &cp);
}

/* Viterbi over one word (w[0, n), valid UTF-8), ids appended to out. */
static int viterbi(const sq_hfu *u, const char *w, size_t n, node *lat, idbuf *out)
{
    for (size_t i = 0; i <= n; i++)
        lat[i] = (node){0.0, -1, -1};
    for (size_t s = 0; s < n;) {
        const double base = lat[s].score;
        const size_t ml = char_len(w + s, n - s);
        bool single = false;
        uint64_t h = FNV0;
        const size_t lim = n - s < u->max_len ? n - s : u->max_len;
        for (size_t l = 1; l <= lim; l++) {
            h = fnv_step(h, (uint8_t)w[s + l - 1]);
            if (s + l < n && ((uint8_t)w[s + l] & 0xC0u) == 0x80u)
                continue; /* not a character boundary */
            int32_t id = table_find(u, h, w + s, l);
            if (id < 0)
                continue;
            double cand = u->score[id] + base;
            node *t = &lat[s + l];
            if (t->start < 0 || cand > t->score)
                *t = (node){cand, (int64_t)s, id};
            if (l == ml)
                single = true;
        }
        if (!single) {
            double cand = u->unk_score + base;
            node *t = &lat[s + ml];
            if (t->start < 0 || cand > t->score)
                *t = (node){cand, (int64_t)s, u->unk_id};
        }
        s += ml;
    }
    /* backtrack: the tokens come out last first; fuse runs of unknowns */
    int64_t first = out->n;
    size_t e = n, unk_end = 0;
    bool in_unk = false;
    while (e > 0) {
        const node *t = &lat[e];
        size_t s = (size_t)t->start;
        if (t->id == u->unk_id) {
            if (!in_unk)
                unk_end = e;
            in_unk = true;
        } else {
            if (in_unk) {
                int32_t id = sq_hfu_lookup(u, w + e, unk_end - e);
                if (push_id(out, id >= 0 ? id : u->unk_id) != 0)
                    return -1;
                in_unk = false;
            }
            if (push_id(out, t->id) != 0)
                return -1;
        }
        e = s;
    }
    if (in_unk) {
        int32_t id = sq_hfu_lookup(u, w, unk_end);
        if (push_id(out, id >= 0 ? id : u->unk_id) != 0)
            return -1;
    }
    for (int64_t a = first, b = out->n - 1; a < b; a++, b--) {
        int32_t x = out->v[a];
        out->v[a] = out->v[b];
        out->v[b] = x;
    }
    return 0;
}

/* One stretch of text between added tokens; at_zero: it starts the text. */
static int segment(const sq_hfu *u, const char *text, size_t len, bool at_zero, idbuf *out)
{
    char *norm = NULL;
    size_t nl = 0;
    if (u->norm) {
        if (sq_pcnorm_apply(u->norm, text, len, &norm, &nl) != 0)
            return -1;
    } else {
        if (!(norm = malloc(len + 1)))
            return -1;
        memcpy(norm, text, len);
        nl = len;
    }
    if (u->collapse) { /* runs of 2+ U+0020 -> one */
        size_t w = 0;
        for (size_t r = 0; r < nl; r++)
            if (!(norm[r] == ' ' && w > 0 && norm[w - 1] == ' '))
                norm[w++] = norm[r];
        nl = w;
    }
    int rc = 0;
    if (nl == 0)
        goto done;
    /* Metaspace: ' ' -> U+2581, a U+2581 first as the scheme says */
    size_t spaces = 0;
    for (size_t i = 0; i < nl; i++)
        spaces += norm[i] == ' ';
    char *m = malloc(nl + 2 * spaces + 4);
    node *lat = NULL;
    if (!m) {
        rc = -1;
        goto done;
    }
    size_t ml = 0;
    bool starts = norm[0] == ' ' || (nl >= 3 && memcmp(norm, META, 3) == 0);
    if (!starts && (u->prepend == SQ_PREPEND_ALWAYS || (u->prepend == SQ_PREPEND_FIRST && at_zero)))
        memcpy(m, META, 3), ml = 3;
    for (size_t i = 0; i < nl; i++) {
        if (norm[i] == ' ')
            memcpy(m + ml, META, 3), ml += 3;
        else
            m[ml++] = norm[i];
    }
    /* words: split before each U+2581 (MergedWithNext) */
    lat = malloc((ml + 1) * sizeof *lat);
    if (!lat) {
        rc = -1;
        goto free_m;
    }
    size_t ws = 0;
    for (size_t i = 0; i <= ml; i++) {
        bool cut = i == ml || (u->split && i > ws && i + 3 <= ml && memcmp(m + i, META, 3) == 0);
        if (!cut)
            continue;
        if (i > ws && viterbi(u, m + ws, i - ws, lat, out) != 0) {
            rc = -1;
            break;
        }
        ws = i;
    }
    free(lat);
free_m:
    free(m);
done:
    free(norm);
    return rc;
}

/* The added token matching at p[0, n) (longest first), or NULL. */
static const added_tok *added_at(const sq_hfu *u, const char *p, size_t n)
{
    for (int32_t k = 0; k < u->n_added; k++) {
        const added_tok *a = &u->added[k];
        if (a->len <= n && memcmp(p, a->s, a->len) == 0)
            return a;
    }
    return NULL;
}

/* The start of the character before byte i of valid UTF-8. */
static size_t prev_char(const char *s, size_t i)
{
    do
        i--;
    while (i > 0 && ((uint8_t)s[i] & 0xC0u) == 0x80u);
    return i;
}

static bool ws_at(const char *s, size_t n, size_t *cl)
{
    uint32_t cp;
    *cl = sq_utf8_decode((const uint8_t *)s, n, &cp);
    return sq_uni_is_whitespace(cp);
}

/* The text with each maximal ill-formed subpart as U+FFFD (malloc'd). */
static char *clean_utf8(const char *text, size_t len, size_t *out_len)
{
    char *o = malloc(len * 3 + 1);
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

int64_t sq_hfu_tokenize(const sq_hfu *u, const char *text, size_t len, int32_t *ids, int64_t cap)
{
    char *clean = NULL;
    if (!sq_utf8_valid((const uint8_t *)text, len)) {
        if (len > ((size_t)1 << 30) || !(clean = clean_utf8(text, len, &len)))
            return -1;
        text = clean;
    }
    idbuf out = {0};
    int rc = 0;
    size_t seg = 0; /* start of the pending stretch */
    for (size_t i = 0; i < len && rc == 0;) {
        const added_tok *a =
            u->first_byte[(uint8_t)text[i]] ? added_at(u, text + i, len - i) : NULL;
        if (!a) {
            i++;
            continue;
        }
        size_t start = i, stop = i + a->len, cl;
        if (a->lstrip)
            while (start > seg && ws_at(text + prev_char(text, start), len - prev_char(text, start), &cl))
                start = prev_char(text, start);
        if (a->rstrip)
            while (stop < len && ws_at(text + stop, len - stop, &cl))
                stop += cl;
        if (start > seg)
            rc = segment(u, text + seg, start - seg, seg == 0, &out);
        if (rc == 0)
            rc = push_id(&out, a->id);
        seg = i = stop;
    }
    if (rc == 0 && seg < len)
        rc = segment(u, text + seg, len - seg, seg == 0, &out);
    free(clean);
    if (rc != 0) {
        free(out.v);
        return -1;
    }
    if (ids && cap > 0 && out.n > 0) /* an empty text has no buffer */
        memcpy(ids, out.v, (size_t)(out.n < cap ? out.n : cap) * sizeof *ids);
    int64_t n = out.n;
    free(out.v);
    return n;
}

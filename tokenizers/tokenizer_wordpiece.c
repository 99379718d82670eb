/* WordPiece tokenizer: HF BertNormalizer + BertPreTokenizer + WordPiece.
 * See tokenizer_wordpiece.h for the exact pipeline. */
#include "tokenizer_wordpiece.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_props.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

typedef struct added_entry {
    const char *s; /* points into the vocab arena */
    uint32_t len;
    int32_t id;
} added_entry;

struct sq_wordpiece {
    int32_t n;
    const char **tok; /* tok[id] in arena, NUL-terminated */
    uint32_t *tok_len;
    char *arena;

    /* open addressing, linear probing; slot_id -1 = empty */
    int32_t *slot_id;
    uint32_t *slot_tag;
    uint64_t mask;

    char prefix[SQ_WORDPIECE_MAX_PREFIX_BYTES + 1];
    uint32_t prefix_len;
    uint64_t prefix_hash; /* FNV state after hashing the prefix */
    uint32_t max_word_bytes;  /* longest token, for a word start */
    uint32_t max_cont_bytes;  /* longest prefixed token minus the prefix */

    bool clean_text, chinese, lowercase, strip_accents;
    int32_t max_chars;
    int32_t unk_id, cls_id, sep_id, pad_id, mask_id, model_max_length;

    added_entry *added;
    int32_t n_added;
    bool added_first[256]; /* first bytes of added tokens: quick reject */
};

/* ---- hash table ---------------------------------------------------------- */

static inline uint64_t fnv_feed(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* The slot's tag is the high half of the hash, the index the low bits. */
static int32_t table_find(const sq_wordpiece *t, uint64_t h, bool prefixed, const uint8_t *s,
                          uint32_t len)
{
    uint32_t plen = prefixed ? t->prefix_len : 0;
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint64_t i = h & t->mask;; i = (i + 1) & t->mask) {
        int32_t id = t->slot_id[i];
        if (id < 0)
            return -1;
        if (t->slot_tag[i] == tag && t->tok_len[id] == plen + len &&
            memcmp(t->tok[id], t->prefix, plen) == 0 && memcmp(t->tok[id] + plen, s, len) == 0)
            return id;
    }
}

static int32_t vocab_find(const sq_wordpiece *t, bool prefixed, const uint8_t *s, uint32_t len)
{
    if (len > (prefixed ? t->max_cont_bytes : t->max_word_bytes))
        return -1;
    uint64_t h = fnv_feed(prefixed ? t->prefix_hash : FNV_OFFSET, s, len);
    return table_find(t, h, prefixed, s, len);
}

static int table_build(sq_wordpiece *t, sq_err *err)
{
    uint64_t cap = 16;
    while (cap < (uint64_t)t->n * 2)
        cap <<= 1;
    t->slot_id = malloc(cap * sizeof *t->slot_id);
    t->slot_tag = malloc(cap * sizeof *t->slot_tag);
    if (!t->slot_id || !t->slot_tag)
        return sq_err_set(err, "tokenizer: out of memory");
    memset(t->slot_id, 0xff, cap * sizeof *t->slot_id);
    t->mask = cap - 1;
    for (int32_t id = 0; id < t->n; id++) {
        uint64_t h = fnv_feed(FNV_OFFSET, (const uint8_t *)t->tok[id], t->tok_len[id]);
        if (table_find(t, h, false, (const uint8_t *)t->tok[id], t->tok_len[id]) >= 0)
            return sq_err_set(err, "tokenizer: token \"%.64s\" appears twice in the vocabulary",
                              t->tok[id]);
        uint64_t i = h & t->mask;
        while (t->slot_id[i] >= 0)
            i = (i + 1) & t->mask;
        t->slot_id[i] = id;
        t->slot_tag[i] = (uint32_t)(h >> 32);
    }
    return 0;
}

/* ---- construction -------------------------------------------------------- */

static int check_id(int32_t id, int32_t n, bool required, const char *what, sq_err *err)
{
    if (id < -1 || id >= n || (required && id < 0))
        return sq_err_set(err, "tokenizer: %s id %d is not a vocabulary id (0..%d)", what, id, n - 1);
    return 0;
}

static int copy_vocab(sq_wordpiece *t, const sq_wordpiece_spec *spec, sq_err *err)
{
    size_t total = 0;
    for (int32_t i = 0; i < spec->vocab_size; i++) {
        const char *s = spec->vocab[i];
        size_t len = s ? strlen(s) : 0;
        if (len == 0 || len > SQ_WORDPIECE_MAX_TOKEN_BYTES)
            return sq_err_set(err, "tokenizer: token id %d is %s", i,
                              len ? "longer than the token length limit" : "missing or empty");
        if (!sq_utf8_valid((const uint8_t *)s, len))
            return sq_err_set(err, "tokenizer: token id %d is not valid UTF-8", i);
        total += len + 1;
    }
    t->arena = malloc(total);
    t->tok = malloc((size_t)spec->vocab_size * sizeof *t->tok);
    t->tok_len = malloc((size_t)spec->vocab_size * sizeof *t->tok_len);
    if (!t->arena || !t->tok || !t->tok_len)
        return sq_err_set(err, "tokenizer: out of memory");
    t->n = spec->vocab_size;
    char *p = t->arena;
    uint32_t plen = t->prefix_len;
    for (int32_t i = 0; i < t->n; i++) {
        uint32_t len = (uint32_t)strlen(spec->vocab[i]);
        memcpy(p, spec->vocab[i], len + 1);
        t->tok[i] = p;
        t->tok_len[i] = len;
        p += len + 1;
        if (len > t->max_word_bytes)
            t->max_word_bytes = len;
        if (len > plen && memcmp(t->tok[i], t->prefix, plen) == 0 && len - plen > t->max_cont_bytes)
            t->max_cont_bytes = len - plen;
    }
    return 0;
}

static int add_added(sq_wordpiece *t, int32_t id)
{
    for (int32_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id)
            return 0;
    t->added[t->n_added++] = (added_entry){t->tok[id], t->tok_len[id], id};
    t->added_first[(uint8_t)t->tok[id][0]] = true;
    return 0;
}

static int setup_added(sq_wordpiece *t, const sq_wordpiece_spec *spec, sq_err *err)
{
    if (spec->n_added < 0 || spec->n_added > spec->vocab_size || (spec->n_added > 0 && !spec->added))
        return sq_err_set(err, "tokenizer: invalid added-token count %d", spec->n_added);
    t->added = malloc(((size_t)spec->n_added + 5) * sizeof *t->added);
    if (!t->added)
        return sq_err_set(err, "tokenizer: out of memory");
    for (int32_t i = 0; i < spec->n_added; i++) {
        const sq_added_token *a = &spec->added[i];
        if (check_id(a->id, t->n, true, "added token", err) != 0)
            return -1;
        if (!a->content || strcmp(a->content, t->tok[a->id]) != 0)
            return sq_err_set(err, "tokenizer: added token id %d does not match its vocab entry",
                              a->id);
        add_added(t, a->id);
    }
    if (spec->n_added == 0) {
        int32_t ids[5] = {t->unk_id, t->cls_id, t->sep_id, t->pad_id, t->mask_id};
        for (int k = 0; k < 5; k++)
            if (ids[k] >= 0)
                add_added(t, ids[k]);
    }
    return 0;
}

sq_wordpiece *sq_wordpiece_new(const sq_wordpiece_spec *spec, sq_err *err)
{
    if (!spec || !spec->vocab || spec->vocab_size <= 0 || spec->vocab_size > SQ_WORDPIECE_MAX_VOCAB) {
        sq_err_set(err, "tokenizer: vocabulary size %d is not in 1..%d", spec ? spec->vocab_size : 0,
                   SQ_WORDPIECE_MAX_VOCAB);
        return NULL;
    }
    const char *prefix = spec->continuing_subword_prefix ? spec->continuing_subword_prefix : "##";
    size_t plen = strlen(prefix);
    if (plen > SQ_WORDPIECE_MAX_PREFIX_BYTES) {
        sq_err_set(err, "tokenizer: continuing_subword_prefix longer than %d bytes",
                   SQ_WORDPIECE_MAX_PREFIX_BYTES);
        return NULL;
    }
    if (spec->max_input_chars_per_word < 1 ||
        spec->max_input_chars_per_word > SQ_WORDPIECE_MAX_WORD_CHARS) {
        sq_err_set(err, "tokenizer: max_input_chars_per_word %d is not in 1..%d",
                   spec->max_input_chars_per_word, SQ_WORDPIECE_MAX_WORD_CHARS);
        return NULL;
    }
    sq_wordpiece *t = calloc(1, sizeof *t);
    if (!t) {
        sq_err_set(err, "tokenizer: out of memory");
        return NULL;
    }
    memcpy(t->prefix, prefix, plen + 1);
    t->prefix_len = (uint32_t)plen;
    t->prefix_hash = fnv_feed(FNV_OFFSET, (const uint8_t *)prefix, plen);
    t->clean_text = spec->clean_text;
    t->chinese = spec->handle_chinese_chars;
    t->lowercase = spec->lowercase;
    t->strip_accents = spec->strip_accents < 0 ? spec->lowercase : spec->strip_accents != 0;
    t->max_chars = spec->max_input_chars_per_word;
    t->unk_id = spec->unk_id;
    t->cls_id = spec->cls_id;
    t->sep_id = spec->sep_id;
    t->pad_id = spec->pad_id;
    t->mask_id = spec->mask_id;
    t->model_max_length = spec->model_max_length > 0 ? spec->model_max_length : 0;
    int32_t n = spec->vocab_size;
    if (copy_vocab(t, spec, err) != 0 || check_id(t->unk_id, n, true, "unk", err) != 0 ||
        check_id(t->cls_id, n, false, "cls", err) != 0 ||
        check_id(t->sep_id, n, false, "sep", err) != 0 ||
        check_id(t->pad_id, n, false, "pad", err) != 0 ||
        check_id(t->mask_id, n, false, "mask", err) != 0 || table_build(t, err) != 0 ||
        setup_added(t, spec, err) != 0) {
        sq_wordpiece_free(t);
        return NULL;
    }
    return t;
}

void sq_wordpiece_free(sq_wordpiece *t)
{
    if (!t)
        return;
    free(t->slot_id);
    free(t->slot_tag);
    free(t->tok);
    free(t->tok_len);
    free(t->arena);
    free(t->added);
    free(t);
}

/* ---- per-call scratch ---------------------------------------------------- */

/* Growable buffers that start on the stack; most texts never touch the heap. */
#define STACK_CPS 1024

typedef struct cpvec {
    uint32_t *v;
    size_t n, cap;
    uint32_t *heap;
} cpvec;

static bool cpvec_reserve(cpvec *b, size_t extra)
{
    if (b->n + extra <= b->cap)
        return true;
    size_t cap = b->cap * 2;
    while (cap < b->n + extra)
        cap *= 2;
    uint32_t *nv = malloc(cap * sizeof *nv);
    if (!nv)
        return false;
    memcpy(nv, b->v, b->n * sizeof *nv);
    free(b->heap);
    b->v = b->heap = nv;
    b->cap = cap;
    return true;
}

typedef struct scratch {
    cpvec a, b;      /* normalized code points; b for NFD */
    uint8_t *bytes;  /* UTF-8 of the current word */
    uint32_t *off;   /* byte offset of each code point of the word, plus end */
    size_t word_cap; /* code points bytes/off can hold */
    uint8_t *heap_words;
} scratch;

typedef struct emitter {
    int32_t *ids;
    int64_t cap, count;
} emitter;

static inline void emit(emitter *e, int32_t id)
{
    if (e->count < e->cap)
        e->ids[e->count] = id;
    e->count++;
}

/* ---- normalization --------------------------------------------------------- */

/* Put each run of non-starters into canonical order (stable by class). */
static void canonical_reorder(uint32_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int c = sq_uni_combining_class(v[i]);
        if (c == 0)
            continue;
        size_t j = i;
        uint32_t x = v[i];
        while (j > 0 && sq_uni_combining_class(v[j - 1]) > c) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* NFD of a (into b), then drop Mn; the result is left in a. */
static bool strip_accents(scratch *s)
{
    s->b.n = 0;
    bool reorder = false;
    for (size_t i = 0; i < s->a.n; i++) {
        uint32_t cp = s->a.v[i];
        if (!cpvec_reserve(&s->b, 8))
            return false;
        int k = sq_uni_decompose(cp, s->b.v + s->b.n, 8);
        if (k > 8) { /* longer than any canonical decomposition; be safe anyway */
            if (!cpvec_reserve(&s->b, (size_t)k))
                return false;
            k = sq_uni_decompose(cp, s->b.v + s->b.n, k);
        }
        s->b.n += (size_t)k;
        reorder = reorder || cp >= 0xC0;
    }
    if (reorder)
        canonical_reorder(s->b.v, s->b.n);
    s->a.n = 0;
    if (!cpvec_reserve(&s->a, s->b.n))
        return false;
    for (size_t i = 0; i < s->b.n; i++)
        if (!sq_uni_is_nonspacing_mark(s->b.v[i]))
            s->a.v[s->a.n++] = s->b.v[i];
    return true;
}

/* Decode and normalize text into s->a. */
static bool normalize(const sq_wordpiece *t, const uint8_t *text, size_t len, scratch *s)
{
    s->a.n = 0;
    bool needs_nfd = false; /* nothing below U+00C0 decomposes */
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        i += sq_utf8_decode(text + i, len - i, &cp);
        if (t->clean_text) {
            if (cp == 0 || cp == SQ_UNI_REPLACEMENT || sq_uni_is_control(cp))
                continue;
            if (sq_uni_is_whitespace(cp))
                cp = ' ';
        }
        if (!cpvec_reserve(&s->a, 4))
            return false;
        bool pad = t->chinese && sq_uni_is_cjk(cp);
        if (pad)
            s->a.v[s->a.n++] = ' ';
        if (t->lowercase) {
            uint32_t lo[2];
            int k = sq_uni_tolower(cp, lo);
            for (int j = 0; j < k; j++)
                s->a.v[s->a.n++] = lo[j];
        } else {
            s->a.v[s->a.n++] = cp;
        }
        if (pad)
            s->a.v[s->a.n++] = ' ';
        needs_nfd = needs_nfd || cp >= 0xC0;
    }
    if (t->strip_accents && needs_nfd)
        return strip_accents(s);
    return true;
}

/* ---- WordPiece --------------------------------------------------------------- */

static bool word_reserve(scratch *s, size_t ncp)
{
    if (ncp <= s->word_cap)
        return true;
    size_t cap = s->word_cap * 2;
    while (cap < ncp)
        cap *= 2;
    uint8_t *mem = malloc(cap * 4 + (cap + 1) * sizeof(uint32_t));
    if (!mem)
        return false;
    free(s->heap_words);
    s->heap_words = mem;
    s->bytes = mem;
    s->off = (uint32_t *)(mem + cap * 4);
    s->word_cap = cap;
    return true;
}

/* Greedy longest-match-first; an unmatched remainder turns the word into one unk. */
static bool wordpiece(const sq_wordpiece *t, const uint32_t *w, size_t n, scratch *s, emitter *e)
{
    if (n > (size_t)t->max_chars) {
        emit(e, t->unk_id);
        return true;
    }
    if (!word_reserve(s, n))
        return false;
    uint32_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        s->off[i] = nb;
        nb += (uint32_t)sq_utf8_encode(w[i], s->bytes + nb);
    }
    s->off[n] = nb;
    int64_t first = e->count;
    size_t start = 0;
    while (start < n) {
        bool cont = start > 0;
        uint32_t lim = cont ? t->max_cont_bytes : t->max_word_bytes;
        size_t end = n;
        while (end > start && s->off[end] - s->off[start] > lim)
            end--;
        int32_t id = -1;
        for (; end > start; end--) {
            id = vocab_find(t, cont, s->bytes + s->off[start], s->off[end] - s->off[start]);
            if (id >= 0)
                break;
        }
        if (id < 0) {
            e->count = first;
            emit(e, t->unk_id);
            return true;
        }
        emit(e, id);
        start = end;
    }
    return true;
}

/* BertPreTokenizer: whitespace separates, each punctuation mark is a word. */
static bool pretokenize_and_encode(const sq_wordpiece *t, scratch *s, emitter *e)
{
    const uint32_t *v = s->a.v;
    size_t n = s->a.n, start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool ws = i < n && sq_uni_is_whitespace(v[i]);
        bool punct = i < n && !ws && sq_uni_is_punctuation(v[i]);
        if (i < n && !ws && !punct)
            continue;
        if (i > start && !wordpiece(t, v + start, i - start, s, e))
            return false;
        if (punct && !wordpiece(t, v + i, 1, s, e))
            return false;
        start = i + 1;
    }
    return true;
}

static bool encode_piece(const sq_wordpiece *t, const uint8_t *text, size_t len, scratch *s,
                         emitter *e)
{
    if (len == 0)
        return true;
    return normalize(t, text, len, s) && pretokenize_and_encode(t, s, e);
}

/* Longest added token starting at text[0], or NULL. */
static const added_entry *match_added(const sq_wordpiece *t, const uint8_t *text, size_t len)
{
    const added_entry *best = NULL;
    for (int32_t k = 0; k < t->n_added; k++) {
        const added_entry *a = &t->added[k];
        if (a->len <= len && (!best || a->len > best->len) && memcmp(text, a->s, a->len) == 0)
            best = a;
    }
    return best;
}

int64_t sq_wordpiece_tokenize(const sq_wordpiece *t, const char *text, size_t len, int32_t *ids,
                              int64_t cap)
{
    uint32_t stack_a[STACK_CPS], stack_b[STACK_CPS];
    uint8_t stack_words[256 * 4 + 257 * sizeof(uint32_t)] __attribute__((aligned(4)));
    scratch s = {
        .a = {stack_a, 0, STACK_CPS, NULL},
        .b = {stack_b, 0, STACK_CPS, NULL},
        .bytes = stack_words,
        .off = (uint32_t *)(stack_words + 256 * 4),
        .word_cap = 256,
        .heap_words = NULL,
    };
    emitter e = {ids, ids ? cap : 0, 0};
    const uint8_t *p = (const uint8_t *)text;
    size_t seg = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < len;) {
        const added_entry *a = t->added_first[p[i]] ? match_added(t, p + i, len - i) : NULL;
        if (!a) {
            i++;
            continue;
        }
        ok = encode_piece(t, p + seg, i - seg, &s, &e);
        emit(&e, a->id);
        i += a->len;
        seg = i;
    }
    if (ok)
        ok = encode_piece(t, p + seg, len - seg, &s, &e);
    free(s.a.heap);
    free(s.b.heap);
    free(s.heap_words);
    return ok ? e.count : -1;
}

/* ---- accessors ------------------------------------------------------------- */

int32_t sq_wordpiece_vocab_size(const sq_wordpiece *t) { return t->n; }

const char *sq_wordpiece_token(const sq_wordpiece *t, int32_t id)
{
    return (id >= 0 && id < t->n) ? t->tok[id] : NULL;
}

int32_t sq_wordpiece_lookup(const sq_wordpiece *t, const char *token, size_t len)
{
    if (len > t->max_word_bytes)
        return -1;
    uint64_t h = fnv_feed(FNV_OFFSET, (const uint8_t *)token, len);
    return table_find(t, h, false, (const uint8_t *)token, (uint32_t)len);
}

/* SentencePiece-unigram tokenizer reproducing, id for id, the Universal
 * Sentence Encoder Lite JavaScript tokenizer (@energetic-ai/embeddings 0.2.0
 * dist/index.js: Tokenizer, Trie, stringToChars, processInput; derived from
 * tfjs-models universal-sentence-encoder/src/tokenizer). Our own code; what
 * it copies is the behaviour, including these quirks of the JS:
 *
 *  Q1 Normalisation: String.prototype.normalize('NFKC') (node 20: ICU 78,
 *     Unicode 17.0; unicode_nfkc.c has tables of that version). Then, only
 *     if the result is not empty, U+2581 is prepended and every U+0020
 *     becomes U+2581: only U+0020 (NBSP, U+2000..U+200A, U+3000 are U+0020
 *     after NFKC; tabs, newlines and other white space stay as they are).
 *     An empty text gives no ids; " " gives two U+2581 pieces.
 *  Q2 Symbols are code points (for..of over the string), so the lattice,
 *     the trie and piece lengths count code points...
 *  Q3 ...except the backtracking, which steps back by the piece's JS
 *     `.length`, i.e. UTF-16 code units (2 for each astral code point). The
 *     USE vocab has no astral piece; for unknown characters the step is the
 *     length of piece 0 ("\uFFFD": 1) whatever the character was.
 *  Q4 The trie holds pieces SQ_UNIGRAM_RESERVED (6) .. n-1; the reserved
 *     pieces (unknown, <s>, </s>, extra_token_id_1..3) never match. A
 *     duplicate piece overwrites the earlier one's score and id (the USE
 *     vocab has "”5" three times: 4464 wins).
 *  Q5 Unknown: at a position where no piece starts, a single-code-point
 *     candidate of id 0 and score 0 is added, and only there: a position that
 *     has some (longer) match but no single-symbol piece gets no unknown.
 *  Q6 Viterbi: best[] and words[] start at 0 for every position. Candidates
 *     ending at position e are visited by increasing start (longest piece
 *     first) and one replaces the current best when best[e] == 0 (0 means
 *     "unset", even when a path really scored exactly 0, e.g. an unknown or a
 *     zero-score piece at the start) or when its score >= best[e] (ties go
 *     to the later, i.e. shorter, piece). Scores are JS doubles: piece score
 *     + best[start], added in that order.
 *  Q7 A position that no piece ends at keeps best 0 and word 0: paths may
 *     start from it with score 0 (better than any real prefix), and the
 *     backtracking emits id 0 there and steps back by Q3's unknown length.
 *  Q8 Backtracking runs while the position is > 0 (it may step past 0).
 *  Q9 Runs of consecutive id 0 collapse to one id 0.
 *  Q10 No BOS/EOS, no truncation.
 *  Q11 The published vocab.json has null scores (pieces with ':'); JS adds
 *     null as 0. tokenizers/use_vocab.c reads null as 0.0, which adds the same.
 * Invalid UTF-8 (which a JS string cannot hold) decodes to U+FFFD per
 * maximal ill-formed subpart, as node's UTF-8 decoder does. */
#include "tokenizer_unigram.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "unicode_nfkc.h"
#include "unicode_props.h"
#include "use_vocab.h"

#define WORD_BOUNDARY 0x2581u /* ▁ */

struct sq_unigram {
    int32_t n;
    char **pieces;
    int32_t *u16len; /* JS .length of each piece (Q3) */
    /* trie: node 0 is the root; node_id -1 = no piece ends here */
    int32_t nnodes;
    int32_t *node_id;
    double *node_score;
    /* children: open addressing on (parent << 21 | code point) */
    uint64_t *hkey;
    int32_t *hval;
    uint64_t hmask;
    int hbits;
};

#define HEMPTY UINT64_MAX

static inline uint64_t hslot(const sq_unigram *u, uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> (64 - u->hbits);
}

static inline int32_t child(const sq_unigram *u, int32_t node, uint32_t cp)
{
    uint64_t key = ((uint64_t)node << 21) | cp;
    for (uint64_t s = hslot(u, key);; s = (s + 1) & u->hmask) {
        if (u->hkey[s] == key)
            return u->hval[s];
        if (u->hkey[s] == HEMPTY)
            return -1;
    }
}

/* Walks (creating) the path of piece i; returns its end node. */
static int32_t insert_path(sq_unigram *u, const uint8_t *s, size_t len)
{
    int32_t node = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += sq_utf8_decode(s + i, len - i, &cp);
        uint64_t key = ((uint64_t)node << 21) | cp;
        uint64_t slot = hslot(u, key);
        while (u->hkey[slot] != HEMPTY && u->hkey[slot] != key)
            slot = (slot + 1) & u->hmask;
        if (u->hkey[slot] == HEMPTY) {
            u->hkey[slot] = key;
            u->hval[slot] = u->nnodes;
            u->node_id[u->nnodes] = -1;
            u->node_score[u->nnodes] = 0;
            u->nnodes++;
        }
        node = u->hval[slot];
    }
    return node;
}

sq_unigram *sq_unigram_new_f64(const char *const *pieces, const double *scores, int32_t n,
                               sq_err *err)
{
    if (n <= SQ_UNIGRAM_RESERVED || n > SQ_UNIGRAM_MAX_VOCAB) {
        sq_err_set(err, "unigram vocabulary: %d pieces; need %d reserved ones and at least one more, "
                   "at most %d", (int)n, SQ_UNIGRAM_RESERVED, SQ_UNIGRAM_MAX_VOCAB);
        return NULL;
    }
    if (!pieces || !scores) {
        sq_err_set(err, "unigram vocabulary: no pieces or scores");
        return NULL;
    }
    size_t total_cps = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *p = pieces[i];
        size_t len = p ? strnlen(p, SQ_UNIGRAM_MAX_PIECE_BYTES + 1) : 0;
        if (!p || len == 0) {
            sq_err_set(err, "unigram vocabulary: piece %d is %s", (int)i, p ? "empty" : "NULL");
            return NULL;
        }
        if (len > SQ_UNIGRAM_MAX_PIECE_BYTES) {
            sq_err_set(err, "unigram vocabulary: piece %d is longer than %d bytes", (int)i,
                       SQ_UNIGRAM_MAX_PIECE_BYTES);
            return NULL;
        }
        if (!sq_utf8_valid((const uint8_t *)p, len)) {
            sq_err_set(err, "unigram vocabulary: piece %d is not valid UTF-8", (int)i);
            return NULL;
        }
        if (!isfinite(scores[i])) {
            sq_err_set(err, "unigram vocabulary: piece %d has a non-finite score", (int)i);
            return NULL;
        }
        total_cps += len; /* bytes bound code points */
    }
    sq_unigram *u = calloc(1, sizeof *u);
    if (!u)
        goto oom;
    u->n = n;
    u->pieces = calloc((size_t)n, sizeof *u->pieces);
    u->u16len = malloc((size_t)n * sizeof *u->u16len);
    size_t maxnodes = total_cps + 1;
    u->node_id = malloc(maxnodes * sizeof *u->node_id);
    u->node_score = malloc(maxnodes * sizeof *u->node_score);
    u->hbits = 4;
    while (((size_t)1 << u->hbits) < 2 * maxnodes)
        u->hbits++;
    u->hmask = ((uint64_t)1 << u->hbits) - 1;
    u->hkey = malloc(((size_t)1 << u->hbits) * sizeof *u->hkey);
    u->hval = malloc(((size_t)1 << u->hbits) * sizeof *u->hval);
    if (!u->pieces || !u->u16len || !u->node_id || !u->node_score || !u->hkey || !u->hval)
        goto oom;
    memset(u->hkey, 0xFF, ((size_t)1 << u->hbits) * sizeof *u->hkey);
    u->nnodes = 1;
    u->node_id[0] = -1;
    u->node_score[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len = strlen(pieces[i]);
        u->pieces[i] = malloc(len + 1);
        if (!u->pieces[i])
            goto oom;
        memcpy(u->pieces[i], pieces[i], len + 1);
        int32_t units = 0;
        for (size_t k = 0; k < len;) {
            uint32_t cp;
            k += sq_utf8_decode((const uint8_t *)pieces[i] + k, len - k, &cp);
            units += cp >= 0x10000 ? 2 : 1;
        }
        u->u16len[i] = units;
        if (i < SQ_UNIGRAM_RESERVED)
            continue; /* Q4 */
        int32_t node = insert_path(u, (const uint8_t *)pieces[i], len);
        u->node_id[node] = i; /* Q4: a later duplicate overwrites */
        u->node_score[node] = scores[i];
    }
    return u;
oom:
    sq_unigram_free(u);
    sq_err_set(err, "unigram vocabulary: out of memory");
    return NULL;
}

sq_unigram *sq_unigram_new(const char *const *pieces, const float *scores, int32_t n, sq_err *err)
{
    if (n <= 0 || n > SQ_UNIGRAM_MAX_VOCAB || !scores)
        return sq_unigram_new_f64(pieces, NULL, n, err);
    double *d = malloc((size_t)n * sizeof *d);
    if (!d) {
        sq_err_set(err, "unigram vocabulary: out of memory");
        return NULL;
    }
    for (int32_t i = 0; i < n; i++)
        d[i] = scores[i];
    sq_unigram *u = sq_unigram_new_f64(pieces, d, n, err);
    free(d);
    return u;
}

sq_unigram *sq_unigram_load_use_vocab(const char *path, sq_err *err)
{
    char **pieces;
    double *scores;
    int32_t n;
    if (sq_use_vocab_load_f64(path, &pieces, &scores, &n, err) != 0)
        return NULL;
    sq_unigram *u = sq_unigram_new_f64((const char *const *)pieces, scores, n, err);
    if (!u)
        sq_err_prefix(err, "%s", path);
    sq_use_vocab_free_f64(pieces, scores, n);
    return u;
}

int32_t sq_unigram_vocab_size(const sq_unigram *u) { return u->n; }

const char *sq_unigram_piece(const sq_unigram *u, int32_t id)
{
    return id >= 0 && id < u->n ? u->pieces[id] : NULL;
}

void sq_unigram_free(sq_unigram *u)
{
    if (!u)
        return;
    if (u->pieces)
        for (int32_t i = 0; i < u->n; i++)
            free(u->pieces[i]);
    free(u->pieces);
    free(u->u16len);
    free(u->node_id);
    free(u->node_score);
    free(u->hkey);
    free(u->hval);
    free(u);
}

/* Q6: the JS update rule for a candidate (id, score) ending at e. */
static inline void offer(double *best, int32_t *words, size_t e, double cand, int32_t id)
{
    if (best[e] == 0 || cand >= best[e]) {
        best[e] = cand;
        words[e] = id;
    }
}

int64_t sq_unigram_tokenize(const sq_unigram *u, const char *text, size_t len, int32_t *ids,
                            int64_t cap)
{
    sq_u32buf raw = {0}, norm = {0}, sym = {0};
    double *best = NULL;
    int32_t *words = NULL, *rev = NULL;
    int64_t total = -1;
    const uint8_t *s = (const uint8_t *)text;

    if (len >= SIZE_MAX / 64 || sq_u32buf_reserve(&raw, len) != 0)
        goto done;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += sq_utf8_decode(s + i, len - i, &cp);
        raw.v[raw.n++] = cp;
    }
    /* Q1: NFKC into sym, leaving room for the leading U+2581 at v[0]. */
    if (sq_nfkc(raw.v, raw.n, &norm) != 0)
        goto done;
    if (norm.n == 0) {
        total = 0;
        goto done;
    }
    if (sq_u32buf_reserve(&sym, norm.n + 1) != 0)
        goto done;
    sym.v[0] = WORD_BOUNDARY;
    for (size_t i = 0; i < norm.n; i++)
        sym.v[i + 1] = norm.v[i] == 0x20 ? WORD_BOUNDARY : norm.v[i];
    sym.n = norm.n + 1;

    size_t n = sym.n;
    best = calloc(n + 1, sizeof *best);
    words = calloc(n + 1, sizeof *words);
    rev = malloc(n * sizeof *rev);
    if (!best || !words || !rev)
        goto done;
    /* Q6/Q7: visiting starts in increasing order and, from each, its matches
     * gives every end position its candidates in the JS order (increasing
     * start), with best[start] final before it is used. */
    for (size_t i = 0; i < n; i++) {
        bool matched = false;
        int32_t node = 0;
        for (size_t k = i; k < n; k++) {
            node = child(u, node, sym.v[k]);
            if (node < 0)
                break;
            if (u->node_id[node] >= 0) {
                matched = true;
                offer(best, words, k + 1, u->node_score[node] + best[i], u->node_id[node]);
            }
        }
        if (!matched) /* Q5 */
            offer(best, words, i + 1, 0.0 + best[i], 0);
    }
    /* Q3/Q8/Q9: backtrack from the end, collapsing runs of id 0. */
    size_t count = 0;
    int32_t prev = -1;
    for (int64_t pos = (int64_t)n; pos > 0; pos -= u->u16len[words[pos]]) {
        int32_t id = words[pos];
        if (!(id == 0 && prev == 0))
            rev[count++] = id;
        prev = id;
    }
    for (size_t k = 0; k < count && (int64_t)k < cap; k++)
        ids[k] = rev[count - 1 - k];
    total = (int64_t)count;
done:
    free(raw.v);
    free(norm.v);
    free(sym.v);
    free(best);
    free(words);
    free(rev);
    return total;
}

/* Fuzz the Universal Sentence Encoder Lite vocabulary reader
 * (tokenizers/use_vocab.h: vocab.json, a JSON array of [piece, score] pairs) and
 * the SentencePiece unigram tokenizer built from it, both directly
 * (tokenizers/tokenizer_unigram.h) and through the generic interface
 * (sq_unigram_spec_load_use_vocab -> sq_tokenizer_new, tokenizers/tokenizer.h).
 * Input: vocab.json \0 text. A fixed string (spaces, U+2581, NFKC expansions,
 * astral and unknown characters, invalid UTF-8) and the fuzzed text (cut to
 * WORK_BUDGET / longest piece bytes) are tokenized; abort() unless:
 *  - every id is in [0, vocab size) and never a reserved id 1..5;
 *  - the count with a small cap equals the count with a large cap, and the
 *    ids of the prefix agree; nothing is written past cap (ASan);
 *  - the same text twice gives the same ids;
 *  - the generic interface gives the same ids as sq_unigram_tokenize, encode
 *    returns min(count, max_len) <= max_len ids, the first ones;
 *  - sq_tokenizer_token(id) is non-NULL for every id, and for an id past the
 *    reserved ones looking its piece up gives the id back (the last
 *    occurrence of a duplicated piece is the one matched and looked up);
 *  - the float and double readers agree on the pieces, and the generic
 *    tokenizer is built exactly when sq_unigram_new_f64 accepts the pieces. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "hf_tokenizer.h"
#include "tokenizer.h"
#include "tokenizer_unigram.h"
#include "use_vocab.h"

static const char k_fixed[] =
    "Hello, world!  \xe2\x96\x81the\xe2\x96\x81 a:b ://  \xe2\x80\x9d" "5 \xc2\xa0nbsp\xe3\x80\x80"
    "\xef\xbc\xa6ullwidth \xef\xb7\xba \xef\xac\x81 \xe2\x91\xa0 caf\xc3\xa9 cafe\xcc\x81 "
    "\xf0\x9f\x98\x80\xf0\x9d\x94\xb8x \xe6\x9d\xb1\xe4\xba\xac\t\n\r\x01 \xff\xfe\xed\xa0\x80 ";

#define SMALL_CAP 3
#define ENC_LEN 5
/* Tokenizing costs O(symbols x longest piece) trie steps by design, and each
 * step is slow under the sanitizers: the fuzzed text is cut to about this
 * many bytes x code points of the longest piece (a 1024-byte piece would
 * otherwise let one 16 KB input run for minutes and count as a timeout). */
#define WORK_BUDGET 262144

static void check_ids(const int32_t *ids, int64_t n, int32_t vocab)
{
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab || (ids[i] > 0 && ids[i] < SQ_UNIGRAM_RESERVED))
            abort();
}

static bool same(const int32_t *a, const int32_t *b, int64_t n)
{
    return n <= 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* uf (float scores) may be NULL; full: also the rarer checks (fixed text). */
static void run(const sq_unigram *u, const sq_tokenizer *t, const sq_unigram *uf,
                const char *text, size_t len, bool full)
{
    int32_t vocab = sq_unigram_vocab_size(u);
    /* At most one id per symbol: a U+2581 plus NFKC (<= 18 code points per
     * code point, <= 1 code point per byte). */
    int64_t bound = (int64_t)len * 18 + 1;
    int32_t *all = malloc((size_t)bound * sizeof *all);
    int32_t *again = NULL, *small = malloc(SMALL_CAP * sizeof *small);
    int32_t *enc = malloc(ENC_LEN * sizeof *enc);
    if (!all || !small || !enc)
        goto out;
    int64_t total = sq_unigram_tokenize(u, text, len, all, bound);
    if (total < 0)
        goto out; /* allocation failure */
    if (total > bound)
        abort();
    check_ids(all, total, vocab);
    /* The same again, into a buffer of exactly total ids (ASan: no more written). */
    again = malloc((size_t)(total > 0 ? total : 1) * sizeof *again);
    if (!again)
        goto out;
    int64_t n = sq_unigram_tokenize(u, text, len, again, total);
    if (n >= 0 && (n != total || !same(all, again, n)))
        abort();
    /* A small cap: the same count, the same prefix, nothing past cap. */
    n = sq_unigram_tokenize(u, text, len, small, SMALL_CAP);
    if (n >= 0 && (n != total || !same(all, small, n < SMALL_CAP ? n : SMALL_CAP)))
        abort();
    /* The generic interface over the same vocabulary gives the same ids. */
    n = sq_tokenizer_tokenize(t, text, len, again, total);
    if (n >= 0 && (n != total || !same(all, again, n)))
        abort();
    int m = sq_tokenizer_encode(t, text, len, ENC_LEN, enc);
    if (m >= 0 && (m > ENC_LEN || m != (total < ENC_LEN ? total : ENC_LEN) || !same(all, enc, m)))
        abort();
    for (int64_t i = 0; i < total; i++) {
        const char *tok = sq_tokenizer_token(t, all[i]);
        if (!tok || strcmp(tok, sq_unigram_piece(u, all[i])) != 0)
            abort();
        /* Matching and lookup both take the last occurrence of a piece. */
        if (full && all[i] >= SQ_UNIGRAM_RESERVED &&
            sq_tokenizer_lookup(t, tok, strlen(tok)) != all[i])
            abort();
    }
    if (full) {
        n = sq_tokenizer_tokenize(t, text, len, small, SMALL_CAP);
        if (n >= 0 && (n != total || !same(all, small, n < SMALL_CAP ? n : SMALL_CAP)))
            abort();
        m = sq_tokenizer_encode(t, text, len, 1, enc);
        if (m >= 0 && (m > 1 || m != (total < 1 ? total : 1) || (m == 1 && enc[0] != all[0])))
            abort();
        /* Float scores may choose other pieces; the ids must still be valid. */
        if (uf) {
            n = sq_unigram_tokenize(uf, text, len, again, total);
            if (n >= 0)
                check_ids(again, n < total ? n : total, vocab);
        }
    }
out:
    free(all);
    free(again);
    free(small);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t len[2];
    size_t np = fuzz_split(data, size, 2, part, len);
    char *path = fuzz_write("vocab.json", part[0], len[0]);
    sq_err err;

    char **pieces = NULL;
    double *scores = NULL;
    int32_t n = 0;
    int rc = sq_use_vocab_load_f64(path, &pieces, &scores, &n, &err);
    if (rc != 0 && (pieces || scores || n != 0))
        abort();

    char **fpieces = NULL;
    float *fscores = NULL;
    int32_t fn = 0;
    int frc = sq_use_vocab_load(path, &fpieces, &fscores, &fn, &err);
    if (frc != 0 && (fpieces || fscores || fn != 0))
        abort();
    if (frc == 0) { /* the float reader refuses more (overflow), never less */
        if (rc != 0 || fn != n)
            abort();
        for (int32_t i = 0; i < n; i++)
            if (strcmp(pieces[i], fpieces[i]) != 0 || (double)fscores[i] != (double)(float)scores[i])
                abort();
    }

    sq_wordpiece_spec spec;
    int src = sq_unigram_spec_load_use_vocab(path, &spec, &err);
    if ((src == 0) != (rc == 0) || (src == 0 && spec.vocab_size != n))
        abort();
    free(path);

    sq_unigram *u = rc == 0 ? sq_unigram_new_f64((const char *const *)pieces, scores, n, &err) : NULL;
    sq_unigram *uf = frc == 0 ? sq_unigram_new((const char *const *)fpieces, fscores, fn, &err) : NULL;
    sq_tokenizer *t = src == 0 ? sq_tokenizer_new(&spec, &err) : NULL;
    if ((u != NULL) != (t != NULL) || (frc == 0 && (uf != NULL) != (u != NULL)))
        abort();
    if (u) {
        if (sq_unigram_vocab_size(u) != n || sq_unigram_piece(u, -1) || sq_unigram_piece(u, n))
            abort();
        if (sq_tokenizer_token(t, -1) || sq_tokenizer_token(t, n))
            abort();
        run(u, t, uf, k_fixed, sizeof k_fixed - 1, true);
        if (sq_unigram_tokenize(u, "", 0, NULL, 0) > 0)
            abort(); /* an empty text gives no ids */
        if (np > 1) {
            size_t longest = 1; /* code points of the longest piece */
            for (int32_t i = 0; i < n; i++) {
                size_t cps = 0;
                for (const char *c = pieces[i]; *c; c++)
                    cps += ((unsigned char)*c & 0xC0) != 0x80;
                longest = cps > longest ? cps : longest;
            }
            size_t tl = len[1] < WORK_BUDGET / longest ? len[1] : WORK_BUDGET / longest;
            run(u, t, NULL, (const char *)part[1], tl, false);
        }
    }
    sq_tokenizer_free(t);
    sq_unigram_free(u);
    sq_unigram_free(uf);
    sq_wordpiece_spec_free(&spec);
    sq_use_vocab_free_f64(pieces, scores, n);
    sq_use_vocab_free(fpieces, fscores, fn);
    return 0;
}

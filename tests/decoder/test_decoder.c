/* Unit tests of decoder/: the llama2.c tokenizer (hand-made vocabularies,
 * tok512 round trips, llama2 golden ids), the checkpoint reader on hostile
 * files, the executor (a batched prefill == token-by-token decoding ==
 * chunked prefill), the sampler's determinism, and the document splitter.
 * Tests that need $SQUINT_SHARED_DATA skip with a message without it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_naive.h"
#include "decoder.h"
#include "llama_ckpt.h"
#include "perplexity.h"
#include "sampler.h"
#include "test_util.h"
#include "tokenizer.h"
#include "tokenizer_bpe.h"

static uint64_t g_lcg = 42;
static void heap_equals_naive(const sq_bpe *t, int rounds);

/* ---- a tokenizer file in memory ---- */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_i32(buf *b, int32_t v) { put(b, &v, 4); }
static void put_f32(buf *b, float v) { put(b, &v, 4); }

static void put_tok(buf *b, const char *s, float score)
{
    put_f32(b, score);
    put_i32(b, (int32_t)strlen(s));
    put(b, s, strlen(s));
}

/* <unk>, BOS, EOS, the 256 byte pieces (ids 3..258), then extra pieces. */
static buf vocab_with(const char *const *extra, const float *scores, int n)
{
    buf b = {0};
    put_i32(&b, 16);
    put_tok(&b, "<unk>", 0);
    put_tok(&b, "\n<s>\n", 0);
    put_tok(&b, "\n</s>\n", 0);
    for (int i = 0; i < 256; i++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", i);
        put_tok(&b, s, 0);
    }
    for (int i = 0; i < n; i++)
        put_tok(&b, extra[i], scores[i]);
    return b;
}

enum { SP = 259, A, B, AB, SPA, AA, SPAB };
static const char *const EXTRA[] = {" ", "a", "b", "ab", " a", "aa", " ab"};
static const float ESC[] = {-1, -1, -1, -2, -3, -1, -5};

static sq_bpe *small_vocab(void)
{
    buf b = vocab_with(EXTRA, ESC, 7);
    sq_err err;
    sq_bpe *t = sq_bpe_from_memory(b.p, b.n, "small", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    free(b.p);
    return t;
}

static void expect_ids(const sq_bpe *t, const char *text, bool bos, bool eos, const int32_t *want,
                       int64_t nwant)
{
    int32_t *ids;
    int64_t n = sq_bpe_encode(t, text, strlen(text), bos, eos, &ids);
    ck_assert_int_eq(n, nwant);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(ids[i] == want[i], "'%s': id %lld is %d, want %d", text, (long long)i,
                      ids[i], want[i]);
    free(ids);
}

START_TEST(bpe_merges)
{
    sq_bpe *t = small_vocab();
    ck_assert_int_eq(sq_bpe_vocab_size(t), 266);
    /* "ab" (-2) beats " a" (-3), then " "+"ab" = " ab" (-5) */
    expect_ids(t, "ab", true, false, (int32_t[]){1, SPAB}, 2);
    /* ties: the leftmost "aa" merges first */
    expect_ids(t, "aaa", false, false, (int32_t[]){SP, AA, A}, 3);
    expect_ids(t, "a", true, true, (int32_t[]){1, SPA, 2}, 3);
    /* empty text: BOS only, no dummy prefix */
    expect_ids(t, "", true, false, (int32_t[]){1}, 1);
    int32_t *ids;
    ck_assert_int_eq(sq_bpe_encode(t, "", 0, false, false, &ids), 0);
    free(ids);
    /* "€" is not a piece: its three bytes, which never merge */
    expect_ids(t, "\xe2\x82\xac", false, false, (int32_t[]){SP, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}, 4);
    /* a stray continuation byte joins the character before it (here the
     * dummy-prefix space), as run.c groups bytes: " \x80" is no piece, so
     * both become byte tokens */
    expect_ids(t, "\x80" "a", false, false, (int32_t[]){3 + 0x20, 3 + 0x80, A}, 3);
    sq_bpe_free(t);
}
END_TEST

/* The BPE kind through the one interface (tokenizer.h) gives what the kind
 * gives by itself: ids with and without BOS/EOS, the encoder template's
 * truncation, pieces, specials, lookups and the bytes-per-token bound. */
START_TEST(bpe_through_tokenizer_h)
{
    sq_bpe *raw = small_vocab();
    sq_err err;
    sq_tokenizer *t = sq_tokenizer_from_bpe(small_vocab(), &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_int_eq(sq_tokenizer_kind_of(t), SQ_TOKENIZER_BPE);
    ck_assert_ptr_nonnull(sq_tokenizer_bpe(t));
    ck_assert_int_eq(sq_tokenizer_vocab_size(t), 266);
    ck_assert_int_eq(sq_tokenizer_bos_id(t), SQ_BPE_BOS);
    ck_assert_int_eq(sq_tokenizer_eos_id(t), SQ_BPE_EOS);
    ck_assert_int_eq(sq_tokenizer_unk_id(t), SQ_BPE_UNK);
    ck_assert_int_eq(sq_tokenizer_cls_id(t), -1);
    const char *texts[] = {"", "a", "ab", "aaa", "ab ab aa b", "\xe2\x82\xac", "\x80" "a"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const char *x = texts[i];
        for (int be = 0; be < 4; be++) {
            int32_t *a, *b;
            int64_t na = sq_bpe_encode(raw, x, strlen(x), be & 1, be & 2, &a);
            int64_t nb = sq_tokenizer_encode_all(t, x, strlen(x), be & 1, be & 2, &b);
            ck_assert_int_eq(na, nb);
            ck_assert_msg(memcmp(a, b, (size_t)na * sizeof *a) == 0, "'%s' %d", x, be);
            free(a);
            free(b);
        }
        int32_t *all;
        int64_t n = sq_bpe_encode(raw, x, strlen(x), false, false, &all);
        int32_t got[64];
        ck_assert_int_eq(sq_tokenizer_tokenize(t, x, strlen(x), got, 64), n);
        ck_assert(n == 0 || memcmp(all, got, (size_t)n * sizeof *got) == 0);
        /* cap smaller than the count: the total is still returned */
        ck_assert_int_eq(sq_tokenizer_tokenize(t, x, strlen(x), got, 1), n);
        free(all);
        /* the encoder template: BOS and the first pieces, at most max_len */
        int32_t enc[2];
        int w = sq_tokenizer_encode(t, x, strlen(x), 2, enc);
        ck_assert_int_eq(w, n + 1 < 2 ? n + 1 : 2);
        ck_assert_int_eq(enc[0], SQ_BPE_BOS);
    }
    for (int32_t id = -1; id <= 266; id++) {
        size_t la, lb;
        const char *pa = sq_bpe_decode_piece(raw, 1, id, &la);
        const char *pb = sq_tokenizer_decode_piece(t, 1, id, &lb);
        ck_assert_uint_eq(la, lb);
        ck_assert(la == 0 || memcmp(pa, pb, la) == 0);
        ck_assert_int_eq(sq_tokenizer_is_special(t, id), sq_bpe_is_special(raw, id));
        size_t l;
        const char *ta = sq_bpe_token(raw, id, &l), *tb = sq_tokenizer_token(t, id);
        ck_assert(ta == tb || (ta && tb && strcmp(ta, tb) == 0));
    }
    ck_assert_int_eq(sq_tokenizer_lookup(t, "ab", 2), AB);
    ck_assert_int_eq(sq_tokenizer_lookup(t, "abc", 3), -1);
    /* the bound: the longest raw piece of the llama2.c vocabulary */
    size_t longest = 0;
    for (int32_t id = 0; id < 266; id++) {
        size_t l;
        if (sq_bpe_token(raw, id, &l) && l > longest)
            longest = l;
    }
    ck_assert_uint_eq(sq_tokenizer_max_piece_bytes(t), longest);
    sq_tokenizer_free(t);
    sq_bpe_free(raw);
    /* NULL is refused with a message, not a crash */
    ck_assert_ptr_null(sq_tokenizer_from_bpe(NULL, &err));
    ck_assert(strstr(err.msg, "BPE") != NULL);
}
END_TEST

START_TEST(bpe_heap_vs_naive_small)
{
    sq_bpe *t = small_vocab();
    heap_equals_naive(t, 500);
    sq_bpe_free(t);
}
END_TEST

START_TEST(bpe_decode)
{
    sq_bpe *t = small_vocab();
    size_t len;
    /* the leading space of a piece after BOS goes */
    char *s = sq_bpe_decode(t, -1, (int32_t[]){1, SPAB, SP, A}, 4, &len);
    ck_assert_str_eq(s, "ab a");
    free(s);
    s = sq_bpe_decode(t, 7, (int32_t[]){SPA}, 1, &len);
    ck_assert_str_eq(s, " a");
    free(s);
    /* byte pieces decode to their bytes; BOS / EOS / out of range to nothing */
    s = sq_bpe_decode(t, -1, (int32_t[]){3 + 0xE2, 3 + 0x82, 3 + 0xAC, 2, 999, -5}, 6, &len);
    ck_assert_str_eq(s, "\xe2\x82\xac");
    free(s);
    /* round trip of a text mixing pieces and bytes */
    const char *text = "ab aaa \xc3\xa9\xf0\x9f\x98\x80 b";
    int32_t *ids;
    int64_t n = sq_bpe_encode(t, text, strlen(text), true, false, &ids);
    s = sq_bpe_decode(t, -1, ids, n, &len);
    ck_assert_str_eq(s, text);
    free(s);
    free(ids);
    ck_assert_int_eq(sq_bpe_lookup(t, "ab", 2), AB);
    ck_assert_int_eq(sq_bpe_lookup(t, "abc", 3), -1);
    sq_bpe_free(t);
}
END_TEST

static void expect_refused(const buf *b, const char *needle)
{
    sq_err err = {0};
    sq_bpe *t = sq_bpe_from_memory(b->p, b->n, "bad.bin", &err);
    ck_assert_msg(t == NULL, "accepted (%s)", needle);
    ck_assert_msg(strstr(err.msg, "bad.bin") && strstr(err.msg, needle), "'%s' lacks '%s'",
                  err.msg, needle);
}

START_TEST(bpe_hostile)
{
    buf b = vocab_with(EXTRA, ESC, 7);
    buf c = {0};
    put(&c, b.p, b.n - 1); /* truncated last token */
    expect_refused(&c, "truncated");
    c.n = 0;
    put_i32(&c, 0);
    expect_refused(&c, "max_token_length");
    c.n = 2;
    expect_refused(&c, "too short");
    c.n = 0;
    put_i32(&c, 4);
    put_tok(&c, "<unk>", 0); /* longer than max_token_length 4 */
    expect_refused(&c, "length 5");
    c.n = 0;
    put_i32(&c, 8);
    put_f32(&c, NAN);
    put_i32(&c, 1);
    put(&c, "x", 1);
    expect_refused(&c, "non-finite");
    c.n = 0;
    put_i32(&c, 8);
    put_f32(&c, 0);
    put_i32(&c, 2);
    put(&c, "x\0", 2);
    expect_refused(&c, "NUL");
    c.n = 0;
    put_i32(&c, 8);
    put_tok(&c, "a", 0);
    expect_refused(&c, "at least");
    free(b.p);
    free(c.p);
}
END_TEST

static const char *shared(void) { return getenv("SQUINT_SHARED_DATA"); }

static sq_bpe *load_shared(const char *rel)
{
    if (!shared())
        return NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", shared(), rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "SKIP: %s not found\n", path);
        return NULL;
    }
    fclose(f);
    sq_err err;
    sq_bpe *t = sq_bpe_load(path, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

/* Golden ids: Meta's Llama 2 example prompts, as llama2.c's test.c lists
 * them for its tokenizer.bin (SentencePiece's own encoding). */
/* The heap-based encoder == run.c's quadratic loop (bpe_naive.c) on random
 * texts from an alphabet with spaces, ASCII, multi-byte and invalid bytes. */
static void heap_equals_naive(const sq_bpe *t, int rounds)
{
    static const char *const parts[] = {" ", "  ", "the", "e", "a", "o", "n", "s", "t", ".",
                                        "\n", "\xc3\xa9", "\xe4\xb8\x96", "\xf0\x9f\x98\x80",
                                        "\x80", "\xff", "Lily", "ing", ",", "'s"};
    char text[512];
    int32_t *ids, ref[600];
    for (int r = 0; r < rounds; r++) {
        size_t len = 0;
        g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
        int k = 1 + (int)(g_lcg >> 59);
        for (int i = 0; i < k * 6; i++) {
            g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
            const char *p = parts[(size_t)(g_lcg >> 33) % 20];
            if (len + strlen(p) >= sizeof text)
                break;
            memcpy(text + len, p, strlen(p));
            len += strlen(p);
        }
        int64_t n = sq_bpe_encode(t, text, len, true, false, &ids);
        int64_t m = bpe_naive_encode(t, text, len, ref);
        ck_assert_int_eq(n, m);
        ck_assert(memcmp(ids, ref, (size_t)n * sizeof *ids) == 0);
        free(ids);
    }
}

/* ---- the HF kind (ranked merges) ---- */

#define MS "\xe2\x96\x81"
/* <unk> <s> </s>, 256 byte pieces, then 259.. below; merges in rank order. */
enum { H_M = 259, H_A, H_B, H_AB, H_MA, H_AA, H_MAB, H_C, H_MM, H_MAA };
static sq_bpe *hf_small(bool split, bool byte_fallback, bool fuse_unk, int32_t unk)
{
    static const char *extra[] = {MS, "a", "b", "ab", MS "a", "aa", MS "ab", "c", MS MS, MS "aa"};
    const char *pieces[259 + 10];
    char bytes[256][8];
    pieces[0] = "<unk>", pieces[1] = "<s>", pieces[2] = "</s>";
    for (int i = 0; i < 256; i++) {
        snprintf(bytes[i], sizeof bytes[i], "<0x%02X>", i);
        pieces[3 + i] = bytes[i];
    }
    for (int i = 0; i < 10; i++)
        pieces[259 + i] = extra[i];
    /* "a a" ranks before "▁ a": a score-based merge would differ on "▁aa" */
    static const int32_t merges[] = {H_A, H_A, H_A, H_B, H_M, H_A, H_M, H_AB, H_M, H_M, H_MA, H_A};
    static const int32_t special[] = {1, 2};
    sq_bpe_hf h = {pieces, 269, merges, 6, true, split, byte_fallback, fuse_unk, unk, 1, 2,
                   special, 2};
    sq_err err;
    sq_bpe *t = sq_bpe_from_hf(&h, "hf-small", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

static void hf_heap_equals_naive(const sq_bpe *t, int rounds)
{
    static const char *parts[] = {"a", "b", " ", "c", "ab", "aa", "\xc3\xa9", "x", "  ",
                                  "\xe2\x96\x81", "\xff", "\n"};
    char text[256];
    int32_t ref[3 * 256 + 8];
    for (int r = 0; r < rounds; r++) {
        size_t len = 0;
        g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
        int k = 1 + (int)(g_lcg >> 58);
        for (int i = 0; i < k; i++) {
            g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
            const char *p = parts[(size_t)(g_lcg >> 33) % 12];
            if (len + strlen(p) >= sizeof text)
                break;
            memcpy(text + len, p, strlen(p));
            len += strlen(p);
        }
        int32_t *ids;
        int64_t n = sq_bpe_encode(t, text, len, true, false, &ids);
        int64_t m = bpe_naive_encode_hf(t, text, len, ref);
        ck_assert_int_eq(n, m);
        ck_assert(memcmp(ids, ref, (size_t)n * sizeof *ids) == 0);
        free(ids);
    }
}

START_TEST(bpe_hf_ranked)
{
    sq_bpe *t = hf_small(false, true, true, 0);
    ck_assert(sq_bpe_is_hf(t));
    /* "▁aa": rank 0 "a a" first, then nothing joins ▁ + aa ("▁aa" has no merge) */
    expect_ids(t, "aa", true, false, (int32_t[]){1, H_M, H_AA}, 3);
    /* "▁ab": "a b" (rank 1), then "▁ ab" (rank 3) */
    expect_ids(t, "ab", true, true, (int32_t[]){1, H_MAB, 2}, 3);
    /* two spaces: ▁▁ then the prefix... "▁▁a": ▁ a (rank 2) beats ▁ ▁ (rank 4) */
    expect_ids(t, " a", false, false, (int32_t[]){H_M, H_MA}, 2);
    expect_ids(t, "", true, false, (int32_t[]){1}, 1);
    /* byte fallback for é, then c */
    expect_ids(t, "\xc3\xa9" "c", false, false, (int32_t[]){H_M, 3 + 0xC3, 3 + 0xA9, H_C}, 4);
    size_t l;
    char *s = sq_bpe_decode(t, -1, (int32_t[]){1, H_MAB, H_MA, 3 + 0xC3, 3 + 0xA9, 2}, 6, &l);
    ck_assert_str_eq(s, "ab a\xc3\xa9");
    free(s);
    hf_heap_equals_naive(t, 400);
    sq_bpe_free(t);
    /* no byte fallback: é is <unk>, two in a row fused */
    t = hf_small(false, false, true, 0);
    expect_ids(t, "\xc3\xa9\xc3\xa9" "c", false, false, (int32_t[]){H_M, 0, H_C}, 3);
    hf_heap_equals_naive(t, 200);
    sq_bpe_free(t);
    t = hf_small(false, false, false, 0);
    expect_ids(t, "\xc3\xa9\xc3\xa9", false, false, (int32_t[]){H_M, 0, 0}, 3);
    sq_bpe_free(t);
    /* the bytes-per-token bound (serve refuses a prompt by its bytes
     * before tokenizing): with byte_fallback a token stands for a bounded
     * number of bytes; without it, fused unknowns are unbounded */
    sq_err err;
    sq_tokenizer *tk = sq_tokenizer_from_bpe(hf_small(false, true, true, 0), &err);
    ck_assert_ptr_nonnull(tk);
    const size_t bound = sq_tokenizer_max_piece_bytes(tk);
    ck_assert_uint_ge(bound, 4);
    char big[400];
    memset(big, 'c', sizeof big);
    int32_t *ids;
    int64_t nb = sq_tokenizer_encode_all(tk, big, sizeof big, false, false, &ids);
    ck_assert_int_ge(nb, (int64_t)(sizeof big / bound));
    free(ids);
    sq_tokenizer_free(tk);
    tk = sq_tokenizer_from_bpe(hf_small(false, false, true, 0), &err);
    ck_assert_ptr_nonnull(tk);
    ck_assert_uint_eq(sq_tokenizer_max_piece_bytes(tk), 0);
    sq_tokenizer_free(tk);
    /* split: no merge across the start of a ▁-word ("▁▁" never forms) */
    t = hf_small(true, true, true, 0);
    expect_ids(t, " a", false, false, (int32_t[]){H_M, H_MA}, 2);
    expect_ids(t, "  ", false, false, (int32_t[]){H_M, H_M, H_M}, 3);
    hf_heap_equals_naive(t, 400);
    sq_bpe_free(t);
}
END_TEST

START_TEST(bpe_hf_hostile)
{
    const char *pieces[4] = {"<unk>", "a", "b", "a"};
    int32_t merges[2] = {1, 2};
    sq_bpe_hf h = {pieces, 4, merges, 1, true, false, true, true, 0, -1, -1, NULL, 0};
    sq_err err;
    ck_assert_ptr_null(sq_bpe_from_hf(&h, "dup", &err));
    ck_assert_msg(strstr(err.msg, "appears twice"), "%s", err.msg);
    pieces[3] = "ab";
    merges[1] = 7;
    ck_assert_ptr_null(sq_bpe_from_hf(&h, "range", &err));
    ck_assert_msg(strstr(err.msg, "outside the vocabulary"), "%s", err.msg);
    merges[0] = 2, merges[1] = 1; /* "ba" is no piece */
    ck_assert_ptr_null(sq_bpe_from_hf(&h, "nopiece", &err));
    ck_assert_msg(strstr(err.msg, "makes no piece"), "%s", err.msg);
    h.bos = 9;
    merges[0] = 1, merges[1] = 2;
    ck_assert_ptr_null(sq_bpe_from_hf(&h, "bos", &err));
    ck_assert_msg(strstr(err.msg, "bos id 9"), "%s", err.msg);
    static const char *bad_json[] = {
        "{\"model\": {\"type\": \"WordPiece\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}, \"normalizer\": {\"type\": \"NFKC\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}}, \"pre_tokenizer\": "
        "{\"type\": \"Metaspace\", \"replacement\": \"" MS "\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b c\"]}, "
        "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"" MS "\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 4194304}}, \"pre_tokenizer\": "
        "{\"type\": \"Metaspace\", \"replacement\": \"" MS "\"}}",
    };
    static const char *why[] = {"model.type WordPiece", "normalizer NFKC", "spaces do not become",
                                "gives id 0 to", "is not \"left right\"", "id must be an integer"};
    for (size_t i = 0; i < sizeof bad_json / sizeof *bad_json; i++) {
        ck_assert_ptr_null(sq_bpe_parse_hf_json(bad_json[i], strlen(bad_json[i]), "tj", -1, -1, &err));
        ck_assert_msg(strstr(err.msg, why[i]) && strstr(err.msg, "tj"), "%zu: %s", i, err.msg);
    }
}
END_TEST

START_TEST(bpe_llama2_golden)
{
    sq_bpe *t = load_shared("llama2c-tokenizer/tokenizer.bin");
    if (!t)
        return;
    ck_assert_int_eq(sq_bpe_vocab_size(t), 32000);
    expect_ids(t, "", true, false, (int32_t[]){1}, 1);
    expect_ids(t, "I believe the meaning of life is", true, false,
               (int32_t[]){1, 306, 4658, 278, 6593, 310, 2834, 338}, 8);
    expect_ids(t, "Simply put, the theory of relativity states that ", true, false,
               (int32_t[]){1, 3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393,
                           29871},
               13);
    expect_ids(t, "A brief message congratulating the team on the launch:\n\n        Hi everyone,\n\n        I just ",
               true, false,
               (int32_t[]){1, 319, 11473, 2643, 378, 629, 271, 18099, 278, 3815, 373, 278, 6826,
                           29901, 13, 13, 4706, 6324, 14332, 29892, 13, 13, 4706, 306, 925, 29871},
               26);
    expect_ids(t, "Translate English to French:\n\n        sea otter => loutre de mer\n        peppermint => menthe poivr\xc3\xa9" "e\n        plush girafe => girafe peluche\n        cheese =>",
               true, false,
               (int32_t[]){1, 4103, 9632, 4223, 304, 5176, 29901, 13, 13, 4706, 7205, 4932, 357,
                           1149, 301, 449, 276, 316, 2778, 13, 4706, 1236, 407, 837, 524, 1149,
                           6042, 354, 772, 440, 29878, 1318, 13, 4706, 715, 1878, 330, 3055, 1725,
                           1149, 330, 3055, 1725, 4639, 28754, 13, 4706, 923, 968, 1149},
               50);
    heap_equals_naive(t, 300);
    sq_bpe_free(t);
}
END_TEST

/* tok512: decode(encode(text)) == text for every story of the sample and
 * for unicode the vocabulary lacks (byte fallback). */
START_TEST(bpe_tok512_round_trip)
{
    sq_bpe *t = load_shared("stories260K/tok512.bin");
    if (!t)
        return;
    ck_assert_int_eq(sq_bpe_vocab_size(t), 512);
    char path[1024];
    snprintf(path, sizeof path, "%s/tinystories-sample/TinyStories-valid-head.txt", shared());
    FILE *f = fopen(path, "r");
    char line[8192];
    int n_lines = 0;
    const char *extra[] = {"h\xc3\xa9llo \xf0\x9f\x98\x80 \xe4\xb8\x96\xe7\x95\x8c\n\ttab",
                           "  two leading spaces", "x"};
    for (int k = 0; f ? fgets(line, sizeof line, f) != NULL : false; k++) {
        line[strcspn(line, "\n")] = 0;
        int32_t *ids;
        int64_t n = sq_bpe_encode(t, line, strlen(line), true, false, &ids);
        ck_assert_int_gt(n, 1);
        ck_assert_int_lt(n, (int64_t)strlen(line) + 2);
        char *s = sq_bpe_decode(t, -1, ids, n, NULL);
        ck_assert_str_eq(s, line);
        free(s);
        free(ids);
        n_lines++;
    }
    if (f)
        fclose(f);
    ck_assert_int_ge(n_lines, 18);
    heap_equals_naive(t, 500);
    for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++) {
        int32_t *ids;
        int64_t n = sq_bpe_encode(t, extra[k], strlen(extra[k]), true, false, &ids);
        char *s = sq_bpe_decode(t, -1, ids, n, NULL);
        ck_assert_str_eq(s, extra[k]);
        free(s);
        free(ids);
    }
    sq_bpe_free(t);
}
END_TEST

/* ---- checkpoints ---- */

static float rnd(void)
{
    g_lcg = g_lcg * 6364136223846793005ull + 1442695040888963407ull;
    return ((float)((g_lcg >> 40) & 0xFFFFFF) / 16777216.0f - 0.5f);
}

/* A random llama2.c checkpoint; returns its bytes. vocab < 0: separate
 * classifier. */
static buf random_ckpt(int dim, int hidden, int layers, int heads, int kv, int vocab, int seq)
{
    buf b = {0};
    int32_t h[7] = {dim, hidden, layers, heads, kv, vocab, seq};
    put(&b, h, sizeof h);
    const int V = abs(vocab), hd = dim / heads, kvd = hd * kv;
    const long counts[] = {(long)V * dim, (long)layers * dim, (long)layers * dim * dim,
                           (long)layers * kvd * dim, (long)layers * kvd * dim,
                           (long)layers * dim * dim, (long)layers * dim,
                           (long)layers * hidden * dim, (long)layers * dim * hidden,
                           (long)layers * hidden * dim, dim, (long)seq * hd / 2,
                           (long)seq * hd / 2, vocab < 0 ? (long)V * dim : 0};
    const bool norm[] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++)
        for (long i = 0; i < counts[t]; i++)
            put_f32(&b, norm[t] ? 1.0f + 0.2f * rnd() : 0.8f * rnd());
    return b;
}

static void expect_ckpt_refused(const char *dir, const char *name, const buf *b, const char *needle)
{
    char *path = tu_write(dir, name, b->p, b->n);
    sq_llama_ckpt ck;
    sq_err err = {0};
    ck_assert_msg(sq_llama_ckpt_load(path, &ck, &err) != 0, "%s accepted", name);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, needle), "'%s' lacks '%s'", err.msg,
                  needle);
    free(path);
}

START_TEST(ckpt_hostile)
{
    char *dir = tu_mkdtemp();
    buf good = random_ckpt(16, 24, 2, 4, 2, 40, 8);
    char *path = tu_write(dir, "good.bin", good.p, good.n);
    sq_llama_ckpt ck;
    sq_err err;
    ck_assert_msg(sq_llama_ckpt_load(path, &ck, &err) == 0, "%s", err.msg);
    ck_assert(ck.cfg.shared_classifier && ck.wcls == NULL && ck.cfg.vocab == 40);
    sq_llama_ckpt_free(&ck);
    free(path);
    buf b = {0};
    put(&b, good.p, good.n - 4);
    expect_ckpt_refused(dir, "trunc.bin", &b, "truncated");
    b.n = 0;
    put(&b, good.p, 10);
    expect_ckpt_refused(dir, "short.bin", &b, "28-byte");
    b.n = 0;
    put(&b, good.p, good.n);
    put_f32(&b, 0);
    expect_ckpt_refused(dir, "trail.bin", &b, "trailing");
    int32_t *h = (int32_t *)b.p;
    b.n = good.n;
    h[0] = 0;
    expect_ckpt_refused(dir, "dim0.bin", &b, "dim = 0");
    h[0] = 16;
    h[4] = 3; /* 4 heads do not split in 3 groups */
    expect_ckpt_refused(dir, "kv.bin", &b, "n_kv_heads");
    h[4] = 2;
    h[3] = 3; /* 16 is not 3 heads */
    expect_ckpt_refused(dir, "heads.bin", &b, "n_heads");
    h[3] = 4;
    h[5] = -40; /* says separate, holds none */
    expect_ckpt_refused(dir, "sign.bin", &b, "vocab_size is negative");
    h[5] = 40;
    h[6] = -1;
    expect_ckpt_refused(dir, "seq.bin", &b, "seq_len");
    h[6] = 8;
    h[0] = 0x616b3432;
    expect_ckpt_refused(dir, "ak42.bin", &b, "ak42");
    h[0] = 16;
    float nan = NAN;
    memcpy(b.p + 28 + 4 * (40 * 16 + 2 * 16 + 5), &nan, 4); /* wq, layer 0 */
    expect_ckpt_refused(dir, "nan.bin", &b, "non-finite weight nan in wq (layer 0, element 5)");
    float inf = INFINITY;
    memcpy(b.p + good.n - 4 - 4 * 2 * 8 * 2, &inf, 4); /* rms_final, last element */
    memcpy(b.p + 28 + 4 * (40 * 16 + 2 * 16 + 5), &(float){0}, 4);
    expect_ckpt_refused(dir, "inf.bin", &b, "rms_final");
    free(b.p);
    free(good.p);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

/* The largest |a - b| relative to 1 + |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        m = d > m ? d : m;
    }
    return m;
}

/* Logits of ids by one prefill of max_rows rows, and token by token. */
static void check_prefill_equals_steps(sq_decoder *d, const int32_t *ids, int n)
{
    const int V = d->cfg.vocab;
    float *full = malloc((size_t)n * V * sizeof(float));
    float *chunk = malloc((size_t)n * V * sizeof(float));
    float *step = malloc((size_t)n * V * sizeof(float));
    float *last = malloc((size_t)V * sizeof(float));
    sq_decoder_state a, b, c;
    sq_err err;
    ck_assert(sq_decoder_state_init(&a, d, 256, 0, &err) == 0);
    ck_assert(sq_decoder_state_init(&b, d, 3, 0, &err) == 0);
    ck_assert(sq_decoder_state_init(&c, d, 1, 0, &err) == 0);
    ck_assert_msg(sq_decoder_forward(d, &a, ids, n, 0, full, true, &err) == 0, "%s", err.msg);
    ck_assert(sq_decoder_forward(d, &b, ids, n, 0, chunk, true, &err) == 0);
    for (int i = 0; i < n; i++)
        ck_assert(sq_decoder_forward(d, &c, ids + i, 1, i, step + (size_t)i * V, false, &err) == 0);
    /* the last row alone, after a prefill of all but the last token */
    ck_assert(sq_decoder_forward(d, &a, ids, n - 1, 0, full + 0, true, &err) == 0);
    ck_assert(sq_decoder_forward(d, &a, ids + n - 1, 1, n - 1, last, false, &err) == 0);
    ck_assert(sq_decoder_forward(d, &a, ids, n, 0, full, true, &err) == 0);
    double e1 = rel_diff(full, step, (size_t)n * V), e2 = rel_diff(chunk, step, (size_t)n * V);
    double e3 = rel_diff(last, step + (size_t)(n - 1) * V, (size_t)V);
    /* Chunks of up to 16 rows run each f32 linear row by row (f32_rows.h)
     * and every attention kernel gives a row its own bits: equal to the
     * bit. A longer prefill's sgemm may round a row differently from a
     * 1-row one by a few ulps, which bf16 or int8 attention can turn into
     * one rounding step of an operand (a quantized model's linears are
     * exact per row, so its prefill equals its decoding: cli-decoder-quant). */
    const bool s8 = d->attn_matmul != SQ_ATTN_F32;
    const double tol = s8 ? 0.05 : 5e-5;
    ck_assert_msg(memcmp(chunk, step, (size_t)n * V * sizeof(float)) == 0,
                  "%s attention: a chunked prefill differs from token-by-token decoding (%.3g)",
                  sq_attn_matmul_name(d->attn_matmul), e2);
    ck_assert_msg(e1 <= tol && e3 <= tol,
                  "%s attention: prefill vs steps %.3g, last %.3g (tolerance %.3g)",
                  sq_attn_matmul_name(d->attn_matmul), e1, e3, tol);
    if (!s8)
        for (int i = 0; i < n; i++)
            ck_assert_int_eq(sq_sample_argmax(full + (size_t)i * V, V),
                             sq_sample_argmax(step + (size_t)i * V, V));
    /* beyond the context: refused */
    ck_assert(sq_decoder_forward(d, &c, ids, 1, c.max_pos, last, false, &err) != 0);
    ck_assert(sq_decoder_forward(d, &c, (int32_t[]){V}, 1, 0, last, false, &err) != 0);
    sq_decoder_state_free(&a);
    sq_decoder_state_free(&b);
    sq_decoder_state_free(&c);
    free(full);
    free(chunk);
    free(step);
    free(last);
}

/* The prefill check at every attention precision (decoder.h), and each
 * precision applied: its logits differ from f32 attention's, by little
 * (relative to 1 + |logit|). */
static void check_every_attention(sq_decoder *d, const int32_t *ids, int n)
{
    const int V = d->cfg.vocab;
    float *ref = malloc((size_t)n * V * sizeof(float)), *got = malloc((size_t)n * V * sizeof(float));
    sq_decoder_state st;
    sq_err err;
    for (int m = SQ_ATTN_F32; m < SQ_ATTN_MATMUL_COUNT; m++) {
        d->attn_matmul = (sq_attn_matmul)m;
        check_prefill_equals_steps(d, ids, n);
        ck_assert(sq_decoder_state_init(&st, d, 64, 0, &err) == 0);
        ck_assert(sq_decoder_forward(d, &st, ids, n, 0, m == SQ_ATTN_F32 ? ref : got, true, &err) == 0);
        sq_decoder_state_free(&st);
        if (m != SQ_ATTN_F32) {
            double e = rel_diff(got, ref, (size_t)n * V), mean = 0;
            for (size_t i = 0; i < (size_t)n * V; i++)
                mean += fabs((double)got[i] - ref[i]) / (1.0 + fabs((double)ref[i]));
            mean /= (double)n * V;
            ck_assert_msg(e > 1e-6, "%s attention gave f32 attention's logits (not applied?)",
                          sq_attn_matmul_name((sq_attn_matmul)m));
            /* measured (random / stories260K): bf16 max 0.05 / 0.14, mean
             * 0.005 / 0.0035; int8 max 0.08 / 0.79, mean 0.009 / 0.018. An
             * int8 kernel that uses one token's V step for all gives max
             * 2.5 / 3.6, mean 0.35 / 0.10 */
            ck_assert_msg(e < 1.5 && mean < 0.04,
                          "%s attention: logits max %.3g, mean %.3g from f32 attention's",
                          sq_attn_matmul_name((sq_attn_matmul)m), e, mean);
        }
    }
    /* int8 sums P V in int32: more positions than it holds are refused */
    const int saved_pos = d->cfg.max_pos;
    d->attn_matmul = SQ_ATTN_INT8;
    d->cfg.max_pos = SQ_ATTN_INT8_MAX_KEYS + 1;
    ck_assert(sq_decoder_state_init(&st, d, 1, 0, &err) != 0);
    ck_assert_msg(strstr(err.msg, "int8 attention sums P.V exactly in int32, which holds up to "
                                  "65,536 positions (65537 positions asked)"),
                  "%s", err.msg);
    ck_assert(sq_attn_matmul_problem(SQ_ATTN_INT8, 64, 64, 8, SQ_ATTN_INT8_MAX_KEYS + 1) != NULL);
    ck_assert(sq_attn_matmul_problem(SQ_ATTN_INT8, 64, 64, 8, SQ_ATTN_INT8_MAX_KEYS) == NULL);
    d->cfg.max_pos = saved_pos;
    d->attn_matmul = SQ_ATTN_F32;
    free(ref);
    free(got);
}

START_TEST(prefill_equals_steps_random)
{
    char *dir = tu_mkdtemp();
    /* GQA (8 heads over 2 kv heads), a separate classifier */
    buf b = random_ckpt(32, 40, 3, 8, 2, -50, 64);
    char *path = tu_write(dir, "r.bin", b.p, b.n);
    sq_llama_ckpt ck;
    sq_err err;
    ck_assert_msg(sq_llama_ckpt_load(path, &ck, &err) == 0, "%s", err.msg);
    ck_assert(!ck.cfg.shared_classifier);
    sq_decoder d;
    ck_assert(sq_decoder_from_llama(&ck, &d, &err) == 0);
    int32_t ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = (i * 7 + 3) % 50;
    check_every_attention(&d, ids, 40);
    sq_decoder_free(&d);
    free(path);
    free(b.p);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(prefill_equals_steps_stories260k)
{
    if (!shared())
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K/stories260K.bin", shared());
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "SKIP: %s not found\n", path);
        return;
    }
    fclose(f);
    sq_llama_ckpt ck;
    sq_err err;
    ck_assert_msg(sq_llama_ckpt_load(path, &ck, &err) == 0, "%s", err.msg);
    sq_decoder d;
    ck_assert(sq_decoder_from_llama(&ck, &d, &err) == 0);
    int32_t ids[150];
    ids[0] = 1;
    for (int i = 1; i < 150; i++)
        ids[i] = 259 + (i * 37) % 253;
    check_every_attention(&d, ids, 150);
    sq_decoder_free(&d);
}
END_TEST

START_TEST(sampler_determinism)
{
    enum { V = 50 };
    float logits[V];
    for (int i = 0; i < V; i++)
        logits[i] = 0.1f * (float)((i * 17) % 23);
    int32_t seq[3][64];
    const uint64_t seeds[] = {7, 7, 8};
    for (int k = 0; k < 3; k++) {
        sq_sampler s;
        ck_assert(sq_sampler_init(&s, V, 1.0f, 0.9f, seeds[k]) == 0);
        for (int i = 0; i < 64; i++) {
            seq[k][i] = sq_sample(&s, logits);
            ck_assert(seq[k][i] >= 0 && seq[k][i] < V);
        }
        sq_sampler_free(&s);
    }
    ck_assert(memcmp(seq[0], seq[1], sizeof seq[0]) == 0);
    ck_assert(memcmp(seq[0], seq[2], sizeof seq[0]) != 0);
    /* greedy: the lowest id of equal maxima; a tiny nucleus is the argmax */
    ck_assert_int_eq(sq_sample_argmax((float[]){1, 3, 3, 2}, 4), 1);
    sq_sampler s;
    ck_assert(sq_sampler_init(&s, 4, 0.0f, 0.9f, 1) == 0);
    ck_assert_int_eq(sq_sample(&s, (float[]){1, 3, 3, 2}), 1);
    sq_sampler_free(&s);
    ck_assert(sq_sampler_init(&s, 4, 1.0f, 1e-6f, 1) == 0);
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(sq_sample(&s, (float[]){1, 2, 9, 2}), 2);
    sq_sampler_free(&s);
}
END_TEST

static int collect(void *ctx, const char *doc, size_t n)
{
    char *out = ctx;
    strncat(out, doc, n);
    strcat(out, "|");
    return 0;
}

START_TEST(split_documents)
{
    char out[256];
    const char *text = "  one\ntwo\n\n \nthree<|endoftext|>four\n\n<|endoftext|>\nfive";
    out[0] = 0;
    sq_ppl_split(text, strlen(text), SQ_DOCS_BLANK, collect, out);
    ck_assert_str_eq(out, "one\ntwo|three|four|five|");
    out[0] = 0;
    sq_ppl_split(text, strlen(text), SQ_DOCS_LINES, collect, out);
    ck_assert_str_eq(out, "one|two|three|four|five|");
    out[0] = 0;
    sq_ppl_split("", 0, SQ_DOCS_LINES, collect, out);
    ck_assert_str_eq(out, "");
}
END_TEST

/* The attention core's q/k step (Qwen3: per-head RMSNorm of q and k, then
 * RoPE) against its scalar definition in HF's layout, in double: the row
 * and the norm weights are the loader's un-permuted ones (hf_llama.c:
 * squint's channel 2j + c of a head is HF's c * hd/2 + j), so the check
 * also proves the norm commutes with the un-permutation. With qk_norm off
 * the same row gets RoPE alone. v is never touched. */
static void qk_row_check(bool qk_norm, int p)
{
    enum { NH = 3, NKV = 1, HD = 8, HALF = HD / 2, QD = NH * HD, KVD = NKV * HD };
    sq_decoder d;
    memset(&d, 0, sizeof d);
    d.cfg.n_heads = NH, d.cfg.n_kv_heads = NKV, d.cfg.head_dim = HD;
    d.cfg.q_dim = QD, d.cfg.kv_dim = KVD, d.cfg.dim = 16, d.cfg.max_pos = 16;
    d.cfg.rope_theta = 1e6f, d.cfg.norm_eps = 1e-6f, d.cfg.qk_norm = qk_norm, d.cfg.n_layers = 1;
    sq_block L;
    memset(&L, 0, sizeof L);
    float qn[HD], kn[HD];
    for (int i = 0; i < HD; i++)
        qn[i] = 1 + rnd(), kn[i] = 2 * rnd() + (i == 3 ? 6 : 0); /* one large k_norm weight */
    L.qn_g = qn, L.kn_g = kn;
    d.layers = &L;
    ck_assert_int_eq(sq_decoder_rope_tables(&d), 0);
    float row[QD + 2 * KVD], got[QD + 2 * KVD];
    for (int i = 0; i < QD + 2 * KVD; i++)
        row[i] = 3 * rnd() + (i % HD == 5 ? 20 : 0); /* a massive channel */
    memcpy(got, row, sizeof row);
    sq_decoder_qk_row(&d, 0, got, p);
    for (int h = 0; h < NH + NKV; h++) {
        const float *x = row + h * HD, *g = h < NH ? qn : kn;
        double xh[HD], gh[HD], y[HD], o[HD];
        for (int j = 0; j < HALF; j++)
            for (int c = 0; c < 2; c++)
                xh[c * HALF + j] = x[2 * j + c], gh[c * HALF + j] = g[2 * j + c];
        double ms = 0;
        for (int i = 0; i < HD; i++)
            ms += xh[i] * xh[i];
        const double inv = 1 / sqrt(ms / HD + 1e-6);
        for (int i = 0; i < HD; i++)
            y[i] = qk_norm ? xh[i] * inv * gh[i] : xh[i];
        for (int j = 0; j < HALF; j++) { /* rotate_half, inv_freq theta^(-2j/hd) */
            const double a = p * pow(1e6, -2.0 * j / HD);
            o[j] = y[j] * cos(a) - y[j + HALF] * sin(a);
            o[j + HALF] = y[j + HALF] * cos(a) + y[j] * sin(a);
        }
        for (int j = 0; j < HALF; j++)
            for (int c = 0; c < 2; c++) {
                const double want = o[c * HALF + j], have = got[h * HD + 2 * j + c];
                ck_assert_msg(fabs(have - want) <= 1e-5 * (1 + fabs(want)),
                              "head %d channel %d at %d (qk_norm %d): %g, want %g", h, 2 * j + c, p,
                              qk_norm, have, want);
            }
    }
    ck_assert_mem_eq(got + QD + KVD, row + QD + KVD, KVD * sizeof(float));
    free(d.rope_cos);
    free(d.rope_sin);
}

START_TEST(qk_norm_rope_scalar)
{
    for (int p = 0; p < 16; p += 5) {
        qk_row_check(true, p);
        qk_row_check(false, p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("decoder");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bpe_merges);
    tcase_add_test(tc, bpe_decode);
    tcase_add_test(tc, bpe_through_tokenizer_h);
    tcase_add_test(tc, bpe_heap_vs_naive_small);
    tcase_add_test(tc, bpe_hostile);
    tcase_add_test(tc, bpe_llama2_golden);
    tcase_add_test(tc, bpe_hf_ranked);
    tcase_add_test(tc, bpe_hf_hostile);
    tcase_add_test(tc, bpe_tok512_round_trip);
    tcase_add_test(tc, ckpt_hostile);
    tcase_add_test(tc, prefill_equals_steps_random);
    tcase_add_test(tc, prefill_equals_steps_stories260k);
    tcase_add_test(tc, sampler_determinism);
    tcase_add_test(tc, qk_norm_rope_scalar);
    tcase_add_test(tc, split_documents);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* Unit tests of the SentencePiece-unigram tokenizer (tokenizers/tokenizer_unigram.c),
 * its NFKC (tokenizers/unicode_nfkc.c) and the USE vocab.json reader
 * (tokenizers/use_vocab.c), on small hand-made vocabularies. Every expected id
 * list below was produced by the real JS tokenizer (@energetic-ai/embeddings
 * 0.2.0, Tokenizer.encode) on the same vocabulary. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "tokenizer_unigram.h"
#include "unicode_nfkc.h"
#include "use_vocab.h"

#define RESERVED "\xef\xbf\xbd", "<s>", "</s>", "extra_token_id_1", "extra_token_id_2", "extra_token_id_3"
#define RZERO 0, 0, 0, 0, 0, 0

/* V1: Viterbi choice, ties, unknowns, duplicates, NFKC, an astral piece. */
static const char *const V1[] = {
    RESERVED,
    "\xe2\x96\x81" "a",       /* 6  ▁a  */
    "b",                      /* 7      */
    "\xe2\x96\x81" "ab",      /* 8  ▁ab */
    "c",                      /* 9      */
    "\xe2\x96\x81",           /* 10 ▁   */
    "\xe2\x96\x81" "x",       /* 11 ▁x  */
    "y",                      /* 12     */
    "\xe2\x96\x81" "xy",      /* 13 ▁xy */
    "d",                      /* 14     */
    "d",                      /* 15 duplicate: wins */
    "\xe2\x96\x81" "fi",      /* 16 ▁fi */
    "\xe2\x96\x81\xc3\xa9",   /* 17 ▁é  */
    "\xf0\x9f\x98\x80",       /* 18 😀  */
    "<s>",                    /* 19 not reserved here */
};
static const double S1[] = {RZERO, -1, -2, -2.5, -1.5, -3, -2, -1, -3, -1, -4, -1, -1, -1, -0.5};
#define N1 ((int32_t)(sizeof V1 / sizeof V1[0]))

static sq_unigram *make(const char *const *v, const double *s, int32_t n)
{
    sq_err err = {0};
    sq_unigram *u = sq_unigram_new_f64(v, s, n, &err);
    ck_assert_msg(u != NULL, "%s", err.msg);
    return u;
}

/* Tokenize text (len = -1: strlen) and compare with the expected ids. */
static void expect(const sq_unigram *u, const char *text, long len, const int32_t *want, int64_t nwant)
{
    size_t l = len < 0 ? strlen(text) : (size_t)len;
    int32_t got[64];
    int64_t n = sq_unigram_tokenize(u, text, l, got, 64);
    ck_assert_msg(n == nwant, "\"%s\": %lld ids, expected %lld", text, (long long)n, (long long)nwant);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "\"%s\": id %lld is %d, expected %d", text, (long long)i,
                      got[i], want[i]);
}
#define EXPECT(u, text, ...)                                                                       \
    do {                                                                                           \
        static const int32_t w_[] = {__VA_ARGS__};                                                 \
        expect(u, text, -1, w_, (int64_t)(sizeof w_ / sizeof w_[0]));                              \
    } while (0)

START_TEST(test_viterbi_and_ties)
{
    sq_unigram *u = make(V1, S1, N1);
    EXPECT(u, "ab", 8);        /* ▁ab -2.5 beats ▁a b -3 */
    EXPECT(u, "abc", 8, 9);
    EXPECT(u, "xy", 11, 12);   /* tie -3 = -3: the later start (shorter piece) wins (>=) */
    EXPECT(u, "a b", 6, 10, 7);
    EXPECT(u, " ", 10, 10);    /* prefix ▁ + the space as ▁ */
    EXPECT(u, "a d", 6, 10, 15); /* duplicate "d": the last one */
    EXPECT(u, "dd", 10, 15, 15);
    ck_assert_int_eq(sq_unigram_tokenize(u, "", 0, NULL, 0), 0);
    ck_assert_int_eq(sq_unigram_vocab_size(u), N1);
    ck_assert_str_eq(sq_unigram_piece(u, 8), "\xe2\x96\x81" "ab");
    ck_assert_ptr_null(sq_unigram_piece(u, N1));
    ck_assert_ptr_null(sq_unigram_piece(u, -1));
    sq_unigram_free(u);
}
END_TEST

START_TEST(test_unknowns)
{
    sq_unigram *u = make(V1, S1, N1);
    EXPECT(u, "zz", 10, 0);                    /* two unknowns merge */
    EXPECT(u, "a\tb", 6, 0, 7);                /* only U+0020 becomes ▁ */
    EXPECT(u, "a\xef\xbf\xbd" "b", 6, 0, 7);   /* U+FFFD: the reserved piece 0 never matches */
    EXPECT(u, "a\xff" "b", 6, 0, 7);           /* invalid UTF-8 -> U+FFFD */
    {
        static const int32_t w[] = {6, 0, 7};  /* a, 3 invalid bytes + NUL -> one merged unknown, b */
        expect(u, "a\xed\xa0\x80\0b", 6, w, 3);
    }
    /* reserved "<s>" is not in the trie; id 19 starts at '<' but 's' and '>'
     * are unknown, and an unreached position scores 0 (Q7): ▁, unknown */
    EXPECT(u, "<s>", 10, 0);
    sq_unigram_free(u);
}
END_TEST

START_TEST(test_astral_step)
{
    sq_unigram *u = make(V1, S1, N1);
    /* the backtracking steps back by UTF-16 units: 2 for 😀, skipping the other 😀 */
    EXPECT(u, "a\xf0\x9f\x98\x80\xf0\x9f\x98\x80" "b", 6, 18, 7);
    EXPECT(u, "\xf0\x9f\x98\x80", 18);
    EXPECT(u, "q\xf0\x9f\x98\x80", 10, 18);
    sq_unigram_free(u);
    static const char *const V4[] = {RESERVED, "\xf0\x9f\x98\x80", "x\xf0\x9f\x98\x80", "y"};
    static const double S4[] = {RZERO, -1, -1, -2};
    u = make(V4, S4, 9);
    EXPECT(u, "\xf0\x9f\x98\x80", 6); /* the unknown ▁ is stepped over */
    EXPECT(u, "x\xf0\x9f\x98\x80", 0, 6);
    EXPECT(u, "yx\xf0\x9f\x98\x80", 0, 8, 6);
    EXPECT(u, "y\xf0\x9f\x98\x80y", 0, 6, 8);
    sq_unigram_free(u);
}
END_TEST

START_TEST(test_zero_is_unset)
{
    /* "▁q" scores exactly 0: best = 0 counts as unset, so ▁ + q (-2) replaces it. */
    static const char *const V2[] = {RESERVED, "\xe2\x96\x81", "q", "\xe2\x96\x81q"};
    static const double S2[] = {RZERO, -1, -1, 0};
    sq_unigram *u = make(V2, S2, 9);
    EXPECT(u, "q", 6, 7);
    EXPECT(u, "qq", 6, 7, 7);
    sq_unigram_free(u);
    /* No piece ends at position 1 of "▁x": it keeps best 0, and the unknown
     * from there (score 0) beats ▁x; two unknowns merge into one id 0. */
    static const char *const V3[] = {RESERVED, "\xe2\x96\x81x"};
    static const double S3[] = {RZERO, -1};
    u = make(V3, S3, 7);
    EXPECT(u, "x", 0);
    EXPECT(u, "xy", 0);
    EXPECT(u, "x x", 0);
    sq_unigram_free(u);
}
END_TEST

START_TEST(test_nfkc_in_tokenizer)
{
    sq_unigram *u = make(V1, S1, N1);
    EXPECT(u, "\xef\xac\x81", 16);                 /* ﬁ -> fi */
    EXPECT(u, "\xef\xbd\x86\xef\xbd\x89", 16);     /* fullwidth ｆｉ */
    EXPECT(u, "e\xcc\x81", 17);                    /* e + U+0301 -> é */
    EXPECT(u, "a\xc2\xa0" "b", 6, 10, 7);          /* NBSP -> space -> ▁ */
    EXPECT(u, "a\xe3\x80\x80" "b", 6, 10, 7);      /* U+3000 -> space -> ▁ */
    sq_unigram_free(u);
}
END_TEST

static void nfkc_expect(const uint32_t *in, size_t n, const uint32_t *want, size_t nwant)
{
    sq_u32buf out = {0};
    ck_assert_int_eq(sq_nfkc(in, n, &out), 0);
    ck_assert_uint_eq(out.n, nwant);
    for (size_t i = 0; i < nwant; i++)
        ck_assert_msg(out.v[i] == want[i], "cp %zu: %04X, expected %04X", i, out.v[i], want[i]);
    free(out.v);
}

START_TEST(test_nfkc)
{
    ck_assert_str_eq(sq_nfkc_unicode_version(), "17.0.0");
    ck_assert_int_eq(sq_nfkc_ccc(0x301), 230);
    ck_assert_int_eq(sq_nfkc_ccc(0x316), 220);
    ck_assert_int_eq(sq_nfkc_ccc('a'), 0);
    ck_assert_int_eq(sq_nfkc_ccc(0x1AEB), 234); /* new in Unicode 17.0 */
    {
        uint32_t in[] = {0xFDFA}, w[] = {0x635, 0x644, 0x649, 0x20, 0x627, 0x644, 0x644, 0x647, 0x20,
                                         0x639, 0x644, 0x64A, 0x647, 0x20, 0x648, 0x633, 0x644, 0x645};
        nfkc_expect(in, 1, w, 18);
    }
    {
        uint32_t in[] = {0xD55C, 0x1100, 0x1161, 0x11A8}, w[] = {0xD55C, 0xAC01}; /* Hangul */
        nfkc_expect(in, 4, w, 2);
    }
    {
        uint32_t in[] = {'a', 0x328, 0x301, 'q', 0x307, 0x323}, w[] = {0x105, 0x301, 'q', 0x323, 0x307};
        nfkc_expect(in, 6, w, 5);
    }
    {
        uint32_t in[] = {0x212B, 0x1E9B, 0x323, 0xA7F1, 0x2460}, w[] = {0xC5, 0x1E69, 'S', '1'};
        nfkc_expect(in, 5, w, 4);
    }
    {
        /* a + 100 x (U+0316 U+0301): a long run sorted stably (qsort path);
         * node gives U+00E1, 100 x U+0316, 99 x U+0301 */
        uint32_t in[201], w[200];
        in[0] = 'a';
        for (int i = 0; i < 100; i++) {
            in[1 + 2 * i] = 0x316;
            in[2 + 2 * i] = 0x301;
        }
        w[0] = 0xE1;
        for (int i = 0; i < 100; i++)
            w[1 + i] = 0x316;
        for (int i = 0; i < 99; i++)
            w[101 + i] = 0x301;
        nfkc_expect(in, 201, w, 200);
    }
    nfkc_expect(NULL, 0, NULL, 0);
}
END_TEST

START_TEST(test_cap)
{
    sq_unigram *u = make(V1, S1, N1);
    int32_t ids[4] = {-7, -7, -7, -7};
    ck_assert_int_eq(sq_unigram_tokenize(u, "abc a", 5, ids, 1), 3);
    ck_assert_int_eq(ids[0], 8);
    ck_assert_int_eq(ids[1], -7);
    ck_assert_int_eq(sq_unigram_tokenize(u, "abc a", 5, NULL, 0), 3);
    ck_assert_int_eq(sq_unigram_tokenize(u, "abc a", 5, ids, 4), 3);
    ck_assert_int_eq(ids[0], 8);
    ck_assert_int_eq(ids[1], 9);
    ck_assert_int_eq(ids[2], 6);
    ck_assert_int_eq(ids[3], -7);
    sq_unigram_free(u);
}
END_TEST

START_TEST(test_long_input)
{
    sq_unigram *u = make(V1, S1, N1);
    size_t n = 1 << 20;
    char *t = malloc(n);
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < n; i++)
        t[i] = "ab cxyz\xcc"[i % 8]; /* some invalid UTF-8 too */
    int64_t k = sq_unigram_tokenize(u, t, n, NULL, 0);
    ck_assert_int_gt(k, (int64_t)(n / 8));
    /* a long run of combining marks */
    for (size_t i = 0; i < n; i += 2)
        memcpy(t + i, "\xcc\x81", 2);
    k = sq_unigram_tokenize(u, t, n, NULL, 0);
    ck_assert_int_eq(k, 2); /* ▁, one merged unknown */
    free(t);
    sq_unigram_free(u);
}
END_TEST

START_TEST(test_float_api)
{
    float fs[N1];
    for (int i = 0; i < N1; i++)
        fs[i] = (float)S1[i];
    sq_err err = {0};
    sq_unigram *u = sq_unigram_new(V1, fs, N1, &err);
    ck_assert_msg(u != NULL, "%s", err.msg);
    EXPECT(u, "xy", 11, 12);
    sq_unigram_free(u);
    ck_assert_ptr_null(sq_unigram_new(V1, NULL, N1, &err));
    fs[7] = NAN;
    ck_assert_ptr_null(sq_unigram_new(V1, fs, N1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "piece 7"));
}
END_TEST

START_TEST(test_new_refusals)
{
    sq_err err = {0};
    double s[N1];
    memcpy(s, S1, sizeof s);
    const char *v[N1];
    memcpy(v, V1, sizeof v);
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, 6, &err)); /* only reserved pieces */
    ck_assert_ptr_nonnull(strstr(err.msg, "6 pieces"));
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, 0, &err));
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, -3, &err));
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, SQ_UNIGRAM_MAX_VOCAB + 1, &err));
    ck_assert_ptr_null(sq_unigram_new_f64(NULL, s, N1, &err));
    v[9] = NULL;
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, N1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "piece 9 is NULL"));
    v[9] = "";
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, N1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "piece 9 is empty"));
    v[9] = "a\xc3";
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, N1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "UTF-8"));
    v[9] = "\xed\xa0\x80"; /* encoded surrogate */
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, N1, &err));
    char *longp = malloc(SQ_UNIGRAM_MAX_PIECE_BYTES + 2);
    memset(longp, 'a', SQ_UNIGRAM_MAX_PIECE_BYTES + 1);
    longp[SQ_UNIGRAM_MAX_PIECE_BYTES + 1] = '\0';
    v[9] = longp;
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, N1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "longer"));
    free(longp);
    v[9] = V1[9];
    s[3] = INFINITY;
    ck_assert_ptr_null(sq_unigram_new_f64(v, s, N1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "non-finite"));
    s[3] = 0;
    sq_unigram *u = sq_unigram_new_f64(v, s, N1, &err);
    ck_assert_ptr_nonnull(u);
    sq_unigram_free(u);
    sq_unigram_free(NULL);
}
END_TEST

/* --- vocab.json reader ------------------------------------------------------ */

static char *tmpdir;

static void vsetup(void) { tmpdir = tu_mkdtemp(); }
static void vteardown(void)
{
    tu_rmtree(tmpdir);
    free(tmpdir);
}

/* Loading `json` must fail with a message containing `frag` (and the file name). */
static void refuse(const char *json, const char *frag)
{
    char *path = tu_write_str(tmpdir, "vocab.json", json);
    char **p = (char **)1;
    double *s = (double *)1;
    int32_t n = -1;
    sq_err err = {0};
    ck_assert_int_eq(sq_use_vocab_load_f64(path, &p, &s, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, frag) && strstr(err.msg, "vocab.json"), "\"%s\": got \"%s\"", frag,
                  err.msg);
    ck_assert_ptr_null(p);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(n, 0);
    float *fs;
    ck_assert_int_eq(sq_use_vocab_load(path, &p, &fs, &n, &err), -1);
    free(path);
}

START_TEST(test_vocab_load)
{
    const char *json = "[[\"\xef\xbf\xbd\",0],[\"<s>\",0],[\"</s>\",0],[\"extra_token_id_1\",0],"
                       "[\"extra_token_id_2\",0],[\"extra_token_id_3\",0],[\"\\u2581a\",-1.25],"
                       "[\":\",null],[\":30\",30],[\"b\",-3.28450870514]]";
    char *path = tu_write_str(tmpdir, "vocab.json", json);
    char **p;
    double *s;
    int32_t n;
    sq_err err = {0};
    ck_assert_int_eq(sq_use_vocab_load_f64(path, &p, &s, &n, &err), 0);
    ck_assert_int_eq(n, 10);
    ck_assert_str_eq(p[6], "\xe2\x96\x81" "a");
    ck_assert(s[6] == -1.25);
    ck_assert(s[7] == 0.0); /* null */
    ck_assert(s[8] == 30.0);
    ck_assert(s[9] == -3.28450870514); /* exact double of the JSON text */
    sq_use_vocab_free_f64(p, s, n);
    float *fs;
    ck_assert_int_eq(sq_use_vocab_load(path, &p, &fs, &n, &err), 0);
    ck_assert(fs[9] == (float)-3.28450870514);
    sq_use_vocab_free(p, fs, n);
    sq_unigram *u = sq_unigram_load_use_vocab(path, &err);
    ck_assert_msg(u != NULL, "%s", err.msg);
    /* ":30" scores +30 and ':' null (0); "a" alone is unknown, and the
     * unreached position after ▁ (Q7) lets that unknown beat ▁a (JS: 0 8) */
    EXPECT(u, "a:30", 0, 8);
    sq_unigram_free(u);
    free(path);
}
END_TEST

START_TEST(test_vocab_refusals)
{
    refuse("{\"a\": 1}", "not an array");
    refuse("[]", "0 entries");
    refuse("[[\"a\",1", "invalid JSON");
    refuse("", "invalid JSON");
    refuse("[[\"a\",1],\"b\"]", "entry 1: not a [piece, score] pair");
    refuse("[[\"a\",1],[\"b\",2,3]]", "entry 1: not a [piece, score] pair");
    refuse("[[\"a\",1],[\"b\"]]", "entry 1: not a [piece, score] pair");
    refuse("[[\"a\",1],[2,2]]", "entry 1: piece is not a string");
    refuse("[[\"a\",1],[\"b\",2],[\"c\",\"x\"]]", "entry 2: score is not a number");
    refuse("[[\"a\",1],[\"b\",true]]", "entry 1: score is not a number");
    refuse("[[\"a\",1],[\"\",2]]", "entry 1: piece is empty");
    refuse("[[\"a\\u0000b\",1]]", "invalid JSON");
    refuse("[[\"a\",1e999]]", "invalid JSON");
    refuse("[[\"\xff\",1]]", "invalid JSON");
    {
        size_t len = SQ_USE_VOCAB_MAX_PIECE + 1;
        char *j = malloc(len + 32);
        strcpy(j, "[[\"");
        memset(j + 3, 'a', len);
        strcpy(j + 3 + len, "\",1]]");
        refuse(j, "entry 0: piece is longer than 1024 bytes");
        free(j);
    }
    {
        /* a finite double that does not fit a float: the float API refuses it */
        char *path = tu_write_str(tmpdir, "vocab.json", "[[\"a\",1],[\"b\",-1e300]]");
        char **p;
        float *fs;
        int32_t n;
        sq_err err = {0};
        ck_assert_int_eq(sq_use_vocab_load(path, &p, &fs, &n, &err), -1);
        ck_assert_ptr_nonnull(strstr(err.msg, "entry 1"));
        free(path);
    }
    sq_err err = {0};
    char **p;
    double *s;
    int32_t n;
    char missing[512];
    snprintf(missing, sizeof missing, "%s/none/vocab.json", tmpdir);
    ck_assert_int_eq(sq_use_vocab_load_f64(missing, &p, &s, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
    /* loads but has only reserved pieces: sq_unigram refuses, naming the file */
    char *path = tu_write_str(tmpdir, "vocab.json", "[[\"a\",0],[\"b\",0]]");
    ck_assert_ptr_null(sq_unigram_load_use_vocab(path, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "vocab.json"));
    free(path);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tokenizer_unigram");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_viterbi_and_ties);
    tcase_add_test(tc, test_unknowns);
    tcase_add_test(tc, test_astral_step);
    tcase_add_test(tc, test_zero_is_unset);
    tcase_add_test(tc, test_nfkc_in_tokenizer);
    tcase_add_test(tc, test_nfkc);
    tcase_add_test(tc, test_cap);
    tcase_add_test(tc, test_long_input);
    tcase_add_test(tc, test_float_api);
    tcase_add_test(tc, test_new_refusals);
    suite_add_tcase(s, tc);
    TCase *tv = tcase_create("use_vocab");
    tcase_add_checked_fixture(tv, vsetup, vteardown);
    tcase_add_test(tv, test_vocab_load);
    tcase_add_test(tv, test_vocab_refusals);
    suite_add_tcase(s, tv);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

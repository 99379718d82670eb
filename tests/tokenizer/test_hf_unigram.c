/* The Hugging Face Unigram kind (tokenizers/tokenizer_hf_unigram.h,
 * hf_unigram_json.c, precompiled_norm.h) on tiny tokenizer.json files with
 * charsmaps built here (charsmap_build.h): the Precompiled rule of the Rust
 * crate (shortest key, grapheme clusters under 6 bytes), the space
 * collapse, Metaspace's schemes, Viterbi with fused unknowns, added tokens
 * with lstrip, invalid UTF-8, decode, and hostile files and blobs. The
 * expected ids of encode_rules are tokenizers (Rust) 0.21.1's on the same
 * files (its Tokenizer.from_str reads the charsmap built here). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "charsmap_build.h"
#include "hf_tokenizer.h"
#include "precompiled_norm.h"
#include "tokenizer.h"
#include "unicode_props.h"

static char dir[256], path[512];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/squint-hfu-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

/* The test charsmap: a few nmt_nfkc-like rules. */
static const char *const K[] = {"\xef\xbc\xa1", "\xef\xac\x81", "\t", "\n", "e\xcc\x81",
                                "\xe2\x84\xa6", "\xe2\x84\xa6\xcc\x81", "\xef\xbd\xb6\xef\xbe\x9e",
                                "\xc2\xa0", "\x01"};
static const char *const R[] = {"A", "fi", " ", " ", "\xc3\xa9", "\xce\xa9", "\xce\x8f",
                                "\xe3\x82\xac", " ", ""};
#define NK (int)(sizeof K / sizeof *K)

static uint8_t *test_blob(size_t *len)
{
    uint8_t *b = tk_charsmap_build(K, R, NK, len);
    ck_assert_ptr_nonnull(b);
    return b;
}

static void norm_is(const sq_pcnorm *p, const char *in, const char *want)
{
    char *out;
    size_t n;
    ck_assert_int_eq(sq_pcnorm_apply(p, in, strlen(in), &out, &n), 0);
    ck_assert_msg(n == strlen(want) && memcmp(out, want, n) == 0, "\"%s\" -> \"%s\", want \"%s\"",
                  in, out, want);
    free(out);
}

START_TEST(precompiled_rules)
{
    size_t len;
    uint8_t *b = test_blob(&len);
    sq_err err;
    sq_pcnorm *p = sq_pcnorm_new(b, len, "t", &err);
    ck_assert_msg(p != NULL, "%s", err.msg);
    for (int i = 0; i < NK; i++) { /* every key alone */
        size_t rl;
        const char *r = sq_pcnorm_lookup(p, (const uint8_t *)K[i], strlen(K[i]), &rl);
        const char *want = i == 6 ? R[5] : R[i]; /* the shortest key that is a prefix */
        ck_assert_ptr_nonnull(r);
        ck_assert(rl == strlen(want) && memcmp(r, want, rl) == 0);
    }
    norm_is(p, "\xef\xbc\xa1\xef\xac\x81\tx\ny", "Afi x y");
    norm_is(p, "caf" "e\xcc\x81", "caf\xc3\xa9");
    /* a cluster under 6 bytes takes its SHORTEST key and drops the rest (Rust) */
    norm_is(p, "\xe2\x84\xa6\xcc\x81", "\xce\xa9");
    /* 6 bytes or more: character by character, no multi-character key */
    norm_is(p, "\xef\xbd\xb6\xef\xbe\x9e", "\xef\xbd\xb6\xef\xbe\x9e");
    norm_is(p, "\xef\xbc\xa1\xcc\x81\xcc\x81", "A\xcc\x81\xcc\x81");
    norm_is(p, "a\x01" "b", "ab");
    norm_is(p, "no change \xf0\x9f\x98\x80", "no change \xf0\x9f\x98\x80");
    norm_is(p, "", "");
    /* the trie walk stops at a NUL byte */
    char *out;
    size_t n;
    ck_assert_int_eq(sq_pcnorm_apply(p, "\0\t", 2, &out, &n), 0);
    ck_assert(n == 2 && out[0] == 0 && out[1] == ' ');
    free(out);
    size_t bl;
    ck_assert(sq_pcnorm_blob(p, &bl) != NULL && bl == len);
    sq_pcnorm_free(p);
    free(b);
}
END_TEST

START_TEST(hostile_blobs)
{
    size_t len;
    uint8_t *b = test_blob(&len);
    sq_err err;
    uint8_t small[8] = {4, 0, 0, 0, 0, 0, 0, 0};
    ck_assert_ptr_null(sq_pcnorm_new(b, 3, "t", &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "shorter"));
    small[0] = 6; /* not a multiple of 4 */
    ck_assert_ptr_null(sq_pcnorm_new(small, 8, "t", &err));
    small[0] = 8; /* past the end */
    ck_assert_ptr_null(sq_pcnorm_new(small, 8, "t", &err));
    small[0] = 0;
    ck_assert_ptr_null(sq_pcnorm_new(small, 8, "t", &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "trie size"));
    /* invalid UTF-8 in the strings */
    uint8_t *c = malloc(len + 1);
    memcpy(c, b, len);
    c[len] = 0xff;
    ck_assert_ptr_null(sq_pcnorm_new(c, len + 1, "t", &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "UTF-8"));
    /* every single-byte change of the trie: accepted or not, applying never
     * reads outside the blob (ASan) and gives valid UTF-8 */
    static const char text[] = "\xef\xbc\xa1\xef\xac\x81\t\n e\xcc\x81 \xe2\x84\xa6\xcc\x81 "
                               "\xef\xbd\xb6\xef\xbe\x9e\xc2\xa0\x01 x";
    uint32_t ts = b[0] | (uint32_t)b[1] << 8;
    for (size_t i = 4; i < 4 + ts; i++) {
        for (int v = 0; v < 4; v++) {
            memcpy(c, b, len);
            c[i] ^= (uint8_t)(v == 0 ? 0x01 : v == 1 ? 0x80 : v == 2 ? 0xff : 0x04);
            sq_pcnorm *p = sq_pcnorm_new(c, len, "t", &err);
            if (!p)
                continue;
            char *out;
            size_t n;
            ck_assert_int_eq(sq_pcnorm_apply(p, text, sizeof text - 1, &out, &n), 0);
            ck_assert(sq_utf8_valid((const uint8_t *)out, n));
            free(out);
            sq_pcnorm_free(p);
        }
    }
    /* a value that points past the strings or into a character: no match */
    const char *k1[] = {"a"}, *r1[] = {"\xc3\xa9"};
    size_t l1;
    uint8_t *b1 = tk_charsmap_build(k1, r1, 1, &l1);
    ck_assert_ptr_nonnull(b1);
    uint32_t ts1 = b1[0] | (uint32_t)b1[1] << 8;
    size_t leaf = 0;
    for (size_t i = 4; i < 4 + ts1; i += 4)
        if (b1[i + 3] & 0x80)
            leaf = i;
    ck_assert_uint_ne(leaf, 0);
    for (int v = 0; v < 3; v++) {
        b1[leaf] = (uint8_t)(v == 0 ? 0 : v == 1 ? 1 : 200); /* 0 good, 1 mid-character, 200 outside */
        sq_pcnorm *p = sq_pcnorm_new(b1, l1, "t", &err);
        ck_assert_ptr_nonnull(p);
        norm_is(p, "ab", v == 0 ? "\xc3\xa9" "b" : "ab");
        sq_pcnorm_free(p);
    }
    free(b1);
    free(c);
    free(b);
}
END_TEST

/* ---- tokenizer.json files ---- */

static const char *VOCAB =
    "[[\"<s>\",0.0],[\"<pad>\",0.0],[\"</s>\",0.0],[\"<unk>\",0.0],"
    "[\"\\u2581\",-2.0],[\"\\u2581a\",-3.0],[\"b\",-4.0],[\"\\u2581ab\",-5.0],[\"c\",-4.5],"
    "[\"\\u2581c\",-4.0],[\"a\",-3.5],[\"\\u00e9\",-6.0],[\"fi\",-6.5],[\"\\u2581fi\",-7.0],"
    "[\"xy\",-20.0],[\"<mask>\",0.0]]";

/* Write a tokenizer.json: normalizer / pre_tokenizer / post / decoder / added JSON. */
static void write_json(const char *model_extra, const char *norm, const char *pre,
                       const char *post, const char *dec, const char *added)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "{\"version\":\"1.0\",\"added_tokens\":%s,\"normalizer\":%s,\"pre_tokenizer\":%s,"
            "\"post_processor\":%s,\"decoder\":%s,\"model\":{\"type\":\"Unigram\",\"unk_id\":3,"
            "\"vocab\":%s%s}}",
            added, norm, pre, post, dec, VOCAB, model_extra);
    fclose(f);
}

#define META_ALWAYS "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\",\"split\":true}"
#define ROBERTA "{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",0]}"
#define ADDED                                                                                   \
    "[{\"id\":0,\"content\":\"<s>\",\"special\":true},{\"id\":2,\"content\":\"</s>\","     \
    "\"special\":true},{\"id\":15,\"content\":\"<mask>\",\"lstrip\":true,\"special\":true}]"

static char *norm_json(void)
{
    size_t len;
    uint8_t *b = test_blob(&len);
    char *b64 = tk_base64(b, len);
    free(b);
    char *s = malloc(strlen(b64) + 256);
    sprintf(s, "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Precompiled\","
               "\"precompiled_charsmap\":\"%s\"},{\"type\":\"Replace\",\"pattern\":{\"Regex\":"
               "\" {2,}\"},\"content\":\" \"}]}", b64);
    free(b64);
    return s;
}

static sq_tokenizer *load(void)
{
    sq_err err;
    sq_tokenizer *t = sq_tokenizer_load_dir(dir, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

static void ids_are(const sq_tokenizer *t, const char *text, size_t len, const char *want)
{
    int32_t *ids;
    int64_t n = sq_tokenizer_encode_all(t, text, len, false, false, &ids);
    ck_assert_int_ge(n, 0);
    char got[512] = "";
    for (int64_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), i ? " %d" : "%d", ids[i]);
    ck_assert_msg(strcmp(got, want) == 0, "\"%.*s\": %s, want %s", (int)len, text, got, want);
    free(ids);
}
#define IDS(t, s, w) ids_are(t, s, sizeof s - 1, w)

START_TEST(encode_rules)
{
    char *norm = norm_json();
    write_json("", norm, META_ALWAYS, ROBERTA, META_ALWAYS, ADDED);
    sq_tokenizer *t = load();
    ck_assert_int_eq(sq_tokenizer_kind_of(t), SQ_TOKENIZER_HF_UNIGRAM);
    ck_assert(sq_tokenizer_pair_double_sep(t));
    ck_assert_int_eq(sq_tokenizer_mask_id(t), 15);
    ck_assert_int_eq(sq_tokenizer_pad_id(t), 1);
    IDS(t, "ab", "7");                   /* ▁ab beats ▁a + b */
    IDS(t, "ab c", "7 9");
    IDS(t, "  ab \t\n c  ", "7 9 4");    /* tab/newline -> space, runs collapse, ▁ prefix kept */
    IDS(t, "\xef\xac\x81", "13");        /* ﬁ -> fi -> ▁fi */
    IDS(t, "ca" "e\xcc\x81", "9 10 11"); /* composed by the charsmap */
    IDS(t, "a zzq b", "5 4 3 4 6");      /* unknown run fused into one <unk> */
    IDS(t, "axy", "5 14");               /* an unknown-free piece */
    IDS(t, "a <mask> b", "5 15 4 6");    /* lstrip takes the space before <mask> */
    IDS(t, "<mask>ab", "15 7");          /* always: ▁ after an added token too */
    IDS(t, "<s>a</s>", "0 5 2");
    IDS(t, "", "");
    IDS(t, "   ", "4");
    /* invalid UTF-8: each maximal ill-formed subpart is U+FFFD (unknown) */
    int32_t *a, *b;
    int64_t na = sq_tokenizer_encode_all(t, "a\xff\xe2\x82 b", 6, true, true, &a);
    int64_t nb = sq_tokenizer_encode_all(t, "a\xef\xbf\xbd\xef\xbf\xbd b", 9, true, true, &b);
    ck_assert(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0);
    ck_assert_int_eq(a[0], 0);
    ck_assert_int_eq(a[na - 1], 2);
    free(a);
    free(b);
    /* the encoder's sequence: <s> tokens </s>, truncated */
    int32_t e[4];
    ck_assert_int_eq(sq_tokenizer_encode(t, "ab c ab c", 9, 4, e), 4);
    ck_assert(e[0] == 0 && e[1] == 7 && e[2] == 9 && e[3] == 2);
    /* decode: ▁ is a space, the first piece loses it, specials give nothing */
    size_t l;
    const char *p = sq_tokenizer_decode_piece(t, -1, 7, &l);
    ck_assert(l == 2 && memcmp(p, "ab", 2) == 0);
    p = sq_tokenizer_decode_piece(t, 0, 7, &l);
    ck_assert(l == 2 && memcmp(p, "ab", 2) == 0);
    p = sq_tokenizer_decode_piece(t, 7, 9, &l);
    ck_assert(l == 2 && memcmp(p, " c", 2) == 0);
    sq_tokenizer_decode_piece(t, 7, 15, &l);
    ck_assert_int_eq(l, 0);
    p = sq_tokenizer_decode_piece(t, 15, 9, &l); /* after <mask>: "a <mask> c" decodes to "a c" */
    ck_assert(l == 2 && memcmp(p, " c", 2) == 0);
    ck_assert(sq_tokenizer_is_special(t, 15) && !sq_tokenizer_is_special(t, 7));
    ck_assert_int_eq(sq_tokenizer_lookup(t, "\xe2\x96\x81" "ab", 5), 7);
    ck_assert_int_eq(sq_tokenizer_max_piece_bytes(t), 0);
    sq_tokenizer_free(t);

    /* prepend_scheme first: only the text's first stretch; never; split false */
    write_json("", norm,
               "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"first\"}",
               ROBERTA, "null", ADDED);
    t = load();
    IDS(t, "ab<mask>ab", "7 15 10 6");
    sq_tokenizer_free(t);
    write_json("", norm,
               "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"add_prefix_space\":false}",
               ROBERTA, "null", ADDED);
    t = load();
    IDS(t, "ab c", "10 6 9");
    p = sq_tokenizer_decode_piece(t, -1, 9, &l);
    ck_assert(l == 2 && memcmp(p, " c", 2) == 0); /* never: the space stays */
    sq_tokenizer_free(t);
    /* no normalizer: the tab is an unknown character */
    write_json(",\"byte_fallback\":false", "null", META_ALWAYS, ROBERTA, "null", "[]");
    t = load();
    IDS(t, "a\tb", "5 3 6");
    IDS(t, "<mask>", "4 15"); /* not an added token here: the piece, after ▁ */
    sq_tokenizer_free(t);
    free(norm);
}
END_TEST

/* A file the reader refuses, with err naming the problem. */
static void refused(const char *why)
{
    sq_err err;
    sq_wordpiece_spec spec;
    ck_assert_int_ne(sq_wordpiece_spec_load_dir(dir, &spec, &err), 0);
    ck_assert_msg(strstr(err.msg, why) != NULL, "\"%s\" lacks \"%s\"", err.msg, why);
    ck_assert_msg(strstr(err.msg, "tokenizer.json") != NULL, "%s", err.msg);
    ck_assert_ptr_null(spec.vocab);
}

START_TEST(hostile_files)
{
    char *norm = norm_json();
    write_json(",\"byte_fallback\":true", "null", META_ALWAYS, ROBERTA, "null", ADDED);
    refused("byte_fallback true");
    write_json(",\"fuse_unk\":true", "null", META_ALWAYS, ROBERTA, "null", ADDED);
    refused("model.fuse_unk");
    write_json("", "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}",
               META_ALWAYS, ROBERTA, "null", ADDED);
    refused("Replace is supported only");
    write_json("", "{\"type\":\"Replace\",\"pattern\":{\"String\":\"  \"},\"content\":\" \"}",
               META_ALWAYS, ROBERTA, "null", ADDED);
    refused("Replace is supported only");
    write_json("", "{\"type\":\"NFKC\"}", META_ALWAYS, ROBERTA, "null", ADDED);
    refused("normalizer type \"NFKC\"");
    write_json("", "{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"AAA*\"}", META_ALWAYS,
               ROBERTA, "null", ADDED);
    refused("not valid base64");
    write_json("", "{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"BwAAAAAA\"}",
               META_ALWAYS, ROBERTA, "null", ADDED);
    refused("trie size");
    write_json("", "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Replace\",\"pattern\":"
               "{\"Regex\":\" {2,}\"},\"content\":\" \"},{\"type\":\"Precompiled\"}]}",
               META_ALWAYS, ROBERTA, "null", ADDED);
    refused("must come first");
    write_json("", norm, "{\"type\":\"Whitespace\"}", ROBERTA, "null", ADDED);
    refused("only Metaspace");
    write_json("", norm, "{\"type\":\"Metaspace\",\"replacement\":\"_\"}", ROBERTA, "null", ADDED);
    refused("replacement");
    write_json("", norm, "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"sometimes\"}",
               ROBERTA, "null", ADDED);
    refused("prepend_scheme \"sometimes\"");
    write_json("", norm, "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\",\"add_prefix_space\":false}",
               ROBERTA, "null", ADDED);
    refused("disagree");
    write_json("", norm, META_ALWAYS, "null", "null", ADDED);
    refused("post_processor");
    write_json("", norm, META_ALWAYS, "{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",99],\"cls\":[\"<s>\",0]}",
               "null", ADDED);
    refused("post_processor.cls");
    write_json("", norm, META_ALWAYS, ROBERTA,
               "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"never\"}", ADDED);
    refused("disagree on");
    write_json("", norm, META_ALWAYS, ROBERTA, "{\"type\":\"ByteLevel\"}", ADDED);
    refused("decoder ByteLevel");
    write_json("", norm, META_ALWAYS, ROBERTA, "null",
               "[{\"id\":15,\"content\":\"<mask>\",\"normalized\":true,\"special\":true}]");
    refused("normalized false");
    write_json("", norm, META_ALWAYS, ROBERTA, "null",
               "[{\"id\":15,\"content\":\"<s>\",\"special\":true}]");
    refused("not the vocab entry");
    write_json("", norm, META_ALWAYS, ROBERTA, "null",
               "[{\"id\":0,\"content\":\"<s>\",\"special\":true},{\"id\":0,\"content\":\"<s>\",\"special\":true}]");
    refused("appears twice");
    free(norm);
    /* model: vocab entries, unk_id, duplicates */
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"pre_tokenizer\":" META_ALWAYS ",\"post_processor\":" ROBERTA ",\"model\":"
               "{\"type\":\"Unigram\",\"vocab\":[[\"<s>\",0],[\"</s>\",0]]}}");
    fclose(f);
    refused("model.unk_id");
    f = fopen(path, "w");
    fprintf(f, "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<s>\",\"x\"]]}}");
    fclose(f);
    refused("model.vocab[0]");
    f = fopen(path, "w");
    fprintf(f, "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[]}}");
    fclose(f);
    refused("model.vocab has 0");
    f = fopen(path, "w");
    fprintf(f, "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"\",1]]}}");
    fclose(f);
    refused("empty");
    f = fopen(path, "w");
    fprintf(f, "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":{\"a\":1}}}");
    fclose(f);
    refused("model.vocab must be an array");
    f = fopen(path, "w");
    fprintf(f, "{\"pre_tokenizer\":" META_ALWAYS ",\"post_processor\":{\"type\":"
               "\"RobertaProcessing\",\"sep\":[\"</s>\",1],\"cls\":[\"<s>\",0]},\"model\":"
               "{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<s>\",0],[\"</s>\",0],[\"<s>\",-1]]}}");
    fclose(f);
    sq_err err;
    ck_assert_ptr_null(sq_tokenizer_load_dir(dir, &err));
    ck_assert_msg(strstr(err.msg, "appears twice") != NULL, "%s", err.msg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hf_unigram");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, precompiled_rules);
    tcase_add_test(tc, hostile_blobs);
    tcase_add_test(tc, encode_rules);
    tcase_add_test(tc, hostile_files);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

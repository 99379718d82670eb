/* Unit tests for the WordPiece tokenizer and its file loaders, on a small
 * vocabulary written to a temporary directory (no shared data needed). */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hf_tokenizer.h"
#include "tokenizer.h"
#include "unicode_props.h"

static const char *const VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",", "!", "un",
    "##aff", "##able", "cafe", "café", "i", "##\xcc\x87", "中", "文", "x", "##x",
    "\xd0\xb6", "##\xd0\xb6", "\xcf\x83", "##\xce\xb1", "##\xcf\x82", "##\xcf\x83", "a", "b", "[", "]",
    "mask", "hel", "##lo", "e", "##e", "HELLO",
};
#define NV ((int)(sizeof VOCAB / sizeof VOCAB[0]))

static char tmpdir[256];

static void write_file(const char *name, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void write_str(const char *name, const char *s) { write_file(name, s, strlen(s)); }

static void remove_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    unlink(path);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/squint-tok-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    const char *names[] = {"vocab.txt", "tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < 3; i++)
        remove_file(names[i]);
    rmdir(tmpdir);
}

/* A spec over VOCAB with BertTokenizer defaults. */
static void make_spec(sq_wordpiece_spec *s)
{
    memset(s, 0, sizeof *s);
    s->vocab = calloc(NV, sizeof *s->vocab);
    for (int i = 0; i < NV; i++)
        s->vocab[i] = strdup(VOCAB[i]);
    s->vocab_size = NV;
    s->clean_text = s->handle_chinese_chars = s->lowercase = true;
    s->strip_accents = -1;
    s->continuing_subword_prefix = strdup("##");
    s->max_input_chars_per_word = 100;
    s->unk_id = 1;
    s->cls_id = 2;
    s->sep_id = 3;
    s->pad_id = 0;
    s->mask_id = 4;
}

static sq_tokenizer *make_tok(void (*tweak)(sq_wordpiece_spec *))
{
    sq_wordpiece_spec s;
    make_spec(&s);
    if (tweak)
        tweak(&s);
    sq_err err = {0};
    sq_tokenizer *t = sq_tokenizer_new(&s, &err);
    sq_wordpiece_spec_free(&s);
    ck_assert_msg(t != NULL, "sq_tokenizer_new: %s", err.msg);
    return t;
}

/* Tokenize and compare with the expected token strings (NULL-terminated). */
static void expect_tokens(const sq_tokenizer *t, const char *text, size_t len, ...)
{
    int32_t ids[256];
    int64_t n = sq_tokenizer_tokenize(t, text, len, ids, 256);
    va_list ap;
    va_start(ap, len);
    int64_t k = 0;
    for (const char *want; (want = va_arg(ap, const char *)); k++) {
        ck_assert_msg(k < n, "\"%s\": only %lld tokens, expected more (\"%s\")", text, (long long)n,
                      want);
        ck_assert_msg(strcmp(sq_tokenizer_token(t, ids[k]), want) == 0,
                      "\"%s\": token %lld is \"%s\", expected \"%s\"", text, (long long)k,
                      sq_tokenizer_token(t, ids[k]), want);
    }
    va_end(ap);
    ck_assert_msg(n == k, "\"%s\": %lld tokens, expected %lld", text, (long long)n, (long long)k);
}
#define EXPECT(t, text, ...) expect_tokens(t, text, strlen(text), __VA_ARGS__, (const char *)NULL)

/* ---- tokenization ------------------------------------------------------- */

START_TEST(empty_and_whitespace)
{
    sq_tokenizer *t = make_tok(NULL);
    ck_assert_int_eq(sq_tokenizer_tokenize(t, "", 0, NULL, 0), 0);
    ck_assert_int_eq(sq_tokenizer_tokenize(t, " \t\r\n \xc2\xa0\xe3\x80\x80", 10, NULL, 0), 0);
    int32_t ids[4];
    ck_assert_int_eq(sq_tokenizer_encode(t, "", 0, 4, ids), 2);
    ck_assert_int_eq(ids[0], 2);
    ck_assert_int_eq(ids[1], 3);
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(punctuation_and_wordpiece)
{
    sq_tokenizer *t = make_tok(NULL);
    EXPECT(t, "Hello, world!", "hello", ",", "world", "!");
    EXPECT(t, "hello,world!!", "hello", ",", "world", "!", "!");
    EXPECT(t, "unaffable", "un", "##aff", "##able");
    EXPECT(t, "  unaffable\tworld  ", "un", "##aff", "##able", "world");
    /* one unmatched piece makes the whole word a single [UNK] */
    EXPECT(t, "unaffablez hello", "[UNK]", "hello");
    EXPECT(t, "hel hello helo", "hel", "hello", "[UNK]");
    /* '$' is ASCII punctuation for BERT although Unicode calls it a symbol */
    EXPECT(t, "a$b", "a", "[UNK]", "b");
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(accents_and_case)
{
    sq_tokenizer *t = make_tok(NULL);
    EXPECT(t, "Café CAFÉ cafe\xcc\x81", "cafe", "cafe", "cafe");
    /* U+0130 lowercases to i + U+0307, which accent stripping removes */
    EXPECT(t, "\xc4\xb0", "i");
    /* capital sigma lowercases per code point, as in tokenizers' Rust code:
     * U+03C3 even at the end of a word (no Final_Sigma) */
    EXPECT(t, "\xce\xa3\xce\x91\xce\xa3", "\xcf\x83", "##\xce\xb1", "##\xcf\x83");
    EXPECT(t, "\xce\xa3\xce\x91\xce\xa3\xce\x91", "\xcf\x83", "##\xce\xb1", "##\xcf\x83",
           "##\xce\xb1");
    sq_tokenizer_free(t);
}
END_TEST

static void no_strip(sq_wordpiece_spec *s) { s->strip_accents = 0; }
static void no_lower(sq_wordpiece_spec *s) { s->lowercase = false; }

START_TEST(accent_and_case_options)
{
    sq_tokenizer *t = make_tok(no_strip);
    EXPECT(t, "Café", "café");
    EXPECT(t, "cafe\xcc\x81", "[UNK]"); /* no NFC: the combining accent stays */
    EXPECT(t, "\xc4\xb0", "i", "##\xcc\x87");
    sq_tokenizer_free(t);
    t = make_tok(no_lower); /* strip_accents -1 follows lowercase: off too */
    EXPECT(t, "HELLO hello Hello", "HELLO", "hello", "[UNK]");
    EXPECT(t, "café", "café");
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(cjk_and_cleaning)
{
    sq_tokenizer *t = make_tok(NULL);
    EXPECT(t, "中文", "中", "文");
    EXPECT(t, "a中b", "a", "中", "b");
    /* controls, NUL, U+FFFD, soft hyphen (Cf) vanish; odd spaces separate */
    expect_tokens(t, "hel\x01lo\0 wor\xef\xbf\xbdld h\xc2\xad" "ello", 24, "hello", "world", "hello",
                  (const char *)NULL);
    EXPECT(t, "hello\xc2\xa0world\xe2\x80\xa8hello", "hello", "world", "hello");
    /* invalid UTF-8 decodes to U+FFFD, which clean_text drops */
    EXPECT(t, "hel\xfflo wo\xe4\xb8rld \xed\xa0\x80x", "hello", "world", "x");
    sq_tokenizer_free(t);
}
END_TEST

static void max5(sq_wordpiece_spec *s) { s->max_input_chars_per_word = 5; }

START_TEST(long_words)
{
    sq_tokenizer *t = make_tok(max5);
    EXPECT(t, "xxxxx", "x", "##x", "##x", "##x", "##x");
    EXPECT(t, "xxxxxx x", "[UNK]", "x");
    /* the limit counts code points, not bytes */
    EXPECT(t, "жжжжж", "\xd0\xb6", "##\xd0\xb6", "##\xd0\xb6", "##\xd0\xb6", "##\xd0\xb6");
    EXPECT(t, "жжжжжж", "[UNK]");
    sq_tokenizer_free(t);
    t = make_tok(NULL);
    char big[5000];
    memset(big, 'x', sizeof big);
    int32_t ids[8];
    ck_assert_int_eq(sq_tokenizer_tokenize(t, big, 100, ids, 8), 100);
    ck_assert_int_eq(sq_tokenizer_tokenize(t, big, 101, ids, 8), 1);
    ck_assert_int_eq(ids[0], 1);
    ck_assert_int_eq(sq_tokenizer_tokenize(t, big, sizeof big, ids, 8), 1);
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(added_tokens_in_text)
{
    sq_tokenizer *t = make_tok(NULL);
    EXPECT(t, "[MASK] hello", "[MASK]", "hello");
    EXPECT(t, "x[MASK]x[SEP]", "x", "[MASK]", "x", "[SEP]");
    EXPECT(t, "[mask]", "[", "mask", "]");
    EXPECT(t, "[[CLS]]", "[", "[CLS]", "]");
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(truncation_and_caps)
{
    sq_tokenizer *t = make_tok(NULL);
    int32_t ids[8] = {0};
    const char *s = "hello world hello";
    ck_assert_int_eq(sq_tokenizer_encode(t, s, strlen(s), 8, ids), 5);
    ck_assert_int_eq(sq_tokenizer_encode(t, s, strlen(s), 4, ids), 4);
    ck_assert_int_eq(ids[0], 2);
    ck_assert_int_eq(ids[1], 5);
    ck_assert_int_eq(ids[2], 6);
    ck_assert_int_eq(ids[3], 3);
    ck_assert_int_eq(sq_tokenizer_encode(t, s, strlen(s), 2, ids), 2);
    ck_assert_int_eq(ids[1], 3);
    ck_assert_int_eq(sq_tokenizer_encode(t, s, strlen(s), 1, ids), -1);
    /* tokenize reports the full count but writes only cap ids */
    int32_t small[3] = {-7, -7, -7};
    ck_assert_int_eq(sq_tokenizer_tokenize(t, s, strlen(s), small, 2), 3);
    ck_assert_int_eq(small[2], -7);
    /* an unknown word after the cap is full still counts once */
    ck_assert_int_eq(sq_tokenizer_tokenize(t, "hello unaffablez", 16, small, 1), 2);
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(accessors)
{
    sq_tokenizer *t = make_tok(NULL);
    ck_assert_int_eq(sq_tokenizer_vocab_size(t), NV);
    ck_assert_int_eq(sq_tokenizer_pad_id(t), 0);
    ck_assert_int_eq(sq_tokenizer_unk_id(t), 1);
    ck_assert_int_eq(sq_tokenizer_cls_id(t), 2);
    ck_assert_int_eq(sq_tokenizer_sep_id(t), 3);
    ck_assert_int_eq(sq_tokenizer_mask_id(t), 4);
    ck_assert_int_eq(sq_tokenizer_lookup(t, "##aff", 5), 10);
    ck_assert_int_eq(sq_tokenizer_lookup(t, "##af", 4), -1);
    ck_assert_str_eq(sq_tokenizer_token(t, 5), "hello");
    ck_assert_ptr_null(sq_tokenizer_token(t, NV));
    ck_assert_ptr_null(sq_tokenizer_token(t, -1));
    /* the one interface's sequence ends: [CLS] / [SEP] are WordPiece's
     * begin / end, special, and decode to nothing */
    ck_assert_int_eq(sq_tokenizer_kind_of(t), SQ_TOKENIZER_WORDPIECE);
    ck_assert_ptr_null(sq_tokenizer_bpe(t));
    ck_assert_int_eq(sq_tokenizer_bos_id(t), 2);
    ck_assert_int_eq(sq_tokenizer_eos_id(t), 3);
    ck_assert(sq_tokenizer_is_special(t, 2) && sq_tokenizer_is_special(t, 3));
    ck_assert(!sq_tokenizer_is_special(t, 5) && !sq_tokenizer_is_special(t, 1));
    ck_assert_uint_eq(sq_tokenizer_max_piece_bytes(t), 0);
    size_t len;
    ck_assert_str_eq(sq_tokenizer_decode_piece(t, -1, 5, &len), "hello");
    ck_assert_uint_eq(len, 5);
    sq_tokenizer_decode_piece(t, -1, 2, &len);
    ck_assert_uint_eq(len, 0);
    const char *s = "hello world hello";
    int32_t enc[8], *all;
    int n = sq_tokenizer_encode(t, s, strlen(s), 8, enc);
    ck_assert_int_eq(sq_tokenizer_encode_all(t, s, strlen(s), true, true, &all), n);
    ck_assert(memcmp(all, enc, (size_t)n * sizeof *enc) == 0);
    free(all);
    ck_assert_int_eq(sq_tokenizer_encode_all(t, s, strlen(s), false, false, &all), n - 2);
    ck_assert(memcmp(all, enc + 1, (size_t)(n - 2) * sizeof *enc) == 0);
    free(all);
    ck_assert_int_eq(sq_tokenizer_encode_all(t, "", 0, true, false, &all), 1);
    ck_assert_int_eq(all[0], 2);
    free(all);
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(unicode_classes)
{
    ck_assert(sq_uni_is_punctuation('$') && sq_uni_is_punctuation('~') &&
              sq_uni_is_punctuation(0x2014) && sq_uni_is_punctuation(0xBF));
    ck_assert(!sq_uni_is_punctuation('a') && !sq_uni_is_punctuation(0xA3)); /* £ is Sc */
    ck_assert(sq_uni_is_whitespace('\t') && sq_uni_is_whitespace(0x3000) &&
              sq_uni_is_whitespace(0x85) && !sq_uni_is_whitespace(0x200B));
    ck_assert(sq_uni_is_control(0x7F) && sq_uni_is_control(0xAD) && sq_uni_is_control(0xE000) &&
              !sq_uni_is_control('\n') && !sq_uni_is_control(0x0378)); /* Cn stays */
    ck_assert(sq_uni_is_cjk(0x4E00) && sq_uni_is_cjk(0x20000) && sq_uni_is_cjk(0x2B920) &&
              !sq_uni_is_cjk(0x2B820) && !sq_uni_is_cjk(0x3042));
    uint32_t cp;
    ck_assert_uint_eq(sq_utf8_decode((const uint8_t *)"\xe4\xb8", 2, &cp), 2);
    ck_assert_uint_eq(cp, 0xFFFD);
    ck_assert_uint_eq(sq_utf8_decode((const uint8_t *)"\xc0\x80", 2, &cp), 1); /* overlong */
    ck_assert_uint_eq(sq_utf8_decode((const uint8_t *)"\xf0\x9f\x98\x80", 4, &cp), 4);
    ck_assert_uint_eq(cp, 0x1F600);
}
END_TEST

/* ---- loaders: good files ----------------------------------------------- */

static sq_tokenizer *load_dir_ok(void)
{
    sq_err err = {0};
    sq_tokenizer *t = sq_tokenizer_load_dir(tmpdir, &err);
    ck_assert_msg(t != NULL, "load_dir: %s", err.msg);
    return t;
}

static void write_vocab(const char *sep, bool final_newline)
{
    char buf[2048] = "";
    for (int i = 0; i < NV; i++) {
        strcat(buf, VOCAB[i]);
        if (i + 1 < NV || final_newline)
            strcat(buf, sep);
    }
    write_str("vocab.txt", buf);
}

START_TEST(vocab_txt_variants)
{
    const char *seps[] = {"\n", "\r\n", "\r"};
    for (int k = 0; k < 3; k++) {
        for (int fin = 0; fin < 2; fin++) {
            write_vocab(seps[k], fin);
            sq_tokenizer *t = load_dir_ok();
            ck_assert_int_eq(sq_tokenizer_vocab_size(t), NV);
            ck_assert_int_eq(sq_tokenizer_lookup(t, "HELLO", 5), NV - 1);
            EXPECT(t, "Hello", "hello");
            sq_tokenizer_free(t);
        }
    }
    write_vocab("\n", true);
    write_str("tokenizer_config.json",
              "{\"do_lower_case\": false, \"strip_accents\": null, \"model_max_length\": 77,"
              " \"cls_token\": {\"content\": \"[CLS]\"}, \"unk_token\": \"[UNK]\"}");
    sq_tokenizer *t = load_dir_ok();
    EXPECT(t, "HELLO café", "HELLO", "café");
    ck_assert_int_eq(sq_tokenizer_model_max_length(t), 77);
    sq_tokenizer_free(t);
}
END_TEST

/* A minimal tokenizer.json over VOCAB with the given normalizer JSON. */
static void write_tokenizer_json(const char *normalizer, const char *pre, const char *model_type,
                                 const char *extra_vocab)
{
    static char buf[8192];
    int n = snprintf(buf, sizeof buf,
                     "{\"added_tokens\": [{\"id\": 4, \"content\": \"[MASK]\", \"special\": true,"
                     " \"lstrip\": true, \"rstrip\": false, \"normalized\": false}],"
                     " \"normalizer\": %s, \"pre_tokenizer\": %s,"
                     " \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3],"
                     " \"cls\": [\"[CLS]\", 2]},"
                     " \"model\": {\"type\": \"%s\", \"unk_token\": \"[UNK]\","
                     " \"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100,"
                     " \"vocab\": {",
                     normalizer, pre, model_type);
    for (int i = 0; i < NV; i++)
        n += snprintf(buf + n, sizeof buf - n, "%s\"%s\": %d", i ? ", " : "", VOCAB[i], i);
    snprintf(buf + n, sizeof buf - n, "%s}}}", extra_vocab);
    write_str("tokenizer.json", buf);
}

static const char *BERT_NORM =
    "{\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
    " \"strip_accents\": null, \"lowercase\": true}";
static const char *BERT_PRE = "{\"type\": \"BertPreTokenizer\"}";

START_TEST(tokenizer_json_variants)
{
    write_tokenizer_json(BERT_NORM, BERT_PRE, "WordPiece", "");
    sq_tokenizer *t = load_dir_ok();
    EXPECT(t, "Café, [MASK]!", "cafe", ",", "[MASK]", "!");
    ck_assert_int_eq(sq_tokenizer_cls_id(t), 2);
    sq_tokenizer_free(t);

    char seq[512];
    snprintf(seq, sizeof seq, "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"}, %s]}",
             BERT_NORM);
    write_tokenizer_json(seq, BERT_PRE, "WordPiece", "");
    t = load_dir_ok();
    EXPECT(t, "CAFÉ", "cafe");
    sq_tokenizer_free(t);

    /* Lowercase + BertNormalizer(lowercase false): strip_accents null follows false */
    write_tokenizer_json("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"},"
                         " {\"type\": \"BertNormalizer\", \"lowercase\": false}]}",
                         BERT_PRE, "WordPiece", "");
    t = load_dir_ok();
    EXPECT(t, "CAFÉ", "café");
    sq_tokenizer_free(t);

    write_tokenizer_json("null", BERT_PRE, "WordPiece", "");
    t = load_dir_ok();
    EXPECT(t, "HELLO Hello", "HELLO", "[UNK]");
    sq_tokenizer_free(t);
}
END_TEST

/* ---- loaders: hostile files --------------------------------------------- */

static void expect_load_error(const char *needle)
{
    sq_err err = {0};
    sq_tokenizer *t = sq_tokenizer_load_dir(tmpdir, &err);
    ck_assert_msg(t == NULL, "loaded a bad file (expected error with \"%s\")", needle);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "error \"%s\" lacks \"%s\"", err.msg, needle);
    ck_assert_msg(strstr(err.msg, tmpdir) != NULL, "error \"%s\" does not name the file", err.msg);
}

START_TEST(hostile_vocab_txt)
{
    expect_load_error("no tokenizer.json, vocab.txt or vocab.json");
    write_str("vocab.txt", "");
    expect_load_error("empty vocabulary");
    write_str("vocab.txt", "[PAD]\nhello\n");
    expect_load_error("\"[UNK]\" is not in the vocabulary");
    write_str("vocab.txt", "[UNK]\nhello\n\nworld\n");
    expect_load_error("line 3: empty token");
    write_str("vocab.txt", "[UNK]\nhello\nworld\nhello\n");
    expect_load_error("appears twice (ids 1 and 3)");
    write_file("vocab.txt", "[UNK]\nhel\0lo\n", 13);
    expect_load_error("NUL");
    static char big[1100];
    memset(big, 'a', sizeof big);
    memcpy(big, "[UNK]\n", 6);
    write_file("vocab.txt", big, sizeof big);
    expect_load_error("exceeds the 1024-byte limit");
    write_str("vocab.txt", "[UNK]\nbad\xff\n");
    expect_load_error("not valid UTF-8");
    write_str("vocab.txt", "[UNK]\nhello\n");
    write_str("tokenizer_config.json", "{\"strip_accents\": \"yes\"}");
    expect_load_error("strip_accents");
    write_str("tokenizer_config.json", "{\"do_basic_tokenize\": false}");
    expect_load_error("do_basic_tokenize");
    write_str("tokenizer_config.json", "{\"unk_token\": \"<unk>\"}");
    expect_load_error("\"<unk>\" is not in the vocabulary");
    write_str("tokenizer_config.json", "{\"unk_token\": 5}");
    expect_load_error("unk_token");
    write_str("tokenizer_config.json", "[1, 2]");
    expect_load_error("not an object");
    write_str("tokenizer_config.json", "{\"a\": 1, \"a\": 2}");
    expect_load_error("invalid JSON");
}
END_TEST

START_TEST(hostile_tokenizer_json)
{
    write_tokenizer_json(BERT_NORM, BERT_PRE, "BPE", "");
    expect_load_error("model.type \"BPE\" is not supported");
    write_tokenizer_json(BERT_NORM, BERT_PRE, "WordPiece", ", \"gap\": 99");
    expect_load_error("outside 0..");
    write_tokenizer_json(BERT_NORM, BERT_PRE, "WordPiece", ", \"dup\": 5");
    expect_load_error("is used by both");
    write_tokenizer_json(BERT_NORM, BERT_PRE, "WordPiece", ", \"neg\": -1");
    expect_load_error("outside 0..");
    write_tokenizer_json(BERT_NORM, BERT_PRE, "WordPiece", ", \"str\": \"36\"");
    expect_load_error("must be an integer id");
    write_tokenizer_json("{\"type\": \"NFKC\"}", BERT_PRE, "WordPiece", "");
    expect_load_error("normalizer type \"NFKC\" is not supported");
    write_tokenizer_json(BERT_NORM, "{\"type\": \"Whitespace\"}", "WordPiece", "");
    expect_load_error("pre_tokenizer \"Whitespace\" is not supported");
    write_tokenizer_json(BERT_NORM, "null", "WordPiece", "");
    expect_load_error("pre_tokenizer");
    write_tokenizer_json("{\"type\": \"BertNormalizer\", \"lowercase\": \"yes\"}", BERT_PRE,
                         "WordPiece", "");
    expect_load_error("lowercase");
    write_str("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\","
                                " \"vocab\": {\"a\": 0, \"b\": 1}}, \"pre_tokenizer\": "
                                "{\"type\": \"BertPreTokenizer\"}}");
    expect_load_error("model.unk_token \"[UNK]\" is not in model.vocab");
    write_str("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"a\","
                                " \"vocab\": {\"a\": 0, \"b\": 1}}, \"added_tokens\": [{\"id\": 1,"
                                " \"content\": \"c\"}], \"pre_tokenizer\": "
                                "{\"type\": \"BertPreTokenizer\"}}");
    expect_load_error("is not the vocab entry");
    write_str("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"a\","
                                " \"vocab\": {}}}");
    expect_load_error("model.vocab is empty");
    write_str("tokenizer.json", "{\"model\": ");
    expect_load_error("invalid JSON");
}
END_TEST

START_TEST(hostile_spec)
{
    sq_wordpiece_spec s;
    sq_err err = {0};
    make_spec(&s);
    s.unk_id = NV;
    ck_assert_ptr_null(sq_tokenizer_new(&s, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "unk id"));
    s.unk_id = 1;
    free(s.vocab[7]);
    s.vocab[7] = strdup("hello");
    ck_assert_ptr_null(sq_tokenizer_new(&s, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "appears twice"));
    free(s.vocab[7]);
    s.vocab[7] = strdup("");
    ck_assert_ptr_null(sq_tokenizer_new(&s, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
    sq_wordpiece_spec_free(&s);
}
END_TEST

static Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *tc = tcase_create("tokenize");
    tcase_add_test(tc, empty_and_whitespace);
    tcase_add_test(tc, punctuation_and_wordpiece);
    tcase_add_test(tc, accents_and_case);
    tcase_add_test(tc, accent_and_case_options);
    tcase_add_test(tc, cjk_and_cleaning);
    tcase_add_test(tc, long_words);
    tcase_add_test(tc, added_tokens_in_text);
    tcase_add_test(tc, truncation_and_caps);
    tcase_add_test(tc, accessors);
    tcase_add_test(tc, unicode_classes);
    suite_add_tcase(s, tc);
    TCase *files = tcase_create("files");
    tcase_add_checked_fixture(files, setup, teardown);
    tcase_add_test(files, vocab_txt_variants);
    tcase_add_test(files, tokenizer_json_variants);
    tcase_add_test(files, hostile_vocab_txt);
    tcase_add_test(files, hostile_tokenizer_json);
    tcase_add_test(files, hostile_spec);
    suite_add_tcase(s, files);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tokenizer_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

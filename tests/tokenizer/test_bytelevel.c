/* Unit tests of the byte-level BPE kind (tokenizer_bytelevel.h) on tiny
 * tokenizer.json files written to a temp dir: the pre-tokenizer matchers
 * against splits the tokenizers library (Rust, 0.21) gives, the byte
 * alphabet and merges, added tokens, NFC, the invalid-UTF-8 rule, decoding,
 * and hostile files (each refused with a message naming the file); an
 * encoder's file (ModernBERT's shape: TemplateProcessing, [MASK] lstrip)
 * opened as a checkpoint folder, and its hostile variants. With
 * $SQUINT_SHARED_DATA, the invalid-UTF-8 rule on the real Qwen3 file too. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pretok_regex.h"
#include "tokenizer.h"
#include "unicode_props.h"

static char dir[256], path[512];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/squint-bl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

/* ---- the pre-tokenizer matchers ---- */

/* Split UTF-8 s with pattern p; the pieces joined by '|'. */
static void split(sq_pretok_pattern p, const char *s, char *out, size_t cap)
{
    uint32_t cp[256];
    size_t off[257], n = 0, len = strlen(s);
    for (size_t i = 0; i < len;) {
        off[n] = i;
        i += sq_utf8_decode((const uint8_t *)s + i, len - i, &cp[n++]);
    }
    off[n] = len;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t e = sq_pretok_match(p, cp, n, i);
        ck_assert_uint_gt(e, i);
        w += (size_t)snprintf(out + w, cap - w, "%s%.*s", i ? "|" : "", (int)(off[e] - off[i]),
                              s + off[i]);
        i = e;
    }
    out[w] = 0;
}

#define SPLITS(p, s, want)                                                                        \
    do {                                                                                          \
        char got_[1024];                                                                          \
        split(p, s, got_, sizeof got_);                                                           \
        ck_assert_msg(strcmp(got_, want) == 0, "%s: \"%s\" splits as \"%s\", want \"%s\"", #p, s, \
                      got_, want);                                                                \
    } while (0)

START_TEST(qwen2_pattern)
{
    const sq_pretok_pattern Q = SQ_PRETOK_QWEN2;
    /* what tokenizers 0.21.1 gives with Qwen3's tokenizer.json */
    SPLITS(Q, "x\t\ty", "x|\t|\ty");
    SPLITS(Q, "a\r\n\r\nb   ", "a|\r\n\r\n|b|   ");
    SPLITS(Q, "x  1", "x| | |1");
    SPLITS(Q, "x'\xc5\xbft", "x|'\xc5\xbf|t");             /* 'ſ: (?i) folds U+017F */
    SPLITS(Q, "x \xef\xbb\xbf" "1", "x| \xef\xbb\xbf|1"); /* U+FEFF is not \s */
    SPLITS(Q, "x \xc2\x85" "1", "x| |\xc2\x85|1");       /* U+0085 is \s */
    SPLITS(Q, "a  \xc2\x85\nb", "a|  \xc2\x85\n|b");
    SPLITS(Q, "DON'T I'M it's", "DON|'T| I|'M| it|'s");
    SPLITS(Q, "12345", "1|2|3|4|5");
    SPLITS(Q, "(hello) ...\n\nok", "(hello|)| ...\n\n|ok");
    SPLITS(Q, "  hi", " | hi");
    SPLITS(Q, "end  ", "end|  ");
    SPLITS(Q, "\n", "\n");
    SPLITS(Q, "a\xe2\x80\x8b" "b", "a|\xe2\x80\x8b" "b");
}
END_TEST

START_TEST(gpt2_pattern)
{
    const sq_pretok_pattern G = SQ_PRETOK_GPT2;
    SPLITS(G, "DON'T I'm", "DON|'|T| I|'m");
    SPLITS(G, "I'm 123 abc", "I|'m| 123| abc");
    SPLITS(G, "  hi", " | hi");
    SPLITS(G, "a\n\nb", "a|\n|\n|b");
    SPLITS(G, "x!!  ", "x|!!|  ");
    SPLITS(G, "x'\xc5\xbft", "x|'|\xc5\xbft");
    ck_assert_int_eq(sq_pretok_recognise(SQ_PRETOK_GPT2_REGEX, strlen(SQ_PRETOK_GPT2_REGEX)),
                     SQ_PRETOK_GPT2);
    ck_assert_int_eq(sq_pretok_recognise(SQ_PRETOK_QWEN2_REGEX, strlen(SQ_PRETOK_QWEN2_REGEX)),
                     SQ_PRETOK_QWEN2);
    ck_assert_int_eq(sq_pretok_recognise("\\s+", 3), 0);
}
END_TEST

/* ---- tiny tokenizer.json files ---- */

static bool printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

/* The 256 byte pieces as JSON members "\uXXXX": id, ids 0..255 in byte order,
 * leaving out byte `skip` (-1: none). */
static size_t byte_vocab(char *o, size_t cap, int skip)
{
    size_t w = 0;
    int k = 0;
    for (int b = 0; b < 256; b++) {
        unsigned cp = printable(b) ? (unsigned)b : 0x100u + (unsigned)k++;
        if (b != skip)
            w += (size_t)snprintf(o + w, cap - w, "\"\\u%04X\": %d, ", cp, b);
    }
    return w;
}

/* ids 256.. : he ll hell hello Ġw or Ġwor Ġworld ; added 264.. */
#define MERGES "[\"h e\", \"l l\", \"he ll\", \"hell o\", [\"\\u0120\", \"w\"], \"o r\", " \
               "\"\\u0120w or\", \"l d\", \"\\u0120wor ld\"]"
#define VOCAB_TAIL "\"he\": 256, \"ll\": 257, \"hell\": 258, \"hello\": 259, \"\\u0120w\": 260, " \
                   "\"or\": 261, \"\\u0120wor\": 262, \"ld\": 263, \"\\u0120world\": 264"
#define ADDED "[{\"id\": 265, \"content\": \"<|x|>\", \"special\": true, \"normalized\": false}, " \
              "{\"id\": 266, \"content\": \"<|x|>y\", \"special\": false, \"normalized\": false}, " \
              "{\"id\": 267, \"content\": \"<t>\", \"special\": false, \"normalized\": true}]"
#define QWEN_PRE "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": " \
                 "{\"Regex\": \"%s\"}, \"behavior\": \"Isolated\", \"invert\": false}, " \
                 "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}"

typedef struct opts {
    const char *model_extra; /* members added to model */
    const char *merges;
    const char *vocab_tail;
    const char *added;
    const char *normalizer;
    const char *pre;         /* NULL: Qwen's Sequence */
    const char *decoder;
    int skip_byte;
    const char *model_type;
    const char *post;        /* post_processor (NULL: null) */
    bool no_merges;          /* model without "merges" */
} opts;

static void write_json(const opts *o)
{
    static char bv[16384], buf[65536], re[512], pre[2048];
    byte_vocab(bv, sizeof bv, o->skip_byte ? o->skip_byte : -1);
    /* the Qwen2 pattern as a JSON string */
    size_t w = 0;
    for (const char *p = SQ_PRETOK_QWEN2_REGEX; *p; p++) {
        if (*p == '\\' || *p == '"')
            re[w++] = '\\';
        re[w++] = *p;
    }
    re[w] = 0;
    snprintf(pre, sizeof pre, QWEN_PRE, re);
    snprintf(buf, sizeof buf,
             "{\"version\": \"1.0\", \"added_tokens\": %s, \"normalizer\": %s, "
             "\"pre_tokenizer\": %s, \"post_processor\": %s, \"decoder\": %s, "
             "\"model\": {\"type\": \"%s\", \"dropout\": null, \"unk_token\": null, %s "
             "\"vocab\": {%s%s}%s%s}}",
             o->added ? o->added : ADDED, o->normalizer ? o->normalizer : "{\"type\": \"NFC\"}",
             o->pre ? o->pre : pre, o->post ? o->post : "null",
             o->decoder ? o->decoder : "{\"type\": \"ByteLevel\"}",
             o->model_type ? o->model_type : "BPE", o->model_extra ? o->model_extra : "", bv,
             o->vocab_tail ? o->vocab_tail : VOCAB_TAIL, o->no_merges ? "" : ", \"merges\": ",
             o->no_merges ? "" : o->merges ? o->merges : MERGES);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(buf, f);
    fclose(f);
}

static sq_tokenizer *load(const opts *o)
{
    write_json(o);
    sq_err err = {0};
    sq_tokenizer *t = sq_tokenizer_load_bpe_file(path, -1, -1, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_int_eq(sq_tokenizer_kind_of(t), SQ_TOKENIZER_BYTELEVEL);
    return t;
}

/* ids of s as "a b c" */
static void ids_of(const sq_tokenizer *t, const char *s, size_t len, char *out, size_t cap)
{
    int32_t *ids;
    int64_t n = sq_tokenizer_encode_all(t, s, len, false, false, &ids);
    ck_assert_int_ge(n, 0);
    size_t w = 0;
    out[0] = 0;
    for (int64_t i = 0; i < n; i++)
        w += (size_t)snprintf(out + w, cap - w, "%s%d", i ? " " : "", ids[i]);
    free(ids);
}

#define IDS(t, s, want)                                                                           \
    do {                                                                                          \
        char got_[1024];                                                                          \
        ids_of(t, s, sizeof(s) - 1, got_, sizeof got_);                                           \
        ck_assert_msg(strcmp(got_, want) == 0, "\"%s\" gives [%s], want [%s]", s, got_, want);    \
    } while (0)

START_TEST(merges_and_added_tokens)
{
    sq_tokenizer *t = load(&(opts){0});
    IDS(t, "hello world", "259 264");
    IDS(t, "hell", "258");
    IDS(t, "", "");
    IDS(t, " ", "32");
    IDS(t, "a<|x|>b", "97 265 98");
    IDS(t, "<|x|>y<|x|>", "266 265");           /* longest match first */
    IDS(t, "<|x|<|x|>", "60 124 120 124 265");
    IDS(t, "hello<t>", "259 267");
    IDS(t, "e\xcc\x81", "195 169");             /* NFC: U+00E9 = bytes C3 A9 */
    IDS(t, "\xc3\xa9", "195 169");
    /* specials decode to nothing, other added tokens to their text, pieces to bytes */
    size_t l;
    const char *p = sq_tokenizer_decode_piece(t, -1, 264, &l);
    ck_assert_uint_eq(l, 6);
    ck_assert_int_eq(memcmp(p, " world", 6), 0);
    sq_tokenizer_decode_piece(t, -1, 265, &l);
    ck_assert_uint_eq(l, 0);
    ck_assert(sq_tokenizer_is_special(t, 265));
    p = sq_tokenizer_decode_piece(t, -1, 266, &l);
    ck_assert_uint_eq(l, 6);
    ck_assert_int_eq(memcmp(p, "<|x|>y", 6), 0);
    p = sq_tokenizer_decode_piece(t, -1, 0xAD, &l); /* the soft hyphen byte's piece U+0143 */
    ck_assert_uint_eq(l, 1);
    ck_assert_int_eq((uint8_t)p[0], 0xAD);
    ck_assert_int_eq(sq_tokenizer_lookup(t, "hello", 5), 259);
    ck_assert_str_eq(sq_tokenizer_token(t, 264), "\xc4\xa0world");
    ck_assert_uint_ge(sq_tokenizer_max_piece_bytes(t), 6);
    ck_assert_ptr_null(sq_tokenizer_bpe(t));
    sq_tokenizer_free(t);
}
END_TEST

/* Invalid UTF-8 reads as U+FFFD per maximal ill-formed subpart. */
static void check_invalid_rule(const sq_tokenizer *t)
{
    static const struct {
        const char *bad, *fixed;
    } cases[] = {
        {"a\xff" "b", "a\xef\xbf\xbd" "b"},
        {"\xe4\xb8", "\xef\xbf\xbd"},                               /* truncated: one */
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},   /* surrogate: three */
        {"\xc0\xaf x", "\xef\xbf\xbd\xef\xbf\xbd x"},               /* overlong */
        {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"e\xcc", "e\xef\xbf\xbd"},
        {"<|x|>\x80", "<|x|>\xef\xbf\xbd"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char a[1024], b[1024];
        ids_of(t, cases[i].bad, strlen(cases[i].bad), a, sizeof a);
        ids_of(t, cases[i].fixed, strlen(cases[i].fixed), b, sizeof b);
        ck_assert_msg(strcmp(a, b) == 0, "case %zu: [%s] != [%s]", i, a, b);
    }
}

START_TEST(invalid_utf8)
{
    sq_tokenizer *t = load(&(opts){0});
    check_invalid_rule(t);
    sq_tokenizer_free(t);
}
END_TEST

START_TEST(gpt2_options)
{
    /* ByteLevel alone: the GPT-2 pattern, a prefix space; no normalizer */
    sq_tokenizer *t = load(&(opts){.pre = "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                                          "\"use_regex\": true}",
                                   .normalizer = "null"});
    IDS(t, "world", "264");
    IDS(t, "hello world", "32 259 264");
    IDS(t, "e\xcc\x81", "32 101 204 129"); /* no NFC */
    sq_tokenizer_free(t);
    /* ignore_merges: a split that is a piece is that piece */
    t = load(&(opts){.model_extra = "\"ignore_merges\": true, ",
                     .merges = "[\"h e\", \"l l\", \"he ll\"]"});
    IDS(t, "hello", "259");
    IDS(t, "helloo", "258 111 111");
    sq_tokenizer_free(t);
}
END_TEST

/* Each hostile file is refused with a message naming the file and `what`. */
static void refused(const opts *o, const char *what)
{
    write_json(o);
    sq_err err = {0};
    sq_tokenizer *t = sq_tokenizer_load_bpe_file(path, -1, -1, &err);
    ck_assert_msg(t == NULL, "accepted a file that should fail with \"%s\"", what);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message without the file: %s", err.msg);
    ck_assert_msg(strstr(err.msg, what) != NULL, "\"%s\" not in: %s", what, err.msg);
}

START_TEST(hostile_files)
{
    refused(&(opts){.merges = "[\"h q9\"]"}, "not in the vocabulary");
    refused(&(opts){.merges = "[\"h o\"]"}, "makes no piece");
    refused(&(opts){.merges = "[\"h e\", \"h e\"]"}, "twice");
    refused(&(opts){.merges = "[\"h e x\"]"}, "model.merges[0]");
    refused(&(opts){.merges = "{}"}, "model.merges must be a list");
    refused(&(opts){.merges = "[[\"h\"]]"}, "model.merges[0]");
    refused(&(opts){.vocab_tail = "\"he\": 4194304"}, "id must be an integer");
    refused(&(opts){.vocab_tail = "\"he\": -1"}, "id must be an integer");
    refused(&(opts){.vocab_tail = "\"he\": 5"}, "gives id 5");
    refused(&(opts){.vocab_tail = "\"he\": 300", .merges = "[]", .added = "[]"}, "has no piece");
    refused(&(opts){.skip_byte = 'q', .vocab_tail = VOCAB_TAIL ", \"qq\": 113"}, "for byte 0x71");
    refused(&(opts){.model_type = "WordPiece"}, "model.type WordPiece");
    refused(&(opts){.model_extra = "\"dropout\": 0.1, "}, "dropout");
    refused(&(opts){.model_extra = "\"continuing_subword_prefix\": \"##\", "},
            "continuing_subword_prefix");
    refused(&(opts){.normalizer = "{\"type\": \"Lowercase\"}"}, "normalizer Lowercase");
    refused(&(opts){.decoder = "{\"type\": \"WordPiece\"}"}, "decoder WordPiece");
    refused(&(opts){.pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                           "\"pattern\": {\"Regex\": \"\\\\p{N}{1,3}\"}, \"behavior\": "
                           "\"Isolated\"}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}"},
            "pattern \"\\p{N}{1,3}\" is not supported");
    refused(&(opts){.pre = "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                           "\"pattern\": {\"String\": \" \"}, \"behavior\": \"Isolated\"}, "
                           "{\"type\": \"ByteLevel\", \"use_regex\": false}]}"},
            "Split needs a pattern");
    refused(&(opts){.pre = "{\"type\": \"Whitespace\"}", .decoder = "{\"type\": \"ByteLevel\"}"},
            "pre_tokenizer Whitespace");
    refused(&(opts){.added = "[{\"id\": 265, \"content\": \"<m>\", \"lstrip\": true}]"},
            "lstrip true is not supported");
    refused(&(opts){.added = "[{\"id\": 265, \"content\": \"<m>\", \"single_word\": true}]"},
            "single_word true");
    refused(&(opts){.added = "[{\"id\": 99999999, \"content\": \"<m>\"}]"}, "added_tokens[0]");
    refused(&(opts){.added = "[{\"id\": 265}]"}, "added_tokens[0]");
    refused(&(opts){.added = "[{\"id\": 3, \"content\": \"<m>\"}]"}, "id 3 is both");
    refused(&(opts){.added = "[{\"id\": 265, \"content\": \"e\\u0301\", \"normalized\": true}]"},
            "not in NFC");
    refused(&(opts){.added = "[{\"id\": 265, \"content\": \"\"}]"}, "a piece of 0 bytes");
    /* not JSON / truncated */
    FILE *f = fopen(path, "wb");
    fputs("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0", f);
    fclose(f);
    sq_err err = {0};
    ck_assert_ptr_null(sq_tokenizer_load_bpe_file(path, -1, -1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, path));
}
END_TEST

/* ---- an encoder's byte-level tokenizer.json (ModernBERT's shape) ---- */

#define ENC_ADDED "[{\"id\": 265, \"content\": \"<|x|>\", \"special\": true, \"normalized\": false}, " \
                  "{\"id\": 268, \"content\": \"[CLS]\", \"special\": true}, " \
                  "{\"id\": 269, \"content\": \"[SEP]\", \"special\": true}, " \
                  "{\"id\": 270, \"content\": \"[MASK]\", \"special\": true, \"lstrip\": true}, " \
                  "{\"id\": 271, \"content\": \"<r>\", \"special\": true, \"rstrip\": true}, " \
                  "{\"id\": 266, \"content\": \"[PAD]\", \"special\": true}, " \
                  "{\"id\": 267, \"content\": \"[UNK]\", \"special\": true}]"
#define ENC_SPECIALS "\"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [268], " \
                     "\"tokens\": [\"[CLS]\"]}, \"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [269], " \
                     "\"tokens\": [\"[SEP]\"]}}"
#define T_CLS "{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}"
#define T_SEP(ty) "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": " #ty "}}"
#define T_SEQ(s, ty) "{\"Sequence\": {\"id\": \"" s "\", \"type_id\": " #ty "}}"
#define ENC_SINGLE "\"single\": [" T_CLS ", " T_SEQ("A", 0) ", " T_SEP(0) "]"
#define ENC_TEMPLATE "{\"type\": \"TemplateProcessing\", " ENC_SINGLE ", \"pair\": [" T_CLS ", " \
                     T_SEQ("A", 0) ", " T_SEP(0) ", " T_SEQ("B", 1) ", " T_SEP(1) "], " ENC_SPECIALS "}"
#define GPT2_PRE "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}"

/* The encoder's tokenizer of the folder (what an encoder checkpoint opens). */
static sq_tokenizer *load_encoder(const opts *o, sq_err *err)
{
    write_json(o);
    return sq_tokenizer_load_dir(dir, err);
}

/* ids of sq_tokenizer_encode(s, max_len) as "a b c" */
static void enc_of(const sq_tokenizer *t, const char *s, int max_len, char *out, size_t cap)
{
    int32_t ids[64];
    int n = sq_tokenizer_encode(t, s, strlen(s), max_len, ids);
    ck_assert_int_ge(n, 0);
    size_t w = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++)
        w += (size_t)snprintf(out + w, cap - w, "%s%d", i ? " " : "", ids[i]);
}

#define ENC(t, s, max_len, want)                                                                  \
    do {                                                                                          \
        char got_[1024];                                                                          \
        enc_of(t, s, max_len, got_, sizeof got_);                                                 \
        ck_assert_msg(strcmp(got_, want) == 0, "\"%s\" (%d) gives [%s], want [%s]", s, max_len,  \
                      got_, want);                                                                \
    } while (0)

START_TEST(encoder_template)
{
    sq_err err = {0};
    const opts o = {.added = ENC_ADDED, .pre = GPT2_PRE, .post = ENC_TEMPLATE};
    sq_tokenizer *t = load_encoder(&o, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_int_eq(sq_tokenizer_kind_of(t), SQ_TOKENIZER_BYTELEVEL);
    ck_assert_int_eq(sq_tokenizer_cls_id(t), 268);
    ck_assert_int_eq(sq_tokenizer_sep_id(t), 269);
    ck_assert_int_eq(sq_tokenizer_mask_id(t), 270);
    ck_assert_int_eq(sq_tokenizer_pad_id(t), 266);
    ck_assert_int_eq(sq_tokenizer_unk_id(t), 267);
    ck_assert(!sq_tokenizer_pair_double_sep(t));
    ENC(t, "hello world", 16, "268 259 264 269");
    ENC(t, "hello world", 3, "268 259 269");
    ENC(t, "hello world", 2, "268 269");
    ENC(t, "", 16, "268 269");
    /* lstrip: the white space before [MASK] is the token's; rstrip after <r> */
    ENC(t, "hello [MASK]", 16, "268 259 270 269");
    ENC(t, "hello \t\n [MASK] world", 16, "268 259 270 264 269");
    ENC(t, "[MASK]  hello", 16, "268 270 32 32 259 269"); /* no rstrip: " ", " hello" */
    ENC(t, "hello<r>  world", 16, "268 259 271 119 261 263 269");
    ENC(t, "[SEP]hello[CLS]", 16, "268 269 259 268 269");
    int32_t *all;
    ck_assert_int_eq(sq_tokenizer_encode_all(t, "hello", 5, true, true, &all), 3);
    ck_assert_int_eq(all[0], 268);
    ck_assert_int_eq(all[2], 269);
    free(all);
    sq_tokenizer_free(t);
    /* the same without lstrip: the space stays a token */
    t = load_encoder(&(opts){.added = "[{\"id\": 265, \"content\": \"<|x|>\"}, {\"id\": 266, "
                                      "\"content\": \"[PAD]\"}, {\"id\": 267, \"content\": "
                                      "\"[UNK]\"}, {\"id\": 268, \"content\": \"[CLS]\", \"special\": "
                                      "true}, {\"id\": 269, \"content\": \"[SEP]\", "
                                      "\"special\": true}, {\"id\": 270, \"content\": "
                                      "\"[MASK]\", \"special\": true}]",
                             .pre = GPT2_PRE, .post = ENC_TEMPLATE},
                     &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ENC(t, "hello [MASK]", 16, "268 259 32 270 269");
    sq_tokenizer_free(t);
    /* RoBERTa's pair template; BertProcessing / RobertaProcessing */
    t = load_encoder(&(opts){.added = ENC_ADDED, .pre = GPT2_PRE,
                             .post = "{\"type\": \"TemplateProcessing\", " ENC_SINGLE ", \"pair\": ["
                                     T_CLS ", " T_SEQ("A", 0) ", " T_SEP(0) ", " T_SEP(0) ", "
                                     T_SEQ("B", 0) ", " T_SEP(0) "], " ENC_SPECIALS "}"},
                     &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert(sq_tokenizer_pair_double_sep(t));
    sq_tokenizer_free(t);
    t = load_encoder(&(opts){.added = ENC_ADDED, .pre = GPT2_PRE,
                             .post = "{\"type\": \"RobertaProcessing\", \"sep\": [\"[SEP]\", 269], "
                                     "\"cls\": [\"[CLS]\", 268], \"trim_offsets\": true, "
                                     "\"add_prefix_space\": false}"},
                     &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert(sq_tokenizer_pair_double_sep(t));
    ENC(t, "hello", 8, "268 259 269");
    sq_tokenizer_free(t);
    t = load_encoder(&(opts){.added = ENC_ADDED, .pre = GPT2_PRE,
                             .post = "{\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 269], "
                                     "\"cls\": [\"[CLS]\", 268]}"},
                     &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert(!sq_tokenizer_pair_double_sep(t));
    sq_tokenizer_free(t);
}
END_TEST

/* A hostile encoder tokenizer.json is refused naming the file and `what`. */
static void refused_enc(const opts *o, const char *what)
{
    sq_err err = {0};
    sq_tokenizer *t = load_encoder(o, &err);
    ck_assert_msg(t == NULL, "accepted a file that should fail with \"%s\"", what);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message without the file: %s", err.msg);
    ck_assert_msg(strstr(err.msg, what) != NULL, "\"%s\" not in: %s", what, err.msg);
}

START_TEST(encoder_hostile)
{
    const char *a = ENC_ADDED, *pre = GPT2_PRE;
    refused_enc(&(opts){.added = a, .pre = pre, .post = ENC_TEMPLATE, .no_merges = true},
                "model.merges is missing");
    refused_enc(&(opts){.added = a, .pre = pre, .post = "null"}, "needs a post_processor");
    refused_enc(&(opts){.added = a, .pre = pre, .post = "{\"type\": \"ByteLevel\"}"},
                "post_processor ByteLevel is not supported");
    /* a template naming a token special_tokens lacks */
    refused_enc(&(opts){.added = a, .pre = pre,
                        .post = "{\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
                                "{\"id\": \"<bos>\", \"type_id\": 0}}, " T_SEQ("A", 0) ", " T_SEP(0)
                                "], " ENC_SPECIALS "}"},
                "names the token \"<bos>\"");
    /* ids out of range */
    refused_enc(&(opts){.added = a, .pre = pre,
                        .post = "{\"type\": \"TemplateProcessing\", " ENC_SINGLE ", "
                                "\"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": "
                                "[99999], \"tokens\": [\"[CLS]\"]}, \"[SEP]\": {\"id\": \"[SEP]\", "
                                "\"ids\": [269], \"tokens\": [\"[SEP]\"]}}}"},
                "outside the vocabulary");
    refused_enc(&(opts){.added = a, .pre = pre,
                        .post = "{\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", -4], "
                                "\"cls\": [\"[CLS]\", 268]}"},
                "post_processor.sep");
    refused_enc(&(opts){.added = "[{\"id\": 99999999, \"content\": \"[CLS]\"}]", .pre = pre,
                        .post = ENC_TEMPLATE},
                "added_tokens[0]");
    /* duplicate ids */
    refused_enc(&(opts){.added = a, .pre = pre, .post = ENC_TEMPLATE,
                        .vocab_tail = VOCAB_TAIL ", \"zz\": 264"},
                "264");
    refused_enc(&(opts){.added = "[{\"id\": 268, \"content\": \"[CLS]\"}, {\"id\": 268, "
                                 "\"content\": \"[SEP]\"}]",
                        .pre = pre, .post = ENC_TEMPLATE},
                "268");
    /* pair templates that are neither BERT's nor RoBERTa's */
    refused_enc(&(opts){.added = a, .pre = pre,
                        .post = "{\"type\": \"TemplateProcessing\", " ENC_SINGLE ", \"pair\": ["
                                T_CLS ", " T_SEQ("A", 0) ", " T_SEP(0) ", " T_SEQ("B", 0) ", "
                                T_SEP(0) "], " ENC_SPECIALS "}"},
                "post_processor.pair must be");
    refused_enc(&(opts){.added = a, .pre = pre,
                        .post = "{\"type\": \"TemplateProcessing\", \"single\": [" T_SEQ("A", 0)
                                ", " T_SEP(0) "], " ENC_SPECIALS "}"},
                "post_processor.single must be");
    refused_enc(&(opts){.added = "[{\"id\": 265, \"content\": \"<|x|>\"}, {\"id\": 266, "
                                 "\"content\": \"[PAD]\"}, {\"id\": 267, \"content\": \"[UNK]\"}, "
                                 "{\"id\": 268, \"content\": \"[CLS]\", \"single_word\": true}, "
                                 "{\"id\": 269, \"content\": \"[SEP]\"}]",
                        .pre = pre, .post = ENC_TEMPLATE},
                "single_word");
}
END_TEST

START_TEST(real_qwen3)
{
    const char *data = getenv("SQUINT_SHARED_DATA");
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/qwen3-tokenizer/tokenizer.json", data ? data : "/nonexistent");
    if (!data || stat(p, &st) != 0)
        return; /* no shared data: the tiny files above cover the rules */
    sq_err err = {0};
    sq_tokenizer *t = sq_tokenizer_load_bpe_file(p, -1, 151645, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    check_invalid_rule(t);
    /* tokenizers 0.21.1: Tokenizer.from_file(...).encode(s).ids */
    IDS(t, "<|im_start|>user\nhi<|im_end|>", "151644 872 198 6023 151645");
    IDS(t, "x'\xc5\xbft", "87 6 144815 83");
    IDS(t, "x \xef\xbb\xbf" "1", "87 75780 16");
    IDS(t, "x \xc2\x85" "1", "87 220 126 227 16");
    IDS(t, "def f(x):\n\treturn x\r\n\n\n", "750 282 2075 982 853 856 201 1406");
    ck_assert(sq_tokenizer_is_special(t, 151644));
    ck_assert(!sq_tokenizer_is_special(t, 151667)); /* <think> */
    ck_assert_int_eq(sq_tokenizer_eos_id(t), 151645);
    int32_t *ids;
    ck_assert_int_eq(sq_tokenizer_encode_all(t, "hi", 2, true, true, &ids), 2); /* no BOS */
    ck_assert_int_eq(ids[1], 151645);
    free(ids);
    sq_tokenizer_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bytelevel");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, qwen2_pattern);
    tcase_add_test(tc, gpt2_pattern);
    tcase_add_test(tc, merges_and_added_tokens);
    tcase_add_test(tc, invalid_utf8);
    tcase_add_test(tc, gpt2_options);
    tcase_add_test(tc, hostile_files);
    tcase_add_test(tc, encoder_template);
    tcase_add_test(tc, encoder_hostile);
    tcase_add_test(tc, real_qwen3);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

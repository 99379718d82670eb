/* The YAML tree reader: structure, positions in errors, typed getters,
 * hostile input (duplicates, aliases, tags, depth), and yt_quote round trips. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yaml_tree.h"

static yt_doc *parse_ok(const char *text)
{
    sq_err err;
    yt_doc *d = yt_parse_buffer(text, strlen(text), "test.yaml", &err);
    ck_assert_msg(d != NULL, "%s", err.msg);
    return d;
}

/* Parsing must fail with exactly `want`. */
static void parse_fails(const char *text, const char *want)
{
    sq_err err = {0};
    yt_doc *d = yt_parse_buffer(text, strlen(text), "test.yaml", &err);
    ck_assert_msg(d == NULL, "accepted: %s", text);
    ck_assert_str_eq(err.msg, want);
}

static const char *recipe = "model: bge-small\n"         /* 1 */
                            "layers: 12\n"               /* 2 */
                            "alpha: 0.5\n"               /* 3 */
                            "enabled: true\n"            /* 4 */
                            "skip: [a, b, \"c\"]\n"      /* 5 */
                            "groups:\n"                  /* 6 */
                            "  - name: attn\n"           /* 7 */
                            "    bits: 8\n"              /* 8 */
                            "  - name: ffn\n"            /* 9 */
                            "    bits: 4\n"              /* 10 */
                            "    extra: {k: v, n: -3}\n" /* 11 */
                            "empty:\n"                   /* 12 */
                            "tilde: ~\n"                 /* 13 */
                            "quoted_null: \"null\"\n"    /* 14 */
                            "text: |\n"                  /* 15 */
                            "  line one\n"
                            "  line two\n";

START_TEST(nested_structure)
{
    yt_doc *d = parse_ok(recipe);
    const yt_node *r = yt_root(d);
    ck_assert_int_eq(yt_kind_of(r), YT_MAPPING);
    ck_assert_uint_eq(yt_len(r), 10);
    ck_assert_str_eq(yt_scalar(yt_key_at(r, 0)), "model");
    ck_assert_str_eq(yt_scalar(yt_value_at(r, 0)), "bge-small");
    ck_assert_str_eq(yt_scalar(yt_get(r, "model")), "bge-small");
    const yt_node *skip = yt_get(r, "skip");
    ck_assert_int_eq(yt_kind_of(skip), YT_SEQUENCE);
    ck_assert_uint_eq(yt_len(skip), 3);
    ck_assert_str_eq(yt_scalar(yt_at(skip, 2)), "c");
    ck_assert(yt_is_plain(yt_at(skip, 0)));
    ck_assert(!yt_is_plain(yt_at(skip, 2)));
    ck_assert_ptr_null(yt_at(skip, 3));
    const yt_node *groups = yt_get(r, "groups");
    ck_assert_uint_eq(yt_len(groups), 2);
    const yt_node *g1 = yt_at(groups, 1);
    ck_assert_str_eq(yt_scalar(yt_get(g1, "name")), "ffn");
    const yt_node *bits = yt_get(g1, "bits");
    ck_assert_int_eq(yt_line(bits), 10);
    ck_assert_int_eq(yt_col(bits), 11);
    ck_assert_int_eq(yt_line(g1), 9);
    ck_assert_int_eq(yt_col(g1), 5);
    ck_assert_str_eq(yt_file(g1), "test.yaml");
    const yt_node *extra = yt_get(g1, "extra");
    ck_assert_int_eq(yt_kind_of(extra), YT_MAPPING);
    int64_t n;
    ck_assert_int_eq(yt_get_int64(extra, "n", -10, 10, &n, NULL), 0);
    ck_assert_int_eq(n, -3);
    ck_assert(yt_is_null(yt_get(r, "empty")));
    ck_assert(yt_is_null(yt_get(r, "tilde")));
    ck_assert(!yt_is_null(yt_get(r, "quoted_null")));
    ck_assert_str_eq(yt_scalar(yt_get(r, "text")), "line one\nline two\n");
    ck_assert_ptr_null(yt_get(r, "absent"));
    ck_assert_ptr_null(yt_get(skip, "a")); /* not a mapping */
    ck_assert_ptr_null(yt_scalar(groups));
    yt_free(d);
}
END_TEST

START_TEST(typed_getters)
{
    yt_doc *d = parse_ok(recipe);
    const yt_node *r = yt_root(d);
    sq_err err;
    double a = -1;
    ck_assert_int_eq(yt_get_double(r, "alpha", 0, 1, &a, &err), 0);
    ck_assert(a == 0.5);
    ck_assert_int_eq(yt_get_double(r, "alpha", 0.6, 1, &a, &err), -1);
    ck_assert_str_eq(err.msg, "test.yaml:3:8: 'alpha' must be a number in [0.6, 1]");
    ck_assert_int_eq(yt_get_double(r, "absent", 0, 1, &a, &err), 1);
    ck_assert(a == 0.5);
    ck_assert_int_eq(yt_get_double(r, "model", 0, 1, &a, &err), -1);
    ck_assert_str_eq(err.msg, "test.yaml:1:8: 'model' must be a number in [0, 1]");
    int64_t layers = 0;
    ck_assert_int_eq(yt_get_int64(r, "layers", 1, 48, &layers, &err), 0);
    ck_assert_int_eq(layers, 12);
    ck_assert_int_eq(yt_get_int64(r, "layers", 1, 6, &layers, &err), -1);
    ck_assert_str_eq(err.msg, "test.yaml:2:9: 'layers' must be an integer in [1, 6]");
    ck_assert_int_eq(yt_get_int64(r, "alpha", 0, 6, &layers, &err), -1);
    bool on = false;
    ck_assert_int_eq(yt_get_bool(r, "enabled", &on, &err), 0);
    ck_assert(on);
    ck_assert_int_eq(yt_get_bool(r, "model", &on, &err), -1);
    ck_assert_str_eq(err.msg, "test.yaml:1:8: 'model' must be true or false");
    const char *s = NULL;
    ck_assert_int_eq(yt_get_string(r, "model", &s, &err), 0);
    ck_assert_str_eq(s, "bge-small");
    ck_assert_int_eq(yt_get_string(r, "groups", &s, &err), -1);
    ck_assert_str_eq(err.msg, "test.yaml:7:3: 'groups' must be a string, not a sequence");
    ck_assert_ptr_null(yt_require(r, "recipe", &err));
    ck_assert_str_eq(err.msg, "test.yaml:1:1: missing required key 'recipe'");
    ck_assert_ptr_nonnull(yt_require(r, "alpha", &err));
    ck_assert_int_eq(yt_expect(yt_get(r, "skip"), YT_MAPPING, "skip", &err), -1);
    ck_assert_str_eq(err.msg, "test.yaml:5:7: 'skip' must be a mapping, not a sequence");
    const char *allowed[] = {"model", "layers", "alpha",       "enabled", "skip", "groups",
                             "empty", "tilde",  "quoted_null", "text",    NULL};
    ck_assert_int_eq(yt_check_keys(r, allowed, &err), 0);
    allowed[2] = "beta";
    ck_assert_int_eq(yt_check_keys(r, allowed, &err), -1);
    ck_assert_msg(strncmp(err.msg,
                          "test.yaml:3:1: unknown key 'alpha' (expected one of: model, "
                          "layers, beta,",
                          72) == 0,
                  "%s", err.msg);
    yt_free(d);
}
END_TEST

START_TEST(number_syntax)
{
    const char *good[] = {"0", "-1.5", "+2", "1e3", "1.", ".5", "-0.25E-2", "3.0e+1"};
    const double want[] = {0, -1.5, 2, 1000, 1, 0.5, -0.0025, 30};
    const char *bad[] = {"'1'", "\"2\"", "0x10",  "1_000", ".inf", ".nan", "1e", "e5",
                         ".",   "+-1",   "1.2.3", "1e999", "nan",  "inf",  "1 2"};
    char doc[64];
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        snprintf(doc, sizeof doc, "v: %s\n", good[i]);
        yt_doc *d = parse_ok(doc);
        double v;
        sq_err err;
        ck_assert_msg(yt_get_double(yt_root(d), "v", -INFINITY, INFINITY, &v, &err) == 0, "%s",
                      err.msg);
        ck_assert_msg(fabs(v - want[i]) < 1e-12, "%s -> %g", good[i], v);
        yt_free(d);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(doc, sizeof doc, "v: %s\n", bad[i]);
        yt_doc *d = parse_ok(doc);
        double v;
        sq_err err;
        ck_assert_msg(yt_get_double(yt_root(d), "v", -INFINITY, INFINITY, &v, &err) == -1,
                      "accepted %s", bad[i]);
        ck_assert_str_eq(err.msg, "test.yaml:1:4: 'v' must be a finite number");
        yt_free(d);
    }
    const char *ints_bad[] = {"9223372036854775808", "-9223372036854775809", "1.0", "0x1", "", "+"};
    for (size_t i = 0; i < sizeof ints_bad / sizeof *ints_bad; i++) {
        snprintf(doc, sizeof doc, "v: %s\n", ints_bad[i]);
        yt_doc *d = parse_ok(doc);
        int64_t v;
        sq_err err;
        ck_assert_msg(yt_get_int64(yt_root(d), "v", INT64_MIN, INT64_MAX, &v, &err) == -1,
                      "accepted %s", ints_bad[i]);
        yt_free(d);
    }
    yt_doc *d = parse_ok("v: -9223372036854775808\n");
    int64_t v;
    ck_assert_int_eq(yt_get_int64(yt_root(d), "v", INT64_MIN, INT64_MAX, &v, NULL), 0);
    ck_assert(v == INT64_MIN);
    yt_free(d);
}
END_TEST

START_TEST(duplicate_keys)
{
    parse_fails("a: 1\nb: 2\na: 3\n",
                "test.yaml:3:1: duplicate key 'a' (first at line 1, column 1)");
    parse_fails("outer:\n  x: 1\n  \"x\": 2\n",
                "test.yaml:3:3: duplicate key 'x' (first at line 2, column 3)");
    /* A large mapping (sorted-index path). */
    char *big = malloc(100000);
    size_t len = 0;
    for (int i = 0; i < 2000; i++)
        len += (size_t)sprintf(big + len, "key%d: %d\n", i, i);
    yt_doc *d = parse_ok(big);
    for (int i = 0; i < 2000; i += 37) {
        char k[16];
        snprintf(k, sizeof k, "key%d", i);
        int64_t v;
        ck_assert_int_eq(yt_get_int64(yt_root(d), k, 0, 1 << 20, &v, NULL), 0);
        ck_assert_int_eq(v, i);
    }
    ck_assert_ptr_null(yt_get(yt_root(d), "key2000"));
    ck_assert_ptr_null(yt_get(yt_root(d), "key"));
    yt_free(d);
    len += (size_t)sprintf(big + len, "key1500: again\nkey7: again\n");
    parse_fails(big, "test.yaml:2001:1: duplicate key 'key1500' (first at line 1501, column 1)");
    free(big);
}
END_TEST

START_TEST(hostile_input)
{
    parse_fails("a: &x 1\nb: *x\n", "test.yaml:1:4: anchors and aliases are not supported");
    parse_fails("a: &x [1, 2]\n", "test.yaml:1:4: anchors and aliases are not supported");
    parse_fails("a: !!str 1\n", "test.yaml:1:4: tags are not supported");
    parse_fails("a: !custom {b: 1}\n", "test.yaml:1:4: tags are not supported");
    parse_fails("a: 1\n---\nb: 2\n", "test.yaml:2:1: only one YAML document is allowed");
    parse_fails("? [a, b]\n: c\n", "test.yaml:1:3: mapping keys must be scalars");
    parse_fails("a: \"x\\0y\"\n", "test.yaml:1:4: NUL characters are not supported");
    /* Billion laughs: refused at the first anchor, nothing expanded. */
    parse_fails("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
                "test.yaml:1:4: anchors and aliases are not supported");
    /* Syntax errors carry libyaml's position. */
    sq_err err;
    ck_assert_ptr_null(yt_parse_buffer("a: [1, 2\nb: 3\n", 14, "bad.yaml", &err));
    ck_assert_msg(strncmp(err.msg, "bad.yaml:", 9) == 0, "%s", err.msg);
    ck_assert_ptr_null(yt_parse_buffer("a: \xff\n", 5, "bin.yaml", &err));
    ck_assert_msg(strncmp(err.msg, "bin.yaml:", 9) == 0, "%s", err.msg);
    ck_assert_ptr_null(yt_parse_file("/nonexistent/r.yaml", &err));
    ck_assert_msg(strstr(err.msg, "/nonexistent/r.yaml: cannot open"), "%s", err.msg);
}
END_TEST

START_TEST(depth_bound)
{
    char doc[512];
    /* 64 levels parse; 65 do not. */
    for (int depth = 63; depth <= 66; depth++) {
        size_t k = 0;
        for (int i = 0; i < depth; i++)
            doc[k++] = '[';
        doc[k++] = '1';
        for (int i = 0; i < depth; i++)
            doc[k++] = ']';
        doc[k] = '\0';
        sq_err err;
        yt_doc *d = yt_parse_buffer(doc, k, "deep.yaml", &err);
        if (depth <= YT_MAX_DEPTH) {
            ck_assert_msg(d != NULL, "%d: %s", depth, err.msg);
            const yt_node *n = yt_root(d);
            for (int i = 0; i < depth; i++)
                n = yt_at(n, 0);
            ck_assert_str_eq(yt_scalar(n), "1");
            yt_free(d);
        } else {
            ck_assert_ptr_null(d);
            ck_assert_str_eq(err.msg, "deep.yaml:1:65: nesting deeper than 64 levels");
        }
    }
}
END_TEST

START_TEST(empty_and_file)
{
    yt_doc *d = parse_ok("");
    ck_assert_ptr_null(yt_root(d));
    ck_assert_ptr_null(yt_get(yt_root(d), "x"));
    sq_err err;
    ck_assert_ptr_null(yt_require(yt_root(d), "x", &err));
    ck_assert_str_eq(err.msg, "missing required key 'x' (empty document)");
    yt_free(d);
    d = parse_ok("# only a comment\n");
    ck_assert_ptr_null(yt_root(d));
    yt_free(d);
    char path[] = "/tmp/yt_test.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "x:\n  y: [1, 2]\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    d = yt_parse_file(path, &err);
    ck_assert_msg(d != NULL, "%s", err.msg);
    const yt_node *y = yt_get(yt_get(yt_root(d), "x"), "y");
    ck_assert_int_eq(yt_as_bool(yt_at(y, 1), "y[1]", &(bool){0}, &err), -1);
    char want[128];
    snprintf(want, sizeof want, "%s:2:10: 'y[1]' must be true or false", path);
    ck_assert_str_eq(err.msg, want);
    yt_free(d);
    unlink(path);
}
END_TEST

static void quote_round_trip(const char *s)
{
    char *q = yt_quote_alloc(s);
    ck_assert_msg(q != NULL, "cannot quote");
    size_t need = yt_quote(s, NULL, 0);
    ck_assert_uint_eq(need, strlen(q));
    /* As a block sequence item, a mapping key, a flow sequence item and a
     * mapping value. */
    size_t n = 4 * strlen(q) + 64;
    char *doc = malloc(n);
    /* YAML limits implicit keys to 1024 characters: longer ones need "? ". */
    snprintf(doc, n,
             strlen(q) < 1000 ? "- %s\n- %s: v\n- [%s]\n- {k: %s}\n"
                              : "- %s\n- ? %s\n  : v\n- [%s]\n- {k: %s}\n",
             q, q, q, q);
    sq_err err;
    yt_doc *d = yt_parse_buffer(doc, strlen(doc), "q.yaml", &err);
    ck_assert_msg(d != NULL, "%s\nfor %.300s", err.msg, doc);
    const yt_node *r = yt_root(d);
    ck_assert_str_eq(yt_scalar(yt_at(r, 0)), s);
    ck_assert_str_eq(yt_scalar(yt_key_at(yt_at(r, 1), 0)), s);
    ck_assert_str_eq(yt_scalar(yt_at(yt_at(r, 2), 0)), s);
    ck_assert_str_eq(yt_scalar(yt_get(yt_at(r, 3), "k")), s);
    ck_assert(!yt_is_plain(yt_at(r, 0)));
    ck_assert(!yt_is_null(yt_at(r, 0)));
    yt_free(d);
    free(doc);
    free(q);
}

START_TEST(quote_round_trips)
{
    static const char *cases[] = {"",
                                  "plain",
                                  "with \"double\" quotes",
                                  "'single'",
                                  "colon: here",
                                  "key:value",
                                  "new\nline",
                                  "\r\n",
                                  "tab\there",
                                  "back\\slash",
                                  "\\n literally",
                                  "  leading spaces",
                                  "trailing  ",
                                  " ",
                                  "yes",
                                  "no",
                                  "null",
                                  "~",
                                  "true",
                                  "123",
                                  "0x1F",
                                  "1e3",
                                  ".inf",
                                  "# comment",
                                  "- dash",
                                  "[bracket]",
                                  "{brace}",
                                  "&anchor",
                                  "*alias",
                                  "!tag",
                                  "%directive",
                                  "@at",
                                  "`tick`",
                                  "|",
                                  ">",
                                  "a #b",
                                  "ünïcødé ✓ 日本語 😀",
                                  "\x01\x02\x1b\x1f\x7f",
                                  "\xc2\x85 NEL",
                                  "\xc2\x9f C1",
                                  "\xc2\xa0 nbsp",
                                  "\xe2\x80\xa8 LS \xe2\x80\xa9 PS",
                                  "\xef\xbb\xbf BOM",
                                  "\xef\xbf\xbe \xef\xbf\xbf",
                                  "---",
                                  "...",
                                  "? q",
                                  "tokenizer.json",
                                  "/path/to/my model/file.sqm",
                                  "##wordpiece",
                                  "[UNK]",
                                  "<s>",
                                  "\xe2\x96\x81word",
                                  "a\n\n b\n ",
                                  "\"",
                                  "\\"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        quote_round_trip(cases[i]);
    /* Every byte value that can appear in valid UTF-8 alone. */
    char one[2] = {0, 0};
    for (int c = 1; c < 128; c++) {
        one[0] = (char)c;
        quote_round_trip(one);
    }
    char longs[5000];
    for (size_t i = 0; i < sizeof longs - 1; i++)
        longs[i] = " a:\"\\\n#'"[i % 8];
    longs[sizeof longs - 1] = '\0';
    quote_round_trip(longs);
}
END_TEST

START_TEST(quote_buffer_and_invalid)
{
    char buf[8];
    ck_assert_uint_eq(yt_quote("abcdefghij", buf, sizeof buf), 12);
    ck_assert_str_eq(buf, "\"abcdef"); /* truncated like snprintf */
    ck_assert_uint_eq(yt_quote("a\"b", buf, sizeof buf), 6);
    ck_assert_str_eq(buf, "\"a\\\"b\"");
    ck_assert_uint_eq(yt_quote("\n", buf, sizeof buf), 4);
    ck_assert_str_eq(buf, "\"\\n\"");
    ck_assert_uint_eq(yt_quote("bad\xff", buf, sizeof buf), SIZE_MAX);
    ck_assert_str_eq(buf, "");
    ck_assert_uint_eq(yt_quote("\xc0\x80", buf, sizeof buf), SIZE_MAX);     /* overlong NUL */
    ck_assert_uint_eq(yt_quote("\xed\xa0\x80", buf, sizeof buf), SIZE_MAX); /* surrogate */
    ck_assert_uint_eq(yt_quote("\xe2\x82", buf, sizeof buf), SIZE_MAX);     /* truncated */
    ck_assert_ptr_null(yt_quote_alloc("\xf5\x80\x80\x80"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("yaml_tree");
    TCase *tc = tcase_create("yaml_tree");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, nested_structure);
    tcase_add_test(tc, typed_getters);
    tcase_add_test(tc, number_syntax);
    tcase_add_test(tc, duplicate_keys);
    tcase_add_test(tc, hostile_input);
    tcase_add_test(tc, depth_bound);
    tcase_add_test(tc, empty_and_file);
    tcase_add_test(tc, quote_round_trips);
    tcase_add_test(tc, quote_buffer_and_invalid);
    suite_add_tcase(s, tc);
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

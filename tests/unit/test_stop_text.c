/* The completion text's stop strings (serve/stop_text.h): the model's bytes
 * are made UTF-8 before the stop strings look, so a stop string may hold
 * U+FFFD; pieces out are whole, valid UTF-8; a character cut at the end
 * becomes U+FFFD at the flush and may still complete a stop string. */
#include <check.h>
#include <string.h>

#include "stop_text.h"
#include "utf8.h"

#define FFFD "\xef\xbf\xbd"

typedef struct fed {
    char text[256];
    size_t len;
    int last;
} fed;

/* Feed the pieces (NUL-separated in `pieces`, n of them), then flush when
 * no stop came; what went out, joined. */
static fed run(const char *const *stops, int ns, const char *const *pieces, int n)
{
    size_t lens[4];
    for (int i = 0; i < ns; i++)
        lens[i] = strlen(stops[i]);
    sq_stop_text t;
    sq_stop_text_init(&t, stops, lens, ns);
    fed f = {{0}, 0, 0};
    for (int k = 0; k < n && f.last != 1; k++) {
        const char *out;
        size_t m;
        f.last = sq_stop_text_feed(&t, pieces[k], strlen(pieces[k]), &out, &m);
        ck_assert_int_ge(f.last, 0);
        ck_assert_uint_eq(sq_utf8_valid_prefix(out, m), m);
        memcpy(f.text + f.len, out, m);
        f.len += m;
    }
    if (f.last != 1) {
        const char *out;
        size_t m;
        f.last = sq_stop_text_flush(&t, &out, &m);
        ck_assert_int_ge(f.last, 0);
        ck_assert_uint_eq(sq_utf8_valid_prefix(out, m), m);
        memcpy(f.text + f.len, out, m);
        f.len += m;
    }
    f.text[f.len] = '\0';
    sq_stop_text_free(&t);
    return f;
}

START_TEST(replacement_char_stops)
{
    const char *stops[] = {FFFD};
    /* a stray continuation byte is one U+FFFD: it stops the text */
    fed f = run(stops, 1, (const char *[]){"ab", "\x80", "cd"}, 3);
    ck_assert_int_eq(f.last, 1);
    ck_assert_str_eq(f.text, "ab");
    /* a lead byte whose character never comes: U+FFFD at the flush */
    f = run(stops, 1, (const char *[]){"xy", "\xe2\x82"}, 2);
    ck_assert_int_eq(f.last, 1);
    ck_assert_str_eq(f.text, "xy");
    /* an invalid byte inside a piece, the stop string written as text */
    f = run(stops, 1, (const char *[]){"q\xffr"}, 1);
    ck_assert_int_eq(f.last, 1);
    ck_assert_str_eq(f.text, "q");
}
END_TEST

START_TEST(cut_characters_and_repair)
{
    const char *stops[] = {"zz"};
    /* é cut between two pieces goes out whole */
    fed f = run(stops, 1, (const char *[]){"a\xc3", "\xa9" "b"}, 2);
    ck_assert_int_eq(f.last, 0);
    ck_assert_str_eq(f.text, "a\xc3\xa9" "b");
    /* without a stop string matching, invalid bytes go out as U+FFFD */
    f = run(stops, 1, (const char *[]){"a\x80", "\xc3"}, 2);
    ck_assert_int_eq(f.last, 0);
    ck_assert_str_eq(f.text, "a" FFFD FFFD);
    /* a stop string across pieces, held back, then found */
    f = run(stops, 1, (const char *[]){"xz", "zy"}, 2);
    ck_assert_int_eq(f.last, 1);
    ck_assert_str_eq(f.text, "x");
    /* a held prefix that does not complete goes out at the flush */
    f = run(stops, 1, (const char *[]){"xz"}, 1);
    ck_assert_int_eq(f.last, 0);
    ck_assert_str_eq(f.text, "xz");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stop_text");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, replacement_char_stops);
    tcase_add_test(tc, cut_characters_and_repair);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

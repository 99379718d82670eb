/* base/utf8.h against a naive reference written from the definition
 * (decode the code point, refuse overlong forms, surrogates and values past
 * U+10FFFF): named cases, then every string of up to 3 bytes drawn from a
 * set of interesting bytes and random strings, for sq_utf8_valid_prefix,
 * sq_utf8_seq and sq_utf8_whole. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "utf8.h"

/* The length of the valid sequence at s[0 .. n), 0 when there is none. */
static size_t naive_seq(const unsigned char *s, size_t n)
{
    const unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return 0;
    return len;
}

static size_t naive_prefix(const unsigned char *s, size_t n)
{
    size_t i = 0, l;
    while (i < n && (l = naive_seq(s + i, n - i)) > 0)
        i += l;
    return i;
}

/* true when s[0 .. n) (n < 4) is a proper prefix of some valid sequence:
 * the continuations tried are every byte for the next one and 0x80 after
 * it (the next byte alone decides whether a prefix can go on) */
static bool naive_cut(const unsigned char *s, size_t n)
{
    unsigned char b[4];
    memcpy(b, s, n);
    for (unsigned x = 0; x <= 0xFF; x++) {
        b[n] = (unsigned char)x;
        for (size_t i = n + 1; i < 4; i++)
            b[i] = 0x80;
        for (size_t m = n + 1; m <= 4; m++)
            if (naive_seq(b, m) == m)
                return true;
    }
    return false;
}

static void check_all(const unsigned char *s, size_t n)
{
    ck_assert_uint_eq(sq_utf8_valid_prefix((const char *)s, n), naive_prefix(s, n));
    if (n == 0)
        return;
    bool bad, cut;
    size_t l = sq_utf8_seq(s, n, &bad, &cut);
    const size_t ref = naive_seq(s, n);
    if (ref) {
        ck_assert(!bad && !cut);
        ck_assert_uint_eq(l, ref);
    } else {
        ck_assert(bad);
        ck_assert(l >= 1 && l <= n);
        /* cut exactly when the whole (short) input is a valid beginning */
        const bool c = n < 4 && (s[0] >= 0xC0) && naive_cut(s, n);
        if (cut)
            ck_assert_uint_eq(l, n);
        ck_assert_int_eq(cut, c && l == n);
    }
}

START_TEST(named_cases)
{
    static const struct { const char *s; size_t valid; } c[] = {
        {"plain ascii", 11},       {"caf\xc3\xa9", 5},           {"\xe2\x82\xac", 3},
        {"\xf0\x9f\x98\x80", 4},   {"\xc0\xaf", 0},              {"\xe0\x80\xaf", 0},
        {"\xed\xa0\x80", 0},       {"\xf4\x90\x80\x80", 0},      {"\xf5\x80\x80\x80", 0},
        {"ab\x80", 2},             {"ab\xe2\x82", 2},            {"\xef\xbf\xbf", 3},
        {"\xf4\x8f\xbf\xbf", 4},   {"\xc2\x80x", 3},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        ck_assert_uint_eq(sq_utf8_valid_prefix(c[i].s, strlen(c[i].s)), c[i].valid);
        check_all((const unsigned char *)c[i].s, strlen(c[i].s));
    }
    /* a character cut at the end: whole() stops before it */
    ck_assert_uint_eq(sq_utf8_whole("ab\xe2\x82", 4), 2);
    ck_assert_uint_eq(sq_utf8_whole("ab\xe2\x82\xac", 5), 5);
    ck_assert_uint_eq(sq_utf8_whole("ab\xf0\x9f\x98", 5), 2);
    ck_assert_uint_eq(sq_utf8_whole("ab\xc0", 3), 3); /* never valid: not waited for */
    ck_assert_uint_eq(sq_utf8_whole("ab\x80", 3), 3);
}
END_TEST

START_TEST(exhaustive_short_strings)
{
    static const unsigned char set[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
                                        0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
                                        0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
    const size_t k = sizeof set;
    unsigned char s[3];
    for (size_t a = 0; a < k; a++) {
        s[0] = set[a];
        check_all(s, 1);
        for (size_t b = 0; b < k; b++) {
            s[1] = set[b];
            check_all(s, 2);
            for (size_t c = 0; c < k; c++) {
                s[2] = set[c];
                check_all(s, 3);
            }
        }
    }
}
END_TEST

START_TEST(random_strings)
{
    uint64_t r = 0x9e3779b97f4a7c15ull;
    unsigned char s[24];
    for (int it = 0; it < 20000; it++) {
        const size_t n = (size_t)(it % 24) + 1;
        for (size_t i = 0; i < n; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            /* mostly lead and continuation bytes */
            s[i] = (unsigned char)((r >> 8) & 1 ? 0x80 | (r >> 16 & 0x7F) : r >> 24);
        }
        ck_assert_uint_eq(sq_utf8_valid_prefix((const char *)s, n), naive_prefix(s, n));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("utf8");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, named_cases);
    tcase_add_test(tc, exhaustive_short_strings);
    tcase_add_test(tc, random_strings);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* Hand-written matchers of the GPT-2 and Qwen2 pre-tokenizer patterns; see
 * pretok_regex.h. Each alternative is a function of the position that
 * returns the end of its match, or 0 when it does not match there. */
#include "pretok_regex.h"

#include <stdbool.h>
#include <string.h>

#include "unicode_props.h"

const char SQ_PRETOK_GPT2_REGEX[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char SQ_PRETOK_QWEN2_REGEX[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

sq_pretok_pattern sq_pretok_recognise(const char *s, size_t len)
{
    if (len == sizeof SQ_PRETOK_GPT2_REGEX - 1 && memcmp(s, SQ_PRETOK_GPT2_REGEX, len) == 0)
        return SQ_PRETOK_GPT2;
    if (len == sizeof SQ_PRETOK_QWEN2_REGEX - 1 && memcmp(s, SQ_PRETOK_QWEN2_REGEX, len) == 0)
        return SQ_PRETOK_QWEN2;
    return 0;
}

static bool is_l(uint32_t c) { return sq_uni_is_letter(c); }
static bool is_n(uint32_t c) { return sq_uni_is_number(c); }
static bool is_s(uint32_t c) { return sq_uni_is_whitespace(c); }
static bool is_other(uint32_t c) { return !is_s(c) && !is_l(c) && !is_n(c); }
static bool is_crlf(uint32_t c) { return c == '\r' || c == '\n'; }

static size_t run(const uint32_t *cp, size_t n, size_t i, bool (*in)(uint32_t))
{
    while (i < n && in(cp[i]))
        i++;
    return i;
}

/* Does c equal the ASCII lower-case letter want, folding case? With fold:
 * Oniguruma's Unicode case folding (U+017F folds to 's'; no other code
 * point folds to one of the letters the contractions use). */
static bool letter_eq(uint32_t c, char want, bool fold)
{
    if (c == (uint32_t)want)
        return true;
    if (!fold)
        return false;
    return c == (uint32_t)want - 32 || (want == 's' && c == 0x17F);
}

/* 's|'t|'re|'ve|'m|'ll|'d (first that matches) */
static size_t contraction(const uint32_t *cp, size_t n, size_t i, bool fold)
{
    static const char *const alts[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    if (cp[i] != '\'')
        return 0;
    for (size_t a = 0; a < sizeof alts / sizeof alts[0]; a++) {
        size_t k = 0, l = strlen(alts[a]);
        while (k < l && i + 1 + k < n && letter_eq(cp[i + 1 + k], alts[a][k], fold))
            k++;
        if (k == l)
            return i + 1 + l;
    }
    return 0;
}

/* " ?" + class+ : the optional space first (greedy), then without it. */
static size_t space_opt_run(const uint32_t *cp, size_t n, size_t i, bool (*in)(uint32_t))
{
    if (cp[i] == ' ' && i + 1 < n && in(cp[i + 1]))
        return run(cp, n, i + 1, in);
    return in(cp[i]) ? run(cp, n, i, in) : 0;
}

/* \s+(?!\S), then \s+ : the whitespace run [i, j). */
static size_t space_tail(const uint32_t *cp, size_t n, size_t i)
{
    size_t j = run(cp, n, i, is_s);
    if (j == i)
        return 0;
    if (j == n || j - i < 2)
        return j; /* (?!\S) holds at the end; else \s+ takes the single space */
    return j - 1; /* back off one so that a space, not a non-space, follows */
}

static size_t match_gpt2(const uint32_t *cp, size_t n, size_t i)
{
    size_t e;
    if ((e = contraction(cp, n, i, false)) || (e = space_opt_run(cp, n, i, is_l)) ||
        (e = space_opt_run(cp, n, i, is_n)) || (e = space_opt_run(cp, n, i, is_other)) ||
        (e = space_tail(cp, n, i)))
        return e;
    return i + 1; /* unreachable: every code point is one of the classes */
}

static size_t match_qwen2(const uint32_t *cp, size_t n, size_t i)
{
    size_t e;
    if ((e = contraction(cp, n, i, true)))
        return e;
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (!is_crlf(cp[i]) && !is_l(cp[i]) && !is_n(cp[i]) && i + 1 < n && is_l(cp[i + 1]))
        return run(cp, n, i + 1, is_l);
    if (is_l(cp[i]))
        return run(cp, n, i, is_l);
    /* \p{N} */
    if (is_n(cp[i]))
        return i + 1;
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    if ((e = space_opt_run(cp, n, i, is_other)))
        return run(cp, n, e, is_crlf);
    /* \s*[\r\n]+ : the whitespace run up to its last \r or \n */
    size_t j = run(cp, n, i, is_s);
    for (size_t k = j; k > i; k--)
        if (is_crlf(cp[k - 1]))
            return k;
    if ((e = space_tail(cp, n, i)))
        return e;
    return i + 1; /* unreachable */
}

size_t sq_pretok_match(sq_pretok_pattern p, const uint32_t *cp, size_t n, size_t i)
{
    return p == SQ_PRETOK_GPT2 ? match_gpt2(cp, n, i) : match_qwen2(cp, n, i);
}

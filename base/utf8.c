#include "utf8.h"

size_t sq_utf8_seq(const unsigned char *p, size_t n, bool *bad, bool *cut)
{
    *bad = *cut = false;
    const unsigned char c = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        *bad = true; /* a continuation byte alone, C0, C1, F5..FF */
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if (i >= n) {
            *bad = *cut = true;
            return i;
        }
        const unsigned char b = p[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
            *bad = true;
            return i;
        }
    }
    return len;
}

size_t sq_utf8_whole(const char *p, size_t n)
{
    /* A cut sequence starts at most 3 bytes from the end, at a lead byte. */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        const unsigned char c = (unsigned char)p[n - back];
        if (c < 0x80)
            return n;
        if (c >= 0xC0) {
            bool bad, cut;
            sq_utf8_seq((const unsigned char *)p + n - back, back, &bad, &cut);
            return cut ? n - back : n;
        }
    }
    return n;
}

size_t sq_utf8_valid_prefix(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        bool bad, cut;
        const size_t l = sq_utf8_seq(s + i, n - i, &bad, &cut);
        if (bad)
            return i;
        i += l;
    }
    return n;
}

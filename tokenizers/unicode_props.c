#include "unicode_props.h"

#include <utf8proc.h>

bool sq_uni_is_whitespace(uint32_t cp)
{
    if (cp < 0x80)
        return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool sq_uni_is_control(uint32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\r')
        return false;
    if (cp < 0x20 || cp == 0x7F)
        return true;
    if (cp < 0x80)
        return false;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
        return true;
    default:
        return false;
    }
}

bool sq_uni_is_punctuation(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
               (cp >= 123 && cp <= 126);
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return true;
    default:
        return false;
    }
}

bool sq_uni_is_cjk(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool sq_uni_is_letter(uint32_t cp)
{
    if (cp < 0x80)
        return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return true;
    default:
        return false;
    }
}

bool sq_uni_is_number(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= '0' && cp <= '9';
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return true;
    default:
        return false;
    }
}

bool sq_uni_is_nonspacing_mark(uint32_t cp)
{
    return cp >= 0x300 && utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_MN;
}

int sq_uni_combining_class(uint32_t cp)
{
    if (cp < 0x300)
        return 0;
    return utf8proc_get_property((utf8proc_int32_t)cp)->combining_class;
}

int sq_uni_tolower(uint32_t cp, uint32_t out[2])
{
    if (cp < 0x80) {
        out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
        return 1;
    }
    /* The only unconditional one-to-many lowercase mapping in
     * SpecialCasing.txt; utf8proc applies simple (1:1) mappings only. */
    if (cp == 0x130) {
        out[0] = 0x69;
        out[1] = 0x307;
        return 2;
    }
    out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
    return 1;
}

int sq_uni_decompose(uint32_t cp, uint32_t *out, int cap)
{
    if (cp < 0xC0) {
        if (cap >= 1)
            out[0] = cp;
        return 1;
    }
    utf8proc_int32_t tmp[32];
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, tmp, 32,
                                                 UTF8PROC_DECOMPOSE, NULL);
    if (n < 0 || n > 32) { /* cannot happen for scalar values; keep cp as is */
        tmp[0] = (utf8proc_int32_t)cp;
        n = 1;
    }
    for (int i = 0; i < n && i < cap; i++)
        out[i] = (uint32_t)tmp[i];
    return (int)n;
}

/* Unicode Table 3-7: the allowed range of the second byte depends on the first. */
size_t sq_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
    uint8_t b0 = s[0];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    int need;
    uint32_t v;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        v = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        v = b0 & 0x0F;
        if (b0 == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (b0 == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        v = b0 & 0x07;
        if (b0 == 0xF0)
            lo = 0x90;
        else if (b0 == 0xF4)
            hi = 0x8F; /* <= U+10FFFF */
    } else {
        *cp = SQ_UNI_REPLACEMENT;
        return 1;
    }
    size_t i = 1;
    for (int k = 0; k < need; k++, i++) {
        if (i >= len || s[i] < lo || s[i] > hi) {
            *cp = SQ_UNI_REPLACEMENT;
            return i; /* the maximal subpart seen so far */
        }
        v = (v << 6) | (s[i] & 0x3F);
        lo = 0x80;
        hi = 0xBF;
    }
    *cp = v;
    return i;
}

int sq_utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

bool sq_utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = sq_utf8_decode(s + i, len - i, &cp);
        if (cp == SQ_UNI_REPLACEMENT && !(n == 3 && s[i] == 0xEF && s[i + 1] == 0xBF && s[i + 2] == 0xBD))
            return false;
        i += n;
    }
    return true;
}

#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static bool reserve(sq_strbuf *sb, size_t extra)
{
    if (sb->failed)
        return false;
    if (sb->len + extra + 1 <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    char *p = realloc(sb->s, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->s = p;
    sb->cap = cap;
    return true;
}

void sq_sb_printf(sq_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(sb, (size_t)n)) {
        sb->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void sq_sb_append(sq_strbuf *sb, const char *p, size_t n)
{
    if (!reserve(sb, n))
        return;
    if (n)
        memcpy(sb->s + sb->len, p, n);
    sb->len += n;
    sb->s[sb->len] = '\0';
}

void sq_sb_free(sq_strbuf *sb)
{
    free(sb->s);
    sb->s = NULL;
    sb->len = sb->cap = 0;
    sb->failed = false;
}

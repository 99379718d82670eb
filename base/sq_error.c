#include "sq_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The message from fmt, and the subject ("" when NULL). Returns -1. */
static int vset(sq_err *err, const char *subject, const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    snprintf(err->subject, sizeof err->subject, "%s", subject ? subject : "");
    return -1;
}

int sq_err_set(sq_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int sq_err_set_at(sq_err *err, const char *subject, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, subject, fmt, ap);
    va_end(ap);
    return -1;
}

int sq_err_prefix(sq_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char head[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(head);
    if (n > sizeof err->msg - 3)
        n = sizeof err->msg - 3;
    memcpy(err->msg, head, n);
    memcpy(err->msg + n, ": ", 2);
    size_t rest = sizeof err->msg - n - 3;
    size_t m = strnlen(old, rest);
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = '\0';
    return -1;
}

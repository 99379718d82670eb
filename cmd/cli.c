#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int cli_fail(const char *cmd, const sq_err *err)
{
    fprintf(stderr, "squint %s: error: %s\n", cmd, err->msg);
    return SQ_EXIT_BADINPUT;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "squint %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'squint %s --help')\n", cmd);
    va_end(ap);
    return SQ_EXIT_BADINPUT;
}

bool cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p, const char *label)
{
    p->label = label;
    p->t0 = cli_now();
    p->last_draw = 0;
    p->enabled = isatty(STDERR_FILENO);
}

void cli_progress_update(void *vp, int64_t done, int64_t total)
{
    cli_progress *p = vp;
    if (!p->enabled)
        return;
    double now = cli_now();
    if ((total < 0 || done < total) && now - p->last_draw < 0.1)
        return;
    p->last_draw = now;
    if (total < 0) { /* a stream: the total is not known */
        double el = now - p->t0;
        fprintf(stderr, "\r%s %lld  %.1f seq/s   ", p->label, (long long)done,
                el > 0 ? done / el : 0.0);
        fflush(stderr);
        return;
    }
    double el = now - p->t0, rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    int width = 30, fill = total > 0 ? (int)(width * done / total) : 0;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r%s [%s] %lld/%lld  %.1f seq/s  ETA %.0fs   ", p->label, bar,
            (long long)done, (long long)total, rate, eta);
    fflush(stderr);
}

void cli_progress_finish(cli_progress *p)
{
    if (p->enabled)
        fputc('\n', stderr);
}

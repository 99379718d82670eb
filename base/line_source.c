#include "line_source.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

#define LS_INITIAL_CAP ((size_t)64 << 10)

int sq_line_source_init(sq_line_source *ls, sq_byte_read_fn read, void *ctx, const char *name,
                        size_t max_line, sq_err *err)
{
    memset(ls, 0, sizeof *ls);
    ls->read = read;
    ls->ctx = ctx;
    ls->max_line = max_line ? max_line : SQ_LINE_MAX_DEFAULT;
    ls->name = strdup(name);
    /* Room for the longest line plus "\r\n"; start small, grow on demand. */
    size_t limit = ls->max_line + 2;
    ls->cap = limit < LS_INITIAL_CAP ? limit : LS_INITIAL_CAP;
    ls->buf = malloc(ls->cap);
    if (!ls->name || !ls->buf) {
        sq_line_source_free(ls);
        return sq_err_set(err, "%s: out of memory", name);
    }
    ls->at_bom_check = 1;
    return 0;
}

void sq_line_source_free(sq_line_source *ls)
{
    free(ls->buf);
    free(ls->name);
    memset(ls, 0, sizeof *ls);
}

/* Move unread data to the front, grow if full, and read more bytes.
 * Returns bytes added (0 at end of stream) or -1. */
static ssize_t fill(sq_line_source *ls, sq_err *err)
{
    if (ls->start > 0) {
        memmove(ls->buf, ls->buf + ls->start, ls->end - ls->start);
        ls->end -= ls->start;
        ls->prev_start = 0;
        ls->start = 0;
    }
    if (ls->end == ls->cap) {
        size_t limit = ls->max_line + 2;
        if (ls->cap >= limit)
            return 0; /* caller reports the overlong line */
        size_t ncap = ls->cap * 2 < limit ? ls->cap * 2 : limit;
        char *nb = realloc(ls->buf, ncap);
        if (!nb)
            return sq_err_set(err, "%s:%llu: out of memory", ls->name,
                              (unsigned long long)ls->line_no + 1);
        ls->buf = nb;
        ls->cap = ncap;
    }
    ssize_t r = ls->read(ls->ctx, ls->buf + ls->end, ls->cap - ls->end, err);
    if (r < 0)
        return -1;
    if (r == 0)
        ls->eof = 1;
    ls->end += (size_t)r;
    return r;
}

static int check_line(sq_line_source *ls, const char *line, size_t len, sq_err *err)
{
    unsigned long long no = (unsigned long long)ls->line_no;
    const char *nul = memchr(line, '\0', len);
    if (nul)
        return sq_err_set(err, "%s:%llu: NUL byte at column %zu (binary data, not text)",
                          ls->name, no, (size_t)(nul - line) + 1);
    size_t ok = sq_utf8_valid_prefix(line, len);
    if (ok != len)
        return sq_err_set(err, "%s:%llu: invalid UTF-8 at column %zu", ls->name, no, ok + 1);
    return 0;
}

int sq_line_next(sq_line_source *ls, const char **line, size_t *len, sq_err *err)
{
    if (ls->repeat) {
        ls->repeat = 0;
        ls->line_no--;
        ls->start = ls->prev_start;
        if (ls->line_no == 0)
            ls->at_bom_check = 1;
    }
    size_t scanned = 0; /* bytes after start known to hold no newline */
    char *nl;
    for (;;) {
        size_t avail = ls->end - ls->start;
        nl = memchr(ls->buf + ls->start + scanned, '\n', avail - scanned);
        if (nl)
            break;
        scanned = avail;
        if (ls->eof)
            break;
        if (avail >= ls->max_line + 2)
            return sq_err_set(err, "%s:%llu: line longer than %zu bytes", ls->name,
                              (unsigned long long)ls->line_no + 1, ls->max_line);
        if (fill(ls, err) < 0)
            return -1;
    }
    size_t n = nl ? (size_t)(nl - (ls->buf + ls->start)) : ls->end - ls->start;
    if (!nl && n == 0)
        return 0; /* end of stream */
    ls->line_no++;
    ls->prev_start = ls->start;
    const char *p = ls->buf + ls->start;
    ls->start += n + (nl ? 1 : 0);
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (ls->at_bom_check) {
        ls->at_bom_check = 0;
        if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
            p += 3;
            n -= 3;
        }
    }
    if (n > ls->max_line)
        return sq_err_set(err, "%s:%llu: line longer than %zu bytes", ls->name,
                          (unsigned long long)ls->line_no, ls->max_line);
    if (check_line(ls, p, n, err) != 0)
        return -1;
    *line = p;
    *len = n;
    return 1;
}

void sq_line_push_back(sq_line_source *ls)
{
    if (ls->line_no > 0)
        ls->repeat = 1;
}

int sq_line_read_rest(sq_line_source *ls, size_t max_bytes, char **out, size_t *out_len,
                      sq_err *err)
{
    *out = NULL;
    *out_len = 0;
    uint64_t first_line = ls->line_no + 1;
    if (ls->repeat) {
        ls->repeat = 0;
        ls->start = ls->prev_start;
        first_line = ls->line_no;
    }
    size_t n = ls->end - ls->start;
    if (n > max_bytes)
        return sq_err_set(err, "%s: larger than the %zu-byte limit for a JSON document",
                          ls->name, max_bytes);
    size_t cap = n + LS_INITIAL_CAP;
    char *b = malloc(cap + 1);
    if (!b)
        return sq_err_set(err, "%s: out of memory", ls->name);
    memcpy(b, ls->buf + ls->start, n);
    ls->start = ls->end;
    while (!ls->eof) {
        if (n == cap) {
            if (cap > max_bytes) {
                free(b);
                return sq_err_set(err, "%s: larger than the %zu-byte limit for a JSON document",
                                  ls->name, max_bytes);
            }
            size_t ncap = cap * 2;
            char *nb = realloc(b, ncap + 1);
            if (!nb) {
                free(b);
                return sq_err_set(err, "%s: out of memory", ls->name);
            }
            b = nb;
            cap = ncap;
        }
        ssize_t r = ls->read(ls->ctx, b + n, cap - n, err);
        if (r < 0) {
            free(b);
            return -1;
        }
        if (r == 0)
            ls->eof = 1;
        n += (size_t)r;
    }
    if (n > max_bytes) {
        free(b);
        return sq_err_set(err, "%s: larger than the %zu-byte limit for a JSON document",
                          ls->name, max_bytes);
    }
    b[n] = '\0';
    if (first_line == 1 && n >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0) {
        memmove(b, b + 3, n - 2); /* drop the byte-order mark, keep the NUL */
        n -= 3;
    }
    const char *nul = memchr(b, '\0', n);
    if (nul) {
        uint64_t line = first_line;
        for (const char *q = b; q < nul; q++)
            line += *q == '\n';
        free(b);
        return sq_err_set(err, "%s:%llu: NUL byte (binary data, not text)", ls->name,
                          (unsigned long long)line);
    }
    *out = b;
    *out_len = n;
    return 0;
}

/* Plain-text corpus format: one sample per line; blank lines are skipped. */
#include "corpus_reader.h"

#include <stdlib.h>
#include <string.h>

typedef struct text_reader {
    sq_corpus_reader base;
    sq_line_source *ls;
    char *sample; /* NUL-terminated copy of the current line */
    size_t cap;
    char where[1100];
} text_reader;

static int text_next(sq_corpus_reader *r, const char **text, size_t *len, sq_err *err)
{
    text_reader *t = (text_reader *)r;
    const char *line;
    size_t n;
    int rc;
    while ((rc = sq_line_next(t->ls, &line, &n, err)) == 1) {
        if (sq_corpus_blank(line, n))
            continue;
        if (n + 1 > t->cap) {
            size_t ncap = n + 1 > t->cap * 2 ? n + 1 : t->cap * 2;
            char *ns = realloc(t->sample, ncap);
            if (!ns)
                return sq_err_set(err, "%s:%llu: out of memory", t->ls->name,
                                  (unsigned long long)t->ls->line_no);
            t->sample = ns;
            t->cap = ncap;
        }
        memcpy(t->sample, line, n);
        t->sample[n] = '\0';
        *text = t->sample;
        *len = n;
        return 1;
    }
    return rc;
}

static const char *text_where(sq_corpus_reader *r)
{
    text_reader *t = (text_reader *)r;
    return sq_corpus_fmt_where(t->where, sizeof t->where, t->ls->name,
                               (unsigned long long)t->ls->line_no);
}

static void text_free(sq_corpus_reader *r)
{
    text_reader *t = (text_reader *)r;
    free(t->sample);
    free(t);
}

sq_corpus_reader *sq_corpus_text_reader(sq_line_source *ls, sq_err *err)
{
    text_reader *t = calloc(1, sizeof *t);
    if (!t) {
        sq_err_set(err, "%s: out of memory", ls->name);
        return NULL;
    }
    t->base.next = text_next;
    t->base.where = text_where;
    t->base.free = text_free;
    t->ls = ls;
    return &t->base;
}

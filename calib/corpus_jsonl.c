/* JSONL corpus format: one JSON object per line, the sample at a dotted
 * field path. */
#include "corpus_reader.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct jsonl_reader {
    sq_corpus_reader base;
    sq_line_source *ls;
    char *field;
    json_t *obj; /* the current line; owns the sample text */
    char where[1100];
} jsonl_reader;

/* Follow "a.b.c" through nested objects; NULL when any step is missing. */
static json_t *get_path(json_t *obj, const char *path)
{
    const char *s = path;
    while (obj && *s) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        if (!json_is_object(obj))
            return NULL;
        obj = json_object_getn(obj, s, n);
        s += n + (dot ? 1 : 0);
    }
    return obj;
}

static int jsonl_next(sq_corpus_reader *r, const char **text, size_t *len, sq_err *err)
{
    jsonl_reader *j = (jsonl_reader *)r;
    const char *line;
    size_t n;
    int rc;
    while ((rc = sq_line_next(j->ls, &line, &n, err)) == 1) {
        if (sq_corpus_blank(line, n))
            continue;
        unsigned long long no = (unsigned long long)j->ls->line_no;
        json_decref(j->obj);
        json_error_t je;
        j->obj = json_loadb(line, n, 0, &je);
        if (!j->obj)
            return sq_err_set(err, "%s:%llu: not valid JSON: %s (column %d)", j->ls->name, no,
                              je.text, je.column);
        if (!json_is_object(j->obj))
            return sq_err_set(err, "%s:%llu: not a JSON object", j->ls->name, no);
        json_t *v = get_path(j->obj, j->field);
        if (!json_is_string(v))
            return sq_err_set(err, "%s:%llu: field \"%s\" is missing or not a string",
                              j->ls->name, no, j->field);
        const char *s = json_string_value(v);
        size_t sn = json_string_length(v);
        if (sq_corpus_blank(s, sn))
            continue;
        *text = s;
        *len = sn;
        return 1;
    }
    return rc;
}

static const char *jsonl_where(sq_corpus_reader *r)
{
    jsonl_reader *j = (jsonl_reader *)r;
    return sq_corpus_fmt_where(j->where, sizeof j->where, j->ls->name,
                               (unsigned long long)j->ls->line_no);
}

static void jsonl_free(sq_corpus_reader *r)
{
    jsonl_reader *j = (jsonl_reader *)r;
    json_decref(j->obj);
    free(j->field);
    free(j);
}

sq_corpus_reader *sq_corpus_jsonl_reader(sq_line_source *ls, const char *field, sq_err *err)
{
    jsonl_reader *j = calloc(1, sizeof *j);
    if (!j || !(j->field = strdup(field ? field : "text"))) {
        free(j);
        sq_err_set(err, "%s: out of memory", ls->name);
        return NULL;
    }
    j->base.next = jsonl_next;
    j->base.where = jsonl_where;
    j->base.free = jsonl_free;
    j->ls = ls;
    return &j->base;
}

/* JSONL corpus format: one JSON object per line, the sample at a dotted
 * field path. */
#include "corpus_reader.h"
#include "json_util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct jsonl_reader {
    sq_corpus_reader base;
    sq_line_source *ls;
    char *field;
    char *pair_field; /* NULL: single texts */
    json_t *obj; /* the current line; owns the sample text */
    char *pair;  /* the current pair sample: a NUL b */
    size_t pair_cap;
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

/* Text a (already read), then the pair field's text b: the sample a NUL b.
 * 0 (skip) when b is blank. */
static int pair_sample(jsonl_reader *j, unsigned long long no, const char *a, size_t na,
                       const char **text, size_t *len, sq_err *err)
{
    json_t *v = get_path(j->obj, j->pair_field);
    if (!json_is_string(v))
        return sq_err_set(err, "%s:%llu: field \"%s\" is missing or not a string", j->ls->name,
                          no, j->pair_field);
    const char *b = json_string_value(v);
    size_t nb = json_string_length(v);
    if (memchr(a, 0, na) || memchr(b, 0, nb))
        return sq_err_set(err, "%s:%llu: a text holds a NUL character", j->ls->name, no);
    if (sq_corpus_blank(b, nb))
        return 2; /* skip */
    size_t need = na + 1 + nb + 1;
    if (need > j->pair_cap) {
        char *p = realloc(j->pair, need);
        if (!p)
            return sq_err_set(err, "%s: out of memory", j->ls->name);
        j->pair = p;
        j->pair_cap = need;
    }
    memcpy(j->pair, a, na);
    j->pair[na] = '\0';
    memcpy(j->pair + na + 1, b, nb);
    j->pair[na + 1 + nb] = '\0';
    *text = j->pair;
    *len = na + 1 + nb;
    return 1;
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
        j->obj = json_loadb(line, n, SQ_JSON_FLAGS, &je);
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
        if (j->pair_field) {
            int pr = pair_sample(j, no, s, sn, text, len, err);
            if (pr == 2)
                continue;
            return pr;
        }
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
    free(j->pair_field);
    free(j->pair);
    free(j);
}

sq_corpus_reader *sq_corpus_jsonl_reader(sq_line_source *ls, const char *field,
                                         const char *pair_field, sq_err *err)
{
    jsonl_reader *j = calloc(1, sizeof *j);
    if (!j || !(j->field = strdup(field ? field : "text")) ||
        (pair_field && !(j->pair_field = strdup(pair_field)))) {
        if (j)
            free(j->field);
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

#include "text_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "json_util.h"

static ssize_t fd_read(void *ctx, void *buf, size_t n, sq_err *err)
{
    sq_text_stream *s = ctx;
    for (;;) {
        ssize_t r = read(s->fd, buf, n);
        if (r >= 0)
            return r;
        if (errno != EINTR)
            return sq_err_set(err, "%s: read error: %s", s->ls.name, strerror(errno));
    }
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int sq_text_stream_open(const char *path, const char *field, const char *id_field,
                        sq_text_stream *s, sq_err *err)
{
    memset(s, 0, sizeof *s);
    if (!field && ends_with(path, ".jsonl"))
        field = "text";
    if (id_field && !field)
        return sq_err_set(err, "%s: --id-field needs JSONL input (a .jsonl file or --field)",
                          path);
    s->field = field;
    s->id_field = id_field;
    const char *name = path;
    if (strcmp(path, "-") == 0) {
        s->fd = 0;
        name = "standard input";
    } else {
        sq_note_input_path(path);
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0)
            return sq_err_set(err, "%s: %s", path, strerror(errno));
        s->own_fd = true;
    }
    if (sq_line_source_init(&s->ls, fd_read, s, name, 0, err) != 0) {
        sq_text_stream_close(s);
        return -1;
    }
    return 0;
}

int sq_text_stream_pairs(sq_text_stream *s, const char *pair_field, sq_err *err)
{
    if (!s->field)
        return sq_err_set(err, "%s: text pairs need JSONL input (a .jsonl file or --field)",
                          s->ls.name ? s->ls.name : "input");
    s->pair_field = pair_field;
    return 0;
}

void sq_text_stream_close(sq_text_stream *s)
{
    if (s->own_fd)
        close(s->fd);
    if (s->ls.buf || s->ls.name)
        sq_line_source_free(&s->ls);
    memset(s, 0, sizeof *s);
}

void sq_text_chunk_clear(sq_text_chunk *c)
{
    for (int64_t i = 0; i < c->n; i++) {
        free(c->text[i]);
        if (c->id_json)
            free(c->id_json[i]);
        if (c->text2)
            free(c->text2[i]);
    }
    c->n = 0;
}

void sq_text_chunk_free(sq_text_chunk *c)
{
    sq_text_chunk_clear(c);
    free(c->text);
    free(c->len);
    free(c->id_json);
    free(c->text2);
    free(c->len2);
    memset(c, 0, sizeof *c);
}

static char *copy_text(const char *t, size_t n)
{
    char *copy = malloc(n + 1);
    if (copy) {
        memcpy(copy, t, n);
        copy[n] = '\0';
    }
    return copy;
}

/* Append a text (and its id, and its second text t2 when reading pairs). */
static int push(sq_text_chunk *c, const char *t, size_t n, char *id, bool with_ids,
                const char *t2, size_t n2)
{
    if (c->n == c->cap) {
        int64_t nc = c->cap ? 2 * c->cap : 256;
        char **a = realloc(c->text, (size_t)nc * sizeof *a);
        if (a)
            c->text = a;
        size_t *l = realloc(c->len, (size_t)nc * sizeof *l);
        if (l)
            c->len = l;
        char **d = with_ids ? realloc(c->id_json, (size_t)nc * sizeof *d) : NULL;
        if (d)
            c->id_json = d;
        char **a2 = t2 ? realloc(c->text2, (size_t)nc * sizeof *a2) : NULL;
        if (a2)
            c->text2 = a2;
        size_t *l2 = t2 ? realloc(c->len2, (size_t)nc * sizeof *l2) : NULL;
        if (l2)
            c->len2 = l2;
        if (!a || !l || (with_ids && !d) || (t2 && (!a2 || !l2)))
            return -1;
        c->cap = nc;
    }
    char *copy = copy_text(t, n), *copy2 = t2 ? copy_text(t2, n2) : NULL;
    if (!copy || (t2 && !copy2)) {
        free(copy);
        return -1;
    }
    c->text[c->n] = copy;
    c->len[c->n] = n;
    if (with_ids)
        c->id_json[c->n] = id;
    if (t2) {
        c->text2[c->n] = copy2;
        c->len2[c->n] = n2;
    }
    c->n++;
    return 0;
}

/* Is a whole line already buffered, or input ready without blocking? */
static bool line_ready(sq_text_stream *s)
{
    const sq_line_source *ls = &s->ls;
    if (ls->eof || ls->repeat || memchr(ls->buf + ls->start, '\n', ls->end - ls->start))
        return true;
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    return poll(&p, 1, 0) != 0; /* readable, hung up, or an error read() will report */
}

int64_t sq_text_stream_next(sq_text_stream *s, int64_t max, sq_text_chunk *c, sq_err *err)
{
    sq_text_chunk_clear(c);
    bool with_ids = s->id_field != NULL;
    while (c->n < max) {
        if (c->n > 0 && !line_ready(s))
            break; /* answer what is here before waiting for more */
        const char *line;
        size_t len;
        int r = sq_line_next(&s->ls, &line, &len, err);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        unsigned long long no = (unsigned long long)s->ls.line_no;
        if (!s->field) {
            if (push(c, line, len, NULL, false, NULL, 0) != 0)
                return sq_err_set(err, "%s: out of memory", s->ls.name);
            continue;
        }
        if (len == 0)
            continue;
        json_error_t je;
        json_t *obj = json_loadb(line, len, SQ_JSON_FLAGS, &je);
        if (!obj)
            return sq_err_set(err, "%s:%llu: invalid JSON: %s", s->ls.name, no, je.text);
        json_t *v = sq_json_get_path(obj, s->field);
        if (!json_is_string(v)) {
            json_decref(obj);
            return sq_err_set(err, "%s:%llu: field \"%s\" is missing or not a string", s->ls.name,
                              no, s->field);
        }
        json_t *v2 = s->pair_field ? sq_json_get_path(obj, s->pair_field) : NULL;
        if (s->pair_field && !json_is_string(v2)) {
            json_decref(obj);
            return sq_err_set(err, "%s:%llu: field \"%s\" is missing or not a string", s->ls.name,
                              no, s->pair_field);
        }
        char *id = NULL;
        if (with_ids) {
            json_t *iv = sq_json_get_path(obj, s->id_field);
            if (!json_is_string(iv) && !json_is_integer(iv)) {
                json_decref(obj);
                return sq_err_set(err, "%s:%llu: id field \"%s\" is missing or not a string or "
                                       "integer",
                                  s->ls.name, no, s->id_field);
            }
            id = json_dumps(iv, JSON_COMPACT | JSON_ENCODE_ANY);
        }
        int p = (with_ids && !id) ? -1
                                  : push(c, json_string_value(v), json_string_length(v), id,
                                         with_ids, v2 ? json_string_value(v2) : NULL,
                                         v2 ? json_string_length(v2) : 0);
        json_decref(obj);
        if (p != 0) {
            free(id);
            return sq_err_set(err, "%s: out of memory", s->ls.name);
        }
    }
    s->count += c->n;
    return c->n;
}

int sq_text_chunk_prefix(sq_text_chunk *c, const char *prefix)
{
    size_t p = strlen(prefix);
    for (int64_t i = 0; i < c->n; i++) {
        char *t = malloc(p + c->len[i] + 1);
        if (!t)
            return -1;
        memcpy(t, prefix, p);
        memcpy(t + p, c->text[i], c->len[i] + 1);
        free(c->text[i]);
        c->text[i] = t;
        c->len[i] += p;
    }
    return 0;
}

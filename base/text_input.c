#include "text_input.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "line_source.h"
#include "utf8.h"

static int push(sq_texts *t, int64_t *cap, const char *s, size_t n)
{
    if (t->n == *cap) {
        int64_t nc = *cap ? *cap * 2 : 1024;
        char **a = realloc(t->text, (size_t)nc * sizeof *a);
        if (!a)
            return -1;
        t->text = a;
        size_t *l = realloc(t->len, (size_t)nc * sizeof *l);
        if (!l)
            return -1;
        t->len = l;
        *cap = nc;
    }
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = '\0';
    t->text[t->n] = c;
    t->len[t->n] = n;
    t->n++;
    return 0;
}

static int read_all(const char *path, char **buf, size_t *len, sq_err *err)
{
    if (strcmp(path, "-") != 0)
        return sq_read_file(path, SQ_INPUT_MAX_FILE, buf, len, err);
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, stdin);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            if (cap >= SQ_INPUT_MAX_FILE) {
                free(b);
                return sq_err_set(err, "standard input: larger than the input limit");
            }
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    if (!b)
        return sq_err_set(err, "standard input: out of memory");
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int sq_texts_read(const char *path, const char *field, sq_texts *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    size_t plen = strlen(path);
    if (!field && plen > 6 && strcmp(path + plen - 6, ".jsonl") == 0)
        field = "text";
    char *buf;
    size_t len;
    if (read_all(path, &buf, &len, err) != 0)
        return -1;
    const char *name = strcmp(path, "-") == 0 ? "standard input" : path;
    int64_t cap = 0, lineno = 0;
    int rc = -1;
    size_t pos = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && buf[end] != '\n')
            end++;
        size_t n = end - pos;
        if (n > 0 && buf[pos + n - 1] == '\r')
            n--;
        lineno++;
        if (memchr(buf + pos, '\0', n)) {
            sq_err_set(err, "%s:%lld: line contains a NUL byte (binary file?)", name,
                       (long long)lineno);
            goto out;
        }
        if (!field) {
            /* The same rule as calibrate's corpora: text is UTF-8, and bytes
             * that are not are refused, never silently dropped. */
            size_t ok = sq_utf8_valid_prefix(buf + pos, n);
            if (ok < n) {
                sq_err_set(err, "%s:%lld: invalid UTF-8 at column %zu", name, (long long)lineno,
                           ok + 1);
                goto out;
            }
            if (push(out, &cap, buf + pos, n) != 0)
                goto oom;
        } else if (n > 0) {
            json_error_t je;
            json_t *obj = json_loadb(buf + pos, n, SQ_JSON_FLAGS, &je);
            if (!obj) {
                sq_err_set(err, "%s:%lld: invalid JSON: %s", name, (long long)lineno, je.text);
                goto out;
            }
            json_t *v = sq_json_get_path(obj, field);
            if (!json_is_string(v)) {
                json_decref(obj);
                sq_err_set(err, "%s:%lld: field \"%s\" is missing or not a string", name,
                           (long long)lineno, field);
                goto out;
            }
            int p = push(out, &cap, json_string_value(v), json_string_length(v));
            json_decref(obj);
            if (p != 0)
                goto oom;
        }
        pos = end + 1;
    }
    if (out->n == 0) {
        sq_err_set(err, "%s: no inputs (the file is empty)", name);
        goto out;
    }
    rc = 0;
    goto out;
oom:
    sq_err_set(err, "%s: out of memory", name);
out:
    free(buf);
    if (rc != 0)
        sq_texts_free(out);
    return rc;
}

void sq_texts_free(sq_texts *t)
{
    for (int64_t i = 0; i < t->n; i++)
        free(t->text[i]);
    free(t->text);
    free(t->len);
    memset(t, 0, sizeof *t);
}

#include "sentences.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tk_sources[] = {
    "llamacpp-vocab-bge/ggml-vocab-bert-bge.gguf.inp",
    "stsb-glue/train.tsv",
    "stsb-glue/dev.tsv",
    "stsb-glue/test.tsv",
    "stsb-glue/original/sts-train.tsv",
    "stsb-glue/original/sts-dev.tsv",
    "stsb-glue/original/sts-test.tsv",
    "sst2-glue/dev.tsv",
    "squint:edge_strings.json",
    NULL,
};

/* How each source's sentences are found: header column names, or fixed fields. */
typedef struct source_rule {
    const char *dir; /* path prefix the rule applies to */
    const char *columns[3]; /* header names, NULL-terminated; empty = use fields */
    int fields[3];          /* fixed field indices when there is no header, -1 ends */
} source_rule;

static const source_rule rules[] = {
    {"stsb-glue/original/", {NULL}, {5, 6, -1}},
    {"stsb-glue/", {"sentence1", "sentence2", NULL}, {-1}},
    {"sst2-glue/", {"sentence", NULL}, {-1}},
};

char *tk_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static int push(tk_sentences *out, size_t *cap, const char *s, size_t len)
{
    if (out->n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        const char **ns = realloc(out->s, *cap * sizeof *ns);
        size_t *nl = realloc(out->len, *cap * sizeof *nl);
        if (ns)
            out->s = ns;
        if (nl)
            out->len = nl;
        if (!ns || !nl)
            return -1;
    }
    out->s[out->n] = s;
    out->len[out->n++] = len;
    return 0;
}

static int split_ggml(tk_sentences *out, size_t len, char *err, size_t errlen)
{
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sl = sizeof sep - 1;
    size_t cap = 0;
    char *p = out->buf, *end = out->buf + len;
    for (;;) {
        char *q = memmem(p, (size_t)(end - p), sep, sl);
        if (!q)
            break;
        *q = '\0';
        if (push(out, &cap, p, (size_t)(q - p)) != 0)
            return snprintf(err, errlen, "out of memory"), -1;
        p = q + sl;
    }
    if (p != end)
        return snprintf(err, errlen, "text after the last separator"), -1;
    return 0;
}

/* A JSON array of strings (may hold NULs); copied into a fresh buffer. */
static int split_json(tk_sentences *out, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(out->buf, len, JSON_ALLOW_NUL, &je);
    if (!root || !json_is_array(root)) {
        snprintf(err, errlen, "not a JSON array: %s", root ? "" : je.text);
        json_decref(root);
        return -1;
    }
    size_t total = 0, i, cap = 0;
    json_t *v;
    json_array_foreach(root, i, v) {
        if (!json_is_string(v)) {
            json_decref(root);
            return snprintf(err, errlen, "element %zu is not a string", i), -1;
        }
        total += json_string_length(v) + 1;
    }
    char *buf = malloc(total + 1), *p = buf;
    if (!buf) {
        json_decref(root);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    free(out->buf);
    out->buf = buf;
    json_array_foreach(root, i, v) {
        size_t l = json_string_length(v);
        memcpy(p, json_string_value(v), l);
        p[l] = '\0';
        if (push(out, &cap, p, l) != 0) {
            json_decref(root);
            return snprintf(err, errlen, "out of memory"), -1;
        }
        p += l + 1;
    }
    json_decref(root);
    return 0;
}

/* Split a line into at most maxf tab-separated fields (in place). */
static size_t split_fields(char *line, char **f, size_t maxf)
{
    size_t n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < maxf; p++) {
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    return n;
}

static int split_tsv(tk_sentences *out, size_t len, const source_rule *r, char *err, size_t errlen)
{
    enum { MAXF = 64 };
    int idx[3] = {-1, -1, -1};
    bool header = r->columns[0] != NULL;
    if (!header)
        memcpy(idx, r->fields, sizeof idx);
    size_t cap = 0, lineno = 0;
    char *p = out->buf, *end = out->buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        *le = '\0';
        if (le > p && le[-1] == '\r')
            *--le = '\0';
        char *line = p;
        p = nl ? nl + 1 : end;
        lineno++;
        if (le == line)
            continue;
        char *f[MAXF];
        size_t nf = split_fields(line, f, MAXF);
        if (header && lineno == 1) {
            for (int c = 0; r->columns[c]; c++) {
                for (size_t k = 0; k < nf; k++)
                    if (strcmp(f[k], r->columns[c]) == 0)
                        idx[c] = (int)k;
                if (idx[c] < 0)
                    return snprintf(err, errlen, "no column \"%s\" in the header", r->columns[c]), -1;
            }
            continue;
        }
        for (int c = 0; c < 3 && idx[c] >= 0; c++) {
            if ((size_t)idx[c] >= nf)
                return snprintf(err, errlen, "line %zu has only %zu fields", lineno, nf), -1;
            if (push(out, &cap, f[idx[c]], strlen(f[idx[c]])) != 0)
                return snprintf(err, errlen, "out of memory"), -1;
        }
    }
    return 0;
}

int tk_sentences_load(const char *data_dir, const char *rel, tk_sentences *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data_dir, rel);
    size_t len;
    out->buf = tk_read_file(path, &len);
    if (!out->buf)
        return snprintf(err, errlen, "%s: cannot read", path), -1;
    int rc = -1;
    size_t rl = strlen(rel);
    if (rl > 4 && strcmp(rel + rl - 4, ".inp") == 0) {
        rc = split_ggml(out, len, err, errlen);
    } else if (rl > 5 && strcmp(rel + rl - 5, ".json") == 0) {
        rc = split_json(out, len, err, errlen);
    } else {
        for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++) {
            if (strncmp(rel, rules[k].dir, strlen(rules[k].dir)) == 0) {
                rc = split_tsv(out, len, &rules[k], err, errlen);
                break;
            }
            if (k + 1 == sizeof rules / sizeof rules[0])
                snprintf(err, errlen, "no extraction rule");
        }
    }
    if (rc != 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", err);
        snprintf(err, errlen, "%s: %s", path, msg);
        tk_sentences_free(out);
    }
    return rc;
}

void tk_sentences_free(tk_sentences *s)
{
    free(s->buf);
    free(s->s);
    free(s->len);
    memset(s, 0, sizeof *s);
}

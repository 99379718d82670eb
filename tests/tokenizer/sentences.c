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

/* The byte-level BPE (Qwen3) golden's sources (test_qwen3_parity.c). */
const char *const tk_qwen3_sources[] = {
    "stsb-glue/train.tsv",
    "stsb-glue/dev.tsv",
    "stsb-glue/test.tsv",
    "scifact/beir-format/queries.jsonl",
    "scifact/beir-format/corpus.jsonl",
    "sst2-glue/train.tsv",
    "squint:edge_strings.json",
    "squint:qwen3_edge_strings.json",
    NULL,
};

/* The XLM-RoBERTa (HF Unigram) golden's sources (test_xlmr_parity.c). */
const char *const tk_xlmr_sources[] = {
    "stsb-glue/train.tsv",
    "stsb-glue/dev.tsv",
    "stsb-glue/test.tsv",
    "scifact/beir-format/queries.jsonl",
    "scifact/beir-format/corpus.jsonl",
    "sst2-glue/dev.tsv",
    "squint:edge_strings.json",
    "squint:xlmr_edge_strings.json",
    NULL,
};

/* The ModernBERT-shaped fixture's golden sources (test_modernbert_parity.c). */
const char *const tk_modernbert_sources[] = {
    "stsb-glue/train.tsv",
    "stsb-glue/dev.tsv",
    "stsb-glue/test.tsv",
    "scifact/beir-format/queries.jsonl",
    "scifact/beir-format/corpus.jsonl",
    "sst2-glue/dev.tsv",
    "squint:edge_strings.json",
    "squint:modernbert_edge_strings.json",
    NULL,
};

/* JSON Lines sources: the string members taken from each line's object, in
 * order, from the first max_lines objects (0: all). SciFact's corpus is cut
 * to its first 1000 abstracts to keep the golden file small. */
typedef struct jsonl_rule {
    const char *path;
    const char *keys[3];
    size_t max_lines;
} jsonl_rule;

static const jsonl_rule jsonl_rules[] = {
    {"scifact/beir-format/corpus.jsonl", {"title", "text", NULL}, 1000},
    {"scifact/beir-format/queries.jsonl", {"text", NULL}, 0},
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

/* One JSON object per non-empty line; the rule's string members of each, in
 * key order (a missing or non-string member is an error). Copied into a
 * fresh buffer (they may hold escapes and NULs). */
static int split_jsonl(tk_sentences *out, size_t len, const jsonl_rule *r, char *err,
                       size_t errlen)
{
    size_t nlines = 0, cap_lines = 0, total = 0;
    json_t **objs = NULL;
    int rc = -1;
    char *p = out->buf, *end = out->buf + len;
    while (p < end && (r->max_lines == 0 || nlines < r->max_lines)) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        size_t ll = (size_t)(le - p);
        if (ll > 0 && p[ll - 1] == '\r')
            ll--;
        if (ll > 0) {
            json_error_t je;
            json_t *o = json_loadb(p, ll, JSON_ALLOW_NUL, &je);
            if (!json_is_object(o)) {
                json_decref(o);
                snprintf(err, errlen, "line %zu is not a JSON object", nlines + 1);
                goto out;
            }
            if (nlines == cap_lines) {
                cap_lines = cap_lines ? cap_lines * 2 : 1024;
                json_t **no = realloc(objs, cap_lines * sizeof *no);
                if (!no) {
                    json_decref(o);
                    snprintf(err, errlen, "out of memory");
                    goto out;
                }
                objs = no;
            }
            objs[nlines++] = o;
            for (int k = 0; r->keys[k]; k++) {
                json_t *v = json_object_get(o, r->keys[k]);
                if (!json_is_string(v)) {
                    snprintf(err, errlen, "line %zu has no string \"%s\"", nlines, r->keys[k]);
                    goto out;
                }
                total += json_string_length(v) + 1;
            }
        }
        p = nl ? nl + 1 : end;
    }
    char *buf = malloc(total + 1), *w = buf;
    size_t cap = 0;
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    free(out->buf);
    out->buf = buf;
    for (size_t i = 0; i < nlines; i++)
        for (int k = 0; r->keys[k]; k++) {
            json_t *v = json_object_get(objs[i], r->keys[k]);
            size_t l = json_string_length(v);
            memcpy(w, json_string_value(v), l);
            w[l] = '\0';
            if (push(out, &cap, w, l) != 0) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            w += l + 1;
        }
    rc = 0;
out:
    for (size_t i = 0; i < nlines; i++)
        json_decref(objs[i]);
    free(objs);
    return rc;
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
    } else if (rl > 6 && strcmp(rel + rl - 6, ".jsonl") == 0) {
        snprintf(err, errlen, "no extraction rule");
        for (size_t k = 0; k < sizeof jsonl_rules / sizeof jsonl_rules[0]; k++)
            if (strcmp(rel, jsonl_rules[k].path) == 0)
                rc = split_jsonl(out, len, &jsonl_rules[k], err, errlen);
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

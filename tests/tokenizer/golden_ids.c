/* Golden id files of the tokenizer parity tests (golden_ids.h). */
#include "golden_ids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

char *tk_golden_load(const char *path)
{
    size_t zlen;
    char *z = tk_read_file(path, &zlen);
    if (!z) {
        printf("ERROR %s: cannot read\n", path);
        return NULL;
    }
    unsigned long long size = ZSTD_getFrameContentSize(z, zlen);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1ull << 30)) {
        printf("ERROR %s: not a zstd frame with a known size\n", path);
        free(z);
        return NULL;
    }
    char *buf = malloc(size + 1);
    size_t got = buf ? ZSTD_decompress(buf, size, z, zlen) : 0;
    free(z);
    if (!buf || ZSTD_isError(got) || got != size) {
        printf("ERROR %s: cannot decompress\n", path);
        free(buf);
        return NULL;
    }
    buf[size] = '\0';
    return buf;
}

/* Space-separated ids of one line [p, end) into a fresh array. -1 if malformed. */
int64_t tk_golden_parse_ids(const char *p, const char *end, int32_t **out)
{
    int64_t n = 0, cap = 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids)
        return -1;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        char *q;
        long v = strtol(p, &q, 10);
        if (q == p || q > end || v < 0 || v > INT32_MAX) {
            free(ids);
            return -1;
        }
        if (n == cap) {
            int32_t *ni = realloc(ids, (cap *= 2) * sizeof *ids);
            if (!ni) {
                free(ids);
                return -1;
            }
            ids = ni;
        }
        ids[n++] = (int32_t)v;
        p = q;
    }
    *out = ids;
    return n;
}

/* Golden file: '#' lines, then per source "@ <rel> <count>" and <count> lines. */
int tk_golden_parse(char *text, const char *data, const char *source_dir, gold **out, size_t *nout)
{
    size_t cap = 8, n = 0;
    gold *g = calloc(cap, sizeof *g);
    char *p = text;
    while (g && *p) {
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        if (*p == '#') {
            p = nl + 1;
            continue;
        }
        char rel[1024];
        size_t count;
        if (sscanf(p, "@ %1023s %zu", rel, &count) != 2) {
            printf("ERROR golden file: expected a \"@ source count\" line\n");
            goto fail;
        }
        p = nl + 1;
        if (n == cap) {
            gold *ng = realloc(g, (cap *= 2) * sizeof *g);
            if (!ng)
                goto fail;
            g = ng;
        }
        gold *e = &g[n];
        memset(e, 0, sizeof *e);
        char err[1024];
        int rc = strncmp(rel, "squint:", 7) == 0
                     ? tk_sentences_load(source_dir, rel + 7, &e->s, err, sizeof err)
                     : tk_sentences_load(data, rel, &e->s, err, sizeof err);
        if (rc != 0) {
            printf("ERROR %s\n", err);
            goto fail;
        }
        n++;
        e->rel = strdup(rel);
        if (e->s.n != count) {
            printf("ERROR %s: %zu sentences extracted, the golden file has %zu\n", rel, e->s.n, count);
            goto fail;
        }
        e->ids = calloc(count ? count : 1, sizeof *e->ids);
        e->n = calloc(count ? count : 1, sizeof *e->n);
        if (!e->rel || !e->ids || !e->n)
            goto fail;
        for (size_t k = 0; k < count; k++) {
            nl = strchr(p, '\n');
            if (!nl || (e->n[k] = tk_golden_parse_ids(p, nl, &e->ids[k])) < 0) {
                printf("ERROR golden file: malformed ids for %s sentence %zu\n", rel, k + 1);
                goto fail;
            }
            p = nl + 1;
        }
    }
    *out = g;
    *nout = n;
    return g ? 0 : -1;
fail:
    tk_golden_free(g, n);
    return -1;
}

void tk_golden_free(gold *g, size_t n)
{
    for (size_t i = 0; g && i < n; i++) {
        for (size_t k = 0; g[i].ids && k < g[i].s.n; k++)
            free(g[i].ids[k]);
        free(g[i].ids);
        free(g[i].n);
        free((char *)g[i].rel);
        tk_sentences_free(&g[i].s);
    }
    free(g);
}

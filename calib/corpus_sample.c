/* Deterministic reservoir sampling over a corpus. The generator and the
 * bounded draw use integer arithmetic only, so results do not depend on the
 * platform's floating point. */
#include "corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seeded_rng.h"

static char *dup_text(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static int grow(sq_corpus_samples *s, size_t *cap)
{
    size_t nc = *cap ? *cap * 2 : 256;
    char **t = realloc(s->text, nc * sizeof *t);
    if (!t)
        return -1;
    s->text = t;
    size_t *l = realloc(s->len, nc * sizeof *l);
    if (!l)
        return -1;
    s->len = l;
    uint64_t *ix = realloc(s->index, nc * sizeof *ix);
    if (!ix)
        return -1;
    s->index = ix;
    *cap = nc;
    return 0;
}

/* Restore corpus order: sort the kept slots by their corpus index. */
typedef struct kept {
    uint64_t index;
    size_t len;
    char *text;
} kept;

static int cmp_kept(const void *a, const void *b)
{
    uint64_t x = ((const kept *)a)->index, y = ((const kept *)b)->index;
    return (x > y) - (x < y);
}

static int sort_by_index(sq_corpus_samples *s, sq_err *err)
{
    kept *k = malloc((s->count ? s->count : 1) * sizeof *k);
    if (!k)
        return sq_err_set(err, "out of memory");
    for (size_t i = 0; i < s->count; i++)
        k[i] = (kept){s->index[i], s->len[i], s->text[i]};
    qsort(k, s->count, sizeof *k, cmp_kept);
    for (size_t i = 0; i < s->count; i++) {
        s->index[i] = k[i].index;
        s->len[i] = k[i].len;
        s->text[i] = k[i].text;
    }
    free(k);
    return 0;
}

static int copy_files(sq_corpus_samples *out, const sq_corpus *c, sq_err *err)
{
    size_t n = sq_corpus_n_files(c);
    const sq_corpus_file_info *f = sq_corpus_files(c);
    out->files = calloc(n, sizeof *out->files);
    if (!out->files)
        return sq_err_set(err, "out of memory");
    out->n_files = n;
    for (size_t i = 0; i < n; i++) {
        out->files[i] = f[i];
        if (!(out->files[i].path = strdup(f[i].path)))
            return sq_err_set(err, "out of memory");
    }
    return 0;
}

static int no_samples(const char *const *paths, size_t n_paths, sq_err *err)
{
    char list[900] = "";
    size_t used = 0;
    for (size_t i = 0; i < n_paths && used < sizeof list - 1; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", paths[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return sq_err_set(err, "no samples in corpus %s", list);
}

int sq_corpus_sample(const char *const *paths, size_t n_paths, const sq_corpus_opts *o,
                     size_t n_samples, uint64_t seed, sq_corpus_samples *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    sq_corpus *c = sq_corpus_open_many(paths, n_paths, o, err);
    if (!c)
        return -1;
    uint64_t state = seed;
    size_t cap = 0;
    const char *text;
    size_t len;
    int r;
    while ((r = sq_corpus_next(c, &text, &len, err)) == 1) {
        uint64_t i = out->n_seen++;
        size_t slot;
        if (n_samples == 0 || out->count < n_samples) {
            if (out->count == cap && grow(out, &cap) != 0) {
                r = sq_err_set(err, "%s: out of memory", sq_corpus_where(c));
                break;
            }
            slot = out->count++;
        } else {
            uint64_t j = sq_rand_below(&state, i + 1);
            if (j >= n_samples)
                continue;
            slot = (size_t)j;
            free(out->text[slot]);
        }
        out->text[slot] = dup_text(text, len);
        out->len[slot] = len;
        out->index[slot] = i;
        if (!out->text[slot]) {
            r = sq_err_set(err, "%s: out of memory", sq_corpus_where(c));
            break;
        }
    }
    if (r == 0 && out->n_seen == 0)
        r = no_samples(paths, n_paths, err);
    if (r == 0)
        r = copy_files(out, c, err);
    if (r == 0)
        r = sort_by_index(out, err);
    sq_corpus_close(c);
    if (r != 0) {
        sq_corpus_samples_free(out);
        return -1;
    }
    return 0;
}

void sq_corpus_samples_free(sq_corpus_samples *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->text[i]);
    for (size_t i = 0; i < s->n_files; i++)
        free(s->files[i].path);
    free(s->text);
    free(s->len);
    free(s->index);
    free(s->files);
    memset(s, 0, sizeof *s);
}

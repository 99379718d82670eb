/* Small helpers shared by the corpus readers. */
#include "corpus_reader.h"

#include <stdio.h>
#include <stdlib.h>

int sq_corpus_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f')
            return 0;
    }
    return 1;
}

const char *sq_corpus_fmt_where(char *buf, size_t size, const char *name, unsigned long long line)
{
    snprintf(buf, size, "%s:%llu", name, line);
    return buf;
}

static int hs_insert(unsigned long long *slot, size_t cap, unsigned long long h)
{
    size_t mask = cap - 1;
    for (size_t i = (size_t)(h ^ (h >> 29)) & mask;; i = (i + 1) & mask) {
        if (slot[i] == h)
            return 0;
        if (slot[i] == 0) {
            slot[i] = h;
            return 1;
        }
    }
}

int sq_hash_set_add(sq_hash_set *s, unsigned long long h)
{
    if (h == 0)
        h = 1;
    if ((s->count + 1) * 2 > s->cap) { /* keep the load under one half */
        size_t ncap = s->cap ? s->cap * 2 : 256;
        unsigned long long *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                hs_insert(ns, ncap, s->slot[i]);
        free(s->slot);
        s->slot = ns;
        s->cap = ncap;
    }
    int added = hs_insert(s->slot, s->cap, h);
    s->count += (size_t)added;
    return added;
}

void sq_hash_set_free(sq_hash_set *s)
{
    free(s->slot);
    s->slot = NULL;
    s->cap = s->count = 0;
}

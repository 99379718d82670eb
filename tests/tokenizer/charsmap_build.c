/* A small precompiled-charsmap builder (charsmap_build.h). */
#include "charsmap_build.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UNITS 65536
#define MAX_NODES 4096

typedef struct {
    int child[256]; /* node index + 1, 0 none */
    int64_t value;  /* offset of the replacement, -1 none */
} tnode;

uint8_t *tk_charsmap_build(const char *const *keys, const char *const *repl, int n, size_t *len)
{
    tnode *nodes = calloc(MAX_NODES, sizeof *nodes);
    uint32_t *units = calloc(MAX_UNITS, sizeof *units);
    bool *used = calloc(MAX_UNITS, sizeof *used);
    /* bases are unique: then a label names its parent (q ^ label), as darts requires */
    bool *base_used = calloc(MAX_UNITS, sizeof *base_used);
    int *qnode = malloc(MAX_NODES * sizeof *qnode), *qpos = malloc(MAX_NODES * sizeof *qpos);
    size_t slen = 0;
    for (int i = 0; i < n; i++)
        slen += strlen(repl[i]) + 1;
    char *strings = malloc(slen + 1);
    uint8_t *blob = NULL;
    int nn = 1;
    if (!nodes || !units || !used || !base_used || !qnode || !qpos || !strings)
        goto out;
    nodes[0].value = -1;
    size_t so = 0;
    for (int i = 0; i < n; i++) {
        int cur = 0;
        for (const unsigned char *k = (const unsigned char *)keys[i]; *k; k++) {
            if (!nodes[cur].child[*k]) {
                if (nn == MAX_NODES)
                    goto out;
                nodes[nn].value = -1;
                nodes[cur].child[*k] = ++nn;
            }
            cur = nodes[cur].child[*k] - 1;
        }
        nodes[cur].value = (int64_t)so;
        size_t l = strlen(repl[i]);
        memcpy(strings + so, repl[i], l + 1);
        so += l + 1;
    }
    /* breadth first: each node gets a base whose child slots are free */
    int qh = 0, qt = 0, top = 1;
    used[0] = true;
    qnode[qt] = 0, qpos[qt++] = 0;
    while (qh < qt) {
        int nd = qnode[qh], p = qpos[qh++];
        uint32_t b;
        for (b = 1; b < MAX_UNITS; b++) {
            bool ok = !base_used[b] && !(nodes[nd].value >= 0 && used[b]);
            for (int c = 1; ok && c < 256; c++)
                if (nodes[nd].child[c] && ((b ^ (uint32_t)c) >= MAX_UNITS || used[b ^ (uint32_t)c]))
                    ok = false;
            if (ok)
                break;
        }
        if (b >= MAX_UNITS)
            goto out;
        base_used[b] = true;
        units[p] |= ((uint32_t)p ^ b) << 10;
        if (nodes[nd].value >= 0) {
            units[p] |= 1u << 8;
            used[b] = true;
            units[b] = (uint32_t)nodes[nd].value | 0x80000000u;
            if ((int)b + 1 > top)
                top = (int)b + 1;
        }
        for (int c = 1; c < 256; c++) {
            if (!nodes[nd].child[c])
                continue;
            uint32_t q = b ^ (uint32_t)c;
            used[q] = true;
            units[q] |= (uint32_t)c;
            if ((int)q + 1 > top)
                top = (int)q + 1;
            qnode[qt] = nodes[nd].child[c] - 1, qpos[qt++] = (int)q;
        }
    }
    *len = 4 + 4 * (size_t)top + so;
    blob = malloc(*len);
    if (!blob)
        goto out;
    uint32_t ts = 4 * (uint32_t)top;
    for (int k = 0; k < 4; k++)
        blob[k] = (uint8_t)(ts >> (8 * k));
    for (int i = 0; i < top; i++)
        for (int k = 0; k < 4; k++)
            blob[4 + 4 * i + k] = (uint8_t)(units[i] >> (8 * k));
    memcpy(blob + 4 + ts, strings, so);
out:
    free(nodes);
    free(units);
    free(used);
    free(base_used);
    free(qnode);
    free(qpos);
    free(strings);
    return blob;
}

char *tk_base64(const uint8_t *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc((n + 2) / 3 * 4 + 1);
    size_t w = 0;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        o[w++] = a[v >> 18 & 63];
        o[w++] = a[v >> 12 & 63];
        o[w++] = i + 1 < n ? a[v >> 6 & 63] : '=';
        o[w++] = i + 2 < n ? a[v & 63] : '=';
    }
    o[w] = '\0';
    return o;
}

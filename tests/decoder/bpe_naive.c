#include "bpe_naive.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t bpe_naive_encode(const sq_bpe *t, const char *text, size_t len, int32_t *ids)
{
    size_t n = len ? len + 1 : 0;
    char *b = malloc(n + 1);
    size_t *st = malloc((n + 1) * sizeof *st), *ln = malloc((n + 1) * sizeof *ln);
    bool *mg = malloc(n + 1);
    int64_t k = 0;
    if (len) {
        b[0] = ' ';
        memcpy(b + 1, text, len);
    }
    for (size_t i = 0; i < n;) {
        size_t g = 1;
        while (g < 4 && i + g < n && ((uint8_t)b[i + g] & 0xC0) == 0x80)
            g++;
        int32_t id = sq_bpe_lookup(t, b + i, g);
        if (id >= 0) {
            st[k] = i, ln[k] = g, mg[k] = true, ids[k++] = id;
        } else {
            for (size_t j = 0; j < g; j++) {
                char piece[8];
                snprintf(piece, sizeof piece, "<0x%02X>", (uint8_t)b[i + j]);
                int32_t bid = sq_bpe_lookup(t, piece, 6);
                st[k] = i + j, ln[k] = 1, mg[k] = false, ids[k++] = bid >= 0 ? bid : 0;
            }
        }
        i += g;
    }
    for (;;) {
        float best = -1e10f;
        int64_t at = -1;
        int32_t best_id = -1;
        for (int64_t i = 0; i + 1 < k; i++) {
            if (!mg[i] || !mg[i + 1])
                continue;
            int32_t id = sq_bpe_lookup(t, b + st[i], ln[i] + ln[i + 1]);
            if (id >= 0 && sq_bpe_score(t, id) > best) {
                best = sq_bpe_score(t, id);
                at = i;
                best_id = id;
            }
        }
        if (at < 0)
            break;
        ids[at] = best_id;
        ln[at] += ln[at + 1];
        memmove(ids + at + 1, ids + at + 2, (size_t)(k - at - 2) * sizeof *ids);
        memmove(st + at + 1, st + at + 2, (size_t)(k - at - 2) * sizeof *st);
        memmove(ln + at + 1, ln + at + 2, (size_t)(k - at - 2) * sizeof *ln);
        memmove(mg + at + 1, mg + at + 2, (size_t)(k - at - 2));
        k--;
    }
    memmove(ids + 1, ids, (size_t)k * sizeof *ids);
    ids[0] = SQ_BPE_BOS;
    free(b);
    free(st);
    free(ln);
    free(mg);
    return k + 1;
}

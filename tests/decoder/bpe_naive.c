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

static int32_t naive_rank(const sq_bpe *t, int32_t n_merges, int32_t a, int32_t b)
{
    for (int32_t r = 0; r < n_merges; r++) {
        int32_t x, y;
        sq_bpe_merge_pair(t, r, &x, &y);
        if (x == a && y == b)
            return r;
    }
    return -1;
}

int64_t bpe_naive_encode_hf(const sq_bpe *t, const char *text, size_t len, int32_t *ids)
{
    sq_bpe_hf h;
    sq_bpe_hf_settings(t, &h);
    static const char meta[] = "\xe2\x96\x81";
    char *b = malloc(3 * len + 4);
    size_t n = 0;
    if (len && h.add_prefix)
        memcpy(b, meta, 3), n = 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ')
            memcpy(b + n, meta, 3), n += 3;
        else
            b[n++] = text[i];
    }
    int64_t k = 0;
    bool *ws = malloc(n + 1);
    size_t *ln = malloc((n + 1) * sizeof *ln);
    int32_t *v = malloc((n + 1) * sizeof *v);
    for (size_t i = 0; i < n;) {
        size_t g = 1;
        while (g < 4 && i + g < n && ((uint8_t)b[i + g] & 0xC0) == 0x80)
            g++;
        bool w = h.split && g == 3 && memcmp(b + i, meta, 3) == 0;
        int32_t id = sq_bpe_lookup(t, b + i, g);
        int32_t bytes[4];
        bool all = h.byte_fallback;
        for (size_t j = 0; all && j < g; j++) {
            char piece[8];
            snprintf(piece, sizeof piece, "<0x%02X>", (uint8_t)b[i + j]);
            all = (bytes[j] = sq_bpe_lookup(t, piece, 6)) >= 0;
        }
        if (id >= 0) {
            ws[k] = w, ln[k] = g, v[k++] = id;
        } else if (all) {
            for (size_t j = 0; j < g; j++)
                ws[k] = w && j == 0, ln[k] = 1, v[k++] = bytes[j];
        } else if (h.unk >= 0) {
            if (h.fuse_unk && k > 0 && v[k - 1] == h.unk && !w)
                ln[k - 1] += g;
            else
                ws[k] = w, ln[k] = g, v[k++] = h.unk;
        }
        i += g;
    }
    for (;;) {
        int32_t best = -1;
        int64_t at = -1;
        for (int64_t i = 0; i + 1 < k; i++) {
            if (ws[i + 1])
                continue;
            int32_t r = naive_rank(t, h.n_merges, v[i], v[i + 1]);
            if (r >= 0 && (best < 0 || r < best))
                best = r, at = i;
        }
        if (at < 0)
            break;
        size_t la, lb;
        const char *pa = sq_bpe_token(t, v[at], &la), *pb = sq_bpe_token(t, v[at + 1], &lb);
        char *cat = malloc(la + lb);
        memcpy(cat, pa, la);
        memcpy(cat + la, pb, lb);
        v[at] = sq_bpe_lookup(t, cat, la + lb);
        free(cat);
        ln[at] += ln[at + 1];
        memmove(v + at + 1, v + at + 2, (size_t)(k - at - 2) * sizeof *v);
        memmove(ln + at + 1, ln + at + 2, (size_t)(k - at - 2) * sizeof *ln);
        memmove(ws + at + 1, ws + at + 2, (size_t)(k - at - 2));
        k--;
    }
    int64_t c = 0;
    if (h.bos >= 0)
        ids[c++] = h.bos;
    memcpy(ids + c, v, (size_t)k * sizeof *v);
    free(b);
    free(ws);
    free(ln);
    free(v);
    return c + k;
}

/* Stop strings and held-back bytes of a completion's text (stop_text.h). */
#include "stop_text.h"

#include <stdlib.h>
#include <string.h>

#include "utf8_text.h"

void sq_stop_text_init(sq_stop_text *t, const char *const *stops, const size_t *lens, int n)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < n && i < SQ_STOP_MAX; i++)
        if (lens[i] > 0) {
            t->stops[t->n_stops] = stops[i];
            t->stop_lens[t->n_stops++] = lens[i];
        }
}

/* The first occurrence of s[0 .. sl) in h[from .. n), or n when none. */
static size_t find(const char *h, size_t from, size_t n, const char *s, size_t sl)
{
    for (size_t i = from; i + sl <= n; i++) {
        const char *c = memchr(h + i, s[0], n - sl + 1 - i);
        if (!c)
            break;
        i = (size_t)(c - h);
        if (!memcmp(c, s, sl))
            return i;
    }
    return n;
}

int sq_stop_text_feed(sq_stop_text *t, const char *piece, size_t n, const char **out,
                      size_t *out_len)
{
    *out = t->buf ? t->buf + t->emitted : "";
    *out_len = 0;
    if (t->stopped)
        return 1;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b)
            return -1;
        t->buf = b;
        t->cap = cap;
    }
    const size_t old = t->len;
    if (n)
        memcpy(t->buf + t->len, piece, n);
    t->len += n;
    t->buf[t->len] = '\0';
    *out = t->buf + t->emitted;
    /* A new occurrence ends in the new piece; none starts before `emitted`
     * (those bytes were sent because they could not begin one). */
    size_t at = t->len;
    for (int i = 0; i < t->n_stops; i++) {
        const size_t sl = t->stop_lens[i];
        size_t from = old >= sl - 1 ? old - (sl - 1) : 0;
        if (from < t->emitted)
            from = t->emitted;
        size_t p = find(t->buf, from, t->len, t->stops[i], sl);
        if (p < at)
            at = p;
    }
    if (at < t->len) {
        *out_len = at - t->emitted;
        t->emitted = t->len = at;
        t->buf[at] = '\0';
        t->stopped = true;
        return 1;
    }
    /* Hold back the longest end that begins a stop string ... */
    size_t hold = 0;
    const size_t open = t->len - t->emitted;
    for (int i = 0; i < t->n_stops; i++)
        for (size_t k = t->stop_lens[i] - 1 < open ? t->stop_lens[i] - 1 : open; k > hold; k--)
            if (!memcmp(t->buf + t->len - k, t->stops[i], k)) {
                hold = k;
                break;
            }
    /* ... and a character cut short. */
    size_t safe = t->emitted + sq_utf8_whole(t->buf + t->emitted, open - hold);
    *out_len = safe - t->emitted;
    t->emitted = safe;
    return 0;
}

void sq_stop_text_flush(sq_stop_text *t, const char **out, size_t *out_len)
{
    *out = t->buf ? t->buf + t->emitted : "";
    *out_len = t->len - t->emitted;
    t->emitted = t->len;
}

void sq_stop_text_free(sq_stop_text *t)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
}

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

static int reserve(sq_stop_text *t, size_t more)
{
    if (t->len + more + 1 <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b)
        return -1;
    t->buf = b;
    t->cap = cap;
    return 0;
}

/* Append bytes p[0 .. n) as UTF-8: valid sequences as they are, each
 * maximal invalid subpart as U+FFFD; a sequence cut at the end waits in
 * pend unless final. Grows the buffer by at most 3 bytes per input byte. */
static int append_utf8(sq_stop_text *t, const unsigned char *p, size_t n, bool final)
{
    if (reserve(t, 3 * n) != 0)
        return -1;
    size_t i = 0;
    while (i < n) {
        bool bad = false, cut = false;
        size_t k = sq_utf8_seq(p + i, n - i, &bad, &cut);
        if (cut && !final) { /* the rest of the character is in the next piece */
            memcpy(t->pend, p + i, n - i);
            t->npend = n - i;
            break;
        }
        if (bad) {
            memcpy(t->buf + t->len, "\xef\xbf\xbd", 3);
            t->len += 3;
        } else {
            memcpy(t->buf + t->len, p + i, k);
            t->len += k;
        }
        i += k;
    }
    t->buf[t->len] = '\0';
    return 0;
}

/* After bytes were added from `old` on: the stop strings, and what may go
 * out now. 1 when a stop string is complete, else 0. */
static int settle(sq_stop_text *t, size_t old, bool final, const char **out, size_t *out_len)
{
    *out = t->buf + t->emitted;
    /* A new occurrence ends in the new bytes; none starts before `emitted`
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
    /* Hold back the longest end that begins a stop string (nothing at the
     * end: no more bytes can complete one). */
    size_t hold = 0;
    const size_t open = t->len - t->emitted;
    for (int i = 0; i < t->n_stops && !final; i++)
        for (size_t k = t->stop_lens[i] - 1 < open ? t->stop_lens[i] - 1 : open; k > hold; k--)
            if (!memcmp(t->buf + t->len - k, t->stops[i], k)) {
                hold = k;
                break;
            }
    *out_len = open - hold;
    t->emitted += open - hold;
    return 0;
}

int sq_stop_text_feed(sq_stop_text *t, const char *piece, size_t n, const char **out,
                      size_t *out_len)
{
    *out = t->buf ? t->buf + t->emitted : "";
    *out_len = 0;
    if (t->stopped)
        return 1;
    /* the held start of a character, then the piece */
    unsigned char stack[256], *in = stack;
    const size_t total = t->npend + n;
    if (total > sizeof stack && !(in = malloc(total)))
        return -1;
    memcpy(in, t->pend, t->npend);
    if (n)
        memcpy(in + t->npend, piece, n);
    t->npend = 0;
    const size_t old = t->len;
    int rc = append_utf8(t, in, total, false);
    if (in != stack)
        free(in);
    if (rc != 0)
        return -1;
    return settle(t, old, false, out, out_len);
}

int sq_stop_text_flush(sq_stop_text *t, const char **out, size_t *out_len)
{
    *out = t->buf ? t->buf + t->emitted : "";
    *out_len = 0;
    if (t->stopped)
        return 1;
    const size_t old = t->len;
    const unsigned char pend[4] = {t->pend[0], t->pend[1], t->pend[2], t->pend[3]};
    const size_t np = t->npend;
    t->npend = 0;
    if (append_utf8(t, pend, np, true) != 0)
        return -1;
    if (!t->buf) { /* nothing was ever generated */
        *out = "";
        return 0;
    }
    return settle(t, old, true, out, out_len);
}

void sq_stop_text_free(sq_stop_text *t)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
}

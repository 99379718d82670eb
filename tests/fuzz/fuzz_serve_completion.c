/* Fuzz squint serve's completion requests (serve/completion_api.h) and the
 * text path of a streamed completion (serve/stop_text.h, utf8_text.h):
 *   - an accepted body is in range (max_tokens within the context,
 *     temperature, top_p, 1..4 stop strings of 1..256 bytes, the prompt its
 *     stated length) and its response body is valid JSON;
 *   - the input's raw bytes, cut into pieces as tokens would be, go through
 *     the stop strings (the request's, else a fixed set): invalid UTF-8
 *     becomes U+FFFD before the stop strings look (so one may hold U+FFFD);
 *     what comes out joined is the repaired text before the first stop
 *     string completed (a naive search over the repaired prefixes at the
 *     piece ends decides), every piece sent is valid UTF-8, every chunk is
 *     valid JSON, and the chunks' texts joined are the text of one body
 *     built from the joined bytes. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "completion_api.h"
#include "stop_text.h"
#include "utf8_text.h"

enum { CONTEXT = 512 };

/* The "text" of choices[0] in a body or chunk (malloc'd, *n bytes), NULL
 * when it does not parse. */
static char *choice_text(const char *s, size_t len, size_t *n)
{
    if (len >= 6 && !memcmp(s, "data: ", 6))
        s += 6, len -= 6;
    json_error_t je;
    json_t *j = json_loadb(s, len, JSON_ALLOW_NUL, &je);
    json_t *t = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "text");
    char *out = NULL;
    if (json_is_string(t)) {
        *n = json_string_length(t);
        out = malloc(*n + 1);
        if (out)
            memcpy(out, json_string_value(t), *n + 1);
    }
    json_decref(j);
    return out;
}

/* The repair written out plainly: p[0 .. n) with each maximal invalid
 * subpart as U+FFFD; a sequence cut at the end is left out unless final.
 * out holds 3 n bytes. */
static size_t repair(const char *p, size_t n, bool final, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        bool bad = false, cut = false;
        size_t k = sq_utf8_seq((const unsigned char *)p + i, n - i, &bad, &cut);
        if (cut && !final)
            break;
        if (bad)
            memcpy(out + o, "\xef\xbf\xbd", 3), o += 3;
        else
            memcpy(out + o, p + i, k), o += k;
        i += k;
    }
    return o;
}

/* The naive rule: the first repaired prefix, at a piece end (the last one
 * final), holding a stop string; the text up to that string's earliest
 * start there. The repaired text before the cut goes to rep. */
static size_t naive_cut(const char *p, const size_t *ends, int pieces, const char *const *stops,
                        const size_t *lens, int ns, bool *hit, char *rep)
{
    *hit = false;
    size_t m = 0;
    for (int k = 0; k <= pieces; k++) {
        const bool final = k == pieces;
        m = repair(p, pieces ? ends[final ? pieces - 1 : k] : 0, final, rep);
        size_t best = m;
        for (int i = 0; i < ns; i++)
            for (size_t a = 0; a + lens[i] <= m; a++)
                if (!memcmp(rep + a, stops[i], lens[i]) && a < best)
                    best = a;
        if (best < m) {
            *hit = true;
            return best;
        }
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data;
    sq_cmpl_request req;
    char msg[256];
    int st = sq_api_parse_completion(d, size, CONTEXT, &req, msg, sizeof msg);
    static const sq_cmpl_meta meta = {.id = 7, .created = 1700000000, .model = "fuzz\"\\"};
    if (st == 0) {
        if (req.max_tokens < 0 || req.max_tokens > CONTEXT || !(req.temperature >= 0) ||
            req.temperature > SQ_CMPL_MAX_TEMPERATURE || !(req.top_p > 0) || req.top_p > 1 ||
            req.n_stops < 0 || req.n_stops > SQ_STOP_MAX || !req.prompt ||
            strlen(req.prompt) != req.prompt_len)
            abort();
        for (int i = 0; i < req.n_stops; i++)
            if (req.stop_lens[i] < 1 || req.stop_lens[i] > SQ_CMPL_STOP_BYTES ||
                strlen(req.stops[i]) != req.stop_lens[i])
                abort();
        sq_strbuf sb = {0};
        sq_api_completion_response(&meta, req.prompt, req.prompt_len, "stop", 3, 4, &sb);
        size_t n;
        char *t = sb.failed ? NULL : choice_text(sb.s, sb.len, &n);
        if (!sb.failed && (!t || n != req.prompt_len || memcmp(t, req.prompt, n)))
            abort(); /* valid UTF-8 in, the same text out */
        free(t);
        sq_sb_free(&sb);
    } else if (st != 400 || !msg[0]) {
        abort();
    }

    /* the raw bytes as generated text, pieces of 1..8 bytes from the bytes */
    static const char *const fixed[] = {"ab", "\xc3\xa9", "}\n", "aaa"};
    static const size_t fixed_lens[] = {2, 2, 2, 3};
    const char *const *stops = st == 0 ? req.stops : fixed;
    const size_t *lens = st == 0 ? req.stop_lens : fixed_lens;
    const int ns = st == 0 ? req.n_stops : 4;
    size_t *ends = malloc((size + 1) * sizeof *ends);
    int pieces = 0;
    for (size_t at = 0; at < size; pieces++) {
        size_t len = 1 + (data[at] % 8);
        at = at + len < size ? at + len : size;
        ends[pieces] = at;
    }
    sq_stop_text t;
    sq_stop_text_init(&t, stops, lens, ns);
    sq_strbuf joined = {0}, chunk_text = {0};
    bool stopped = false;
    size_t prev = 0;
    for (int k = 0; k < pieces && !stopped; k++) {
        const char *out;
        size_t n;
        int r = sq_stop_text_feed(&t, d + prev, ends[k] - prev, &out, &n);
        prev = ends[k];
        if (r < 0)
            goto out; /* out of memory */
        stopped = r == 1;
        if (sq_utf8_valid_prefix(out, n) != n)
            abort(); /* a piece went out that is not valid UTF-8 */
        sq_sb_append(&joined, out, n);
        sq_strbuf ev = {0};
        sq_api_completion_chunk(&meta, out, n, NULL, 0, 0, &ev);
        size_t tn;
        char *tx = ev.failed ? NULL : choice_text(ev.s, ev.len, &tn);
        if (!ev.failed && !tx)
            abort();
        if (tx)
            sq_sb_append(&chunk_text, tx, tn);
        free(tx);
        sq_sb_free(&ev);
    }
    if (!stopped) {
        const char *out;
        size_t n;
        int r = sq_stop_text_flush(&t, &out, &n);
        if (r < 0)
            goto out;
        stopped = r == 1;
        if (sq_utf8_valid_prefix(out, n) != n)
            abort();
        sq_sb_append(&joined, out, n);
        sq_strbuf ev = {0};
        sq_api_completion_chunk(&meta, out, n, "length", 1, 2, &ev);
        size_t tn;
        char *tx = ev.failed ? NULL : choice_text(ev.s, ev.len, &tn);
        if (!ev.failed && !tx)
            abort();
        if (tx)
            sq_sb_append(&chunk_text, tx, tn);
        free(tx);
        sq_sb_free(&ev);
    }
    if (!joined.failed && !chunk_text.failed) {
        bool hit;
        char *rep = malloc(3 * size + 1);
        if (!rep)
            goto out;
        size_t cut = naive_cut(d, ends, pieces, stops, lens, ns, &hit, rep);
        bool same = hit == stopped && joined.len == cut && (!cut || !memcmp(joined.s, rep, cut));
        free(rep);
        if (!same)
            abort(); /* not the repaired text before the first stop string */
        sq_strbuf whole = {0};
        sq_api_completion_response(&meta, joined.s ? joined.s : "", joined.len, "stop", 1, 2,
                                   &whole);
        size_t wn;
        char *w = whole.failed ? NULL : choice_text(whole.s, whole.len, &wn);
        if (!whole.failed && (!w || wn != chunk_text.len ||
                              (wn && memcmp(w, chunk_text.s, wn))))
            abort(); /* the repair depends on where the pieces were cut */
        free(w);
        sq_sb_free(&whole);
    }
out:
    sq_sb_free(&joined);
    sq_sb_free(&chunk_text);
    sq_stop_text_free(&t);
    free(ends);
    sq_cmpl_request_free(&req);
    return 0;
}

#include "perplexity.h"

#include <math.h>
#include <string.h>

static const char EOT[] = "<|endoftext|>";

static int emit(const char *s, size_t n, int (*fn)(void *, const char *, size_t), void *ctx)
{
    while (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return n > 0 ? fn(ctx, s, n) : 0;
}

/* Is line [p, e) blank (only spaces, tabs, CR)? */
static int blank_line(const char *p, const char *e)
{
    for (; p < e; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return 0;
    return 1;
}

int sq_ppl_split(const char *text, size_t len, sq_ppl_docs mode,
                 int (*fn)(void *ctx, const char *doc, size_t n), void *ctx)
{
    const char *end = text + len, *doc = text, *p = text;
    int rc;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *eot = memmem(p, (size_t)(le - p), EOT, sizeof EOT - 1);
        if (eot) { /* the separator ends a document wherever it sits */
            if ((rc = emit(doc, (size_t)(eot - doc), fn, ctx)) != 0)
                return rc;
            doc = p = eot + sizeof EOT - 1;
            continue;
        }
        if (mode == SQ_DOCS_LINES || blank_line(p, le)) {
            if ((rc = emit(doc, (size_t)(le - doc), fn, ctx)) != 0)
                return rc;
            doc = nl ? nl + 1 : end;
        }
        p = nl ? nl + 1 : end;
    }
    return emit(doc, (size_t)(end - doc), fn, ctx);
}

int sq_ppl_doc(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int64_t n, int ctx,
               float *logits, sq_ppl_acc *acc, sq_err *err)
{
    const int V = d->cfg.vocab;
    if (n < 2)
        return 0;
    acc->docs++;
    for (int64_t w = 0; w < n - 1; w += ctx) {
        /* inputs ids[w .. w + m), targets ids[w + 1 .. w + m] */
        const int m = (int)(n - 1 - w < ctx ? n - 1 - w : ctx);
        acc->windows++;
        for (int done = 0; done < m; done += st->max_rows) {
            const int k = m - done < st->max_rows ? m - done : st->max_rows;
            if (sq_decoder_forward(d, st, ids + w + done, k, done, logits, true, err) != 0)
                return -1;
            for (int r = 0; r < k; r++) {
                const float *l = logits + (size_t)r * V;
                float mx = l[0];
                for (int i = 1; i < V; i++)
                    mx = l[i] > mx ? l[i] : mx;
                double s = 0;
                for (int i = 0; i < V; i++)
                    s += exp((double)l[i] - mx);
                acc->nll += (mx + log(s)) - l[ids[w + done + r + 1]];
                acc->tokens++;
            }
        }
    }
    return 0;
}

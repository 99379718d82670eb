#include "embedder.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "pooling.h"

typedef struct {
    int64_t idx;
    int len;
} seq_ref;

/* Longest first, ties by input position: a deterministic batch plan. */
static int cmp_len_desc(const void *a, const void *b)
{
    const seq_ref *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

void sq_embed_result_free(sq_embed_result *r)
{
    free(r->emb);
    free(r->offsets);
    free(r->ids);
    free(r->hidden);
    memset(r, 0, sizeof *r);
}

int sq_embed_texts(sq_embed_model *m, const char *const *texts, const size_t *lens, int64_t n,
                   const sq_embed_opts *o, sq_embed_result *res, sq_err *err)
{
    memset(res, 0, sizeof *res);
    const int H = m->enc.cfg.hidden;
    const int max_seq = o->max_seq;
    if (n <= 0)
        return sq_err_set(err, "no inputs");
    if (max_seq < 2 || max_seq > m->enc.cfg.max_pos)
        return sq_err_set(err, "max sequence length %d is outside [2, %d]", max_seq,
                          m->enc.cfg.max_pos);
    if (o->batch < 1)
        return sq_err_set(err, "batch size must be at least 1");

    int rc = -1;
    int32_t **tok = calloc((size_t)n, sizeof *tok);
    seq_ref *order = calloc((size_t)n, sizeof *order);
    int32_t *bids = malloc((size_t)o->batch * max_seq * sizeof *bids);
    int *boff = malloc(((size_t)o->batch + 1) * sizeof *boff);
    float *hid = malloc((size_t)o->batch * max_seq * H * sizeof *hid);
    float *pooled = malloc((size_t)o->batch * H * sizeof *pooled);
    res->emb = malloc((size_t)n * H * sizeof(float));
    sq_workspace ws = {0};
    if (!tok || !order || !bids || !boff || !hid || !pooled || !res->emb) {
        sq_err_set(err, "out of memory for %lld inputs", (long long)n);
        goto out;
    }
    res->n = n;
    res->dim = H;

    /* Tokenize in parallel; each text's ids are kept until its batch runs. */
    int failed = 0;
#pragma omp parallel
    {
        int32_t *buf = malloc((size_t)max_seq * sizeof *buf);
#pragma omp for schedule(dynamic, 64)
        for (int64_t i = 0; i < n; i++) {
            int k = buf ? sq_tokenizer_encode(m->tok, texts[i], lens[i], max_seq, buf) : -1;
            if (k < 2 || !(tok[i] = malloc((size_t)k * sizeof **tok))) {
#pragma omp atomic write
                failed = 1;
                continue;
            }
            memcpy(tok[i], buf, (size_t)k * sizeof *buf);
            order[i].idx = i;
            order[i].len = k;
        }
        free(buf);
    }
    if (failed) {
        sq_err_set(err, "tokenization failed (out of memory)");
        goto out;
    }
    if (o->keep_tokens || o->keep_hidden) {
        res->offsets = malloc(((size_t)n + 1) * sizeof *res->offsets);
        if (!res->offsets) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        res->offsets[0] = 0;
        for (int64_t i = 0; i < n; i++)
            res->offsets[i + 1] = res->offsets[i] + order[i].len;
        res->ids = malloc((size_t)res->offsets[n] * sizeof *res->ids);
        if (o->keep_hidden)
            res->hidden = malloc((size_t)res->offsets[n] * H * sizeof *res->hidden);
        if (!res->ids || (o->keep_hidden && !res->hidden)) {
            sq_err_set(err, "out of memory keeping %lld token rows", (long long)res->offsets[n]);
            goto out;
        }
        for (int64_t i = 0; i < n; i++)
            memcpy(res->ids + res->offsets[i], tok[i], (size_t)order[i].len * sizeof(int32_t));
    }
    qsort(order, (size_t)n, sizeof *order, cmp_len_desc);

    for (int64_t b0 = 0; b0 < n; b0 += o->batch) {
        int nb = (int)(n - b0 < o->batch ? n - b0 : o->batch);
        boff[0] = 0;
        for (int s = 0; s < nb; s++) {
            const seq_ref *r = &order[b0 + s];
            memcpy(bids + boff[s], tok[r->idx], (size_t)r->len * sizeof *bids);
            boff[s + 1] = boff[s] + r->len;
        }
        sq_batch batch = {.n_seq = nb, .offsets = boff, .ids = bids, .type_ids = NULL};
        if (sq_encoder_forward(&m->enc, &ws, &batch, hid, o->observer, err) != 0)
            goto out;
        sq_pool(hid, boff, nb, H, o->pooling, o->normalize, pooled);
        for (int s = 0; s < nb; s++) {
            int64_t idx = order[b0 + s].idx;
            memcpy(res->emb + (size_t)idx * H, pooled + (size_t)s * H, (size_t)H * sizeof(float));
            if (res->hidden)
                memcpy(res->hidden + (size_t)res->offsets[idx] * H, hid + (size_t)boff[s] * H,
                       (size_t)(boff[s + 1] - boff[s]) * H * sizeof(float));
            free(tok[idx]);
            tok[idx] = NULL;
        }
        if (o->progress)
            o->progress(o->progress_ctx, b0 + nb, n);
    }
    rc = 0;
out:
    if (tok)
        for (int64_t i = 0; i < n; i++)
            free(tok[i]);
    free(tok);
    free(order);
    free(bids);
    free(boff);
    free(hid);
    free(pooled);
    sq_workspace_free(&ws);
    if (rc != 0)
        sq_embed_result_free(res);
    return rc;
}

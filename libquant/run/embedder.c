#include "embedder.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "pooling.h"
#include "par_threads.h"

void sq_token_seqs_free(sq_token_seqs *s)
{
    free(s->offsets);
    free(s->ids);
    free(s->types);
    free(s->source);
    memset(s, 0, sizeof *s);
}

void sq_embed_result_free(sq_embed_result *r)
{
    free(r->emb);
    free(r->offsets);
    free(r->ids);
    free(r->hidden);
    free(r->logits);
    memset(r, 0, sizeof *r);
}

/* Per-text token lists, then one contiguous array. */
int sq_tokenize_texts(const sq_embed_model *m, const char *const *texts, const size_t *lens,
                      int64_t n, int max_seq, bool windows, sq_token_seqs *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    if (n <= 0)
        return sq_err_set(err, "no inputs");
    if (max_seq < 3)
        return sq_err_set(err, "max sequence length %d is below 3", max_seq);
    int32_t **tok = calloc((size_t)n, sizeof *tok);
    int64_t *cnt = calloc((size_t)n, sizeof *cnt); /* content tokens, no [CLS]/[SEP] */
    int failed = 0, rc = -1;
    if (!tok || !cnt)
        goto oom;
    /* BERT vocabularies wrap each sequence in [CLS] ... [SEP]; a vocabulary
     * without them (SentencePiece) feeds the bare tokens; a causal embedding
     * model puts what its tokenizer's post-processor says around them. */
    sq_hf_single_template wrap = {0};
    if (m->lm) {
        wrap = m->lm_wrap;
    } else if (sq_tokenizer_cls_id(m->tok) >= 0 && sq_tokenizer_sep_id(m->tok) >= 0) {
        wrap.n_prefix = wrap.n_suffix = 1;
        wrap.prefix[0] = sq_tokenizer_cls_id(m->tok);
        wrap.suffix[0] = sq_tokenizer_sep_id(m->tok);
    }
    const int n_wrap = wrap.n_prefix + wrap.n_suffix;
    const int64_t body = max_seq - n_wrap;
    if (body < 1) {
        sq_err_set(err, "max sequence length %d leaves no room for the text next to its %d "
                        "special tokens", max_seq, n_wrap);
        goto out;
    }
    size_t bytes = 0;
    for (int64_t i = 0; i < n; i++)
        bytes += lens[i];
#pragma omp parallel for schedule(dynamic, 32) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, SQ_TOKENIZE_STEPS_PER_BYTE * (double)bytes, n))
    for (int64_t i = 0; i < n; i++) {
        int64_t cap = windows ? 256 : body, k;
        for (;;) {
            int32_t *buf = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *buf);
            if (!buf) {
                k = -1;
                break;
            }
            k = sq_tokenizer_tokenize(m->tok, texts[i], lens[i], buf, cap);
            if (k < 0 || !windows || k <= cap) {
                tok[i] = buf;
                break;
            }
            free(buf);
            cap = k; /* windows keep every token: retry with room for all */
        }
        if (k < 0) {
#pragma omp atomic write
            failed = 1;
            continue;
        }
        cnt[i] = windows ? k : (k < body ? k : body);
    }
    if (failed)
        goto oom;
    int64_t nseq = 0, ntok = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t w = windows ? (cnt[i] + body - 1) / body : 1;
        if (w < 1)
            w = 1;
        nseq += w;
        ntok += cnt[i] + n_wrap * w;
    }
    out->offsets = malloc((size_t)(nseq + 1) * sizeof *out->offsets);
    out->ids = malloc((size_t)ntok * sizeof *out->ids);
    out->source = malloc((size_t)nseq * sizeof *out->source);
    if (!out->offsets || !out->ids || !out->source)
        goto oom;
    int64_t s = 0, t = 0;
    out->offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t done = 0;
        do {
            int64_t len = cnt[i] - done < body ? cnt[i] - done : body;
            for (int k = 0; k < wrap.n_prefix; k++)
                out->ids[t++] = wrap.prefix[k];
            memcpy(out->ids + t, tok[i] + done, (size_t)len * sizeof(int32_t));
            t += len;
            for (int k = 0; k < wrap.n_suffix; k++)
                out->ids[t++] = wrap.suffix[k];
            done += len;
            out->source[s] = i;
            out->offsets[++s] = t;
        } while (done < cnt[i]);
    }
    out->n = nseq;
    rc = 0;
    goto out;
oom:
    sq_err_set(err, "out of memory tokenizing %lld texts", (long long)n);
    sq_token_seqs_free(out);
out:
    if (tok)
        for (int64_t i = 0; i < n; i++)
            free(tok[i]);
    free(tok);
    free(cnt);
    return rc;
}

typedef struct {
    int64_t idx;
    int len;
} seq_ref;

/* Longest first, ties by position: a deterministic batch plan. */
static int cmp_len_desc(const void *a, const void *b)
{
    const seq_ref *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Pooled rows -> the model's head (if any) -> optional L2 normalization. */
static void finish_pooled(const sq_encoder *enc, float *pooled, int n, bool normalize, float *tmp)
{
    sq_encoder_apply_head(enc, pooled, n, tmp);
    if (normalize)
        sq_l2_normalize_rows(pooled, n, enc->cfg.hidden);
}

/* Rows of a batch into the result, in sequence order: the pooled vectors
 * and, for a sequence classifier whose caller asked for them, the logits
 * (tmp: nb x max(H, num_labels) floats). */
static void keep_rows(const sq_embed_model *m, sq_embed_result *res, const seq_ref *order,
                      int nb, const float *pooled, float *tmp)
{
    const int H = m->enc.cfg.hidden, NL = m->enc.cfg.num_labels;
    for (int k = 0; k < nb; k++)
        memcpy(res->emb + (size_t)order[k].idx * H, pooled + (size_t)k * H,
               (size_t)H * sizeof(float));
    if (!res->logits || NL <= 0)
        return;
    sq_encoder_apply_score(&m->enc, pooled, nb, tmp);
    for (int k = 0; k < nb; k++)
        memcpy(res->logits + (size_t)order[k].idx * NL, tmp + (size_t)k * NL,
               (size_t)NL * sizeof(float));
}

/* The prefill chunk of a causal embedding model: fixed, so its bits never
 * depend on the batch or the threads (decoder.h sq_decoder_last_hidden). */
#define CAUSAL_PREFILL_ROWS 64

/* A causal embedding model: each sequence alone through the decoder from
 * position 0, its last row's final hidden state the embedding. */
static int encode_causal(const sq_embed_model *m, const sq_token_seqs *s, const sq_embed_opts *o,
                         sq_embed_result *res, sq_err *err)
{
    const sq_decoder *d = &m->lm->dec;
    const int H = d->cfg.dim;
    if (o->pooling != SQ_POOL_LAST)
        return sq_err_set(err, "a causal embedding model pools its last token, not %s",
                          sq_pooling_name(o->pooling));
    if (res && res->hidden)
        return sq_err_set(err, "a causal embedding model keeps no token hidden states (its "
                               "embedding is the last token's)");
    int max_len = 1;
    for (int64_t i = 0; i < s->n; i++) {
        int64_t L = s->offsets[i + 1] - s->offsets[i];
        if (L < 1 || L > d->cfg.max_pos)
            return sq_err_set(err, "sequence %lld has %lld tokens (the model takes 1..%d)",
                              (long long)i, (long long)L, d->cfg.max_pos);
        if (L > max_len)
            max_len = (int)L;
    }
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, d, CAUSAL_PREFILL_ROWS, max_len, err) != 0)
        return -1;
    st.obs = o->observer;
    float *row = malloc((size_t)H * sizeof *row);
    int rc = row ? 0 : sq_err_set(err, "out of memory");
    for (int64_t i = 0; rc == 0 && i < s->n; i++) {
        const int64_t a = s->offsets[i];
        rc = sq_decoder_last_hidden(d, &st, s->ids + a, (int)(s->offsets[i + 1] - a), 0, row, err);
        if (rc == 0 && res) {
            if (o->normalize)
                sq_l2_normalize_rows(row, 1, H);
            memcpy(res->emb + (size_t)i * H, row, (size_t)H * sizeof *row);
        }
        if (rc == 0 && o->progress)
            o->progress(o->progress_ctx, i + 1, s->n);
    }
    free(row);
    sq_decoder_state_free(&st);
    return rc;
}

int sq_encode_seqs(sq_embed_model *m, const sq_token_seqs *s, const sq_embed_opts *o,
                   sq_embed_result *res, sq_err *err)
{
    if (m->lm)
        return encode_causal(m, s, o, res, err);
    const int H = m->enc.cfg.hidden;
    const int64_t n = s->n;
    if (n <= 0)
        return sq_err_set(err, "no inputs");
    if (o->batch < 1)
        return sq_err_set(err, "batch size must be at least 1");
    /* An empty sequence (a SentencePiece model given an empty text) has no
     * rows to run: its mean-pooled vector is 0, as the tfjs graph's
     * sum / max(len, 1) gives, and it still goes through the head. */
    const bool allow_empty = o->pooling == SQ_POOL_MEAN;
    int max_len = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t L = s->offsets[i + 1] - s->offsets[i];
        if (L < (allow_empty ? 0 : 1) || L > sq_bert_max_tokens(&m->enc.cfg))
            return sq_err_set(err, "sequence %lld has %lld tokens (the model takes %d..%d)",
                              (long long)i, (long long)L, allow_empty ? 0 : 1,
                              sq_bert_max_tokens(&m->enc.cfg));
        if (L > max_len)
            max_len = (int)L;
    }
    int rc = -1;
    seq_ref *order = malloc((size_t)n * sizeof *order);
    int32_t *bids = malloc((size_t)o->batch * max_len * sizeof *bids);
    int32_t *btypes = s->types ? malloc((size_t)o->batch * max_len * sizeof *btypes) : NULL;
    int *boff = malloc(((size_t)o->batch + 1) * sizeof *boff);
    float *hid = malloc((size_t)o->batch * max_len * H * sizeof *hid);
    float *pooled = malloc((size_t)o->batch * H * sizeof *pooled);
    const int NL = m->enc.cfg.num_labels;
    float *head_tmp = malloc((size_t)o->batch * (H > NL ? H : NL) * sizeof *head_tmp);
    sq_workspace ws = {0};
    if (!order || !bids || !boff || !hid || !pooled || !head_tmp || (s->types && !btypes)) {
        sq_err_set(err, "out of memory for %lld sequences", (long long)n);
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        order[i].idx = i;
        order[i].len = (int)(s->offsets[i + 1] - s->offsets[i]);
    }
    qsort(order, (size_t)n, sizeof *order, cmp_len_desc);

    int64_t n_run = n; /* sorted longest first: the empty sequences are last */
    while (n_run > 0 && order[n_run - 1].len == 0)
        n_run--;
    for (int64_t b0 = n_run; res && b0 < n; b0 += o->batch) {
        int nb = (int)(n - b0 < o->batch ? n - b0 : o->batch);
        memset(pooled, 0, (size_t)nb * H * sizeof *pooled);
        finish_pooled(&m->enc, pooled, nb, o->normalize, head_tmp);
        keep_rows(m, res, order + b0, nb, pooled, head_tmp);
    }
    for (int64_t b0 = 0; b0 < n_run; b0 += o->batch) {
        int nb = (int)(n_run - b0 < o->batch ? n_run - b0 : o->batch);
        boff[0] = 0;
        for (int k = 0; k < nb; k++) {
            const seq_ref *r = &order[b0 + k];
            memcpy(bids + boff[k], s->ids + s->offsets[r->idx], (size_t)r->len * sizeof *bids);
            if (btypes)
                memcpy(btypes + boff[k], s->types + s->offsets[r->idx],
                       (size_t)r->len * sizeof *btypes);
            boff[k + 1] = boff[k] + r->len;
        }
        sq_batch batch = {.n_seq = nb, .offsets = boff, .ids = bids, .type_ids = btypes};
        if (sq_encoder_forward(&m->enc, &ws, &batch, hid, o->observer, err) != 0)
            goto out;
        if (res) {
            sq_pool(hid, boff, nb, H, o->pooling, false, pooled);
            finish_pooled(&m->enc, pooled, nb, o->normalize, head_tmp);
            keep_rows(m, res, order + b0, nb, pooled, head_tmp);
            for (int k = 0; k < nb; k++) {
                int64_t idx = order[b0 + k].idx;
                if (res->hidden)
                    memcpy(res->hidden + (size_t)s->offsets[idx] * H, hid + (size_t)boff[k] * H,
                           (size_t)(boff[k + 1] - boff[k]) * H * sizeof(float));
            }
        }
        if (o->progress)
            o->progress(o->progress_ctx, b0 + nb + (n - n_run), n);
    }
    rc = 0;
out:
    free(order);
    free(bids);
    free(btypes);
    free(boff);
    free(hid);
    free(pooled);
    free(head_tmp);
    sq_workspace_free(&ws);
    return rc;
}

int sq_embed_texts(sq_embed_model *m, const char *const *texts, const size_t *lens, int64_t n,
                   const sq_embed_opts *o, sq_embed_result *res, sq_err *err)
{
    memset(res, 0, sizeof *res);
    if (o->max_seq < 3 || o->max_seq > sq_bert_max_tokens(&m->enc.cfg))
        return sq_err_set(err, "max sequence length %d is outside [3, %d]", o->max_seq,
                          sq_bert_max_tokens(&m->enc.cfg));
    if (o->dimensions < 0 || o->dimensions > m->enc.cfg.hidden)
        return sq_err_set(err, "dimensions %d is outside [1, %d] (the model's embedding width)",
                          o->dimensions, m->enc.cfg.hidden);
    sq_token_seqs seqs;
    if (sq_tokenize_texts(m, texts, lens, n, o->max_seq, false, &seqs, err) != 0)
        return -1;
    const int H = m->enc.cfg.hidden;
    res->n = n;
    res->dim = H;
    res->emb = malloc((size_t)n * H * sizeof(float));
    if (o->keep_hidden)
        res->hidden = malloc((size_t)seqs.offsets[n] * H * sizeof(float));
    if (!res->emb || (o->keep_hidden && !res->hidden)) {
        sq_token_seqs_free(&seqs);
        sq_embed_result_free(res);
        return sq_err_set(err, "out of memory for %lld embeddings", (long long)n);
    }
    int rc = sq_encode_seqs(m, &seqs, o, res, err);
    if (rc == 0 && o->dimensions > 0 && o->dimensions < H) {
        sq_truncate_dims(res->emb, n, H, o->dimensions, o->normalize);
        res->dim = o->dimensions;
    }
    if (rc == 0 && (o->keep_tokens || o->keep_hidden)) {
        res->offsets = seqs.offsets; /* hand the token arrays over */
        res->ids = seqs.ids;
        seqs.offsets = NULL;
        seqs.ids = NULL;
    }
    sq_token_seqs_free(&seqs);
    if (rc != 0)
        sq_embed_result_free(res);
    return rc;
}

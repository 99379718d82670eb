/* Sequence classifiers: pair tokenization, logits, scores (seq_classify.h). */
#include "seq_classify.h"
#include "par_threads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sq_pair_truncate(int64_t na, int64_t nb, int64_t budget, int64_t *keep_a, int64_t *keep_b)
{
    if (na + nb <= budget) {
        *keep_a = na;
        *keep_b = nb;
        return;
    }
    /* tokenizers' TruncationStrategy::LongestFirst: the shorter text n1 keeps
     * what it has when the longer one can take the rest, else both get half
     * and the second of the pair (the longer one when a is longer, else b)
     * the odd token. */
    const bool swap = na > nb;
    int64_t n1 = swap ? nb : na, n2;
    if (n1 > budget)
        n2 = n1;
    else
        n2 = n1 > budget - n1 ? n1 : budget - n1;
    if (n1 + n2 > budget) {
        n1 = budget / 2;
        n2 = n1 + budget % 2;
    }
    *keep_a = swap ? n2 : n1;
    *keep_b = swap ? n1 : n2;
    if (*keep_a > na)
        *keep_a = na;
    if (*keep_b > nb)
        *keep_b = nb;
}

bool sq_model_is_classifier(const sq_embed_model *m)
{
    return m->enc.cfg.num_labels > 0;
}

/* Tokens of one text into a fresh array, all of them (*n); NULL on failure. */
static int32_t *tokenize_all(const sq_tokenizer *tok, const char *s, size_t len, int64_t *n)
{
    int64_t cap = 256;
    for (;;) {
        int32_t *buf = malloc((size_t)cap * sizeof *buf);
        if (!buf)
            return NULL;
        int64_t k = sq_tokenizer_tokenize(tok, s, len, buf, cap);
        if (k < 0) {
            free(buf);
            return NULL;
        }
        if (k <= cap) {
            *n = k;
            return buf;
        }
        free(buf);
        cap = k;
    }
}

int sq_tokenize_pairs(const sq_embed_model *m, const char *const *a, const size_t *alen,
                      const char *const *b, const size_t *blen, int64_t n, int max_seq,
                      sq_token_seqs *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    if (n <= 0)
        return sq_err_set(err, "no inputs");
    if (max_seq < SQ_PAIR_MIN_SEQ)
        return sq_err_set(err, "max sequence length %d is below %d (a pair needs [CLS] query "
                               "[SEP] document [SEP])",
                          max_seq, SQ_PAIR_MIN_SEQ);
    const int32_t cls = sq_tokenizer_cls_id(m->tok), sep = sq_tokenizer_sep_id(m->tok);
    if (cls < 0 || sep < 0)
        return sq_err_set(err, "the tokenizer has no [CLS]/[SEP] tokens: it cannot form pairs");
    /* RoBERTa-style pairs (MPNet) put two separators between the texts */
    const bool roberta = sq_tokenizer_pair_double_sep(m->tok);
    if (roberta && max_seq < SQ_PAIR_MIN_SEQ + 1)
        return sq_err_set(err, "max sequence length %d is below %d (a pair needs <s> query "
                               "</s></s> document </s>)",
                          max_seq, SQ_PAIR_MIN_SEQ + 1);
    const int64_t budget = max_seq - (roberta ? 4 : 3);
    int32_t **ta = calloc((size_t)n, sizeof *ta), **tb = calloc((size_t)n, sizeof *tb);
    int64_t *ka = calloc((size_t)n, sizeof *ka), *kb = calloc((size_t)n, sizeof *kb);
    int failed = 0, rc = -1;
    if (!ta || !tb || !ka || !kb)
        goto oom;
    size_t bytes = 0;
    for (int64_t i = 0; i < n; i++)
        bytes += alen[i] + blen[i];
#pragma omp parallel for schedule(dynamic, 32) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, SQ_TOKENIZE_STEPS_PER_BYTE * (double)bytes, n))
    for (int64_t i = 0; i < n; i++) {
        int64_t na = 0, nb = 0;
        ta[i] = tokenize_all(m->tok, a[i], alen[i], &na);
        tb[i] = ta[i] ? tokenize_all(m->tok, b[i], blen[i], &nb) : NULL;
        if (!ta[i] || !tb[i]) {
#pragma omp atomic write
            failed = 1;
            continue;
        }
        sq_pair_truncate(na, nb, budget, &ka[i], &kb[i]);
    }
    if (failed)
        goto oom;
    int64_t ntok = 0;
    for (int64_t i = 0; i < n; i++)
        ntok += ka[i] + kb[i] + (roberta ? 4 : 3);
    out->offsets = malloc((size_t)(n + 1) * sizeof *out->offsets);
    out->ids = malloc((size_t)ntok * sizeof *out->ids);
    out->types = malloc((size_t)ntok * sizeof *out->types);
    out->source = malloc((size_t)n * sizeof *out->source);
    if (!out->offsets || !out->ids || !out->types || !out->source)
        goto oom;
    int64_t t = 0;
    out->offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t t0 = t;
        out->ids[t++] = cls;
        memcpy(out->ids + t, ta[i], (size_t)ka[i] * sizeof(int32_t));
        t += ka[i];
        out->ids[t++] = sep;
        if (roberta)
            out->ids[t++] = sep;
        for (int64_t j = t0; j < t; j++)
            out->types[j] = 0;
        int64_t t1 = t;
        memcpy(out->ids + t, tb[i], (size_t)kb[i] * sizeof(int32_t));
        t += kb[i];
        out->ids[t++] = sep;
        for (int64_t j = t1; j < t; j++)
            out->types[j] = roberta ? 0 : 1;
        out->source[i] = i;
        out->offsets[i + 1] = t;
    }
    out->n = n;
    rc = 0;
    goto out;
oom:
    sq_err_set(err, "out of memory tokenizing %lld pairs", (long long)n);
    sq_token_seqs_free(out);
out:
    for (int64_t i = 0; ta && tb && i < n; i++) {
        free(ta[i]);
        free(tb[i]);
    }
    free(ta);
    free(tb);
    free(ka);
    free(kb);
    return rc;
}

int sq_classify_texts(sq_embed_model *m, const char *const *a, const size_t *alen,
                      const char *const *b, const size_t *blen, int64_t n,
                      const sq_embed_opts *o, float *logits, sq_err *err)
{
    if (!sq_model_is_classifier(m))
        return sq_err_set(err, "the model is not a sequence classifier (no score head)");
    if (o->max_seq > sq_bert_max_tokens(&m->enc.cfg))
        return sq_err_set(err, "max sequence length %d is above the model's %d positions",
                          o->max_seq, sq_bert_max_tokens(&m->enc.cfg));
    sq_token_seqs seqs;
    int rc = b ? sq_tokenize_pairs(m, a, alen, b, blen, n, o->max_seq, &seqs, err)
               : sq_tokenize_texts(m, a, alen, n, o->max_seq, false, &seqs, err);
    if (rc != 0)
        return -1;
    const int H = m->enc.cfg.hidden;
    sq_embed_result res = {.n = n, .dim = H};
    res.emb = malloc((size_t)n * H * sizeof(float));
    res.logits = logits; /* borrowed: not freed here */
    if (!res.emb) {
        sq_token_seqs_free(&seqs);
        return sq_err_set(err, "out of memory for %lld sequences", (long long)n);
    }
    sq_embed_opts eo = *o;
    eo.pooling = SQ_POOL_CLS;
    eo.normalize = false;
    eo.keep_tokens = eo.keep_hidden = false;
    rc = sq_encode_seqs(m, &seqs, &eo, &res, err);
    free(res.emb);
    sq_token_seqs_free(&seqs);
    return rc;
}

void sq_scores_from_logits(sq_score_act act, int L, const float *logits, int64_t n, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * L;
        double *p = out + (size_t)i * L;
        if (act == SQ_SCORE_SOFTMAX) {
            double mx = z[0], sum = 0;
            for (int j = 1; j < L; j++)
                if (z[j] > mx)
                    mx = z[j];
            for (int j = 0; j < L; j++)
                sum += (p[j] = exp((double)z[j] - mx));
            for (int j = 0; j < L; j++)
                p[j] /= sum;
            continue;
        }
        for (int j = 0; j < L; j++) {
            double v = z[j];
            p[j] = act == SQ_SCORE_SIGMOID ? 1.0 / (1.0 + exp(-v)) : act == SQ_SCORE_TANH ? tanh(v) : v;
        }
    }
}

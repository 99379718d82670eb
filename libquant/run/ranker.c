/* Pair scores by the kind of model (ranker.h). */
#include "ranker.h"

#include <stdlib.h>
#include <string.h>

#include "dec_sqm.h"
#include "rank_order.h"
#include "seq_classify.h"

/* A text of a pair side by pointer, with its position among the 2n
 * (a[0..n) then b[0..n)). */
typedef struct text_ref {
    const char *p;
    int64_t pos;
} text_ref;

static int by_ptr_then_pos(const void *x, const void *y)
{
    const text_ref *a = x, *b = y;
    uintptr_t pa = (uintptr_t)a->p, pb = (uintptr_t)b->p;
    if (pa != pb)
        return (pa > pb) - (pa < pb);
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static int by_pos(const void *x, const void *y)
{
    const text_ref *a = x, *b = y;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* A bi-encoder: each distinct text (by pointer) embedded once, in the order
 * of first appearance (a[0..n) then b[0..n)), so that the batches, and an
 * fp32 model's roundings with them, do not depend on where the caller's
 * strings lie in memory; then the cosine of each pair. */
static int cosine_pairs(sq_embed_model *m, const char *const *a, const size_t *alen,
                        const char *const *b, const size_t *blen, int64_t n,
                        const sq_embed_opts *o, double *scores, sq_err *err)
{
    const int64_t N = 2 * n;
    text_ref *refs = malloc((size_t)N * sizeof *refs);
    int64_t *slot = malloc((size_t)N * sizeof *slot); /* position -> unique text */
    const char **u = malloc((size_t)N * sizeof *u);
    size_t *ul = malloc((size_t)N * sizeof *ul);
    sq_embed_result res = {0};
    int rc = -1;
    if (!refs || !slot || !u || !ul) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int64_t i = 0; i < N; i++)
        refs[i] = (text_ref){i < n ? a[i] : b[i - n], i};
    qsort(refs, (size_t)N, sizeof *refs, by_ptr_then_pos);
    /* Each pointer's first position; the repeats point at it. */
    int64_t nu = 0;
    for (int64_t i = 0; i < N; i++) {
        if (i == 0 || refs[i].p != refs[i - 1].p)
            refs[nu++] = refs[i];
        slot[refs[i].pos] = refs[nu - 1].pos; /* a position, renumbered below */
    }
    qsort(refs, (size_t)nu, sizeof *refs, by_pos);
    /* First positions -> 0 .. nu-1, in order of appearance. */
    int64_t *rank = malloc((size_t)N * sizeof *rank);
    if (!rank) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int64_t k = 0; k < nu; k++) {
        const int64_t pos = refs[k].pos;
        rank[pos] = k;
        u[k] = refs[k].p;
        ul[k] = pos < n ? alen[pos] : blen[pos - n];
    }
    for (int64_t i = 0; i < N; i++)
        slot[i] = rank[slot[i]];
    free(rank);
    if (sq_embed_texts(m, u, ul, nu, o, &res, err) != 0)
        goto out;
    for (int64_t i = 0; i < n; i++)
        scores[i] = sq_cosine(res.emb + (size_t)slot[i] * res.dim,
                              res.emb + (size_t)slot[n + i] * res.dim, res.dim);
    rc = 0;
out:
    sq_embed_result_free(&res);
    free(refs);
    free(slot);
    free(u);
    free(ul);
    return rc;
}

int sq_score_pairs(const sq_embed_model *cm, const char *const *a, const size_t *alen,
                   const char *const *b, const size_t *blen, int64_t n, const sq_embed_opts *o,
                   double *scores, float *logits, sq_err *err)
{
    if (n <= 0)
        return sq_err_set(err, "no pairs to score");
    /* The runtime only reads the model (workspaces are per call); its
     * signatures predate const. */
    sq_embed_model *m = (sq_embed_model *)cm;
    sq_embed_opts eo = *o;
    if (eo.max_seq <= 0)
        eo.max_seq = m->max_seq;
    if (!sq_model_is_classifier(m)) {
        eo.pooling = m->pool.pooling;
        eo.normalize = true;
        return cosine_pairs(m, a, alen, b, blen, n, &eo, scores, err);
    }
    if (m->enc.cfg.num_labels != 1)
        return sq_err_set(err, "the model is a sequence classifier with %d labels; pair scores "
                               "need a cross-encoder with one relevance logit",
                          m->enc.cfg.num_labels);
    float *lg = logits ? logits : malloc((size_t)n * sizeof *lg);
    if (!lg)
        return sq_err_set(err, "out of memory");
    int rc = sq_classify_texts(m, a, alen, b, blen, n, &eo, lg, err);
    if (rc == 0)
        sq_scores_from_logits(m->enc.cfg.score_act, 1, lg, n, scores);
    if (!logits)
        free(lg);
    return rc;
}

bool sq_ranker_is_lm(const char *path)
{
    return (sq_llama_is_checkpoint(path) || sq_dec_sqm_is_decoder(path)) &&
           !sq_llama_is_embedding(path);
}

int sq_ranker_open(const char *arg, const char *instruction, int max_seq, sq_ranker *r,
                   sq_err *err)
{
    memset(r, 0, sizeof *r);
    const bool judge = sq_ranker_is_lm(arg);
    if (!judge) {
        if (instruction)
            return sq_err_set(err, "%s: an instruction is for a causal LM reranking as "
                                   "Qwen3-Reranker does; this model is an embedding model or "
                                   "a cross-encoder", arg);
        if (sq_embed_model_open(arg, &r->em, err) != 0)
            return -1;
        r->kind = sq_model_is_classifier(&r->em) ? SQ_RANKER_CROSS_ENCODER : SQ_RANKER_EMBEDDING;
        return 0;
    }
    r->kind = SQ_RANKER_JUDGE;
    if (sq_llama_model_open(arg, NULL, &r->lm, err) != 0)
        return -1;
    if (sq_lm_judge_init(&r->j, &r->lm, instruction, max_seq, err) != 0) {
        sq_err_prefix(err, "%s: a causal LM ranks only as a yes / no judge (Qwen3-Reranker's "
                           "way), and this one cannot", arg);
        sq_llama_model_close(&r->lm);
        return -1;
    }
    return 0;
}

bool sq_ranker_has_logit(const sq_ranker *r)
{
    return r->kind != SQ_RANKER_EMBEDDING;
}

int sq_ranker_score(const sq_ranker *r, const char *instruction, const char *const *a,
                    const size_t *alen, const char *const *b, const size_t *blen, int64_t n,
                    const sq_embed_opts *o, double *scores, float *logits, sq_err *err)
{
    if (r->kind != SQ_RANKER_JUDGE) {
        if (instruction)
            return sq_err_set(err, "an instruction is for a causal LM reranking as "
                                   "Qwen3-Reranker does; this model is an embedding model or "
                                   "a cross-encoder");
        return sq_score_pairs(&r->em, a, alen, b, blen, n, o, scores, logits, err);
    }
    if (n <= 0)
        return sq_err_set(err, "no pairs to score");
    /* Another instruction or length than the open's: a judge for this call
     * (its prompt's fixed ids, a few hundred bytes). */
    if (!instruction && (o->max_seq <= 0 || o->max_seq == r->j.max_seq))
        return sq_lm_judge_score(&r->j, a, alen, b, blen, n, scores, logits, NULL, NULL, err);
    sq_lm_judge j;
    if (sq_lm_judge_init(&j, &r->lm, instruction ? instruction : r->j.instruction,
                         o->max_seq > 0 ? o->max_seq : r->j.max_seq, err) != 0)
        return -1;
    int rc = sq_lm_judge_score(&j, a, alen, b, blen, n, scores, logits, NULL, NULL, err);
    sq_lm_judge_free(&j);
    return rc;
}

void sq_ranker_close(sq_ranker *r)
{
    if (r->kind == SQ_RANKER_JUDGE) {
        sq_lm_judge_free(&r->j);
        sq_llama_model_close(&r->lm);
    } else {
        sq_embed_model_close(&r->em);
    }
    memset(r, 0, sizeof *r);
}

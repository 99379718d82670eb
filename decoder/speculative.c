/* Assisted generation (speculative decoding): a draft model proposes k
 * tokens one step at a time, the target runs the last accepted token and
 * the k proposals as one forward of k + 1 rows, and keeps the proposals up
 * to the first one it would not have chosen, plus its own token there (or
 * after all k). A round yields 1 .. k + 1 tokens for one target forward.
 *
 * Greedy: each kept token is the target's argmax over a row whose prefix is
 * the accepted text, computed with the same bits as token-by-token decoding
 * (attention per row in a fixed order, integer GEMMs exact, f32 linears of
 * up to 16 rows each row alone: libquant/kernels/f32_rows.h), so the output is the
 * target's alone, token for token. Sampling (T > 0): speculative sampling
 * (Leviathan et al. 2023, Chen et al. 2023): proposal d drawn from the
 * draft's q is kept with probability min(1, p(d) / q(d)), else a token is
 * drawn from max(0, p - q) renormalized; the text then follows the
 * target's distribution p (temperature and top-p applied to both models),
 * with other draws than without a draft.
 *
 * Caches: the target's holds every accepted position (the rows of rejected
 * proposals are overwritten by the next pass); the draft's holds a prefix of
 * the accepted text and catches up on the tokens it has not seen in its
 * first step of the next round. */
#include <stdlib.h>
#include <string.h>

#include "gen_emit.h"

typedef struct spec_bufs {
    float *tlog;   /* [k + 1][vocab] target logits of a verify pass */
    float *dlog;   /* [vocab] draft logits */
    double *q;     /* [k][vocab] the draft's distributions (sampling) */
    double *p;     /* [vocab] the target's distribution, then the residual */
    int32_t *seq;  /* the prompt and every token chosen */
} spec_bufs;

static void bufs_free(spec_bufs *b)
{
    free(b->tlog);
    free(b->dlog);
    free(b->q);
    free(b->p);
    free(b->seq);
}

/* Speculative sampling's choice at verify row i for proposal d with draft
 * distribution q: 1 and *tok = d when kept, else 0 and *tok drawn from the
 * residual. */
static int sample_check(sq_sampler *sm, const float *row, const double *q, int32_t d,
                        double *p, int32_t *tok)
{
    const int V = sm->vocab;
    sq_sampler_dist(sm, row, p);
    const double u = sq_sampler_uniform(sm);
    if (u * q[d] < p[d]) { /* u < p(d) / q(d); q(d) > 0: d was drawn from q */
        *tok = d;
        return 1;
    }
    double mass = 0;
    for (int i = 0; i < V; i++) {
        const double r = p[i] - q[i];
        p[i] = r > 0 ? r : 0.0;
        mass += p[i];
    }
    if (!(mass > 0)) /* p == q up to rounding: the rejection had ~0 chance */
        sq_sampler_dist(sm, row, p);
    *tok = sq_sampler_draw(sm, p);
    return 0;
}

int sq_gen_assisted(const sq_llama_model *m, const int32_t *prompt, int n_prompt,
                    const sq_gen_opts *o, sq_sampler *sm, sq_gen_emit *e, sq_err *err)
{
    const sq_decoder *td = &m->dec, *dd = &o->draft->dec;
    const int V = td->cfg.vocab, K = o->draft_tokens > 0 ? o->draft_tokens : 4;
    const bool greedy = !(o->temperature > 0.0f);
    const int rows = o->prefill_rows > K + 1 ? o->prefill_rows : 64;
    sq_decoder_state ts, ds;
    spec_bufs b = {0};
    int rc = -1;
    if (sq_decoder_state_init(&ts, td, rows, 0, err) != 0)
        return -1;
    if (sq_decoder_state_init(&ds, dd, rows, 0, err) != 0) {
        sq_decoder_state_free(&ts);
        return -1;
    }
    sq_sampler dsm; /* scratch for the draft's distributions; every draw is sm's */
    bool dsm_ok = sq_sampler_init(&dsm, V, o->temperature, o->top_p, 0) == 0;
    b.tlog = malloc((size_t)(K + 1) * V * sizeof *b.tlog);
    b.dlog = malloc((size_t)V * sizeof *b.dlog);
    b.p = malloc((size_t)V * sizeof *b.p);
    b.q = greedy ? NULL : malloc((size_t)K * V * sizeof *b.q);
    b.seq = malloc(((size_t)ts.max_pos + 1) * sizeof *b.seq);
    if (!dsm_ok || !b.tlog || !b.dlog || !b.p || (!greedy && !b.q) || !b.seq) {
        sq_err_set(err, "out of memory for assisted generation");
        goto out;
    }
    memcpy(b.seq, prompt, (size_t)n_prompt * sizeof *b.seq);
    int L = n_prompt; /* tokens in seq; the target's cache holds L - 1 of them after a round */

    /* The first token as the target alone chooses it. */
    e->t0 = e->t_first = e->t_last = sq_gen_now();
    if (sq_decoder_forward(td, &ts, prompt, n_prompt, 0, b.tlog, false, err) != 0)
        goto out;
    int32_t tok = sq_sample(sm, b.tlog);
    b.seq[L++] = tok;
    if (sq_gen_emit_token(e, tok))
        goto done;
    int dv = 0; /* tokens of seq the draft's cache holds */
    int32_t prop[SQ_GEN_MAX_DRAFT + 1];
    for (;;) {
        if (L - 1 >= ts.max_pos) {
            e->stats->stop = SQ_GEN_STOP_CONTEXT;
            break;
        }
        /* k proposals: the target checks positions L - 1 .. L - 1 + k, the
         * draft runs up to L + k - 2; none past the tokens still wanted. */
        int k = K;
        if (k > ts.max_pos - L)
            k = ts.max_pos - L;
        if (k > ds.max_pos - L + 1)
            k = ds.max_pos - L + 1;
        if (k > e->max_tokens - e->stats->generated - 1)
            k = e->max_tokens - e->stats->generated - 1;
        if (k < 0)
            k = 0;
        for (int i = 0; i < k; i++) {
            /* step 0 feeds what the draft has not seen (seq[dv .. L)) */
            const int32_t *in = i == 0 ? b.seq + dv : &prop[i - 1];
            const int n_in = i == 0 ? L - dv : 1, at = i == 0 ? dv : L - 1 + i;
            if (sq_decoder_forward(dd, &ds, in, n_in, at, b.dlog, false, err) != 0)
                goto out;
            if (greedy)
                prop[i] = sq_sample_argmax(b.dlog, V);
            else {
                sq_sampler_dist(&dsm, b.dlog, b.q + (size_t)i * V);
                prop[i] = sq_sampler_draw(sm, b.q + (size_t)i * V);
            }
        }
        const int draft_len = k > 0 ? L + k - 1 : dv;
        /* verify: the last token and the k proposals in one forward */
        int32_t vin[SQ_GEN_MAX_DRAFT + 1];
        vin[0] = b.seq[L - 1];
        memcpy(vin + 1, prop, (size_t)k * sizeof *vin);
        if (sq_decoder_forward(td, &ts, vin, k + 1, L - 1, b.tlog, true, err) != 0)
            goto out;
        e->stats->verify_passes++;
        e->stats->drafted += k;
        const int L0 = L;
        int kept = 0, stop = 0;
        for (int i = 0; i <= k && !stop; i++) {
            const float *row = b.tlog + (size_t)i * V;
            int ok;
            if (i == k) { /* every proposal kept: the target's own next token */
                tok = sq_sample(sm, row);
                ok = 0;
            } else if (greedy) {
                tok = sq_sample_argmax(row, V);
                ok = tok == prop[i];
            } else
                ok = sample_check(sm, row, b.q + (size_t)i * V, prop[i], b.p, &tok);
            kept += ok;
            e->stats->accepted += ok;
            b.seq[L++] = tok;
            stop = sq_gen_emit_token(e, tok);
            if (!ok)
                break;
        }
        if (stop)
            break;
        /* the draft's cache is good up to its first token that was not kept */
        dv = draft_len < L0 + kept ? draft_len : L0 + kept;
    }
done:
    rc = 0;
out:
    sq_sampler_free(&dsm);
    bufs_free(&b);
    sq_decoder_state_free(&ts);
    sq_decoder_state_free(&ds);
    return rc;
}

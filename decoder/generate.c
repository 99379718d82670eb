#include "generate.h"

#include <stdlib.h>
#include <time.h>

const char *sq_gen_stop_name(sq_gen_stop s)
{
    static const char *const names[] = {"max_tokens", "eos", "context", "caller"};
    return s >= 0 && s <= SQ_GEN_STOP_CALLER ? names[s] : "?";
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int sq_generate(const sq_llama_model *m, const int32_t *prompt, int n_prompt,
                const sq_gen_opts *o, sq_gen_token_fn cb, void *ctx, sq_gen_stats *stats,
                sq_err *err)
{
    const sq_decoder *d = &m->dec;
    *stats = (sq_gen_stats){.prompt_tokens = n_prompt};
    if (n_prompt < 1)
        return sq_err_set(err, "an empty prompt (BOS at least is needed)");
    if (n_prompt >= d->cfg.max_pos)
        return sq_err_set(err, "the prompt has %d tokens; the model's context is %d", n_prompt,
                          d->cfg.max_pos);
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, d, o->prefill_rows > 0 ? o->prefill_rows : 64, 0, err) != 0)
        return -1;
    sq_sampler sm;
    float *logits = malloc((size_t)d->cfg.vocab * sizeof *logits);
    if (!logits || sq_sampler_init(&sm, d->cfg.vocab, o->temperature, o->top_p, o->seed) != 0) {
        free(logits);
        sq_decoder_state_free(&st);
        return sq_err_set(err, "out of memory");
    }
    int rc = -1;
    const double t0 = now_s();
    double t_first = t0, t_last = t0;
    if (sq_decoder_forward(d, &st, prompt, n_prompt, 0, logits, false, err) != 0)
        goto out;
    int pos = n_prompt;
    int32_t prev = prompt[n_prompt - 1];
    stats->stop = SQ_GEN_STOP_MAX;
    for (int i = 0; i < o->max_tokens; i++) {
        int32_t next = sq_sample(&sm, logits);
        t_last = now_s();
        if (i == 0)
            t_first = t_last;
        if (next == d->cfg.eos || next == d->cfg.bos) {
            stats->stop = SQ_GEN_STOP_EOS;
            break;
        }
        size_t len;
        const char *piece = sq_bpe_decode_piece(m->tok, prev, next, &len);
        stats->generated++;
        if (cb && cb(ctx, next, piece, len) != 0) {
            stats->stop = SQ_GEN_STOP_CALLER;
            break;
        }
        if (i + 1 == o->max_tokens)
            break;
        if (pos >= st.max_pos) {
            stats->stop = SQ_GEN_STOP_CONTEXT;
            break;
        }
        if (sq_decoder_forward(d, &st, &next, 1, pos, logits, false, err) != 0)
            goto out;
        pos++;
        prev = next;
    }
    stats->ttft_s = t_first - t0;
    stats->decode_s = t_last - t_first;
    rc = 0;
out:
    free(logits);
    sq_sampler_free(&sm);
    sq_decoder_state_free(&st);
    return rc;
}

#include "generate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen_emit.h"

const char *sq_gen_stop_name(sq_gen_stop s)
{
    static const char *const names[] = {"max_tokens", "eos", "context", "caller"};
    return s >= 0 && s <= SQ_GEN_STOP_CALLER ? names[s] : "?";
}

double sq_gen_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int sq_gen_emit_token(sq_gen_emit *e, int32_t id)
{
    const sq_decoder_config *c = &e->m->dec.cfg;
    e->t_last = sq_gen_now();
    if (!e->chosen) {
        e->t_first = e->t_last;
        e->chosen = true;
    }
    if (id == c->eos || id == c->bos) {
        e->stats->stop = SQ_GEN_STOP_EOS;
        return 1;
    }
    size_t len;
    const char *piece = sq_tokenizer_decode_piece(e->m->tok, e->prev, id, &len);
    e->stats->generated++;
    e->prev = id;
    if (e->cb && e->cb(e->ctx, id, piece, len) != 0) {
        e->stats->stop = SQ_GEN_STOP_CALLER;
        return 1;
    }
    if (e->stats->generated >= e->max_tokens) {
        e->stats->stop = SQ_GEN_STOP_MAX;
        return 1;
    }
    return 0;
}

int sq_gen_check_draft(const sq_llama_model *target, const sq_llama_model *draft, sq_err *err)
{
    const sq_decoder_config *t = &target->dec.cfg, *d = &draft->dec.cfg;
    if (t->vocab != d->vocab)
        return sq_err_set(err, "the draft's vocabulary has %d tokens, the model's %d", d->vocab,
                          t->vocab);
    if (t->bos != d->bos || t->eos != d->eos)
        return sq_err_set(err, "the draft's BOS / EOS ids (%d / %d) are not the model's (%d / %d)",
                          (int)d->bos, (int)d->eos, (int)t->bos, (int)t->eos);
    const int32_t n = sq_tokenizer_vocab_size(target->tok);
    if (sq_tokenizer_vocab_size(draft->tok) != n)
        return sq_err_set(err, "the draft's tokenizer has %d pieces, the model's %d",
                          (int)sq_tokenizer_vocab_size(draft->tok), (int)n);
    /* Compared as the text each id decodes to: llama2.c's tokenizer.bin keeps
     * ' ' where tokenizer.json keeps U+2581, and BOS / EOS pieces differ
     * ("\n<s>\n" vs "<s>"); control ids (special in either: <unk>, BOS,
     * EOS) are skipped, only the ids matter to the draft. */
    for (int32_t i = 0; i < n; i++) {
        if (sq_tokenizer_is_special(target->tok, i) || sq_tokenizer_is_special(draft->tok, i))
            continue;
        size_t la, lb;
        const char *a = sq_tokenizer_decode_piece(target->tok, -1, i, &la);
        const char *b = sq_tokenizer_decode_piece(draft->tok, -1, i, &lb);
        if (la != lb || (la && memcmp(a, b, la) != 0))
            return sq_err_set(err, "the draft's tokenizer differs from the model's at id %d",
                              (int)i);
    }
    return 0;
}

/* Target alone: one forward per token. */
static int plain_loop(const sq_llama_model *m, const int32_t *prompt, int n_prompt,
                      const sq_gen_opts *o, sq_sampler *sm, sq_gen_emit *e, sq_err *err)
{
    const sq_decoder *d = &m->dec;
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, d, o->prefill_rows > 0 ? o->prefill_rows : 64, 0, err) != 0)
        return -1;
    float *logits = malloc((size_t)d->cfg.vocab * sizeof *logits);
    int rc = -1;
    if (!logits) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    e->t0 = e->t_first = e->t_last = sq_gen_now();
    if (sq_decoder_forward(d, &st, prompt, n_prompt, 0, logits, false, err) != 0)
        goto out;
    int pos = n_prompt;
    for (;;) {
        int32_t next = sq_sample(sm, logits);
        if (sq_gen_emit_token(e, next))
            break;
        if (pos >= st.max_pos) {
            e->stats->stop = SQ_GEN_STOP_CONTEXT;
            break;
        }
        if (sq_decoder_forward(d, &st, &next, 1, pos, logits, false, err) != 0)
            goto out;
        pos++;
    }
    rc = 0;
out:
    free(logits);
    sq_decoder_state_free(&st);
    return rc;
}

int sq_generate(const sq_llama_model *m, const int32_t *prompt, int n_prompt,
                const sq_gen_opts *o, sq_gen_token_fn cb, void *ctx, sq_gen_stats *stats,
                sq_err *err)
{
    const sq_decoder *d = &m->dec;
    *stats = (sq_gen_stats){.prompt_tokens = n_prompt, .stop = SQ_GEN_STOP_MAX};
    if (n_prompt < 1)
        return sq_err_set(err, "an empty prompt (BOS at least is needed)");
    if (n_prompt >= d->cfg.max_pos)
        return sq_err_set(err, "the prompt has %d tokens; the model's context is %d", n_prompt,
                          d->cfg.max_pos);
    if (o->draft && (o->draft_tokens < 0 || o->draft_tokens > SQ_GEN_MAX_DRAFT))
        return sq_err_set(err, "draft tokens must be in [1, %d]", SQ_GEN_MAX_DRAFT);
    if (o->draft && sq_gen_check_draft(m, o->draft, err) != 0)
        return -1;
    if (o->max_tokens <= 0)
        return 0;
    sq_sampler sm;
    if (sq_sampler_init(&sm, d->cfg.vocab, o->temperature, o->top_p, o->seed) != 0)
        return sq_err_set(err, "out of memory");
    sq_gen_emit e = {.m = m, .max_tokens = o->max_tokens, .cb = cb, .ctx = ctx, .stats = stats,
                     .prev = prompt[n_prompt - 1]};
    int rc = o->draft ? sq_gen_assisted(m, prompt, n_prompt, o, &sm, &e, err)
                      : plain_loop(m, prompt, n_prompt, o, &sm, &e, err);
    stats->ttft_s = e.t_first - e.t0;
    stats->decode_s = e.t_last - e.t_first;
    sq_sampler_free(&sm);
    return rc;
}

#include "dec_calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "fileio.h"

int sq_dec_model_digest(const sq_llama_model *m, const char *model_arg, sq_model_digest *md,
                        sq_err *err)
{
    /* an HF folder: its files that decide the outputs (config, weights,
     * tokenizer.json), as for an encoder checkpoint */
    if (sq_dir_exists(model_arg))
        return sq_model_digest_dir(model_arg, md, err);
    const char *files[2] = {model_arg, m->tokenizer_path};
    return sq_model_digest_files(files, 2, md, err);
}

/* Every sample through the decoder: BOS + text, truncated or windowed to
 * max_seq, each sequence from position 0. Counts sequences and tokens. */
static int run_samples(const sq_llama_model *m, const sq_corpus_samples *smp, int max_seq,
                       bool windows, int rows, const sq_observer *obs, int64_t max_sequences,
                       uint64_t *n_seq, uint64_t *n_tok,
                       void (*progress)(void *, int64_t, int64_t), void *pctx, sq_err *err)
{
    const sq_decoder *d = &m->dec;
    if (max_seq <= 0 || max_seq > d->cfg.max_pos)
        max_seq = d->cfg.max_pos;
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, d, rows > 0 ? rows : 64, max_seq, err) != 0)
        return -1;
    st.obs = obs;
    float *logits = malloc((size_t)d->cfg.vocab * sizeof *logits);
    int rc = logits ? 0 : sq_err_set(err, "out of memory");
    *n_seq = *n_tok = 0;
    for (size_t i = 0; rc == 0 && i < smp->count; i++) {
        int32_t *ids = NULL;
        int64_t n = sq_tokenizer_encode_all(m->tok, smp->text[i], smp->len[i], true, false, &ids);
        if (n < 0) {
            rc = sq_err_set(err, "out of memory encoding sample %zu", i);
            break;
        }
        for (int64_t off = 0; rc == 0 && off < n; off += max_seq) {
            if (max_sequences > 0 && (int64_t)*n_seq >= max_sequences)
                break;
            const int len = (int)(n - off < max_seq ? n - off : max_seq);
            rc = sq_decoder_forward(d, &st, ids + off, len, 0, logits, false, err);
            (*n_seq)++;
            *n_tok += (uint64_t)len;
            if (!windows)
                break;
        }
        free(ids);
        if (progress)
            progress(pctx, (int64_t)i + 1, (int64_t)smp->count);
    }
    free(logits);
    sq_decoder_state_free(&st);
    return rc;
}

int sq_dec_calibrate(const sq_llama_model *m, const char *model_arg, const sq_calibrate_opts *o,
                     sq_calib_stats *st, sq_err *err)
{
    if (o->n_corpus == 0)
        return sq_err_set(err, "%s is a causal LM: give the calibration text with --corpus (the "
                               "bundled corpus is for encoders)", model_arg);
    sq_corpus_samples smp;
    if (sq_corpus_sample(o->corpus, o->n_corpus, &o->corpus_opts, o->samples, o->seed, &smp,
                         err) != 0)
        return -1;
    sq_model_digest md = {0};
    int rc = -1;
    if (sq_calib_stats_init_decoder(st, &m->dec.cfg, err) != 0)
        goto out;
    if (sq_dec_model_digest(m, model_arg, &md, err) != 0 ||
        sq_calib_record_provenance(st, &md, model_arg, o, &smp, err) != 0)
        goto fail;
    if (st->max_seq <= 0 || st->max_seq > m->dec.cfg.max_pos)
        st->max_seq = m->dec.cfg.max_pos;
    st->n_texts = smp.count;
    sq_observer obs = sq_calib_stats_observer(st);
    if (run_samples(m, &smp, st->max_seq, o->windows, o->batch, &obs, 0, &st->n_sequences,
                    &st->n_tokens, o->progress, o->progress_ctx, err) != 0 ||
        sq_calib_stats_check(st, err) != 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    sq_calib_stats_free(st);
out:
    sq_model_digest_free(&md);
    sq_corpus_samples_free(&smp);
    return rc;
}

int sq_dec_calib_replay(const sq_llama_model *m, const sq_calib_stats *st,
                        const char *const *corpus_override, size_t n_override,
                        const sq_observer *obs, int64_t max_sequences, sq_err *err)
{
    sq_corpus_samples smp;
    if (sq_calib_replay_samples(st, NULL, corpus_override, n_override, &smp, err) != 0)
        return -1;
    uint64_t ns, nt;
    int rc = run_samples(m, &smp, st->max_seq, st->windows, 64, obs, max_sequences, &ns, &nt,
                         NULL, NULL, err);
    sq_corpus_samples_free(&smp);
    return rc;
}

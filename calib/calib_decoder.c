/* Causal LMs (Llama family) as a calibration target: BOS + text through
 * the fp32 decoder, each sequence from position 0. */
#include "calibrate.h"

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

/* A causal embedding model's sequence: prefix, the text's ids cut to
 * max_seq less the special tokens, suffix (embedder.c's rule). */
static int wrap_ids(const sq_hf_single_template *w, int32_t **ids, int64_t *n, int max_seq)
{
    int64_t body = max_seq - w->n_prefix - w->n_suffix;
    if (body < 1)
        body = 1;
    if (*n > body)
        *n = body;
    int32_t *out = malloc((size_t)(*n + w->n_prefix + w->n_suffix) * sizeof *out);
    if (!out)
        return -1;
    memcpy(out, w->prefix, (size_t)w->n_prefix * sizeof *out);
    if (*n > 0)
        memcpy(out + w->n_prefix, *ids, (size_t)*n * sizeof *out);
    memcpy(out + w->n_prefix + *n, w->suffix, (size_t)w->n_suffix * sizeof *out);
    free(*ids);
    *ids = out;
    *n += w->n_prefix + w->n_suffix;
    return 0;
}

/* Every sample through the decoder: BOS + text, truncated or windowed to
 * max_seq, each sequence from position 0, r->batch rows per prefill step
 * (0: 64). max_sequences > 0: the first that many. */
static int dec_run(const sq_calib_target *t, const sq_corpus_samples *smp, sq_calib_run *r,
                   sq_err *err)
{
    const sq_llama_model *m = t->model;
    const sq_decoder *d = &m->dec;
    int max_seq = r->max_seq, rows = r->batch;
    const bool windows = r->windows;
    const int64_t max_sequences = r->max_sequences;
    uint64_t *n_seq = &r->n_sequences, *n_tok = &r->n_tokens;
    if (max_seq <= 0 || max_seq > d->cfg.max_pos)
        max_seq = d->cfg.max_pos;
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, d, rows > 0 ? rows : 64, max_seq, err) != 0)
        return -1;
    st.obs = r->obs;
    /* a causal embedding model sees its texts as embed feeds them (the
     * tokenizer's special tokens around each, no BOS) and never its LM head */
    const bool emb = m->emb.on;
    const sq_hf_single_template *wrap = &m->emb.wrap;
    float *logits = malloc((size_t)(emb ? d->cfg.dim : d->cfg.vocab) * sizeof *logits);
    int rc = logits ? 0 : sq_err_set(err, "out of memory");
    *n_seq = *n_tok = 0;
    for (size_t i = 0; rc == 0 && i < smp->count; i++) {
        int32_t *ids = NULL;
        int64_t n = sq_tokenizer_encode_all(m->tok, smp->text[i], smp->len[i], !emb, false, &ids);
        if (n >= 0 && emb && wrap_ids(wrap, &ids, &n, max_seq) != 0)
            n = -1;
        if (n < 0) {
            rc = sq_err_set(err, "out of memory encoding sample %zu", i);
            break;
        }
        for (int64_t off = 0; rc == 0 && off < n; off += max_seq) {
            if (max_sequences > 0 && (int64_t)*n_seq >= max_sequences)
                break;
            const int len = (int)(n - off < max_seq ? n - off : max_seq);
            rc = emb ? sq_decoder_last_hidden(d, &st, ids + off, len, 0, logits, err)
                     : sq_decoder_forward(d, &st, ids + off, len, 0, logits, false, err);
            (*n_seq)++;
            *n_tok += (uint64_t)len;
            if (!windows)
                break;
        }
        free(ids);
        if (r->progress)
            r->progress(r->progress_ctx, (int64_t)i + 1, (int64_t)smp->count);
    }
    free(logits);
    sq_decoder_state_free(&st);
    return rc;
}

static int dec_init_stats(const sq_calib_target *t, sq_calib_stats *st, sq_err *err)
{
    const sq_llama_model *m = t->model;
    return sq_calib_stats_init_decoder(st, &m->dec.cfg, err);
}

static int dec_digest(const sq_calib_target *t, const char *model_arg, sq_model_digest *md,
                      sq_err *err)
{
    return sq_dec_model_digest(t->model, model_arg, md, err);
}

sq_calib_target sq_calib_target_decoder(const sq_llama_model *m)
{
    return (sq_calib_target){
        .model = (void *)m,
        .max_pos = m->dec.cfg.max_pos,
        /* the bundled corpus is sentences to embed: right for a causal
         * embedding model (Qwen3-Embedding), not for a language model */
        .no_bundled = m->emb.on ? NULL
                                : "%s is a causal LM: give the calibration text with --corpus "
                                  "(the bundled corpus is for embedding models)",
        .init_stats = dec_init_stats,
        .digest = dec_digest,
        .run = dec_run,
    };
}

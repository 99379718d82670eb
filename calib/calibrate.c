#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "embedder.h"

static int record_provenance(sq_embed_model *m, const char *model_arg, const sq_calibrate_opts *o,
                             const sq_corpus_samples *smp, sq_calib_stats *st, sq_err *err)
{
    sq_model_digest md;
    if (sq_model_digest_dir(m->ckpt.dir, &md, err) != 0)
        return -1;
    st->model_digest = md.combined;
    st->model_files = md.files; /* take ownership */
    st->n_model_files = md.n_files;
    st->model_source = strdup(model_arg);
    st->corpus_files = calloc(smp->n_files ? smp->n_files : 1, sizeof *st->corpus_files);
    if (!st->model_source || !st->corpus_files)
        return sq_err_set(err, "out of memory");
    for (size_t i = 0; i < smp->n_files; i++) {
        st->corpus_files[i].name = strdup(o->n_corpus ? smp->files[i].path : "(bundled) qasper-calib.jsonl.zst");
        st->corpus_files[i].size = smp->files[i].size;
        st->corpus_files[i].xxh64 = smp->files[i].xxh64;
        st->n_corpus_files++;
    }
    st->corpus_bundled = o->n_corpus == 0;
    st->corpus_format = strdup(sq_corpus_format_name(o->corpus_opts.format));
    st->corpus_field = o->corpus_opts.field ? strdup(o->corpus_opts.field) : NULL;
    st->qasper_parts = o->corpus_opts.qasper_parts ? strdup(o->corpus_opts.qasper_parts) : NULL;
    st->samples_requested = o->samples;
    st->seed = o->seed;
    st->max_seq = o->max_seq;
    st->windows = o->windows;
    st->scale = o->scale;
    st->date = sq_calib_date_now();
    return 0;
}

int sq_calibrate(sq_embed_model *m, const char *model_arg, const sq_calibrate_opts *o,
                 sq_calib_stats *st, sq_err *err)
{
    const char *bundled[1] = {o->bundled_corpus};
    const char *const *paths = o->n_corpus ? o->corpus : bundled;
    size_t n_paths = o->n_corpus ? o->n_corpus : 1;
    sq_corpus_samples smp;
    if (sq_corpus_sample(paths, n_paths, &o->corpus_opts, o->samples, o->seed, &smp, err) != 0)
        return -1;
    sq_token_seqs seqs = {0};
    int rc = -1;
    if (sq_calib_stats_init(st, &m->enc.cfg, err) != 0)
        goto out;
    if (record_provenance(m, model_arg, o, &smp, st, err) != 0)
        goto fail;
    if (sq_tokenize_texts(m, (const char *const *)smp.text, smp.len, (int64_t)smp.count,
                          o->max_seq, o->windows, &seqs, err) != 0)
        goto fail;
    st->n_texts = smp.count;
    st->n_sequences = (uint64_t)seqs.n;
    st->n_tokens = (uint64_t)seqs.offsets[seqs.n];
    sq_observer obs = sq_calib_stats_observer(st);
    sq_embed_opts eo = {.batch = o->batch, .max_seq = o->max_seq, .observer = &obs,
                        .progress = o->progress, .progress_ctx = o->progress_ctx};
    if (sq_encode_seqs(m, &seqs, &eo, NULL, err) != 0 || sq_calib_stats_check(st, err) != 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    sq_calib_stats_free(st);
out:
    sq_token_seqs_free(&seqs);
    sq_corpus_samples_free(&smp);
    return rc;
}

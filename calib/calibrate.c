/* The one calibrate driver (calibrate.h): sampling, provenance, the run
 * through the family's target, and the replays the quantizer asks for. */
#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "file_hash.h"

/* The provenance of a run into st: the model digest (taken: *md is
 * emptied), model_arg as the source, the corpus files and sampling. */
static int record_provenance(sq_calib_stats *st, sq_model_digest *md_in, const char *model_arg,
                             const sq_calibrate_opts *o, const sq_corpus_samples *smp,
                             sq_err *err)
{
    sq_model_digest md = *md_in;
    memset(md_in, 0, sizeof *md_in);
    st->model_digest = md.combined;
    st->model_files = md.files; /* take ownership */
    st->n_model_files = md.n_files;
    st->model_source = strdup(model_arg);
    st->corpus_files = calloc(smp->n_files ? smp->n_files : 1, sizeof *st->corpus_files);
    if (!st->model_source || !st->corpus_files)
        return sq_err_set(err, "out of memory");
    for (size_t i = 0; i < smp->n_files; i++) {
        st->corpus_files[i].name =
            strdup(o->n_corpus ? smp->files[i].path
                   : o->corpus_opts.pair_field ? "(bundled) " SQ_BUNDLED_PAIR_CORPUS
                                               : "(bundled) " SQ_BUNDLED_CORPUS);
        st->corpus_files[i].size = smp->files[i].size;
        st->corpus_files[i].xxh64 = smp->files[i].xxh64;
        st->n_corpus_files++;
    }
    st->corpus_bundled = o->n_corpus == 0;
    st->corpus_format = strdup(sq_corpus_format_name(o->corpus_opts.format));
    st->corpus_field = o->corpus_opts.field ? strdup(o->corpus_opts.field) : NULL;
    st->corpus_pair_field = o->corpus_opts.pair_field ? strdup(o->corpus_opts.pair_field) : NULL;
    st->qasper_parts = o->corpus_opts.qasper_parts ? strdup(o->corpus_opts.qasper_parts) : NULL;
    st->samples_requested = o->samples;
    st->seed = o->seed;
    st->max_seq = o->max_seq;
    st->windows = o->windows;
    st->scale = o->scale;
    st->date = sq_calib_date_now();
    return 0;
}

int sq_calibrate(const sq_calib_target *t, const char *model_arg, const sq_calibrate_opts *o,
                 sq_calib_stats *st, sq_err *err)
{
    if (t->refuse)
        return sq_err_set(err, t->refuse, model_arg);
    if (!o->n_corpus && t->no_bundled)
        return sq_err_set(err, t->no_bundled, model_arg);
    if (!o->n_corpus && !o->bundled_corpus)
        return sq_err_set(err, "the bundled calibration corpus (%s) is not installed "
                              "next to the squint executable (share/squint) and SQUINT_DATA "
                              "does not point to it: pass the corpus explicitly",
                          o->corpus_opts.pair_field ? SQ_BUNDLED_PAIR_CORPUS : SQ_BUNDLED_CORPUS);
    const char *bundled[1] = {o->bundled_corpus};
    const char *const *paths = o->n_corpus ? o->corpus : bundled;
    size_t n_paths = o->n_corpus ? o->n_corpus : 1;
    sq_corpus_samples smp;
    if (sq_corpus_sample(paths, n_paths, &o->corpus_opts, o->samples, o->seed, &smp, err) != 0)
        return -1;
    sq_model_digest md = {0};
    int rc = -1;
    if (t->init_stats(t, st, err) != 0)
        goto out;
    if (t->digest(t, model_arg, &md, err) != 0 ||
        record_provenance(st, &md, model_arg, o, &smp, err) != 0)
        goto fail;
    if (st->max_seq <= 0 || st->max_seq > t->max_pos)
        st->max_seq = t->max_pos;
    st->n_texts = smp.count;
    sq_observer obs = sq_calib_stats_observer(st);
    sq_calib_run r = {.max_seq = st->max_seq, .windows = o->windows,
                      .pairs = o->corpus_opts.pair_field != NULL, .batch = o->batch,
                      .obs = &obs, .progress = o->progress, .progress_ctx = o->progress_ctx};
    if (t->run(t, &smp, &r, err) != 0)
        goto fail;
    st->n_sequences = r.n_sequences;
    st->n_tokens = r.n_tokens;
    if (sq_calib_stats_check(st, err) != 0)
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

/* The samples a replay of st runs: its corpus files (hashes checked) or
 * corpus_override, its seed and sample count. */
static int replay_samples(const sq_calib_stats *st, const char *bundled_corpus,
                          const char *const *corpus_override, size_t n_override,
                          sq_corpus_samples *smp, sq_err *err)
{
    const char **paths = calloc((size_t)st->n_corpus_files + n_override + 1, sizeof *paths);
    size_t n_paths = 0;
    if (!paths)
        return sq_err_set(err, "out of memory");
    if (n_override) {
        for (size_t i = 0; i < n_override; i++)
            paths[n_paths++] = corpus_override[i];
    } else if (st->runs > 1) {
        free(paths);
        return sq_err_set(err, "the statistics merge %d calibration runs (calibrate --merge), "
                               "whose samples cannot be replayed as one run: quantize replays "
                               "calibration texts for the activation rows, so pass them with "
                               "--corpus FILE (repeatable)",
                          st->runs);
    } else {
        for (int i = 0; i < st->n_corpus_files; i++) {
            const sq_file_digest *f = &st->corpus_files[i];
            const char *p = st->corpus_bundled ? bundled_corpus : f->name;
            if (!p) {
                free(paths);
                return sq_err_set(err, "the bundled calibration corpus (%s) is not installed "
                              "next to the squint executable (share/squint) and SQUINT_DATA "
                              "does not point to it: pass the corpus explicitly",
                              st->corpus_pair_field ? SQ_BUNDLED_PAIR_CORPUS : SQ_BUNDLED_CORPUS);
            }
            uint64_t size, h;
            if (sq_hash_file(p, &size, &h, err) != 0 || size != f->size || h != f->xxh64) {
                free(paths);
                return sq_err_set(err, "calibration corpus %s is missing or changed since "
                                       "calibration (pass --corpus)", p);
            }
            paths[n_paths++] = p;
        }
    }
    sq_corpus_opts co = {0};
    if (st->corpus_format && sq_corpus_parse_format(st->corpus_format, &co.format, err) != 0) {
        free(paths);
        return -1;
    }
    co.field = st->corpus_field;
    co.pair_field = st->corpus_pair_field;
    co.qasper_parts = st->qasper_parts;
    int rc = sq_corpus_sample(paths, n_paths, &co, st->samples_requested, st->seed, smp, err);
    free(paths);
    return rc;
}

int sq_calib_replay(const sq_calib_target *t, const sq_calib_stats *st,
                    const char *bundled_corpus, const char *const *corpus_override,
                    size_t n_override, int batch, const sq_observer *obs, int64_t max_sequences,
                    sq_err *err)
{
    sq_corpus_samples smp;
    if (replay_samples(st, bundled_corpus, corpus_override, n_override, &smp, err) != 0)
        return -1;
    sq_calib_run r = {.max_seq = st->max_seq < t->max_pos ? st->max_seq : t->max_pos,
                      .windows = st->windows, .pairs = st->corpus_pair_field != NULL,
                      .batch = batch, .obs = obs, .max_sequences = max_sequences};
    int rc = t->run(t, &smp, &r, err);
    sq_corpus_samples_free(&smp);
    return rc;
}

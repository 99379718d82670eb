#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "embedder.h"
#include "file_hash.h"
#include "seq_classify.h"

static int record_provenance(sq_embed_model *m, const char *model_arg, const sq_calibrate_opts *o,
                             const sq_corpus_samples *smp, sq_calib_stats *st, sq_err *err)
{
    sq_model_digest md;
    if (sq_model_digest_dir(m->model_dir, &md, err) != 0)
        return -1;
    return sq_calib_record_provenance(st, &md, model_arg, o, smp, err);
}

int sq_calib_record_provenance(sq_calib_stats *st, sq_model_digest *md_in, const char *model_arg,
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

/* The samples as the encoder sees them: text pairs (a NUL b, from a pair
 * field) as [CLS] a [SEP] b [SEP] with token types, else single texts. */
static int tokenize_samples(const sq_embed_model *m, const sq_corpus_samples *smp, bool pairs,
                            int max_seq, bool windows, sq_token_seqs *seqs, sq_err *err)
{
    if (!pairs)
        return sq_tokenize_texts(m, (const char *const *)smp->text, smp->len,
                                 (int64_t)smp->count, max_seq, windows, seqs, err);
    if (windows)
        return sq_err_set(err, "text pairs are truncated, not split into windows");
    const char **b = malloc((smp->count ? smp->count : 1) * sizeof *b);
    size_t *na = malloc((smp->count ? smp->count : 1) * sizeof *na);
    size_t *nb = malloc((smp->count ? smp->count : 1) * sizeof *nb);
    int rc = -1;
    if (!b || !na || !nb) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < smp->count; i++)
        if (!sq_corpus_split_pair(smp->text[i], smp->len[i], &na[i], &b[i], &nb[i])) {
            sq_err_set(err, "sample %zu is not a text pair", i);
            goto out;
        }
    rc = sq_tokenize_pairs(m, (const char *const *)smp->text, na, b, nb, (int64_t)smp->count,
                           max_seq, seqs, err);
out:
    free(b);
    free(na);
    free(nb);
    return rc;
}

void sq_calibrate_pick_corpus(const sq_embed_model *m, sq_calibrate_opts *o)
{
    if (o->n_corpus == 0 && sq_model_is_classifier(m)) {
        o->corpus_opts.field = "query";
        o->corpus_opts.pair_field = "document";
        o->corpus_opts.format = SQ_CORPUS_JSONL;
    }
}

int sq_calibrate(sq_embed_model *m, const char *model_arg, const sq_calibrate_opts *o,
                 sq_calib_stats *st, sq_err *err)
{
    if (m->is_sqm)
        return sq_err_set(err, "%s is a packed model: calibrate the fp32 checkpoint it came from",
                          model_arg);
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
    sq_token_seqs seqs = {0};
    int rc = -1;
    if (sq_calib_stats_init(st, &m->enc.cfg, err) != 0)
        goto out;
    if (record_provenance(m, model_arg, o, &smp, st, err) != 0)
        goto fail;
    if (tokenize_samples(m, &smp, o->corpus_opts.pair_field != NULL, o->max_seq, o->windows,
                         &seqs, err) != 0)
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

int sq_calib_replay_samples(const sq_calib_stats *st, const char *bundled_corpus,
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
        return sq_err_set(err, "the statistics merge %d calibration runs, which cannot be "
                               "replayed; pass --corpus", st->runs);
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

int sq_calib_replay(sq_embed_model *m, const sq_calib_stats *st, const char *bundled_corpus,
                    const char *const *corpus_override, size_t n_override, int batch,
                    const sq_observer *obs, int64_t max_sequences, sq_err *err)
{
    sq_corpus_samples smp;
    if (sq_calib_replay_samples(st, bundled_corpus, corpus_override, n_override, &smp, err) != 0)
        return -1;
    int rc;
    sq_token_seqs seqs = {0};
    rc = -1;
    int max_seq = st->max_seq < m->enc.cfg.max_pos ? st->max_seq : m->enc.cfg.max_pos;
    if (tokenize_samples(m, &smp, st->corpus_pair_field != NULL, max_seq, st->windows, &seqs,
                         err) != 0)
        goto out;
    if (max_sequences > 0 && seqs.n > max_sequences) {
        /* Keep the longest sequences: the run's batch order starts with them. */
        int64_t *order = malloc((size_t)seqs.n * sizeof *order);
        if (!order) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        for (int64_t i = 0; i < seqs.n; i++)
            order[i] = i;
        /* selection by length desc, ties by position (insertion sort is fine: bounded n) */
        for (int64_t i = 1; i < seqs.n; i++) {
            int64_t v = order[i], lv = seqs.offsets[v + 1] - seqs.offsets[v], j = i;
            while (j > 0) {
                int64_t u = order[j - 1], lu = seqs.offsets[u + 1] - seqs.offsets[u];
                if (lu > lv || (lu == lv && u < v))
                    break;
                order[j] = u;
                j--;
            }
            order[j] = v;
        }
        sq_token_seqs sub = {0};
        sub.offsets = malloc((size_t)(max_sequences + 1) * sizeof *sub.offsets);
        sub.source = malloc((size_t)max_sequences * sizeof *sub.source);
        int64_t ntok = 0;
        for (int64_t i = 0; i < max_sequences; i++)
            ntok += seqs.offsets[order[i] + 1] - seqs.offsets[order[i]];
        sub.ids = malloc((size_t)ntok * sizeof *sub.ids);
        if (seqs.types)
            sub.types = malloc((size_t)ntok * sizeof *sub.types);
        if (!sub.offsets || !sub.source || !sub.ids || (seqs.types && !sub.types)) {
            free(order);
            sq_token_seqs_free(&sub);
            sq_err_set(err, "out of memory");
            goto out;
        }
        sub.offsets[0] = 0;
        for (int64_t i = 0; i < max_sequences; i++) {
            int64_t v = order[i], L = seqs.offsets[v + 1] - seqs.offsets[v];
            memcpy(sub.ids + sub.offsets[i], seqs.ids + seqs.offsets[v], (size_t)L * sizeof(int32_t));
            if (sub.types)
                memcpy(sub.types + sub.offsets[i], seqs.types + seqs.offsets[v],
                       (size_t)L * sizeof(int32_t));
            sub.offsets[i + 1] = sub.offsets[i] + L;
            sub.source[i] = seqs.source[v];
        }
        sub.n = max_sequences;
        free(order);
        sq_token_seqs_free(&seqs);
        seqs = sub;
    }
    sq_embed_opts eo = {.batch = batch, .max_seq = max_seq, .observer = obs};
    rc = sq_encode_seqs(m, &seqs, &eo, NULL, err);
out:
    sq_token_seqs_free(&seqs);
    sq_corpus_samples_free(&smp);
    return rc;
}

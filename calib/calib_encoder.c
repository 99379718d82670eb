/* Encoders (BERT family, USE Lite, cross-encoders) as a calibration target:
 * samples tokenized as the encoder sees them (text pairs as [CLS] a [SEP] b
 * [SEP]) and run through the fp32 encoder, batched. */
#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

#include "embedder.h"
#include "seq_classify.h"

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

static int enc_init_stats(const sq_calib_target *t, sq_calib_stats *st, sq_err *err)
{
    const sq_embed_model *m = t->model;
    return sq_calib_stats_init(st, &m->enc.cfg, err);
}

static int enc_digest(const sq_calib_target *t, const char *model_arg, sq_model_digest *md,
                      sq_err *err)
{
    const sq_embed_model *m = t->model;
    return sq_model_digest_dir(m->model_dir, md, err);
}

/* max_sequences > 0: the longest sequences (the run's batch order starts
 * with them). */
static int enc_run(const sq_calib_target *t, const sq_corpus_samples *smp, sq_calib_run *r,
                   sq_err *err)
{
    sq_embed_model *m = t->model;
    sq_token_seqs seqs = {0};
    int rc = -1;
    if (tokenize_samples(m, smp, r->pairs, r->max_seq, r->windows, &seqs, err) != 0)
        goto out;
    if (r->max_sequences > 0 && seqs.n > r->max_sequences) {
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
        sub.offsets = malloc((size_t)(r->max_sequences + 1) * sizeof *sub.offsets);
        sub.source = malloc((size_t)r->max_sequences * sizeof *sub.source);
        int64_t ntok = 0;
        for (int64_t i = 0; i < r->max_sequences; i++)
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
        for (int64_t i = 0; i < r->max_sequences; i++) {
            int64_t v = order[i], L = seqs.offsets[v + 1] - seqs.offsets[v];
            memcpy(sub.ids + sub.offsets[i], seqs.ids + seqs.offsets[v], (size_t)L * sizeof(int32_t));
            if (sub.types)
                memcpy(sub.types + sub.offsets[i], seqs.types + seqs.offsets[v],
                       (size_t)L * sizeof(int32_t));
            sub.offsets[i + 1] = sub.offsets[i] + L;
            sub.source[i] = seqs.source[v];
        }
        sub.n = r->max_sequences;
        free(order);
        sq_token_seqs_free(&seqs);
        seqs = sub;
    }
    r->n_sequences = (uint64_t)seqs.n;
    r->n_tokens = (uint64_t)seqs.offsets[seqs.n];
    sq_embed_opts eo = {.batch = r->batch, .max_seq = r->max_seq, .observer = r->obs,
                        .progress = r->progress, .progress_ctx = r->progress_ctx};
    rc = sq_encode_seqs(m, &seqs, &eo, NULL, err);
out:
    sq_token_seqs_free(&seqs);
    return rc;
}

sq_calib_target sq_calib_target_encoder(sq_embed_model *m)
{
    return (sq_calib_target){
        .model = m,
        .max_pos = sq_bert_max_tokens(&m->enc.cfg),
        .refuse = m->is_sqm ? "%s is a packed model: calibrate the fp32 checkpoint it came from"
                            : NULL,
        .init_stats = enc_init_stats,
        .digest = enc_digest,
        .run = enc_run,
    };
}

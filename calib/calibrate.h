/* A calibration run: draw samples from the corpus, tokenize them (truncated
 * or in windows), run the fp32 executor with the statistics observer on every
 * linear input, and fill a calib_stats with the results and provenance. */
#ifndef SQ_CALIBRATE_H
#define SQ_CALIBRATE_H

#include "calib_stats.h"
#include "corpus.h"
#include "embed_model.h"

/* The bundled corpora (calib/data): texts, and query/document pairs for
 * cross-encoders (JSONL fields "query" and "document"). */
#define SQ_BUNDLED_CORPUS "qasper-calib.jsonl.zst"
#define SQ_BUNDLED_PAIR_CORPUS "qasper-pairs.jsonl.zst"

typedef struct sq_calibrate_opts {
    const char *const *corpus;  /* corpus files; n_corpus == 0: the bundled corpus */
    size_t n_corpus;
    const char *bundled_corpus; /* path of the bundled corpus (the pair corpus when
                                   corpus_opts.pair_field is set) */
    sq_corpus_opts corpus_opts;
    uint64_t samples;           /* texts to draw; 0 = all */
    uint64_t seed;
    int max_seq;
    bool windows;               /* split long texts instead of truncating */
    int batch;
    sq_scale_params scale;
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
} sq_calibrate_opts;

/* A sequence classifier (a cross-encoder) calibrated without a corpus of
 * its own reads the bundled pair corpus: set o's fields for it (query,
 * document). No-op otherwise. */
void sq_calibrate_pick_corpus(const sq_embed_model *m, sq_calibrate_opts *o);

/* model_arg is recorded as the model source; m->ckpt.dir is hashed. */
int sq_calibrate(sq_embed_model *m, const char *model_arg, const sq_calibrate_opts *o,
                 sq_calib_stats *out, sq_err *err);

#endif

/* Run the calibration samples recorded in `st` through the encoder again,
 * with another observer: the same corpus files (their hashes must match;
 * corpus_override replaces them), the same seed, sample count, max-seq and
 * windowing, hence the same sequences in the same order. max_sequences > 0
 * stops after that many sequences (longest first). */
int sq_calib_replay(sq_embed_model *m, const sq_calib_stats *st, const char *bundled_corpus,
                    const char *const *corpus_override, size_t n_override, int batch,
                    const sq_observer *obs, int64_t max_sequences, sq_err *err);

/* The provenance of a run into st: the model digest (taken: *md is
 * emptied), model_arg as the source, the corpus files and sampling. */
int sq_calib_record_provenance(sq_calib_stats *st, sq_model_digest *md, const char *model_arg,
                               const sq_calibrate_opts *o, const sq_corpus_samples *smp,
                               sq_err *err);

/* The samples a replay of st runs: its corpus files (hashes checked) or
 * corpus_override, its seed and sample count (sq_calib_replay's first half;
 * the decoder's replay tokenizes them its own way). */
int sq_calib_replay_samples(const sq_calib_stats *st, const char *bundled_corpus,
                            const char *const *corpus_override, size_t n_override,
                            sq_corpus_samples *smp, sq_err *err);

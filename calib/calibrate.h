/* A calibration run: draw samples from the corpus, tokenize them (truncated
 * or in windows), run the fp32 executor with the statistics observer on every
 * linear input, and fill a calib_stats with the results and provenance. One
 * driver for every model family (sq_calibrate, sq_calib_replay); a family
 * gives what is its own through an sq_calib_target: the shape of its
 * statistics, its identity, and how samples run through it (calib_encoder.c,
 * calib_decoder.c). */
#ifndef SQ_CALIBRATE_H
#define SQ_CALIBRATE_H

#include "calib_stats.h"
#include "corpus.h"
#include "embed_model.h"
#include "file_hash.h"
#include "llama_model.h"

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
    int max_seq;                /* 0: the model's longest */
    bool windows;               /* split long texts instead of truncating */
    int batch;
    sq_scale_params scale;
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
} sq_calibrate_opts;

/* One pass of samples through a model. */
typedef struct sq_calib_run {
    int max_seq;           /* tokens per sequence */
    bool windows;          /* split long texts instead of truncating */
    bool pairs;            /* samples are text pairs (a NUL b) */
    int batch;
    const sq_observer *obs;
    int64_t max_sequences; /* > 0: at most that many (the family says which) */
    void (*progress)(void *ctx, int64_t done, int64_t total);
    void *progress_ctx;
    uint64_t n_sequences, n_tokens; /* out */
} sq_calib_run;

typedef struct sq_calib_target sq_calib_target;
struct sq_calib_target {
    void *model;
    int max_pos;            /* the longest sequence the model takes */
    const char *refuse;     /* non-NULL: why this model cannot be calibrated
                               ("%s": the model argument) */
    const char *no_bundled; /* non-NULL: the family has no bundled corpus; the
                               message without --corpus ("%s": the model argument) */
    int (*init_stats)(const sq_calib_target *t, sq_calib_stats *st, sq_err *err);
    /* the checkpoint's files: the model's identity */
    int (*digest)(const sq_calib_target *t, const char *model_arg, sq_model_digest *md,
                  sq_err *err);
    int (*run)(const sq_calib_target *t, const sq_corpus_samples *smp, sq_calib_run *r,
               sq_err *err);
};

/* The families' targets. */
sq_calib_target sq_calib_target_encoder(sq_embed_model *m);
sq_calib_target sq_calib_target_decoder(const sq_llama_model *m);

/* A sequence classifier (a cross-encoder) calibrated without a corpus of
 * its own reads the bundled pair corpus: set o's fields for it (query,
 * document). No-op otherwise. */
void sq_calibrate_pick_corpus(const sq_embed_model *m, sq_calibrate_opts *o);

/* model_arg is recorded as the model source, its files' digest as its identity. */
int sq_calibrate(const sq_calib_target *t, const char *model_arg, const sq_calibrate_opts *o,
                 sq_calib_stats *out, sq_err *err);

/* Run the calibration samples recorded in `st` through the model again,
 * with another observer: the same corpus files (their hashes must match;
 * corpus_override replaces them), the same seed, sample count, max-seq and
 * windowing, hence the same sequences in the same order. max_sequences > 0
 * stops after that many sequences (an encoder's longest, a decoder's first). */
int sq_calib_replay(const sq_calib_target *t, const sq_calib_stats *st,
                    const char *bundled_corpus, const char *const *corpus_override,
                    size_t n_override, int batch, const sq_observer *obs, int64_t max_sequences,
                    sq_err *err);

/* The model digest of a causal LM: an HF folder's files, or the llama2.c
 * checkpoint and its tokenizer file. */
int sq_dec_model_digest(const sq_llama_model *m, const char *model_arg, sq_model_digest *md,
                        sq_err *err);

#endif

/* The calibration statistics of one model: an act_stats (per-channel max|x|,
 * sum x^2, min/max, |x| histogram) for the input of every linear of every
 * layer, the attention-probability range per layer, the observer settings and
 * the provenance (model and corpus hashes, sampling, tool version, date).
 * Saved as a .sqc file in the shared container (formats/SPEC.md); the layout
 * of its tensors and metadata is in calib/SQC.md. */
#ifndef SQ_CALIB_STATS_H
#define SQ_CALIB_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "act_stats.h"
#include "decoder_config.h"
#include "encoder.h"
#include "file_hash.h"
#include "scale_select.h"

#define SQ_SQC_FORMAT_VERSION 1

typedef struct sq_calib_stats {
    sq_bert_config cfg;    /* an encoder's (decoder false) */
    bool decoder;          /* statistics of a causal LM: dec is its shape */
    sq_decoder_config dec;
    sq_act_stats *lin;  /* [layers * SQ_LIN_KINDS], index layer * SQ_LIN_KINDS + kind */
    float *attn_pmin;   /* [layers] */
    float *attn_pmax;
    sq_scale_params scale; /* the observer method the run was made for */

    /* provenance */
    char *model_source;        /* MODEL argument */
    uint64_t model_digest;     /* sq_model_digest.combined */
    sq_file_digest *model_files;
    int n_model_files;
    sq_file_digest *corpus_files;
    int n_corpus_files;
    bool corpus_bundled;
    char *corpus_format, *corpus_field, *qasper_parts; /* may be NULL */
    char *corpus_pair_field; /* samples were text pairs (cross-encoders); may be NULL */
    uint64_t samples_requested, seed;
    int max_seq;
    bool windows;
    uint64_t n_texts, n_sequences, n_tokens;
    int runs;   /* 1, or the number of merged runs */
    char *date; /* YYYY-MM-DD */

    /* the first observer error (the hook cannot return one) */
    bool failed;
    sq_err first_err;
} sq_calib_stats;

int sq_calib_stats_init(sq_calib_stats *st, const sq_bert_config *cfg, sq_err *err);
int sq_calib_stats_init_decoder(sq_calib_stats *st, const sq_decoder_config *dec, sq_err *err);
/* The model's layers, and linear k's shape in layer l (false: no such linear). */
int sq_calib_stats_layers(const sq_calib_stats *st);
bool sq_calib_stats_shape(const sq_calib_stats *st, int l, sq_linear_kind k, int *N, int *K);
void sq_calib_stats_free(sq_calib_stats *st);

/* An encoder observer feeding st. After the run, sq_calib_stats_check. */
sq_observer sq_calib_stats_observer(sq_calib_stats *st);
int sq_calib_stats_check(const sq_calib_stats *st, sq_err *err);

sq_act_stats *sq_calib_stats_at(const sq_calib_stats *st, int layer, sq_linear_kind k);

/* dst += src. Refuses statistics of a different model (digest). */
int sq_calib_stats_merge(sq_calib_stats *dst, const sq_calib_stats *src, sq_err *err);

/* The date to record: SOURCE_DATE_EPOCH when set (reproducible pipelines),
 * else today (UTC). Day granularity, so reruns on a day give identical files. */
char *sq_calib_date_now(void);

int sq_calib_stats_save(const sq_calib_stats *st, const char *path, sq_err *err);
int sq_calib_stats_load(const char *path, sq_calib_stats *st, sq_err *err);

#endif

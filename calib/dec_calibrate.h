/* Calibration of a causal LM: texts drawn from a corpus (calibrate.h's
 * sampler), each encoded as BOS + text and run through the fp32 decoder
 * from position 0 (truncated to max_seq tokens, or cut into windows of
 * max_seq, each from an empty cache), with an observer on the input of
 * every linear (sq_decoder_state.obs). The statistics are the encoder's
 * (calib_stats.h) with the decoder's shape; saved as a .sqc. */
#ifndef SQ_DEC_CALIBRATE_H
#define SQ_DEC_CALIBRATE_H

#include "calibrate.h"
#include "llama_model.h"

/* model_arg is recorded as the source; the checkpoint and tokenizer files
 * are hashed (sq_model_digest_files). Uses o->corpus (required: there is no
 * bundled text for decoders), corpus_opts, samples, seed, max_seq, windows,
 * batch (rows per prefill step), scale, progress. */
int sq_dec_calibrate(const sq_llama_model *m, const char *model_arg, const sq_calibrate_opts *o,
                     sq_calib_stats *st, sq_err *err);

/* The digest calibrate records for m (checkpoint, then tokenizer). */
int sq_dec_model_digest(const sq_llama_model *m, const char *model_arg, sq_model_digest *md,
                        sq_err *err);

/* Run the recorded calibration samples again with another observer (the
 * same texts, order and truncation). max_sequences > 0 stops after that many. */
int sq_dec_calib_replay(const sq_llama_model *m, const sq_calib_stats *st,
                        const char *const *corpus_override, size_t n_override,
                        const sq_observer *obs, int64_t max_sequences, sq_err *err);

#endif

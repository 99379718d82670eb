/* Universal Sentence Encoder Lite, read directly from its TensorFlow.js
 * graph model (model.json + shards, formats/tfjs_model.h) and vocab.json,
 * as a configuration of the one encoder executor: pre-LN, ReLU, sinusoidal
 * timing signal, layer 0 widening 256 -> 512 with a projected residual, mean
 * pooling, a dense+tanh head and L2 normalization. The graph is checked to
 * be that computation (op counts, attention scale = 1/sqrt(head dim)); the
 * weights are transposed to squint's [out][in] once at load. */
#ifndef SQ_TFJS_ENCODER_H
#define SQ_TFJS_ENCODER_H

#include "encoder.h"
#include "hf_config.h"
#include "hf_tokenizer.h"

/* dir holds model.json, its shards and vocab.json. Fills enc (owning f32
 * weights), tok (a unigram spec, model_max_length = the graph's clip length)
 * and pool. 0, or -1 with err naming the file and the problem. */
int sq_tfjs_load_encoder(const char *dir, sq_encoder *enc, sq_wordpiece_spec *tok,
                         sq_pooling_config *pool, sq_err *err);

#endif

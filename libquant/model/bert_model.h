/* Build the encoder from a Hugging Face BERT checkpoint directory:
 * config.json + model.safetensors (or a sharded model.safetensors.index.json),
 * tensor names as BertModel writes them, with or without the "bert." prefix. */
#ifndef SQ_BERT_MODEL_H
#define SQ_BERT_MODEL_H

#include "encoder.h"
#include "sq_error.h"

int sq_bert_load_dir(const char *dir, sq_encoder *enc, sq_err *err);

#endif

/* A sentence-transformers Dense module (modules.json type
 * sentence_transformers.models.Dense) as the encoder's head: y =
 * activation(p W^T + b) on the pooled vector, before Normalize. squint runs
 * the square ones (in_features = out_features = hidden: the embedding width
 * stays the encoder's) with the Tanh or Identity activation; weights from
 * the module's model.safetensors (linear.weight [out, in], linear.bias). */
#ifndef SQ_ST_DENSE_H
#define SQ_ST_DENSE_H

#include "encoder.h"
#include "hf_config.h"

/* Load the Dense module of pc (pc->dense_path under dir) into enc->head and
 * enc->cfg.head. Refuses, naming the file, a non-square module, another
 * activation, a module without model.safetensors (pytorch_model.bin only),
 * missing or misshapen tensors. */
int sq_st_dense_load(const char *dir, const sq_pooling_config *pc, sq_encoder *enc, sq_err *err);

#endif

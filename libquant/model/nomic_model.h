/* The tensors of a NomicBERT checkpoint (NomicBertModel's names:
 * embeddings.*, emb_ln, encoder.layers.N.attn.Wqkv / out_proj,
 * mlp.fc11 / fc12 / fc2, norm1 / norm2) into the encoder, whose config
 * (hf_nomic_config.h) is already in enc->cfg. Called by sq_bert_load_dir. */
#ifndef SQ_NOMIC_MODEL_H
#define SQ_NOMIC_MODEL_H

#include "encoder.h"
#include "hf_weights.h"

int sq_nomic_load_weights(const sq_hf_weights *w, sq_encoder *enc, sq_err *err);

#endif

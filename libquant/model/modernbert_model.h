/* The tensors of a ModernBERT checkpoint (ModernBertModel's names, or a
 * ModernBertForMaskedLM's under "model."): embeddings.tok_embeddings /
 * norm, layers.N.attn_norm (absent on layer 0) / attn.Wqkv / attn.Wo /
 * mlp_norm / mlp.Wi / mlp.Wo, final_norm, into the encoder, whose config
 * (hf_modernbert_config.h) is already in enc->cfg. Called by
 * sq_bert_load_dir. */
#ifndef SQ_MODERNBERT_MODEL_H
#define SQ_MODERNBERT_MODEL_H

#include "encoder.h"
#include "hf_weights.h"

/* w->prefix is set here ("model." when the names carry it, else ""). */
int sq_modernbert_load_weights(sq_hf_weights *w, sq_encoder *enc, sq_err *err);

#endif

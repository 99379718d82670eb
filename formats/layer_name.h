/* The layer index in a tensor name: "layer.3.qkv.weight" (a .sqm),
 * "encoder.layer.3.attention..." or "model.layers.3.mlp..." (Hugging Face).
 * One parser for the readers that check a name against the config's layers. */
#ifndef SQ_LAYER_NAME_H
#define SQ_LAYER_NAME_H

/* When name is prefix, decimal digits, then '.': their value (LONG_MAX on
 * overflow), *digits_end at that '.'; else -1. Leading zeros are accepted
 * here; a caller that wants the canonical form checks the digits itself. */
long sq_layer_index(const char *name, const char *prefix, const char **digits_end);

#endif

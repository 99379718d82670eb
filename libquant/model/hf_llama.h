/* A Hugging Face LlamaForCausalLM or Qwen3ForCausalLM folder: config.json (formats/hf_config.h
 * reads it), model.safetensors or its shards (formats/hf_weights.h; F32, F16
 * or BF16), tokenizer.json (tokenizer_bpe.h). The weights land in the same
 * sq_llama_ckpt the llama2.c reader fills, so one executor (decoder.h) runs
 * both:
 *   model.embed_tokens.weight [V, D]            -> tok_emb
 *   model.layers.N.input_layernorm.weight        -> rms_att
 *   model.layers.N.self_attn.{q,k,v,o}_proj      -> wq, wk, wv, wo
 *     (q and k rows permuted: see hf_llama.c)
 *   model.layers.N.post_attention_layernorm      -> rms_ffn
 *   model.layers.N.mlp.{gate,up,down}_proj       -> w1, w3, w2
 *   model.norm.weight                            -> rms_final
 *   lm_head.weight [V, D] (absent when tie_word_embeddings, and in an untied
 *   causal embedding model, which then has no head: ck->no_head) -> wcls
 * The same names without "model." (a bare Qwen3Model, as a causal embedding
 * model such as Qwen3-Embedding saves it) are read alike.
 * Qwen3 adds per layer self_attn.{q,k}_norm.weight [head_dim] -> q_norm,
 * k_norm (permuted as the q / k rows are), and its head_dim makes q_proj
 * [heads * head_dim, D], o_proj [D, heads * head_dim].
 * Every message names the file and the tensor. */
#ifndef SQ_HF_LLAMA_H
#define SQ_HF_LLAMA_H

#include "llama_ckpt.h"

/* dir's config.json and weights into ck (freed with sq_llama_ckpt_free). */
int sq_hf_llama_load(const char *dir, sq_llama_ckpt *ck, sq_err *err);

#endif

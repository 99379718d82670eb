/* Hugging Face model configuration: config.json of a BERT-family encoder and
 * the sentence-transformers pooling description (modules.json,
 * 1_Pooling/config.json, Normalize module). */
#ifndef SQ_HF_CONFIG_H
#define SQ_HF_CONFIG_H

#include <stdbool.h>

#include "sq_error.h"

/* Hard limits on shapes we accept from a config file. */
#define SQ_MAX_HIDDEN 16384
#define SQ_MAX_LAYERS 256
#define SQ_MAX_FFN 65536
#define SQ_MAX_POSITIONS 65536
#define SQ_MAX_VOCAB (1 << 22)

/* Architecture variants of the one encoder executor (libquant/model/encoder.h).
 * BERT is post-LN, GELU, learned positions, an embedding LayerNorm and no
 * pooling head; tensor2tensor-style encoders such as Universal Sentence
 * Encoder Lite are pre-LN, ReLU, sinusoidal positions, no embedding
 * LayerNorm, and a dense+tanh head on the pooled vector. */
typedef enum sq_norm_place { SQ_NORM_POST = 0, SQ_NORM_PRE = 1 } sq_norm_place;
/* The FFN's activation; SwiGLU (silu(gate) * up, on ffn_up's gate rows then
 * its up rows): a decoder's, and NomicBERT's (gate = fc12, up = fc11). */
/* GeGLU (ModernBERT): gelu(first half) * second half of ffn_up's rows,
 * GELU the exact (erf) one. */
typedef enum sq_act { SQ_ACT_GELU = 0, SQ_ACT_RELU = 1, SQ_ACT_SWIGLU = 2, SQ_ACT_GEGLU = 3 } sq_act;
/* A gated activation: ffn_up holds 2F rows (the activated half, then the
 * multiplier half) and the activation halves the width. */
static inline bool sq_act_gated(sq_act a)
{
    return a == SQ_ACT_SWIGLU || a == SQ_ACT_GEGLU;
}
/* Rotary (NomicBERT): no position table; q and k of every head are rotated
 * by their token's index in the sequence before the attention scores
 * (GPT-NeoX's rotate-half pairing: dimension i with i + head_dim / 2,
 * angle = index * rotary_base^(-2i / head_dim); encoder_rope.h). */
typedef enum sq_pos_kind {
    SQ_POS_LEARNED = 0,
    SQ_POS_SINUSOIDAL = 1,
    SQ_POS_ROTARY = 2,
} sq_pos_kind;
/* Which row of the position table a token reads: its index in the sequence
 * (BERT), or RoBERTa's rule (MPNet, XLM-RoBERTa: fairseq's
 * make_positions): pad_token_id + 1 + the number of non-pad tokens up to
 * and including it, and pad_token_id itself for a pad token. */
typedef enum sq_pos_ids { SQ_POS_IDS_INDEX = 0, SQ_POS_IDS_ROBERTA = 1 } sq_pos_ids;
/* MPNet's relative position buckets (T5-style, bidirectional): half the
 * buckets for keys before the query, half after; in each half the first
 * quarter of the buckets are exact distances, the rest logarithmic up to
 * max_distance. The bias table has [buckets][heads] entries, shared by
 * every layer and added to the attention scores before the softmax. */
#define SQ_REL_MAX_BUCKETS 256
/* The dense layer on the pooled vector (USE Lite's tanh projection, a
 * sentence-transformers Dense module): none, tanh(p W^T + b), or p W^T + b. */
typedef enum sq_head_kind { SQ_HEAD_NONE = 0, SQ_HEAD_TANH = 1, SQ_HEAD_IDENTITY = 2 } sq_head_kind;
/* What a sequence classifier's logits become (the score squint reports):
 * one logit through sentence-transformers' CrossEncoder activation
 * (identity, sigmoid, tanh), several through softmax, or each through a
 * sigmoid (problem_type multi_label_classification). */
typedef enum sq_score_act {
    SQ_SCORE_IDENTITY = 0,
    SQ_SCORE_SIGMOID = 1,
    SQ_SCORE_TANH = 2,
    SQ_SCORE_SOFTMAX = 3,
} sq_score_act;
#define SQ_MAX_LABELS 1024

typedef struct sq_bert_config {
    int vocab_size;
    int hidden;
    int layers;
    int heads;
    int ffn;
    int max_pos;
    int type_vocab;
    int pad_token_id;
    double ln_eps;
    /* Variants (BERT values are set by sq_bert_config_set_bert_defaults). */
    int embed_dim;         /* embedding width = layer 0 input width (== hidden for BERT);
                              a layer whose input is narrower than hidden attends at its
                              input width and projects its residual (res linear) */
    sq_norm_place norm;
    sq_act act;
    sq_pos_kind positions; /* sinusoidal tables are stored like learned ones */
    sq_pos_ids pos_ids;    /* index (BERT) or roberta (MPNet) */
    int rel_buckets;       /* 0: no relative attention bias; else MPNet's buckets */
    int rel_max_distance;  /* the distance the last logarithmic bucket starts at */
    double rotary_base;    /* positions rotary: the frequency base (> 1, finite); else 0 */
    /* Alternating local / global attention (ModernBERT): layer l is global
     * when l % global_every == 0, else local: query i sees key j only when
     * |i - j| <= local_window / 2, and its rotary base is
     * rotary_base_local. global_every 0: every layer global (the others). */
    int global_every;
    int local_window;
    double rotary_base_local;
    /* No LayerNorm before layer 0's attention (ModernBERT's attn_norm is the
     * identity there) and a LayerNorm after the last layer (final_norm). */
    bool first_attn_norm_absent;
    bool final_norm;
    bool emb_ln;           /* LayerNorm on the embeddings */
    sq_head_kind head;     /* transform of the pooled vector before normalization */
    /* A sequence classifier (BertForSequenceClassification: a cross-encoder
     * scoring query/document pairs, or a text classifier): CLS pooling, the
     * pooler as a tanh head, then a linear layer to num_labels logits (the
     * encoder's `score` linear). 0: an embedding model. */
    int num_labels;
    sq_score_act score_act;
} sq_bert_config;

/* The BERT values of the variant fields (embed_dim = hidden). */
void sq_bert_config_set_bert_defaults(sq_bert_config *c);
const char *sq_norm_place_name(sq_norm_place v);
const char *sq_act_name(sq_act v);
const char *sq_pos_kind_name(sq_pos_kind v);
const char *sq_head_kind_name(sq_head_kind v);
const char *sq_score_act_name(sq_score_act v);
/* "identity", "sigmoid", "tanh", "softmax" -> v; -1 for anything else. */
int sq_score_act_parse(const char *s, sq_score_act *v);
const char *sq_pos_ids_name(sq_pos_ids v);
/* "bert" (post-LN), "t2t" (pre-LN tensor2tensor-style encoder), "mpnet"
 * (relative attention bias) or "nomic_bert" (rotary positions, SwiGLU): the
 * architecture names of recipes and .sqm metadata. */
const char *sq_architecture_name(const sq_bert_config *c);
/* The most tokens one sequence may hold: the position table's rows, less
 * the rows RoBERTa-style ids skip (pad_token_id + 1); rotary positions have
 * no table: max_pos (NomicBERT's n_positions). */
int sq_bert_max_tokens(const sq_bert_config *c);
/* Layer l's attention window: -1 global (every key of the sequence), else
 * the half width w (query i sees key j when |i - j| <= w). */
int sq_layer_window(const sq_bert_config *c, int layer);
/* Layer l's rotary base (rotary_base, or rotary_base_local on a local
 * layer). */
double sq_layer_rotary_base(const sq_bert_config *c, int layer);
/* The bucket of relative position rel = key index - query index (MPNet's
 * relative_position_bucket, evaluated in float32 as PyTorch does). */
int sq_rel_bucket(int rel, int buckets, int max_distance);

/* The token rows an embedding is pooled from: the first ([CLS]), their
 * mean, or the last (sentence-transformers' pooling_mode_lasttoken: a
 * causal embedding model such as Qwen3-Embedding, whose last token has seen
 * the whole text). */
typedef enum sq_pooling { SQ_POOL_CLS = 0, SQ_POOL_MEAN = 1, SQ_POOL_LAST = 2 } sq_pooling;

typedef struct sq_pooling_config {
    sq_pooling pooling;
    bool normalize;
    bool from_sentence_transformers; /* false: no modules.json, defaults used */
    /* sentence-transformers' truncation (sentence_bert_config.json
     * max_seq_length, tokens including [CLS]/[SEP]); 0: none given. */
    int max_seq_length;
    /* The Transformer module's folder under the checkpoint ("" = the root):
     * where config.json, the weights and the tokenizer are. */
    char transformer_path[257];
    /* A sentence-transformers Dense module after the pooling (its folder;
     * "" = none): loaded by sq_st_dense_load (libquant/model/st_dense.h). */
    char dense_path[257];
} sq_pooling_config;

int sq_bert_config_load(const char *path, sq_bert_config *cfg, sq_err *err);
/* The same, read as a sequence classifier whatever "architectures" says
 * (absent or empty in some exports): for a checkpoint whose weights hold a
 * classifier head (libquant/model/bert_model.c decides from the tensors). */
int sq_bert_config_load_classifier(const char *path, sq_bert_config *cfg, sq_err *err);
/* The class names of a sequence classifier's config.json (id2label, in id
 * order; "LABEL_i" where it has none): labels[cfg->num_labels], each
 * malloc'd, freed with sq_labels_free. */
int sq_config_labels_load(const char *path, int num_labels, char ***labels, sq_err *err);
void sq_labels_free(char **labels, int n);
/* The one rule for class names (config id2label, .sqm labels): labels[i]
 * has 1..256 bytes and differs from labels[0..i). NULL when it holds, else
 * what is wrong ("has no bytes or more than 256", "appears twice"). */
const char *sq_label_problem(char *const *labels, int i);
/* Reads modules.json (module types; any module squint cannot run is refused
 * by name), the Pooling module's config.json and the Transformer module's
 * sentence_bert_config.json (max_seq_length) under dir. Without modules.json:
 * CLS pooling, no normalization, and sentence_bert_config.json at the root
 * if there is one. */
int sq_pooling_config_load_dir(const char *dir, sq_pooling_config *pc, sq_err *err);

/* The prompt `name` of <dir>/config_sentence_transformers.json ("prompts":
 * {"query": "Represent this sentence ...: "}) into *out (malloc'd). A
 * missing file or name is an error listing the names there are. */
int sq_st_prompt_load(const char *dir, const char *name, char **out, sq_err *err);

const char *sq_pooling_name(sq_pooling p);
int sq_pooling_parse(const char *s, sq_pooling *out);

/* ---- causal LMs (libquant/model/hf_llama.c builds the model) ---- */

/* config.json of a LlamaForCausalLM (model_type llama) or a
 * Qwen3ForCausalLM (model_type qwen3). */
typedef struct sq_hf_llama_config {
    int hidden, ffn, layers, heads, kv_heads, vocab, max_pos;
    double rms_eps, rope_theta;
    bool tied;
    int bos, eos; /* -1: none */
    int head_dim; /* Llama: hidden / heads; Qwen3: head_dim (absent: 128, Qwen3Config's default) */
    bool qwen3;   /* q_norm / k_norm per head before RoPE */
} sq_hf_llama_config;

/* True when dir is a directory whose config.json names a causal LM
 * (architectures "...ForCausalLM" or model_type "llama"): the commands
 * route it to the decoder, whose reader accepts Llama only and refuses the
 * rest by name. */
bool sq_hf_dir_is_causal_lm(const char *dir);

/* Read and check: architectures LlamaForCausalLM (or model_type llama), or
 * Qwen3ForCausalLM (or model_type qwen3: head_dim decoupled from hidden /
 * heads, q/k norms; sliding_window ignored unless use_sliding_window, which
 * is refused, as is a layer_types entry other than full_attention);
 * hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
 * num_key_value_heads (default: heads), max_position_embeddings,
 * vocab_size, rms_norm_eps (1e-6), rope_theta (10000), tie_word_embeddings
 * (false), bos / eos_token_id (an int, or a list: the first). Refused by
 * name: rope_scaling, attention_bias / mlp_bias true, hidden_act other than
 * silu, a head_dim other than hidden / heads, quantization_config,
 * sliding_window, an odd head size. */
int sq_hf_llama_config_load(const char *path, sq_hf_llama_config *c, sq_err *err);

#endif

/* The .sqm schema (formats/SQM.md sections 2 and 3) as data: one row per
 * tensor name pattern and one row per metadata key the loader reads. The
 * tables in sqm_schema.c are the machine-readable form of SQM.md's tensor
 * tables; the loaders (sqm_model.c, sqm_decoder.c), `squint verify`,
 * `squint inspect`, the writers' self-check (quantize/quant_plan.c
 * sq_sqm_check_written) and the tests read them, so the
 * structure of a model file is written down once.
 *
 * The schema says which tensors a model has, their dtypes and shapes; the
 * values (finite, in range, wsum against the panels) are the loader's checks
 * (sqm_model.c, qweight_check.c). */
#ifndef SQ_SQM_SCHEMA_H
#define SQ_SQM_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container.h"
#include "decoder_config.h"
#include "encoder.h"
#include "hf_config.h"
#include "hf_template.h"
#include "qtype.h"

/* ---- tensors ---- */

/* How many tensors a row names. */
typedef enum sq_sqm_scope {
    SQ_SCOPE_MODEL,  /* one: the name as is */
    SQ_SCOPE_LAYER,  /* one per layer l < layers: "layer.%d...." */
    SQ_SCOPE_LINEAR, /* one per linear a layer has: "layer.%d.%s...." with the kind name */
} sq_sqm_scope;

/* When the row's tensor belongs to the model. */
typedef enum sq_sqm_when {
    SQ_WHEN_ALWAYS,
    SQ_WHEN_UNIGRAM,    /* tokenizer.type: unigram */
    SQ_WHEN_EMB_QUANT,  /* embeddings_type int8 or int4-g128 */
    SQ_WHEN_TYPE_VOCAB, /* config.type_vocab > 0 */
    SQ_WHEN_EMB_LN,     /* config.embedding_layernorm */
    SQ_WHEN_REL,        /* config.relative_buckets > 0 (an encoder) */
    SQ_WHEN_POS_TABLE,  /* an encoder whose config.positions is not rotary */
    SQ_WHEN_HEAD,       /* config.pooling_head: tanh */
    SQ_WHEN_SCORE,      /* config.num_labels > 0 (a sequence classifier) */
    SQ_WHEN_LINEAR,     /* the layer has the linear (res: only where in(l) != H) */
    SQ_WHEN_PACKED,     /* ... and its weight is packed (int8 / int4) */
    SQ_WHEN_ACT_ZERO,   /* ... packed, of a type with an activation zero point (int8) */
    /* classification head (SQM.md section 9) */
    SQ_WHEN_CLASS_HEAD, /* metadata class_head present */
    SQ_WHEN_NO_CLASS_HEAD, /* ... absent (refuse_when: its tensors alone are refused) */
    /* causal LMs (SQM.md section 10) */
    SQ_WHEN_ENCODER,    /* architecture bert / t2t (not llama) */
    SQ_WHEN_DECODER,    /* architecture: llama */
    SQ_WHEN_UNTIED,     /* ... with config.tied_embeddings false and an fp32 classifier */
    SQ_WHEN_SCORES,     /* tokenizer.type unigram or llama2c-bpe (piece scores) */
    SQ_WHEN_HF_BPE,     /* tokenizer.type hf-bpe or hf-bytelevel (ranked merges) */
    SQ_WHEN_BYTELEVEL,  /* tokenizer.type hf-bytelevel */
    SQ_WHEN_QK_NORM,    /* a causal LM with config.qk_norm (Qwen3) */
    SQ_WHEN_HF_UNIGRAM, /* tokenizer.type hf-unigram (an encoder's XLM-R tokenizer) */
    SQ_WHEN_LN_ATTN,    /* an encoder's layer with an attention norm (not layer 0 when
                           config.first_attention_norm is false: ModernBERT) */
    SQ_WHEN_FINAL_LN,   /* an encoder with config.final_norm (ModernBERT) */
} sq_sqm_when;

/* The allowed dtypes. */
typedef enum sq_sqm_dtype_rule {
    SQ_DTR_F32,
    SQ_DTR_F64,
    SQ_DTR_I32,
    SQ_DTR_U8,
    SQ_DTR_WORD,   /* by embeddings_type: fp32 f32, int8 i8, int4-g128 u8 */
    SQ_DTR_LINEAR, /* f32, or the cdtype of an executable packed qtype (qtype.h) */
} sq_sqm_dtype_rule;

/* The shape, from the config (SQM.md section 1 symbols) and, for a linear,
 * its N, K and qtype traits (block, k_align: N_pad, G). */
typedef enum sq_sqm_shape_rule {
    SQ_SHR_BYTES,      /* [n], n > 0 */
    SQ_SHR_TOK_VOCAB,  /* [tokenizer.vocab_size] */
    SQ_SHR_WORD,       /* [V, E]; u8 (int4 nibbles): [V, E/2] */
    SQ_SHR_WORD_SCALE, /* int8: [V]; int4: [V, G_E] */
    SQ_SHR_P_E,        /* [P, E] */
    SQ_SHR_T_E,        /* [T, E] */
    SQ_SHR_REL,        /* [relative_buckets, heads] */
    SQ_SHR_E,          /* [E] */
    SQ_SHR_H_H,        /* [H, H] */
    SQ_SHR_H,          /* [H] */
    SQ_SHR_L_H,        /* [num_labels, H] */
    SQ_SHR_L,          /* [num_labels] */
    SQ_SHR_LN_ATTN,    /* [D_attn(l)]: in(l) pre-LN, H post-LN */
    SQ_SHR_N_K,        /* [N, K] */
    SQ_SHR_N,          /* [N] */
    SQ_SHR_K,          /* [K] */
    SQ_SHR_SCALE,      /* block 0: [N]; else [N, G] (2-D even when G = 1) */
    SQ_SHR_WSUM,       /* block 0: [N_pad]; else [N_pad, G] */
    SQ_SHR_ONE,        /* [1] */
    SQ_SHR_OUTLIERS,   /* [n], 1 <= n <= K (the loader checks n <= K) */
    SQ_SHR_OUTLIERS_N, /* [n, N], n that of the outlier_index (the loader checks) */
    /* classification head (SQM.md section 9) */
    SQ_SHR_CLS_H,      /* [C, H], C the count of class_head.labels */
    SQ_SHR_CLS,        /* [C] */
    SQ_SHR_V_H,        /* [V, H] (a causal LM's separate classifier) */
    SQ_SHR_PAIRS,      /* [n > 0, 2] (tokenizer.merges) */
    SQ_SHR_TRIPLES,    /* [n > 0, 3] (tokenizer.added) */
    SQ_SHR_HEAD_DIM,   /* [head_dim] (a causal LM's q / k norm) */
} sq_sqm_shape_rule;

typedef struct sq_sqm_tensor_rule {
    const char *name;       /* pattern by scope: "embeddings.word", "layer.%d.ln_ffn.gamma",
                               "layer.%d.%s.scale" */
    sq_sqm_scope scope;
    sq_sqm_dtype_rule dtype;
    sq_sqm_shape_rule shape;
    sq_sqm_when when;
    bool optional;          /* may be absent even where `when` holds */
    sq_sqm_when refuse_when; /* present where this holds but `when` does not: refused
                                (act_zero on an int4 linear); SQ_WHEN_ALWAYS: never */
    const char *pair;       /* the row's partner (gamma / beta, weight / bias): where
                               `when` does not hold, both or neither (else "missing") */
    const char *doc;        /* SQM.md's "meaning" */
} sq_sqm_tensor_rule;

extern const sq_sqm_tensor_rule sq_sqm_tensor_rules[];
extern const size_t sq_sqm_n_tensor_rules;

/* The rows, by index into sq_sqm_tensor_rules (its order: the writer's, SQM.md 3.1). */
enum sq_sqm_row {
    SQ_ROW_TOK_VOCAB,
    SQ_ROW_TOK_SCORES,
    SQ_ROW_TOK_MERGES,
    SQ_ROW_TOK_ADDED,
    SQ_ROW_TOK_CHARSMAP,
    SQ_ROW_WORD,
    SQ_ROW_WORD_SCALE,
    SQ_ROW_POSITION,
    SQ_ROW_TOKEN_TYPE,
    SQ_ROW_EMB_LN_GAMMA,
    SQ_ROW_EMB_LN_BETA,
    SQ_ROW_REL_BIAS,
    SQ_ROW_FINAL_LN_GAMMA,
    SQ_ROW_FINAL_LN_BETA,
    SQ_ROW_HEAD_WEIGHT,
    SQ_ROW_HEAD_BIAS,
    SQ_ROW_SCORE_WEIGHT,
    SQ_ROW_SCORE_BIAS,
    SQ_ROW_LN_ATTN_GAMMA,
    SQ_ROW_LN_ATTN_BETA,
    SQ_ROW_LN_FFN_GAMMA,
    SQ_ROW_LN_FFN_BETA,
    SQ_ROW_LIN_WEIGHT,
    SQ_ROW_LIN_SCALE,
    SQ_ROW_LIN_WSUM,
    SQ_ROW_LIN_BIAS,
    SQ_ROW_LIN_SMOOTH,
    SQ_ROW_LIN_ACT_SCALE,
    SQ_ROW_LIN_ACT_ZERO,
    SQ_ROW_LIN_OUTLIER_INDEX,
    SQ_ROW_LIN_OUTLIER_WEIGHT,
    /* classification head (SQM.md section 9) */
    SQ_ROW_CLASS_HEAD_WEIGHT,
    SQ_ROW_CLASS_HEAD_BIAS,
    /* causal LMs (SQM.md section 10) */
    SQ_ROW_RMS_ATT,
    SQ_ROW_RMS_FFN,
    SQ_ROW_Q_NORM,
    SQ_ROW_K_NORM,
    SQ_ROW_FINAL_NORM,
    SQ_ROW_CLASSIFIER,
    SQ_ROW_COUNT
};

/* The layer index that stands for a causal LM's packed classifier
 * (metadata classifier_type int8, SQM.md 10.6): the linear rows name its
 * tensors "classifier.<suffix>" (N = vocab_size, K = hidden). */
#define SQ_SQM_CLASSIFIER (-1)
#define SQ_SQM_CLASSIFIER_PREFIX "classifier" /* also its name in the `linears` list */

/* The name prefix of linear (l, k): "layer.<l>.<kind>", or "classifier" for
 * l == SQ_SQM_CLASSIFIER. A linear row's tensor is the prefix followed by
 * its suffix (".weight", ".scale", ...). */
void sq_sqm_linear_prefix(char *buf, size_t n, int l, sq_linear_kind k);

/* The name of row `row`'s tensor for layer l and linear kind k (ignored by
 * narrower scopes) into buf. */
void sq_sqm_tensor_name(char *buf, size_t n, enum sq_sqm_row row, int l, sq_linear_kind k);

/* What the tensor rules depend on, from the metadata. */
typedef struct sq_sqm_schema_ctx {
    sq_bert_config cfg;     /* a causal LM: layers, vocab_size, hidden = embed_dim = dim only */
    bool decoder;           /* architecture: llama (SQM.md section 10) */
    sq_decoder_config dec;
    sq_qtype emb_qt;        /* embeddings_type */
    bool unigram;           /* tokenizer.type */
    bool hf_bpe;            /* tokenizer.type hf-bpe (a causal LM's) */
    bool hf_unigram;        /* tokenizer.type hf-unigram (XLM-RoBERTa) */
    /* hf-bpe settings (SQM.md 10.5; special_ids checked, read by sqm_tokenizer.c) */
    bool hf_add_prefix, hf_split, hf_byte_fallback, hf_fuse_unk;
    int32_t hf_unk;
    /* tokenizer.type hf-bytelevel (SQM.md 10.5; read by sqm_tokenizer.c) */
    bool bytelevel, bl_nfc, bl_add_prefix_space, bl_ignore_merges;
    int bl_pattern;         /* sq_pretok_pattern, 0: none */
    int64_t tok_vocab_size; /* tokenizer.vocab_size; < 1: unknown (the tokenizer's own
                               parser refuses the metadata then) */
    int class_head_classes; /* labels in metadata class_head; 0: no class head */
    sq_qtype cls_qt;        /* a causal LM's classifier_type: SQ_QT_F32 (absent) or SQ_QT_S8 */
    int dec_acts;           /* a causal LM's activations: 0 absent, 1 static, 2 dynamic */
    /* a causal embedding model (SQM.md 10.8: pooling last, normalize, max_seq
     * in a causal LM's metadata; info->pool and info->max_seq hold them) and
     * the special tokens its tokenizer puts around a text (tokenizer.single_prefix /
     * single_suffix) */
    bool dec_embedding;
    bool dec_has_wrap;      /* tokenizer.single_prefix given: it, not config.bos_token_id,
                               is what a text starts with (10.5) */
    sq_hf_single_template dec_wrap;
} sq_sqm_schema_ctx;

/* One tensor a row asks for. */
typedef struct sq_sqm_expect {
    char name[96];
    bool applies;           /* `when` holds */
    bool optional;
    unsigned dtype;         /* container dtype code */
    int ndim;
    uint64_t dims[2];
    bool any_len;           /* 1-D of any length > 0 (tokenizer.vocab; tokenizer.scores
                               when tokenizer.vocab_size is unknown; outlier_index) */
    bool any_rows;          /* 2-D [n > 0, dims[1]] (outlier_weight) */
} sq_sqm_expect;

/* The row's tensor for layer l, linear kind k (ignored by narrower scopes),
 * when the linear's weight has qtype lin_qt. Returns 1 with ex filled, 0
 * when the layer has no such linear (nothing to expect), -1 when the
 * linear's shape has no packed form (err says why, naming the weight). */
int sq_sqm_expect_tensor(const sq_sqm_tensor_rule *r, const sq_sqm_schema_ctx *ctx, int l,
                         sq_linear_kind k, sq_qtype lin_qt, sq_sqm_expect *ex, sq_err *err);

/* The row describing tensor `name` for this model (with the layer and the
 * linear kind it names), or NULL. Only tensors the model has match (a
 * layer >= layers, a res linear of a non-widening layer do not); ctx NULL:
 * any model (by name only, as `inspect` reads a file it may refuse). */
const sq_sqm_tensor_rule *sq_sqm_rule_of(const char *name, const sq_sqm_schema_ctx *ctx, int *l,
                                         sq_linear_kind *k);

/* The qtype of a linear weight's container dtype: SQ_QT_F32 for f32, the
 * executable packed type of that cdtype, or -1. */
int sq_sqm_linear_qtype(unsigned cdtype);

/* The context of an open container is read from its metadata by the
 * loader's own parser: sq_sqm_read_meta (sqm_model.h). */

enum {
    /* Also refuse any tensor the schema does not describe for this model
     * (the writer's self-check: every tensor accounted for). The loader
     * ignores such tensors (SQM.md 2.6). */
    SQ_SQM_STRICT = 1,
};

/* Check every tensor of c against the schema: presence, dtype, shape, pairs,
 * a causal LM's classifier tensors against classifier_type (and with
 * SQ_SQM_STRICT nothing else). Fails naming the tensor in
 * err->subject, the message starting with c->path. */
int sq_sqm_check_schema(const sq_container *c, const sq_sqm_schema_ctx *ctx, unsigned flags,
                        sq_err *err);

/* One model-wide row only (the tokenizer's tensors, for the tokenizer's own
 * reader: sqm_tokenizer.c). Same errors as sq_sqm_check_schema. */
int sq_sqm_check_row(const sq_container *c, const sq_sqm_schema_ctx *ctx, enum sq_sqm_row row,
                     sq_err *err);

/* ---- metadata ---- */

typedef enum sq_sqm_meta_type {
    SQ_MT_STRING,
    SQ_MT_INT,
    SQ_MT_NUMBER,
    SQ_MT_BOOL,
    SQ_MT_BOOL_OR_NULL,
    SQ_MT_ID,      /* integer or null (-1 / null / absent: none) */
    SQ_MT_MAPPING,
    SQ_MT_INT_LIST,
    SQ_MT_STRING_LIST, /* classification head labels (SQM.md section 9) */
} sq_sqm_meta_type;

typedef enum sq_sqm_meta_reader {
    SQ_MR_LOADER,    /* sqm_model.c / config_yaml.c */
    SQ_MR_TOKENIZER, /* sqm_tokenizer.c */
    SQ_MR_NONE,      /* provenance: inspect shows it, readers may ignore it */
} sq_sqm_meta_reader;

typedef struct sq_sqm_meta_rule {
    const char *key;      /* dotted path: "config.hidden", "tokenizer.unk_id" */
    const char *tok_type; /* tokenizer.* keys: the tokenizer type they belong to, else NULL */
    sq_sqm_meta_type type;
    bool required;
    const char *dflt;     /* the value when absent (NULL: none / required) */
    const char *values;   /* range or values, as SQM.md says */
    sq_sqm_meta_reader reader;
} sq_sqm_meta_rule;

extern const sq_sqm_meta_rule sq_sqm_meta_rules[];
extern const size_t sq_sqm_n_meta_rules;

#endif

/* The .sqm schema tables (formats/SQM.md sections 2.2-2.4 and 3.2-3.3: keep
 * them in agreement) and the one structural check of a model file. */
#include "sqm_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_name.h"
#include "qweight.h"
#include "quant_embed.h"

/* ---- the tensor table (SQM.md 3.2, 3.3; rows in the writer's order, 3.1) ---- */

#define M SQ_SCOPE_MODEL
#define LY SQ_SCOPE_LAYER
#define LN SQ_SCOPE_LINEAR
#define NEVER SQ_WHEN_ALWAYS /* refuse_when: no refusal */
const sq_sqm_tensor_rule sq_sqm_tensor_rules[] = {
    {"tokenizer.vocab", M, SQ_DTR_U8, SQ_SHR_BYTES, SQ_WHEN_ALWAYS, false, NEVER, NULL,
     "token strings in id order, each followed by one NUL byte (4.1)"},
    {"tokenizer.scores", M, SQ_DTR_F64, SQ_SHR_TOK_VOCAB, SQ_WHEN_SCORES, false, NEVER, NULL,
     "piece log-probabilities (unigram, hf-unigram) / merge scores (llama2c-bpe), finite"},
    {"tokenizer.merges", M, SQ_DTR_I32, SQ_SHR_PAIRS, SQ_WHEN_HF_BPE, false, NEVER, NULL,
     "hf-bpe / hf-bytelevel merges in rank order: (left id, right id) per row (10.5)"},
    {"tokenizer.added", M, SQ_DTR_I32, SQ_SHR_TRIPLES, SQ_WHEN_BYTELEVEL, true, NEVER, NULL,
     "hf-bytelevel added tokens: (id, normalized 0/1, special 0/1) per row (10.5); absent: "
     "none"},
    {"tokenizer.charsmap", M, SQ_DTR_U8, SQ_SHR_BYTES, SQ_WHEN_HF_UNIGRAM, true, NEVER, NULL,
     "hf-unigram: the Precompiled normalizer's charsmap blob (2.4); absent: no such step"},
    {"embeddings.word", M, SQ_DTR_WORD, SQ_SHR_WORD, SQ_WHEN_ALWAYS, false, NEVER, NULL,
     "word embeddings per embeddings_type: fp32 / int8 / int4-g128 (4.2)"},
    {"embeddings.word.scale", M, SQ_DTR_F32, SQ_SHR_WORD_SCALE, SQ_WHEN_EMB_QUANT, false, NEVER,
     NULL, "per-row / per-row-and-group scale of the quantized word embeddings"},
    {"embeddings.position", M, SQ_DTR_F32, SQ_SHR_P_E, SQ_WHEN_POS_TABLE, false, NEVER, NULL,
     "row p for position p (learned or sinusoidal; absent for rotary, 6.12)"},
    {"embeddings.token_type", M, SQ_DTR_F32, SQ_SHR_T_E, SQ_WHEN_TYPE_VOCAB, false, NEVER, NULL,
     "token-type table; row 0 is the one used (6.1)"},
    {"embeddings.ln.gamma", M, SQ_DTR_F32, SQ_SHR_E, SQ_WHEN_EMB_LN, false, NEVER,
     "embeddings.ln.beta", "embedding LayerNorm scale"},
    {"embeddings.ln.beta", M, SQ_DTR_F32, SQ_SHR_E, SQ_WHEN_EMB_LN, false, NEVER,
     "embeddings.ln.gamma", "embedding LayerNorm shift"},
    {"relative_bias", M, SQ_DTR_F32, SQ_SHR_REL, SQ_WHEN_REL, false, NEVER, NULL,
     "relative attention bias [bucket][head] (config.relative_buckets > 0, 6.10), finite"},
    {"encoder.final_norm.gamma", M, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_FINAL_LN, false, NEVER,
     "encoder.final_norm.beta", "LayerNorm after the last layer (config.final_norm, 6.13)"},
    {"encoder.final_norm.beta", M, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_FINAL_LN, false, NEVER,
     "encoder.final_norm.gamma", "its shift"},
    {"head.weight", M, SQ_DTR_F32, SQ_SHR_H_H, SQ_WHEN_HEAD, false, NEVER, "head.bias",
     "pooling head W[out][in]"},
    {"head.bias", M, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_HEAD, false, NEVER, "head.weight",
     "pooling head bias"},
    {"score.weight", M, SQ_DTR_F32, SQ_SHR_L_H, SQ_WHEN_SCORE, false, NEVER, "score.bias",
     "sequence classifier W[label][H] on the head's output (6.9)"},
    {"score.bias", M, SQ_DTR_F32, SQ_SHR_L, SQ_WHEN_SCORE, false, NEVER, "score.weight",
     "sequence classifier bias"},
    {"layer.%d.ln_attn.gamma", LY, SQ_DTR_F32, SQ_SHR_LN_ATTN, SQ_WHEN_LN_ATTN, false, NEVER, NULL,
     "attention LayerNorm (post-LN: after attention; pre-LN: before it; none on layer 0 when "
     "config.first_attention_norm is false, 6.13)"},
    {"layer.%d.ln_attn.beta", LY, SQ_DTR_F32, SQ_SHR_LN_ATTN, SQ_WHEN_LN_ATTN, false, NEVER, NULL,
     "attention LayerNorm shift"},
    {"layer.%d.ln_ffn.gamma", LY, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_ENCODER, false, NEVER, NULL,
     "FFN LayerNorm (post-LN: after the FFN; pre-LN: before it)"},
    {"layer.%d.ln_ffn.beta", LY, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_ENCODER, false, NEVER, NULL,
     "FFN LayerNorm shift"},
    {"layer.%d.%s.weight", LN, SQ_DTR_LINEAR, SQ_SHR_N_K, SQ_WHEN_LINEAR, false, NEVER, NULL,
     "W [N, K]: f32 row-major, or packed panels (4.3, 4.4)"},
    {"layer.%d.%s.scale", LN, SQ_DTR_F32, SQ_SHR_SCALE, SQ_WHEN_PACKED, false, NEVER, NULL,
     "weight scale per output channel / per channel and group"},
    {"layer.%d.%s.wsum", LN, SQ_DTR_I32, SQ_SHR_WSUM, SQ_WHEN_PACKED, false, NEVER, NULL,
     "sum of the quantized weights per channel / channel and group (4.5)"},
    {"layer.%d.%s.bias", LN, SQ_DTR_F32, SQ_SHR_N, SQ_WHEN_LINEAR, false, NEVER, NULL, "b"},
    {"layer.%d.%s.smooth", LN, SQ_DTR_F32, SQ_SHR_K, SQ_WHEN_PACKED, true, NEVER, NULL,
     "SmoothQuant factors s_j; absent: all 1"},
    {"layer.%d.%s.act_scale", LN, SQ_DTR_F32, SQ_SHR_ONE, SQ_WHEN_PACKED, false, NEVER, NULL,
     "static activation step"},
    {"layer.%d.%s.act_zero", LN, SQ_DTR_I32, SQ_SHR_ONE, SQ_WHEN_ACT_ZERO, true, SQ_WHEN_PACKED,
     NULL, "activation zero point; absent: 0; int8 only (refused on int4)"},
    {"layer.%d.%s.outlier_index", LN, SQ_DTR_I32, SQ_SHR_OUTLIERS, SQ_WHEN_PACKED, true, NEVER,
     "layer.%d.%s.outlier_weight",
     "input channels computed in fp32 beside the integer GEMM, strictly increasing (6.4); "
     "absent: none"},
    {"layer.%d.%s.outlier_weight", LN, SQ_DTR_F32, SQ_SHR_OUTLIERS_N, SQ_WHEN_PACKED, true, NEVER,
     "layer.%d.%s.outlier_index", "row o: column outlier_index[o] of W diag(s), finite"},
    /* classification head (SQM.md section 9): both with metadata class_head, neither without */
    {"class_head.weight", M, SQ_DTR_F64, SQ_SHR_CLS_H, SQ_WHEN_CLASS_HEAD, false,
     SQ_WHEN_NO_CLASS_HEAD, "class_head.bias", "classification head W[class][hidden], finite"},
    {"class_head.bias", M, SQ_DTR_F64, SQ_SHR_CLS, SQ_WHEN_CLASS_HEAD, false,
     SQ_WHEN_NO_CLASS_HEAD, "class_head.weight", "classification head bias, finite"},
    /* causal LMs (SQM.md section 10) */
    {"layer.%d.rms_att.weight", LY, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_DECODER, false, NEVER, NULL,
     "RMSNorm weight before attention"},
    {"layer.%d.rms_ffn.weight", LY, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_DECODER, false, NEVER, NULL,
     "RMSNorm weight before the SwiGLU FFN"},
    {"layer.%d.q_norm.weight", LY, SQ_DTR_F32, SQ_SHR_HEAD_DIM, SQ_WHEN_QK_NORM, false, NEVER,
     NULL, "RMSNorm weight of each query head before RoPE (config.qk_norm, 10.7)"},
    {"layer.%d.k_norm.weight", LY, SQ_DTR_F32, SQ_SHR_HEAD_DIM, SQ_WHEN_QK_NORM, false, NEVER,
     NULL, "RMSNorm weight of each key head before RoPE (config.qk_norm, 10.7)"},
    {"final_norm.weight", M, SQ_DTR_F32, SQ_SHR_H, SQ_WHEN_DECODER, false, NEVER, NULL,
     "RMSNorm weight before the classifier"},
    {"classifier.weight", M, SQ_DTR_F32, SQ_SHR_V_H, SQ_WHEN_UNTIED, false, NEVER, NULL,
     "separate output projection W[token][H] (classifier_type fp32); absent when tied to "
     "embeddings.word"},
};
const size_t sq_sqm_n_tensor_rules = sizeof sq_sqm_tensor_rules / sizeof *sq_sqm_tensor_rules;
_Static_assert(sizeof sq_sqm_tensor_rules / sizeof *sq_sqm_tensor_rules == SQ_ROW_COUNT,
               "enum sq_sqm_row names every row");

void sq_sqm_linear_prefix(char *buf, size_t n, int l, sq_linear_kind k)
{
    if (l == SQ_SQM_CLASSIFIER)
        snprintf(buf, n, "%s", SQ_SQM_CLASSIFIER_PREFIX);
    else
        snprintf(buf, n, "layer.%d.%s", l, sq_linear_kind_name(k));
}

/* A linear row's suffix: ".weight" of "layer.%d.%s.weight". */
static const char *linear_suffix(const char *pattern)
{
    return pattern + strlen("layer.%d.%s");
}

static void linear_tensor_name(char *buf, size_t n, const char *pattern, int l, sq_linear_kind k)
{
    char pre[64];
    sq_sqm_linear_prefix(pre, sizeof pre, l, k);
    snprintf(buf, n, "%s%s", pre, linear_suffix(pattern));
}

void sq_sqm_tensor_name(char *buf, size_t n, enum sq_sqm_row row, int l, sq_linear_kind k)
{
    const sq_sqm_tensor_rule *r = &sq_sqm_tensor_rules[row];
    if (r->scope == SQ_SCOPE_LINEAR)
        linear_tensor_name(buf, n, r->name, l, k);
    else if (r->scope == SQ_SCOPE_LAYER)
        snprintf(buf, n, r->name, l);
    else
        snprintf(buf, n, "%s", r->name);
}
#undef M
#undef LY
#undef LN
#undef NEVER

/* ---- the metadata table (SQM.md 2.2-2.4) ---- */

#define L SQ_MR_LOADER
#define T SQ_MR_TOKENIZER
#define P SQ_MR_NONE
const sq_sqm_meta_rule sq_sqm_meta_rules[] = {
    {"format", NULL, SQ_MT_STRING, true, NULL, "squint-model", L},
    {"format_version", NULL, SQ_MT_INT, true, NULL, "1", L},
    {"tool", NULL, SQ_MT_STRING, false, NULL, "\"squint VERSION\"", P},
    {"architecture", NULL, SQ_MT_STRING, false, "bert", "bert | t2t | mpnet | nomic_bert | modernbert | llama (a causal LM: section 10)", L},
    {"config", NULL, SQ_MT_MAPPING, true, NULL, "section 2.3", L},
    {"config.vocab_size", NULL, SQ_MT_INT, true, NULL, "1 .. 4194304", L},
    {"config.hidden", NULL, SQ_MT_INT, true, NULL, "1 .. 16384, even", L},
    {"config.layers", NULL, SQ_MT_INT, true, NULL, "1 .. 256", L},
    {"config.heads", NULL, SQ_MT_INT, true, NULL, "1 .. 16384, divides hidden and embed_dim", L},
    {"config.ffn", NULL, SQ_MT_INT, true, NULL, "1 .. 65536", L},
    {"config.max_positions", NULL, SQ_MT_INT, true, NULL, "2 .. 65536", L},
    {"config.type_vocab", NULL, SQ_MT_INT, true, NULL, "0 .. 1024", L},
    {"config.pad_token_id", NULL, SQ_MT_INT, true, NULL, "0 .. vocab_size - 1", L},
    {"config.layer_norm_eps", NULL, SQ_MT_NUMBER, true, NULL, "[1e-30, 1e-2]", L},
    {"config.embed_dim", NULL, SQ_MT_INT, false, "hidden", "1 .. hidden, even, divisible by heads",
     L},
    {"config.norm", NULL, SQ_MT_STRING, false, "post", "post | pre", L},
    {"config.activation", NULL, SQ_MT_STRING, false, "gelu",
     "gelu | relu | swiglu (ffn_up: gate rows then up rows, 6.12) | geglu (6.13)", L},
    {"config.positions", NULL, SQ_MT_STRING, false, "learned",
     "learned | sinusoidal | rotary (no position table, 6.12)", L},
    {"config.rotary_base", NULL, SQ_MT_NUMBER, false, NULL,
     "(1, 1e12]: with positions rotary only, which requires it (6.12)", L},
    {"config.local_window", NULL, SQ_MT_INT, false, NULL,
     "1 .. 65536: with global_every and rotary_base_local, activation geglu only (6.13)", L},
    {"config.global_every", NULL, SQ_MT_INT, false, NULL,
     "1 .. 256: layer l is global when l % global_every == 0 (6.13)", L},
    {"config.rotary_base_local", NULL, SQ_MT_NUMBER, false, NULL,
     "(1, 1e12]: the rotary base of local layers (6.13)", L},
    {"config.first_attention_norm", NULL, SQ_MT_BOOL, false, "true",
     "false: no norm before layer 0's attention (norm pre only, 6.13)", L},
    {"config.final_norm", NULL, SQ_MT_BOOL, false, "false",
     "true: encoder.final_norm after the last layer (6.13)", L},
    {"config.embedding_layernorm", NULL, SQ_MT_BOOL, false, "true", "true | false", L},
    {"config.position_ids", NULL, SQ_MT_STRING, false, "index",
     "index | roberta (pad_token_id + 1 + the non-pad tokens so far, 6.1)", L},
    {"config.relative_buckets", NULL, SQ_MT_INT, false, "0",
     "0, or 4 .. 256 and a multiple of 4: relative attention buckets (6.10)", L},
    {"config.relative_max_distance", NULL, SQ_MT_INT, false, "0",
     "> relative_buckets / 4 (with relative_buckets)", L},
    {"config.pooling_head", NULL, SQ_MT_STRING, false, "none", "none | tanh | identity", L},
    {"config.num_labels", NULL, SQ_MT_INT, false, "0",
     "0 (an embedding model) .. 1024: a sequence classifier's logits", L},
    {"config.score_activation", NULL, SQ_MT_STRING, false, "identity",
     "identity | sigmoid | tanh | softmax (num_labels > 0)", L},
    {"labels", NULL, SQ_MT_STRING_LIST, false, NULL,
     "num_labels class names (num_labels > 0), unique, 1..256 bytes", L},
    {"pooling", NULL, SQ_MT_STRING, true, NULL,
     "cls | mean (an encoder) | last (a causal embedding model: 10.8, optional there)", L},
    {"normalize", NULL, SQ_MT_BOOL, true, NULL, "true | false", L},
    {"max_seq", NULL, SQ_MT_INT, true, NULL, "3 .. config.max_positions", L},
    {"embeddings_type", NULL, SQ_MT_STRING, true, NULL, "fp32 | int8 | int4-g128", L},
    {"activation_guard", NULL, SQ_MT_STRING, false, "clip", "row | clip", L},
    {"attention", NULL, SQ_MT_STRING, false, "f32", "f32 | bf16 | int8 (the attention matmuls, 6.5)", L},
    {"classifier_type", NULL, SQ_MT_STRING, false, "fp32",
     "fp32 | int8 (llama: the classifier, section 10.6)", L},
    {"tokenizer", NULL, SQ_MT_MAPPING, true, NULL, "section 2.4", T},
    {"tokenizer.type", NULL, SQ_MT_STRING, true, NULL,
     "wordpiece | unigram | hf-unigram | llama2c-bpe | hf-bpe | hf-bytelevel", T},
    {"tokenizer.vocab_size", "wordpiece", SQ_MT_INT, true, NULL, "1 .. 4194304", T},
    {"tokenizer.lowercase", "wordpiece", SQ_MT_BOOL, false, "false", NULL, T},
    {"tokenizer.strip_accents", "wordpiece", SQ_MT_BOOL_OR_NULL, false, "null",
     "null: follow lowercase", T},
    {"tokenizer.clean_text", "wordpiece", SQ_MT_BOOL, false, "false", NULL, T},
    {"tokenizer.handle_chinese_chars", "wordpiece", SQ_MT_BOOL, false, "false", NULL, T},
    {"tokenizer.continuing_subword_prefix", "wordpiece", SQ_MT_STRING, false, "##",
     "at most 64 bytes", T},
    {"tokenizer.max_input_chars_per_word", "wordpiece", SQ_MT_INT, false, "100", "1 .. 1048576",
     T},
    {"tokenizer.unk_id", "wordpiece", SQ_MT_ID, true, NULL, "0 .. vocab_size - 1", T},
    {"tokenizer.cls_id", "wordpiece", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1", T},
    {"tokenizer.sep_id", "wordpiece", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1", T},
    {"tokenizer.pad_id", "wordpiece", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1", T},
    {"tokenizer.mask_id", "wordpiece", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1", T},
    {"tokenizer.model_max_length", "wordpiece", SQ_MT_INT, false, "0", "0 .. 2^30", T},
    {"tokenizer.added_tokens", "wordpiece", SQ_MT_INT_LIST, false, "[]",
     "ids 0 .. vocab_size - 1", T},
    {"tokenizer.pair", "wordpiece", SQ_MT_STRING, false, "bert",
     "bert ([CLS] A [SEP] B [SEP], types 0/1) | roberta (<s> A </s></s> B </s>, types 0)", T},
    {"tokenizer.vocab_size", "unigram", SQ_MT_INT, true, NULL, "1 .. 4194304, > 6", T},
    {"tokenizer.unk_id", "unigram", SQ_MT_INT, true, NULL, "0", T},
    {"tokenizer.model_max_length", "unigram", SQ_MT_INT, false, "0", "0 .. 2^30", T},
    {"tokenizer.vocab_size", "hf-unigram", SQ_MT_INT, true, NULL, "1 .. 4194304", T},
    {"tokenizer.unk_id", "hf-unigram", SQ_MT_INT, true, NULL, "0 .. vocab_size - 1", T},
    {"tokenizer.cls_id", "hf-unigram", SQ_MT_INT, true, NULL, "0 .. vocab_size - 1 (<s>)", T},
    {"tokenizer.sep_id", "hf-unigram", SQ_MT_INT, true, NULL, "0 .. vocab_size - 1 (</s>)", T},
    {"tokenizer.pad_id", "hf-unigram", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1", T},
    {"tokenizer.mask_id", "hf-unigram", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1", T},
    {"tokenizer.model_max_length", "hf-unigram", SQ_MT_INT, false, "0", "0 .. 2^30", T},
    {"tokenizer.added_tokens", "hf-unigram", SQ_MT_INT_LIST, false, "[]",
     "ids 0 .. vocab_size - 1, matched in the raw text (special)", T},
    {"tokenizer.lstrip_tokens", "hf-unigram", SQ_MT_INT_LIST, false, "[]",
     "added token ids that take the white space on their left", T},
    {"tokenizer.rstrip_tokens", "hf-unigram", SQ_MT_INT_LIST, false, "[]",
     "added token ids that take the white space on their right", T},
    {"tokenizer.collapse_spaces", "hf-unigram", SQ_MT_BOOL, false, "false",
     "Replace \" {2,}\" -> \" \" after the charsmap", T},
    {"tokenizer.prepend_scheme", "hf-unigram", SQ_MT_STRING, false, "always",
     "always | first | never (Metaspace)", T},
    {"tokenizer.split", "hf-unigram", SQ_MT_BOOL, false, "true", "Metaspace split", T},
    /* causal LMs (architecture: llama, SQM.md section 10); config.vocab_size, hidden,
     * layers, heads, ffn and max_positions as above */
    {"config.kv_heads", NULL, SQ_MT_INT, true, NULL, "1 .. heads, divides heads (llama)", L},
    {"config.rms_norm_eps", NULL, SQ_MT_NUMBER, true, NULL, "[1e-30, 1e-2] (llama)", L},
    {"config.rope_theta", NULL, SQ_MT_NUMBER, true, NULL, "[1, 1e12] (llama)", L},
    {"config.tied_embeddings", NULL, SQ_MT_BOOL, true, NULL, "true | false (llama)", L},
    {"config.bos_token_id", NULL, SQ_MT_INT, true, NULL, "0 .. vocab_size - 1 (llama)", L},
    {"config.eos_token_id", NULL, SQ_MT_INT, true, NULL, "0 .. vocab_size - 1 (llama)", L},
    {"config.head_dim", NULL, SQ_MT_INT, false, "hidden / heads",
     "2 .. 1024, even; heads x head_dim <= 65536 (llama; Qwen3: 10.7)", L},
    {"config.qk_norm", NULL, SQ_MT_BOOL, false, "false",
     "true | false: per-head q / k RMSNorm before RoPE (llama; Qwen3: 10.7)", L},
    {"tokenizer.vocab_size", "llama2c-bpe", SQ_MT_INT, true, NULL, "config.vocab_size", T},
    {"tokenizer.vocab_size", "hf-bpe", SQ_MT_INT, true, NULL, "config.vocab_size", T},
    {"tokenizer.add_prefix", "hf-bpe", SQ_MT_BOOL, true, NULL, "true | false (10.5)", T},
    {"tokenizer.split", "hf-bpe", SQ_MT_BOOL, true, NULL, "true | false (10.5)", T},
    {"tokenizer.byte_fallback", "hf-bpe", SQ_MT_BOOL, true, NULL, "true | false (10.5)", T},
    {"tokenizer.fuse_unk", "hf-bpe", SQ_MT_BOOL, true, NULL, "true | false (10.5)", T},
    {"tokenizer.unk_id", "hf-bpe", SQ_MT_INT, true, NULL, "-1 .. vocab_size - 1", T},
    {"tokenizer.special_ids", "hf-bpe", SQ_MT_INT_LIST, true, NULL, "ids 0 .. vocab_size - 1",
     T},
    {"tokenizer.vocab_size", "hf-bytelevel", SQ_MT_INT, true, NULL,
     "256 .. config.vocab_size (the ids past it are model rows no text encodes to)", T},
    {"tokenizer.nfc", "hf-bytelevel", SQ_MT_BOOL, true, NULL, "true | false (10.5)", T},
    {"tokenizer.pattern", "hf-bytelevel", SQ_MT_STRING, true, NULL, "none | gpt2 | qwen2 (10.5)",
     T},
    {"tokenizer.add_prefix_space", "hf-bytelevel", SQ_MT_BOOL, true, NULL, "true | false (10.5)",
     T},
    {"tokenizer.ignore_merges", "hf-bytelevel", SQ_MT_BOOL, true, NULL, "true | false (10.5)", T},
    {"tokenizer.single_prefix", "hf-bytelevel", SQ_MT_INT_LIST, false, "[]",
     "at most 4 ids put before each text (a causal embedding model, 10.8)", L},
    {"tokenizer.single_suffix", "hf-bytelevel", SQ_MT_INT_LIST, false, "[]",
     "at most 4 ids put after each text (a causal embedding model, 10.8)", L},
    /* an encoder's hf-bytelevel (ModernBERT, SQM.md 2.4): the keys above plus these */
    {"tokenizer.cls_id", "hf-bytelevel", SQ_MT_INT, true, NULL,
     "0 .. vocab_size - 1 (encoders: [CLS])", T},
    {"tokenizer.sep_id", "hf-bytelevel", SQ_MT_INT, true, NULL,
     "0 .. vocab_size - 1 (encoders: [SEP])", T},
    {"tokenizer.unk_id", "hf-bytelevel", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1 (encoders)",
     T},
    {"tokenizer.pad_id", "hf-bytelevel", SQ_MT_ID, false, "-1", "-1 .. vocab_size - 1 (encoders)",
     T},
    {"tokenizer.mask_id", "hf-bytelevel", SQ_MT_ID, false, "-1",
     "-1 .. vocab_size - 1 (encoders)", T},
    {"tokenizer.model_max_length", "hf-bytelevel", SQ_MT_INT, false, "0", "0 .. 2^30 (encoders)",
     T},
    {"tokenizer.pair", "hf-bytelevel", SQ_MT_STRING, false, "bert",
     "bert | roberta, as wordpiece (encoders)", T},
    {"tokenizer.lstrip_tokens", "hf-bytelevel", SQ_MT_INT_LIST, false, "[]",
     "ids of tokenizer.added rows that take the white space on their left (encoders)", T},
    {"tokenizer.rstrip_tokens", "hf-bytelevel", SQ_MT_INT_LIST, false, "[]",
     "ids of tokenizer.added rows that take the white space on their right (encoders)", T},
    {"source", NULL, SQ_MT_MAPPING, false, NULL, "path, digest", P},
    {"calibration", NULL, SQ_MT_MAPPING, false, NULL, "section 2.5", P},
    {"recipe", NULL, SQ_MT_STRING, false, NULL, "canonical recipe text", P},
    {"linears", NULL, SQ_MT_MAPPING, false, NULL, "section 2.5 (verify checks it)", P},
    /* classification head (SQM.md section 9) */
    {"class_head", NULL, SQ_MT_MAPPING, false, NULL, "section 9", L},
    {"class_head.kind", NULL, SQ_MT_STRING, true, NULL, "softmax-linear", L},
    {"class_head.labels", NULL, SQ_MT_STRING_LIST, true, NULL, "2 .. 1024 quoted strings", L},
    {"class_head.normalized", NULL, SQ_MT_BOOL, true, NULL, "true | false", L},
    {"class_head.source", NULL, SQ_MT_STRING, false, NULL, "the head file quantize read", P},
    {"class_head.xxh64", NULL, SQ_MT_STRING, false, NULL, "16 hex digits", P},
};
const size_t sq_sqm_n_meta_rules = sizeof sq_sqm_meta_rules / sizeof *sq_sqm_meta_rules;
#undef L
#undef T
#undef P

/* ---- expectations ---- */

/* Linear k of layer l of the model ctx describes (encoder or causal LM). */
static bool lin_shape(const sq_sqm_schema_ctx *ctx, int l, sq_linear_kind k, int *N, int *K)
{
    if (l == SQ_SQM_CLASSIFIER) {
        *N = ctx->dec.vocab;
        *K = ctx->dec.dim;
        return ctx->decoder;
    }
    return ctx->decoder ? sq_decoder_linear_shape(&ctx->dec, k, N, K)
                        : sq_linear_shape(&ctx->cfg, l, k, N, K);
}

int sq_sqm_linear_qtype(unsigned cdtype)
{
    if (cdtype == SQ_CDT_F32)
        return SQ_QT_F32;
    int qi = sq_qtype_from_cdtype(cdtype);
    const sq_qtype_traits *t = qi >= 0 ? sq_qtype_get((sq_qtype)qi) : NULL;
    return t && t->executable ? qi : -1;
}

static bool when_holds(sq_sqm_when w, const sq_sqm_schema_ctx *ctx, sq_qtype lin_qt)
{
    const sq_qtype_traits *t = sq_qtype_get(lin_qt);
    switch (w) {
    case SQ_WHEN_ALWAYS: return true;
    case SQ_WHEN_UNIGRAM: return ctx->unigram;
    case SQ_WHEN_EMB_QUANT: return ctx->emb_qt != SQ_QT_F32;
    case SQ_WHEN_TYPE_VOCAB: return ctx->cfg.type_vocab > 0;
    case SQ_WHEN_EMB_LN: return ctx->cfg.emb_ln;
    case SQ_WHEN_REL: return !ctx->decoder && ctx->cfg.rel_buckets > 0;
    case SQ_WHEN_POS_TABLE: return !ctx->decoder && ctx->cfg.positions != SQ_POS_ROTARY;
    case SQ_WHEN_HEAD: return ctx->cfg.head != SQ_HEAD_NONE;
    case SQ_WHEN_SCORE: return ctx->cfg.num_labels > 0;
    case SQ_WHEN_LINEAR: return true; /* the caller knows the linear exists */
    case SQ_WHEN_PACKED: return lin_qt != SQ_QT_F32;
    case SQ_WHEN_ACT_ZERO: return lin_qt != SQ_QT_F32 && t && t->act_zero;
    case SQ_WHEN_CLASS_HEAD: return ctx->class_head_classes > 0;
    case SQ_WHEN_NO_CLASS_HEAD: return ctx->class_head_classes <= 0;
    case SQ_WHEN_ENCODER: return !ctx->decoder;
    case SQ_WHEN_DECODER: return ctx->decoder;
    case SQ_WHEN_UNTIED: /* int8 token rows: an embedding model, no head (10.8) */
        return ctx->decoder && !ctx->dec.tied_classifier && ctx->cls_qt == SQ_QT_F32 &&
               ctx->emb_qt == SQ_QT_F32;
    case SQ_WHEN_SCORES:
        return ctx->unigram || ctx->hf_unigram || (ctx->decoder && !ctx->hf_bpe && !ctx->bytelevel);
    case SQ_WHEN_HF_UNIGRAM: return ctx->hf_unigram && !ctx->decoder;
    case SQ_WHEN_HF_BPE: return ctx->bytelevel || (ctx->decoder && ctx->hf_bpe);
    case SQ_WHEN_BYTELEVEL: return ctx->bytelevel; /* a causal LM's or an encoder's (2.4) */
    case SQ_WHEN_QK_NORM: return ctx->decoder && ctx->dec.qk_norm;
    case SQ_WHEN_LN_ATTN: return !ctx->decoder; /* layer 0: sq_sqm_expect_tensor */
    case SQ_WHEN_FINAL_LN: return !ctx->decoder && ctx->cfg.final_norm;
    }
    return false;
}

static void set_dims(sq_sqm_expect *ex, int ndim, uint64_t d0, uint64_t d1)
{
    ex->ndim = ndim;
    ex->dims[0] = d0;
    ex->dims[1] = ndim > 1 ? d1 : 0;
}

static unsigned word_cdtype(sq_qtype qt)
{
    return qt == SQ_QT_F32 ? SQ_CDT_F32 : qt == SQ_QT_S8 ? SQ_CDT_I8 : SQ_CDT_U8;
}

int sq_sqm_expect_tensor(const sq_sqm_tensor_rule *r, const sq_sqm_schema_ctx *ctx, int l,
                         sq_linear_kind k, sq_qtype lin_qt, sq_sqm_expect *ex, sq_err *err)
{
    const sq_bert_config *c = &ctx->cfg;
    const uint64_t V = (uint64_t)c->vocab_size, H = (uint64_t)c->hidden,
                   E = (uint64_t)c->embed_dim;
    int N = 0, K = 0;
    memset(ex, 0, sizeof *ex);
    if (r->scope == SQ_SCOPE_LINEAR) {
        if (!lin_shape(ctx, l, k, &N, &K))
            return 0;
        linear_tensor_name(ex->name, sizeof ex->name, r->name, l, k);
    } else if (r->scope == SQ_SCOPE_LAYER) {
        snprintf(ex->name, sizeof ex->name, r->name, l);
    } else {
        snprintf(ex->name, sizeof ex->name, "%s", r->name);
    }
    ex->applies = when_holds(r->when, ctx, lin_qt);
    if (r->when == SQ_WHEN_LN_ATTN && l == 0 && ctx->cfg.first_attn_norm_absent)
        ex->applies = false; /* ModernBERT: no norm before layer 0's attention */
    ex->optional = r->optional;
    switch (r->dtype) {
    case SQ_DTR_F32: ex->dtype = SQ_CDT_F32; break;
    case SQ_DTR_F64: ex->dtype = SQ_CDT_F64; break;
    case SQ_DTR_I32: ex->dtype = SQ_CDT_I32; break;
    case SQ_DTR_U8: ex->dtype = SQ_CDT_U8; break;
    case SQ_DTR_WORD: ex->dtype = word_cdtype(ctx->emb_qt); break;
    case SQ_DTR_LINEAR:
        ex->dtype = lin_qt == SQ_QT_F32 ? SQ_CDT_F32 : sq_qtype_get(lin_qt)->cdtype;
        break;
    }
    /* A packed linear's N_pad and groups, from its qtype's traits. */
    sq_qweight qs = {0};
    int G = 1, block = 0;
    if (r->scope == SQ_SCOPE_LINEAR && lin_qt != SQ_QT_F32 &&
        (r->shape == SQ_SHR_SCALE || r->shape == SQ_SHR_WSUM)) {
        char wname[96];
        sq_sqm_tensor_name(wname, sizeof wname, SQ_ROW_LIN_WEIGHT, l, k);
        if (sq_qweight_shape(&qs, lin_qt, N, K, err) != 0) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            return sq_err_set_at(err, wname, "tensor \"%s\": %s", wname, why);
        }
        G = sq_qweight_groups(&qs);
        block = sq_qtype_get(lin_qt)->block;
    }
    switch (r->shape) {
    case SQ_SHR_BYTES: ex->any_len = true, set_dims(ex, 1, 0, 0); break;
    case SQ_SHR_TOK_VOCAB:
        ex->any_len = ctx->tok_vocab_size < 1;
        set_dims(ex, 1, ex->any_len ? 0 : (uint64_t)ctx->tok_vocab_size, 0);
        break;
    case SQ_SHR_WORD: set_dims(ex, 2, V, ctx->emb_qt == SQ_QT_S4G128 ? E / 2 : E); break;
    case SQ_SHR_WORD_SCALE:
        if (ctx->emb_qt == SQ_QT_S4G128)
            set_dims(ex, 2, V, (uint64_t)sq_embed_s4_groups((int)E));
        else
            set_dims(ex, 1, V, 0);
        break;
    case SQ_SHR_P_E: set_dims(ex, 2, (uint64_t)c->max_pos, E); break;
    case SQ_SHR_T_E: set_dims(ex, 2, (uint64_t)c->type_vocab, E); break;
    case SQ_SHR_REL: set_dims(ex, 2, (uint64_t)c->rel_buckets, (uint64_t)c->heads); break;
    case SQ_SHR_E: set_dims(ex, 1, E, 0); break;
    case SQ_SHR_H_H: set_dims(ex, 2, H, H); break;
    case SQ_SHR_H: set_dims(ex, 1, H, 0); break;
    case SQ_SHR_L_H: set_dims(ex, 2, (uint64_t)c->num_labels, H); break;
    case SQ_SHR_L: set_dims(ex, 1, (uint64_t)c->num_labels, 0); break;
    case SQ_SHR_LN_ATTN: set_dims(ex, 1, (uint64_t)sq_ln_attn_dim(c, l), 0); break;
    case SQ_SHR_N_K: set_dims(ex, 2, (uint64_t)N, (uint64_t)K); break;
    case SQ_SHR_N: set_dims(ex, 1, (uint64_t)N, 0); break;
    case SQ_SHR_K: set_dims(ex, 1, (uint64_t)K, 0); break;
    case SQ_SHR_SCALE: set_dims(ex, block ? 2 : 1, (uint64_t)N, (uint64_t)G); break;
    case SQ_SHR_WSUM: set_dims(ex, block ? 2 : 1, (uint64_t)qs.n_pad, (uint64_t)G); break;
    case SQ_SHR_ONE: set_dims(ex, 1, 1, 0); break;
    case SQ_SHR_OUTLIERS: ex->any_len = true, set_dims(ex, 1, 0, 0); break;
    case SQ_SHR_OUTLIERS_N: ex->any_rows = true, set_dims(ex, 2, 0, (uint64_t)N); break;
    case SQ_SHR_CLS_H: set_dims(ex, 2, (uint64_t)ctx->class_head_classes, H); break;
    case SQ_SHR_CLS: set_dims(ex, 1, (uint64_t)ctx->class_head_classes, 0); break;
    case SQ_SHR_V_H: set_dims(ex, 2, V, H); break;
    case SQ_SHR_PAIRS: ex->any_rows = true, set_dims(ex, 2, 0, 2); break;
    case SQ_SHR_TRIPLES: ex->any_rows = true, set_dims(ex, 2, 0, 3); break;
    case SQ_SHR_HEAD_DIM: set_dims(ex, 1, (uint64_t)ctx->dec.head_dim, 0); break;
    }
    return 1;
}

/* ---- names ---- */

const sq_sqm_tensor_rule *sq_sqm_rule_of(const char *name, const sq_sqm_schema_ctx *ctx, int *l,
                                         sq_linear_kind *k)
{
    *l = -1;
    *k = SQ_LIN_KINDS;
    int layer = -1;
    const char *rest = NULL;
    const char *end;
    long v = sq_layer_index(name, "layer.", &end);
    /* the canonical form: 1..5 digits, no leading zero */
    if (v >= 0 && (!ctx || v < ctx->cfg.layers) && (end - (name + 6)) < 6 &&
        (name[6] != '0' || end == name + 7)) {
        layer = (int)v;
        rest = end + 1;
    }
    /* A causal LM's packed classifier (SQM.md 10.6): "classifier.<suffix>"
     * of a linear row; an fp32 one's classifier.weight is the model row. */
    const size_t cl = strlen(SQ_SQM_CLASSIFIER_PREFIX);
    if (strncmp(name, SQ_SQM_CLASSIFIER_PREFIX, cl) == 0 && name[cl] == '.' &&
        (!ctx || (ctx->decoder && ctx->cls_qt != SQ_QT_F32)))
        for (size_t i = 0; i < sq_sqm_n_tensor_rules; i++) {
            const sq_sqm_tensor_rule *r = &sq_sqm_tensor_rules[i];
            if (r->scope == SQ_SCOPE_LINEAR &&
                strcmp(name + cl, linear_suffix(r->name)) == 0) {
                *l = SQ_SQM_CLASSIFIER;
                return r;
            }
        }
    for (size_t i = 0; i < sq_sqm_n_tensor_rules; i++) {
        const sq_sqm_tensor_rule *r = &sq_sqm_tensor_rules[i];
        if (r->scope == SQ_SCOPE_MODEL) {
            if (strcmp(name, r->name) == 0)
                return r;
            continue;
        }
        if (!rest)
            continue;
        if (r->scope == SQ_SCOPE_LAYER) {
            if (strcmp(rest, r->name + strlen("layer.%d.")) == 0) {
                *l = layer;
                return r;
            }
            continue;
        }
        const char *suffix = linear_suffix(r->name); /* ".scale" */
        for (int kk = 0; kk < SQ_LIN_KINDS; kk++) {
            const char *kn = sq_linear_kind_name((sq_linear_kind)kk);
            size_t n = strlen(kn);
            int N, K;
            if (strncmp(rest, kn, n) == 0 && strcmp(rest + n, suffix) == 0 &&
                (!ctx || lin_shape(ctx, layer, (sq_linear_kind)kk, &N, &K))) {
                *l = layer;
                *k = (sq_linear_kind)kk;
                return r;
            }
        }
    }
    return NULL;
}

/* ---- the check ---- */

static void shape_text(int ndim, const uint64_t *dims, bool any_len, bool any_rows, char *buf,
                       size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && len < n; i++) {
        if (any_len || (any_rows && i == 0))
            len += (size_t)snprintf(buf + len, n - len, "n > 0");
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%llu", i ? ", " : "",
                                    (unsigned long long)dims[i]);
    }
    if (len < n)
        snprintf(buf + len, n - len, "]");
}

static bool matches(const sq_container_tensor *t, const sq_sqm_expect *ex)
{
    if (t->dtype != ex->dtype || t->ndim != ex->ndim)
        return false;
    if (ex->any_len)
        return t->dims[0] > 0;
    if (ex->any_rows)
        return t->dims[0] > 0 && t->dims[1] == ex->dims[1];
    for (int i = 0; i < ex->ndim; i++)
        if (t->dims[i] != ex->dims[i])
            return false;
    return true;
}

static int check_row(const sq_container *c, const sq_sqm_tensor_rule *r,
                     const sq_sqm_schema_ctx *ctx, int l, sq_linear_kind k, sq_qtype lin_qt,
                     bool *seen, sq_err *err)
{
    sq_sqm_expect ex;
    int rc = sq_sqm_expect_tensor(r, ctx, l, k, lin_qt, &ex, err);
    if (rc < 0) {
        sq_err_prefix(err, "%s", c->path);
        return -1;
    }
    if (rc == 0)
        return 0;
    const sq_container_tensor *t = sq_container_find(c, ex.name);
    char pair[96] = "";
    if (r->pair && r->scope == SQ_SCOPE_LINEAR)
        linear_tensor_name(pair, sizeof pair, r->pair, l, k);
    else if (r->pair)
        snprintf(pair, sizeof pair, "%s", r->pair);
    if (!ex.applies) {
        if (t && r->refuse_when == SQ_WHEN_NO_CLASS_HEAD && when_holds(r->refuse_when, ctx, lin_qt))
            return sq_err_set_at(err, ex.name,
                                 "%s: tensor \"%s\" without metadata class_head (formats/SQM.md "
                                 "section 9)",
                                 c->path, ex.name);
        if (t && r->refuse_when != SQ_WHEN_ALWAYS && when_holds(r->refuse_when, ctx, lin_qt))
            return sq_err_set_at(err, ex.name,
                                 "%s: tensor \"%s\": the linear is %s, which has no activation "
                                 "zero point (int8 only)",
                                 c->path, ex.name, sq_qtype_get(lin_qt)->name);
        if (t && r->pair && !sq_container_find(c, pair))
            return sq_err_set_at(err, pair, "%s: missing tensor \"%s\" (\"%s\" exists)",
                                 c->path, pair, ex.name);
        return 0; /* not read: ignored */
    }
    if (!t) {
        if (ex.optional && r->pair && sq_container_find(c, pair)) /* optional pairs: both or neither */
            return sq_err_set_at(err, ex.name, "%s: missing tensor \"%s\" (\"%s\" exists)",
                                 c->path, ex.name, pair);
        if (ex.optional)
            return 0;
        return sq_err_set_at(err, ex.name, "%s: missing tensor \"%s\"", c->path, ex.name);
    }
    if (seen)
        seen[t - c->tensors] = true;
    if (r->dtype == SQ_DTR_LINEAR ? sq_sqm_linear_qtype(t->dtype) >= 0 && matches(t, &ex)
                                  : matches(t, &ex))
        return 0;
    char got[160], want[96];
    shape_text(t->ndim, t->dims, false, false, got, sizeof got);
    shape_text(ex.ndim, ex.dims, ex.any_len, ex.any_rows, want, sizeof want);
    return sq_err_set_at(err, ex.name, "%s: tensor \"%s\" is %s %s, expected %s %s", c->path,
                         ex.name, sq_cdtype_name(t->dtype), got,
                         r->dtype == SQ_DTR_LINEAR && sq_sqm_linear_qtype(t->dtype) < 0
                             ? "f32, s8-panel or s4g128-panel"
                             : sq_cdtype_name(ex.dtype),
                         want);
}

/* A causal LM's classifier (SQM.md 10.6): with classifier_type int8 the
 * linear rows under "classifier", of that qtype whatever the weight's dtype
 * says; with fp32 none of a packed linear's tensors may be there (the
 * metadata and the tensors would disagree about what runs). */
static int check_classifier(const sq_container *c, const sq_sqm_schema_ctx *ctx, bool *seen,
                            sq_err *err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sq_sqm_n_tensor_rules; i++) {
        const sq_sqm_tensor_rule *r = &sq_sqm_tensor_rules[i];
        if (r->scope != SQ_SCOPE_LINEAR)
            continue;
        if (ctx->cls_qt != SQ_QT_F32) {
            rc = check_row(c, r, ctx, SQ_SQM_CLASSIFIER, SQ_LIN_KINDS, ctx->cls_qt, seen, err);
            continue;
        }
        char name[96];
        linear_tensor_name(name, sizeof name, r->name, SQ_SQM_CLASSIFIER, SQ_LIN_KINDS);
        const sq_container_tensor *t = sq_container_find(c, name);
        /* classifier.weight in f32 is the model row's (untied) */
        if (t && (r->when != SQ_WHEN_LINEAR || t->dtype != SQ_CDT_F32))
            rc = sq_err_set_at(err, name,
                               "%s: tensor \"%s\" is a packed classifier's, but metadata "
                               "classifier_type is fp32 (or absent; formats/SQM.md 10.6)",
                               c->path, name);
    }
    return rc;
}

int sq_sqm_check_schema(const sq_container *c, const sq_sqm_schema_ctx *ctx, unsigned flags,
                        sq_err *err)
{
    bool *seen = NULL;
    if ((flags & SQ_SQM_STRICT) && !(seen = calloc(c->n_tensors + 1, sizeof *seen)))
        return sq_err_set(err, "out of memory");
    int rc = 0;
    /* Model-wide rows, then layer by layer: the layer's rows, then each linear's. */
    for (size_t i = 0; rc == 0 && i < sq_sqm_n_tensor_rules; i++)
        if (sq_sqm_tensor_rules[i].scope == SQ_SCOPE_MODEL)
            rc = check_row(c, &sq_sqm_tensor_rules[i], ctx, 0, SQ_LIN_KINDS, SQ_QT_F32, seen, err);
    for (int l = 0; rc == 0 && l < ctx->cfg.layers; l++) {
        for (size_t i = 0; rc == 0 && i < sq_sqm_n_tensor_rules; i++)
            if (sq_sqm_tensor_rules[i].scope == SQ_SCOPE_LAYER)
                rc = check_row(c, &sq_sqm_tensor_rules[i], ctx, l, SQ_LIN_KINDS, SQ_QT_F32, seen,
                               err);
        for (int k = 0; rc == 0 && k < SQ_LIN_KINDS; k++) {
            /* The weight decides the linear's type; an invalid one fails on
             * the weight row, before any companion is looked at. */
            char wname[96];
            sq_sqm_tensor_name(wname, sizeof wname, SQ_ROW_LIN_WEIGHT, l, (sq_linear_kind)k);
            const sq_container_tensor *w = sq_container_find(c, wname);
            int qt = w ? sq_sqm_linear_qtype(w->dtype) : SQ_QT_F32;
            for (size_t i = 0; rc == 0 && i < sq_sqm_n_tensor_rules; i++)
                if (sq_sqm_tensor_rules[i].scope == SQ_SCOPE_LINEAR)
                    rc = check_row(c, &sq_sqm_tensor_rules[i], ctx, l, (sq_linear_kind)k,
                                   qt >= 0 ? (sq_qtype)qt : SQ_QT_F32, seen, err);
        }
    }
    if (rc == 0 && ctx->decoder)
        rc = check_classifier(c, ctx, seen, err);
    /* A tensor of a layer the config does not have is not an extension to
     * ignore (SQM.md 2.6) but a config that lost layers: running it would
     * silently drop them. */
    for (size_t i = 0; rc == 0 && i < c->n_tensors; i++) {
        const char *name = c->tensors[i].name;
        long l = sq_layer_index(name, "layer.", NULL);
        if (l >= ctx->cfg.layers)
            rc = sq_err_set_at(err, name,
                               "%s: tensor \"%s\" belongs to layer %ld, but config.layers is %d: "
                               "the config describes fewer layers than the file holds",
                               c->path, name, l, ctx->cfg.layers);
    }
    for (size_t i = 0; rc == 0 && seen && i < c->n_tensors; i++)
        if (!seen[i])
            rc = sq_err_set_at(err, c->tensors[i].name,
                               "%s: tensor \"%s\" is not part of this model's schema "
                               "(formats/SQM.md section 3)",
                               c->path, c->tensors[i].name);
    free(seen);
    return rc;
}

int sq_sqm_check_row(const sq_container *c, const sq_sqm_schema_ctx *ctx, enum sq_sqm_row row,
                     sq_err *err)
{
    return check_row(c, &sq_sqm_tensor_rules[row], ctx, 0, SQ_LIN_KINDS, SQ_QT_F32, NULL, err);
}

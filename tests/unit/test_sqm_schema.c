/* The .sqm schema (libquant/sqm/sqm_schema.c): tiny model files built from the
 * schema itself pass it and load; for every row, a file with that tensor
 * missing, of the wrong dtype or of the wrong shape fails both the schema
 * check and the loader (sq_sqm_check_runnable, what `verify` reports),
 * naming that tensor; every required metadata key the loader reads is
 * refused when absent. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "embed_model.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "test_util.h"

static char *tmp;

static void setup(void)
{
    tmp = tu_mkdtemp();
}

static void teardown(void)
{
    tu_rmtree(tmp);
    free(tmp);
}

/* ---- models ---- */

/* A metadata line: its dotted key (for removal) and its text. */
typedef struct meta_line {
    const char *key;
    const char *text;
} meta_line;

#define CONFIG(V, H, E, NORM, ACT, POS, EMBLN, HEAD, TV)                                           \
    {"config", "config:"}, {"config.vocab_size", "  vocab_size: " #V},                            \
        {"config.hidden", "  hidden: " #H}, {"config.layers", "  layers: 2"},                     \
        {"config.heads", "  heads: 2"}, {"config.ffn", "  ffn: 64"},                              \
        {"config.max_positions", "  max_positions: 16"},                                          \
        {"config.type_vocab", "  type_vocab: " #TV}, {"config.pad_token_id", "  pad_token_id: 0"}, \
        {"config.layer_norm_eps", "  layer_norm_eps: 1e-12"},                                     \
        {"config.embed_dim", "  embed_dim: " #E}, {"config.norm", "  norm: " NORM},              \
        {"config.activation", "  activation: " ACT}, {"config.positions", "  positions: " POS},  \
        {"config.embedding_layernorm", "  embedding_layernorm: " EMBLN},                          \
        {"config.pooling_head", "  pooling_head: " HEAD}

#define WORDPIECE(V)                                                                               \
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: wordpiece"},                         \
        {"tokenizer.vocab_size", "  vocab_size: " #V},                                          \
        {"tokenizer.lowercase", "  lowercase: true"},                                             \
        {"tokenizer.unk_id", "  unk_id: 1"}, {"tokenizer.cls_id", "  cls_id: 2"},                 \
        {"tokenizer.sep_id", "  sep_id: 3"}, {"tokenizer.pad_id", "  pad_id: 0"},                 \
        {"tokenizer.mask_id", "  mask_id: 4"}

/* BERT (post-LN, wordpiece, token types, embedding LayerNorm), int8 embeddings. */
static const meta_line meta_bert[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    CONFIG(24, 32, 32, "post", "gelu", "learned", "true", "none", 2),
    {"pooling", "pooling: cls"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 16"},
    {"embeddings_type", "embeddings_type: int8"}, {"activation_guard", "activation_guard: row"},
    WORDPIECE(24), {NULL, NULL}};
/* The same with fp32 embeddings. */
static const meta_line meta_bert_f32[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    CONFIG(24, 32, 32, "post", "gelu", "learned", "true", "none", 2),
    {"pooling", "pooling: mean"}, {"normalize", "normalize: false"}, {"max_seq", "max_seq: 16"},
    {"embeddings_type", "embeddings_type: fp32"}, WORDPIECE(24), {NULL, NULL}};
/* ModernBERT (SQM.md 6.13): pre-LN, GeGLU (ffn_up 2F rows), rotary, a local
 * layer, no layer.0.ln_attn, encoder.final_norm; int8 embeddings. */
static const meta_line meta_modernbert[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    {"architecture", "architecture: modernbert"},
    CONFIG(24, 32, 32, "pre", "geglu", "rotary", "true", "none", 0),
    {"config.rotary_base", "  rotary_base: 160000"},
    {"config.local_window", "  local_window: 4"}, {"config.global_every", "  global_every: 3"},
    {"config.rotary_base_local", "  rotary_base_local: 10000"},
    {"config.first_attention_norm", "  first_attention_norm: false"},
    {"config.final_norm", "  final_norm: true"},
    {"pooling", "pooling: mean"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 16"},
    {"embeddings_type", "embeddings_type: int8"}, {"activation_guard", "activation_guard: row"},
    WORDPIECE(24), {NULL, NULL}};
/* BERT with a stored classification head (SQM.md section 9): 3 labels. */
static const meta_line meta_bert_head[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    CONFIG(24, 32, 32, "post", "gelu", "learned", "true", "none", 2),
    {"pooling", "pooling: cls"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 16"},
    {"embeddings_type", "embeddings_type: int8"}, {"activation_guard", "activation_guard: row"},
    WORDPIECE(24), {"class_head", "class_head:"}, {"class_head.kind", "  kind: softmax-linear"},
    {"class_head.labels", "  labels: [\"neg\", \"neu\", \"pos\"]"},
    {"class_head.normalized", "  normalized: true"},
    {"class_head.source", "  source: \"head.json\""},
    {"class_head.xxh64", "  xxh64: \"0123456789abcdef\""}, {NULL, NULL}};
/* USE Lite's shape: pre-LN, unigram, a widening layer 0 (E < H: res), tanh
 * head, no token types, no embedding LayerNorm; int4 embeddings. */
static const meta_line meta_t2t[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    {"architecture", "architecture: t2t"},
    CONFIG(24, 32, 16, "pre", "relu", "sinusoidal", "false", "tanh", 0),
    {"pooling", "pooling: mean"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 16"},
    {"embeddings_type", "embeddings_type: int4-g128"},
    {"activation_guard", "activation_guard: clip"},
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: unigram"},
    {"tokenizer.vocab_size", "  vocab_size: 20"}, {"tokenizer.unk_id", "  unk_id: 0"},
    {"tokenizer.model_max_length", "  model_max_length: 16"}, {NULL, NULL}};

/* MPNet: RoBERTa position ids, a relative attention bias [8 buckets][2
 * heads], no token types; int8 embeddings. */
static const meta_line meta_mpnet[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    {"architecture", "architecture: mpnet"},
    CONFIG(24, 32, 32, "post", "gelu", "learned", "true", "none", 0),
    {"config.position_ids", "  position_ids: roberta"},
    {"config.relative_buckets", "  relative_buckets: 8"},
    {"config.relative_max_distance", "  relative_max_distance: 8"},
    {"pooling", "pooling: mean"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 12"},
    {"embeddings_type", "embeddings_type: int8"}, {"activation_guard", "activation_guard: row"},
    WORDPIECE(24), {NULL, NULL}};

/* XLM-RoBERTa: RoBERTa position ids, no token types, the hf-unigram
 * tokenizer (scores and a charsmap); int8 embeddings. */
static const meta_line meta_xlmr[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    CONFIG(24, 32, 32, "post", "gelu", "learned", "true", "none", 0),
    {"config.position_ids", "  position_ids: roberta"},
    {"pooling", "pooling: mean"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 12"},
    {"embeddings_type", "embeddings_type: int8"}, {"activation_guard", "activation_guard: row"},
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: hf-unigram"},
    {"tokenizer.vocab_size", "  vocab_size: 24"}, {"tokenizer.unk_id", "  unk_id: 3"},
    {"tokenizer.cls_id", "  cls_id: 0"}, {"tokenizer.sep_id", "  sep_id: 2"},
    {"tokenizer.pad_id", "  pad_id: 1"}, {"tokenizer.mask_id", "  mask_id: 23"},
    {"tokenizer.model_max_length", "  model_max_length: 12"},
    {"tokenizer.collapse_spaces", "  collapse_spaces: true"},
    {"tokenizer.prepend_scheme", "  prepend_scheme: first"}, {"tokenizer.split", "  split: false"},
    {"tokenizer.added_tokens", "  added_tokens: [0, 1, 2, 3, 23]"},
    {"tokenizer.lstrip_tokens", "  lstrip_tokens: [23]"},
    {"tokenizer.rstrip_tokens", "  rstrip_tokens: [0]"}, {NULL, NULL}};

/* A cross-encoder / sequence classifier: BERT with the pooler as tanh head
 * and a score linear of 3 labels; fp32 embeddings. */
static const meta_line meta_ce[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    CONFIG(24, 32, 32, "post", "gelu", "learned", "true", "tanh", 2),
    {"config.num_labels", "  num_labels: 3"},
    {"config.score_activation", "  score_activation: softmax"},
    {"labels", "labels:"}, {"labels", "  - contradiction"}, {"labels", "  - entailment"},
    {"labels", "  - neutral"},
    {"pooling", "pooling: cls"}, {"normalize", "normalize: false"}, {"max_seq", "max_seq: 16"},
    {"embeddings_type", "embeddings_type: fp32"}, WORDPIECE(24), {NULL, NULL}};

/* A causal LM (SQM.md section 10): GQA (2 heads, 1 kv head), a separate
 * classifier, fp32 embeddings, llama2c-bpe scores. */
static const meta_line meta_llama[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    {"architecture", "architecture: llama"}, {"config", "config:"},
    {"config.vocab_size", "  vocab_size: 24"}, {"config.hidden", "  hidden: 32"},
    {"config.layers", "  layers: 2"}, {"config.heads", "  heads: 2"},
    {"config.kv_heads", "  kv_heads: 1"}, {"config.ffn", "  ffn: 48"},
    {"config.max_positions", "  max_positions: 16"},
    {"config.rms_norm_eps", "  rms_norm_eps: 1e-05"}, {"config.rope_theta", "  rope_theta: 10000"},
    {"config.tied_embeddings", "  tied_embeddings: false"},
    {"config.bos_token_id", "  bos_token_id: 1"}, {"config.eos_token_id", "  eos_token_id: 2"},
    {"embeddings_type", "embeddings_type: fp32"}, {"activation_guard", "activation_guard: row"},
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: llama2c-bpe"},
    {"tokenizer.vocab_size", "  vocab_size: 24"}, {NULL, NULL}};

/* The same causal LM with a Hugging Face tokenizer (SQM.md 10.5): ranked
 * merges instead of scores. */
static const meta_line meta_llama_hf[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    {"architecture", "architecture: llama"}, {"config", "config:"},
    {"config.vocab_size", "  vocab_size: 24"}, {"config.hidden", "  hidden: 32"},
    {"config.layers", "  layers: 2"}, {"config.heads", "  heads: 2"},
    {"config.kv_heads", "  kv_heads: 1"}, {"config.ffn", "  ffn: 48"},
    {"config.max_positions", "  max_positions: 16"},
    {"config.rms_norm_eps", "  rms_norm_eps: 1e-05"}, {"config.rope_theta", "  rope_theta: 10000"},
    {"config.tied_embeddings", "  tied_embeddings: true"},
    {"config.bos_token_id", "  bos_token_id: 1"}, {"config.eos_token_id", "  eos_token_id: 2"},
    {"embeddings_type", "embeddings_type: fp32"}, {"activation_guard", "activation_guard: row"},
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: hf-bpe"},
    {"tokenizer.vocab_size", "  vocab_size: 24"}, {"tokenizer.add_prefix", "  add_prefix: true"},
    {"tokenizer.split", "  split: false"}, {"tokenizer.byte_fallback", "  byte_fallback: true"},
    {"tokenizer.fuse_unk", "  fuse_unk: true"}, {"tokenizer.unk_id", "  unk_id: 0"},
    {"tokenizer.special_ids", "  special_ids: [1, 2]"}, {NULL, NULL}};

/* A Qwen3 decoder (SQM.md 10.5, 10.7): head_dim 16 x 4 heads = 64, wider
 * than hidden 32; q/k norms; a byte-level tokenizer of 257 pieces (the 256
 * byte-alphabet characters, then U+0100 U+0100 that the one merge (0, 0)
 * makes) under a model of 260 rows. */
static const meta_line meta_qwen3[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    {"architecture", "architecture: llama"}, {"config", "config:"},
    {"config.vocab_size", "  vocab_size: 260"}, {"config.hidden", "  hidden: 32"},
    {"config.layers", "  layers: 2"}, {"config.heads", "  heads: 4"},
    {"config.kv_heads", "  kv_heads: 2"}, {"config.ffn", "  ffn: 48"},
    {"config.max_positions", "  max_positions: 16"},
    {"config.rms_norm_eps", "  rms_norm_eps: 1e-06"}, {"config.rope_theta", "  rope_theta: 1000000"},
    {"config.tied_embeddings", "  tied_embeddings: false"},
    {"config.bos_token_id", "  bos_token_id: 255"}, {"config.eos_token_id", "  eos_token_id: 256"},
    {"config.head_dim", "  head_dim: 16"}, {"config.qk_norm", "  qk_norm: true"},
    {"embeddings_type", "embeddings_type: fp32"}, {"activation_guard", "activation_guard: row"},
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: hf-bytelevel"},
    {"tokenizer.vocab_size", "  vocab_size: 257"}, {"tokenizer.nfc", "  nfc: true"},
    {"tokenizer.pattern", "  pattern: qwen2"}, {"tokenizer.add_prefix_space", "  add_prefix_space: false"},
    {"tokenizer.ignore_merges", "  ignore_merges: false"}, {NULL, NULL}};

/* An encoder with ModernBERT's tokenizer kind (SQM.md 2.4, hf-bytelevel):
 * the same 257 byte-level pieces, [CLS] / [SEP] at 255 / 256 (strip lists
 * empty: the optional tokenizer.added row may be left out); int8 embeddings. */
static const meta_line meta_bl_encoder[] = {
    {"format", "format: squint-model"}, {"format_version", "format_version: 1"},
    CONFIG(257, 32, 32, "post", "gelu", "learned", "true", "none", 0),
    {"pooling", "pooling: mean"}, {"normalize", "normalize: true"}, {"max_seq", "max_seq: 12"},
    {"embeddings_type", "embeddings_type: int8"}, {"activation_guard", "activation_guard: row"},
    {"tokenizer", "tokenizer:"}, {"tokenizer.type", "  type: hf-bytelevel"},
    {"tokenizer.vocab_size", "  vocab_size: 257"}, {"tokenizer.nfc", "  nfc: true"},
    {"tokenizer.pattern", "  pattern: gpt2"},
    {"tokenizer.add_prefix_space", "  add_prefix_space: false"},
    {"tokenizer.ignore_merges", "  ignore_merges: false"}, {"tokenizer.unk_id", "  unk_id: -1"},
    {"tokenizer.cls_id", "  cls_id: 255"}, {"tokenizer.sep_id", "  sep_id: 256"},
    {"tokenizer.pad_id", "  pad_id: -1"}, {"tokenizer.mask_id", "  mask_id: -1"},
    {"tokenizer.model_max_length", "  model_max_length: 0"}, {"tokenizer.pair", "  pair: bert"},
    {"tokenizer.lstrip_tokens", "  lstrip_tokens: []"},
    {"tokenizer.rstrip_tokens", "  rstrip_tokens: []"}, {NULL, NULL}};

/* the model being built has a byte-level tokenizer (add_tensor's vocabulary) */
static bool g_bytelevel;

typedef struct model {
    const char *id;
    const meta_line *meta;
    /* the qtype of linear (layer, kind) */
    sq_qtype (*lin_qt)(int l, sq_linear_kind k);
    const char *smooth; /* a linear given a smooth tensor */
    const char *zero;   /* an int8 linear given an act_zero tensor */
    const char *outl;   /* a packed linear given outlier_index / outlier_weight */
} model;

static sq_qtype qt_bert(int l, sq_linear_kind k)
{
    if (l == 1 && k == SQ_LIN_QKV)
        return SQ_QT_F32;
    return l == 0 && k == SQ_LIN_FFN_UP ? SQ_QT_S4G128 : SQ_QT_S8;
}

static sq_qtype qt_f32(int l, sq_linear_kind k)
{
    (void)l, (void)k;
    return SQ_QT_F32;
}

static sq_qtype qt_t2t(int l, sq_linear_kind k)
{
    return l == 0 && k == SQ_LIN_FFN_DOWN ? SQ_QT_S4G128 : SQ_QT_S8;
}

static const model models[] = {
    {"bert", meta_bert, qt_bert, "layer.0.qkv", "layer.0.ffn_down", "layer.1.ffn_down"},
    {"bert-f32", meta_bert_f32, qt_f32, NULL, NULL, NULL},
    {"t2t", meta_t2t, qt_t2t, "layer.0.res", "layer.1.ffn_down", "layer.0.ffn_down"},
    {"cross-encoder", meta_ce, qt_bert, NULL, NULL, NULL},
    {"mpnet", meta_mpnet, qt_bert, NULL, NULL, NULL},
    {"modernbert", meta_modernbert, qt_bert, "layer.0.qkv", NULL, "layer.1.ffn_down"},
    {"xlmr", meta_xlmr, qt_bert, NULL, NULL, NULL},
    {"bytelevel-encoder", meta_bl_encoder, qt_bert, NULL, NULL, NULL},
    {"bert-head", meta_bert_head, qt_bert, NULL, NULL, NULL},
    {"llama", meta_llama, qt_bert, "layer.0.attn_out", "layer.1.ffn_down", "layer.0.qkv"},
    {"llama-hf", meta_llama_hf, qt_f32, NULL, NULL, NULL},
    {"qwen3", meta_qwen3, qt_bert, "layer.1.attn_out", NULL, NULL},
};
#define N_MODELS (sizeof models / sizeof *models)

static const model *model_by_id(const char *id)
{
    for (size_t i = 0; i < N_MODELS; i++)
        if (!strcmp(models[i].id, id))
            return &models[i];
    ck_abort_msg("no test model %s", id);
    return NULL;
}

/* What to do to one tensor. */
typedef enum forge { F_NONE, F_MISSING, F_DTYPE, F_SHAPE } forge;

typedef struct build_opts {
    const char *target; /* the tensor forged */
    forge how;
    const char *drop_key; /* metadata key left out (with its children) */
    const char *extra;    /* an extra f32 [4] tensor of this name */
} build_opts;

/* The metadata text without drop (and its children); malloc'd. */
static char *meta_text(const meta_line *m, const char *drop)
{
    char buf[4096];
    size_t n = 0, dl = drop ? strlen(drop) : 0;
    for (; m->key; m++) {
        if (drop && (!strcmp(m->key, drop) || (!strncmp(m->key, drop, dl) && m->key[dl] == '.')))
            continue;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", m->text);
    }
    buf[n] = '\0';
    return strdup(buf);
}

static unsigned other_dtype(unsigned dt)
{
    switch (dt) {
    case SQ_CDT_F32: return SQ_CDT_I32;
    case SQ_CDT_I32: return SQ_CDT_F32;
    case SQ_CDT_F64: return SQ_CDT_F32;
    case SQ_CDT_U8: return SQ_CDT_I8;
    case SQ_CDT_I8: return SQ_CDT_U8;
    default: return SQ_CDT_I8; /* a packed weight as plain bytes */
    }
}

/* Add one expected tensor (possibly forged) with harmless values: f32 1,
 * i32 0 (wsum of zero panels; act_zero 3), zero bytes, the vocabulary. */
static void add_tensor(sq_container_writer *w, const sq_sqm_expect *ex, const build_opts *o,
                       int vocab_size)
{
    unsigned dt = ex->dtype;
    int nd = ex->ndim;
    uint64_t dims[2] = {ex->dims[0], ex->dims[1]};
    char vocab[1024];
    size_t vlen = 0;
    if (!strcmp(ex->name, "tokenizer.vocab") && g_bytelevel) {
        /* GPT-2's byte alphabet in byte order, then U+0100 U+0100 */
        for (int b = 0, k = 0; b < 256; b++) {
            const bool pr = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            const int cp = pr ? b : 0x100 + k++;
            if (cp < 0x80) {
                vocab[vlen++] = (char)cp;
            } else {
                vocab[vlen++] = (char)(0xC0 | (cp >> 6));
                vocab[vlen++] = (char)(0x80 | (cp & 0x3F));
            }
            vocab[vlen++] = 0;
        }
        vlen += (size_t)snprintf(vocab + vlen, sizeof vocab - vlen, "\xC4\x80\xC4\x80") + 1;
        dims[0] = vlen;
    } else if (!strcmp(ex->name, "tokenizer.vocab")) {
        /* the last piece is "tok0tok0", so an hf-bpe file's one merge
         * (0, 0; tokenizer.merges is zeros) makes a piece and the file loads */
        for (int i = 0; i < vocab_size; i++)
            vlen += (size_t)snprintf(vocab + vlen, sizeof vocab - vlen,
                                     i == vocab_size - 1 ? "tok0tok0" : "tok%d", i) + 1;
        dims[0] = vlen;
    }
    if ((ex->any_len || ex->any_rows) && dims[0] == 0)
        dims[0] = 1; /* outlier_index / outlier_weight: one channel (0) */
    if (o->target && !strcmp(o->target, ex->name)) {
        if (o->how == F_MISSING)
            return;
        if (o->how == F_DTYPE)
            dt = other_dtype(dt);
        if (o->how == F_SHAPE) {
            if (ex->any_len) /* 1-D of any length: make it 2-D */
                nd = 2, dims[1] = 1;
            else
                dims[nd - 1] += 1;
        }
    }
    uint64_t size;
    sq_err err;
    ck_assert_msg(sq_cdtype_size(dt, nd, dims, &size, &err) == 0, "%s: %s", ex->name, err.msg);
    unsigned char *data = calloc(1, size ? size : 1);
    /* the smallest valid charsmap: one trie unit (no key), no strings */
    static const unsigned char charsmap[8] = {4, 0, 0, 0, 0, 0, 0, 0};
    if (!strcmp(ex->name, "tokenizer.charsmap") && dt == SQ_CDT_U8 && nd == 1 && dims[0] == 1) {
        free(data);
        dims[0] = size = sizeof charsmap;
        data = malloc(size);
        memcpy(data, charsmap, size);
    }
    if (!strcmp(ex->name, "tokenizer.vocab") && dt == SQ_CDT_U8 && nd == 1)
        memcpy(data, vocab, vlen);
    else if (dt == SQ_CDT_F32)
        for (uint64_t i = 0; i < size / 4; i++)
            ((float *)data)[i] = 1.0f;
    else if (dt == SQ_CDT_I32 && strstr(ex->name, ".act_zero"))
        ((int32_t *)data)[0] = 3;
    ck_assert_msg(sq_container_writer_add_tensor(w, ex->name, dt, nd, dims, data, size, &err) == 0,
                  "%s: %s", ex->name, err.msg);
    free(data);
}

static bool is(const char *name, const char *lin, const char *suffix)
{
    char b[96];
    snprintf(b, sizeof b, "%s.%s", lin ? lin : "-", suffix);
    return !strcmp(name, b);
}

/* Write model m (as the schema describes it, forged as o says) to path;
 * returns the path. */
static char *build(const model *m, const build_opts *o, const char *file)
{
    sq_err err;
    char *path = tu_write_str(tmp, file, "");
    char *meta = meta_text(m->meta, o->drop_key);
    /* The schema context from the metadata as the loader parses it (the full
     * metadata: a forged file still gets all its tensors). */
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    char *full = meta_text(m->meta, NULL);
    ck_assert(sq_container_writer_set_metadata(w, full, strlen(full), &err) == 0);
    free(full);
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container c;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
    ck_assert_msg(sq_sqm_read_meta(&c, &ctx, &info, &err) == 0, "%s: %s", m->id, err.msg);
    g_bytelevel = ctx.bytelevel;
    sq_container_close(&c);
    sq_container_writer_free(w);
    w = sq_container_writer_new(SQ_KIND_SQM);
    ck_assert(sq_container_writer_set_metadata(w, meta, strlen(meta), &err) == 0);
    free(meta);

    sq_sqm_expect ex;
    for (size_t i = 0; i < sq_sqm_n_tensor_rules; i++) {
        const sq_sqm_tensor_rule *r = &sq_sqm_tensor_rules[i];
        int nl = r->scope == SQ_SCOPE_MODEL ? 1 : ctx.cfg.layers;
        int nk = r->scope == SQ_SCOPE_LINEAR ? SQ_LIN_KINDS : 1;
        for (int l = 0; l < nl; l++)
            for (int k = 0; k < nk; k++) {
                sq_qtype qt = r->scope == SQ_SCOPE_LINEAR ? m->lin_qt(l, (sq_linear_kind)k)
                                                          : SQ_QT_F32;
                int rc = sq_sqm_expect_tensor(r, &ctx, l, (sq_linear_kind)k, qt, &ex, &err);
                ck_assert_msg(rc >= 0, "%s", err.msg);
                if (rc == 0 || !ex.applies)
                    continue;
                if (ex.optional && strcmp(ex.name, "tokenizer.added") != 0 &&
                    strcmp(ex.name, "tokenizer.charsmap") != 0 &&
                    !is(ex.name, m->smooth, "smooth") &&
                    !is(ex.name, m->zero, "act_zero") &&
                    !is(ex.name, m->outl, "outlier_index") &&
                    !is(ex.name, m->outl, "outlier_weight"))
                    continue; /* optional, not given to this linear */
                add_tensor(w, &ex, o, (int)ctx.tok_vocab_size);
            }
    }
    if (o->extra) {
        uint64_t four = 4;
        float v[4] = {1, 1, 1, 1};
        ck_assert(sq_container_writer_add_tensor(w, o->extra, SQ_CDT_F32, 1, &four, v, 16, &err) ==
                  0);
    }
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container_writer_free(w);
    return path;
}

/* The schema check and the loader on a file: 0 or -1, err filled. */
static int check(const char *path, unsigned flags, sq_err *schema_err, sq_err *load_err)
{
    sq_container c;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQM, &c, schema_err) == 0, "%s",
                  schema_err->msg);
    int rc = sq_sqm_read_meta(&c, &ctx, &info, schema_err) == 0 &&
                     sq_sqm_check_schema(&c, &ctx, flags, schema_err) == 0
                 ? 0
                 : -1;
    int rc2 = sq_sqm_check_runnable(&c, load_err);
    sq_container_close(&c);
    ck_assert_msg(rc == rc2 || flags, "schema %d, loader %d (%s / %s)", rc, rc2, schema_err->msg,
                  load_err->msg);
    return rc;
}

/* ---- tests ---- */

START_TEST(valid_models_pass)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        build_opts o = {0};
        char *p = build(&models[i], &o, "ok.sqm");
        sq_err e1, e2;
        ck_assert_msg(check(p, SQ_SQM_STRICT, &e1, &e2) == 0, "%s: %s", models[i].id, e1.msg);
        ck_assert_msg(check(p, 0, &e1, &e2) == 0, "%s: %s / %s",
                      models[i].id, e1.msg, e2.msg);
        free(p);
    }
}
END_TEST

/* For every row, in every model where it applies: its first tensor missing
 * (unless optional), of another dtype, of another shape. */
START_TEST(forged_rows_fail_naming_the_tensor)
{
    bool row_tested[64] = {false};
    int n_cases = 0;
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        const model *m = &models[mi];
        build_opts none = {0};
        char *p = build(m, &none, "base.sqm");
        sq_container c;
        sq_sqm_schema_ctx ctx;
        sq_sqm_info info;
        sq_err err;
        ck_assert(sq_container_open(p, SQ_KIND_SQM, &c, &err) == 0);
        ck_assert(sq_sqm_read_meta(&c, &ctx, &info, &err) == 0);
        /* the first tensor of each row present in this model */
        const char *first[64] = {NULL};
        bool optional[64] = {false}; /* and alone: an optional pair comes whole */
        for (size_t t = 0; t < c.n_tensors; t++) {
            int l;
            sq_linear_kind k;
            const sq_sqm_tensor_rule *r = sq_sqm_rule_of(c.tensors[t].name, &ctx, &l, &k);
            ck_assert_msg(r != NULL, "%s: %s has no row", m->id, c.tensors[t].name);
            size_t ri = (size_t)(r - sq_sqm_tensor_rules);
            if (!first[ri]) {
                first[ri] = strdup(c.tensors[t].name);
                optional[ri] = r->optional && !r->pair;
            }
        }
        sq_container_close(&c);
        free(p);
        for (size_t ri = 0; ri < sq_sqm_n_tensor_rules; ri++) {
            if (!first[ri])
                continue;
            for (forge f = F_MISSING; f <= F_SHAPE; f++) {
                build_opts o = {.target = first[ri], .how = f};
                char *fp = build(m, &o, "forged.sqm");
                sq_err e1, e2;
                int rc = check(fp, 0, &e1, &e2);
                if (f == F_MISSING && optional[ri]) {
                    ck_assert_msg(rc == 0, "%s: optional %s missing: %s", m->id, first[ri],
                                  e1.msg);
                } else {
                    ck_assert_msg(rc != 0, "%s: %s forged (%d) passes", m->id, first[ri], f);
                    ck_assert_msg(!strcmp(e1.subject, first[ri]),
                                  "%s: %s forged (%d): schema names '%s' (%s)", m->id, first[ri],
                                  f, e1.subject, e1.msg);
                    ck_assert_msg(!strcmp(e2.subject, first[ri]),
                                  "%s: %s forged (%d): loader names '%s' (%s)", m->id, first[ri],
                                  f, e2.subject, e2.msg);
                    ck_assert_msg(strstr(e2.msg, first[ri]) != NULL, "message: %s", e2.msg);
                    n_cases++;
                }
                free(fp);
            }
            row_tested[ri] = true;
            free((void *)first[ri]);
        }
    }
    for (size_t ri = 0; ri < sq_sqm_n_tensor_rules; ri++)
        ck_assert_msg(row_tested[ri], "row %s is in no test model", sq_sqm_tensor_rules[ri].name);
    fprintf(stderr, "%d forged files refused\n", n_cases);
    ck_assert_int_ge(n_cases, 130);
}
END_TEST

START_TEST(pairs_refusals_and_strict)
{
    sq_err e1, e2;
    /* bert-f32 has an embedding LayerNorm and no head: a lone head.weight
     * is a missing head.bias; */
    build_opts o = {.extra = "head.weight"};
    char *p = build(&models[1], &o, "x.sqm");
    ck_assert(check(p, 0, &e1, &e2) != 0);
    ck_assert_str_eq(e1.subject, "head.bias");
    ck_assert_str_eq(e2.subject, "head.bias");
    free(p);
    /* t2t has no embedding LayerNorm: a lone beta names the gamma. */
    o.extra = "embeddings.ln.beta";
    p = build(&models[2], &o, "x.sqm");
    ck_assert(check(p, 0, &e1, &e2) != 0);
    ck_assert_str_eq(e2.subject, "embeddings.ln.gamma");
    free(p);
    /* act_zero on an int4 linear (t2t layer.0.ffn_down) is refused, even 0
     * (the schema check does not read values). */
    o.extra = "layer.0.ffn_down.act_zero";
    p = build(&models[2], &o, "x.sqm");
    ck_assert(check(p, 0, &e1, &e2) != 0);
    ck_assert_str_eq(e2.subject, "layer.0.ffn_down.act_zero");
    free(p);
    /* A classification head tensor without metadata class_head: refused,
     * alone or as a pair (SQM.md section 9). */
    o.extra = "class_head.bias";
    p = build(&models[0], &o, "x.sqm");
    ck_assert(check(p, 0, &e1, &e2) != 0);
    ck_assert_str_eq(e1.subject, "class_head.bias");
    ck_assert_str_eq(e2.subject, "class_head.bias");
    ck_assert(strstr(e2.msg, "without metadata class_head") != NULL);
    free(p);
    /* A class head metadata block whose labels do not size the tensors. */
    o.extra = NULL;
    o.drop_key = "class_head.labels";
    p = build(model_by_id("bert-head"), &o, "x.sqm");
    ck_assert(check(p, 0, &e1, &e2) != 0);
    free(p);
    o.drop_key = NULL;
    /* A tensor of a layer the config does not have: the config lost
     * layers; refused by the loader too, never run truncated. */
    o.extra = "layer.2.qkv.bias";
    p = build(&models[0], &o, "x.sqm");
    ck_assert(check(p, 0, &e1, &e2) != 0);
    ck_assert_str_eq(e1.subject, "layer.2.qkv.bias");
    ck_assert(strstr(e2.msg, "fewer layers than the file holds") != NULL);
    free(p);
    /* A tensor the model does not have (companions of an f32 linear; res of
     * a non-widening layer; another name): ignored by the loader, refused
     * by the strict check (the writer's). */
    static const char *const extras[] = {"layer.1.qkv.scale", "layer.1.res.bias",
                                         "embeddings.extra", "layer.0.qkv"};
    for (size_t i = 0; i < sizeof extras / sizeof *extras; i++) {
        o.extra = extras[i];
        p = build(&models[0], &o, "x.sqm");
        ck_assert_msg(check(p, 0, &e1, &e2) == 0, "%s: %s", extras[i], e2.msg);
        ck_assert(check(p, SQ_SQM_STRICT, &e1, &e2) != 0);
        ck_assert_str_eq(e1.subject, extras[i]);
        free(p);
    }
}
END_TEST

/* Every required metadata key the loader or the tokenizer reads: a file
 * without it does not load. Optional ones may be left out. */
START_TEST(metadata_keys)
{
    int n_required = 0;
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        const model *m = &models[mi];
        char *text = meta_text(m->meta, NULL);
        const char *tok_type = strstr(text, "type: unigram")        ? "unigram"
                               : strstr(text, "type: hf-bpe")       ? "hf-bpe"
                               : strstr(text, "type: hf-bytelevel") ? "hf-bytelevel"
                               : strstr(text, "type: hf-unigram")   ? "hf-unigram"
                                                                    : "wordpiece";
        free(text);
        for (size_t i = 0; i < sq_sqm_n_meta_rules; i++) {
            const sq_sqm_meta_rule *r = &sq_sqm_meta_rules[i];
            if (r->tok_type && strcmp(r->tok_type, tok_type) != 0)
                continue;
            const meta_line *line = NULL;
            for (const meta_line *l = m->meta; l->key; l++)
                if (!strcmp(l->key, r->key))
                    line = l;
            if (!line)
                continue;
            /* an optional key left out must load when the model has its default */
            const char *val = strstr(line->text, ": ");
            bool is_default = r->dflt && val && !strcmp(val + 2, r->dflt);
            if (!(r->required && r->reader != SQ_MR_NONE) && !is_default && r->reader != SQ_MR_NONE)
                continue;
            build_opts o = {.drop_key = r->key};
            char *p = build(m, &o, "meta.sqm");
            sq_container c;
            sq_err err;
            ck_assert(sq_container_open(p, SQ_KIND_SQM, &c, &err) == 0);
            err.msg[0] = '\0'; /* a message left from before would hide an empty one */
            int rc = sq_sqm_check_runnable(&c, &err);
            sq_container_close(&c);
            if (r->required && r->reader != SQ_MR_NONE) {
                ck_assert_msg(rc != 0, "%s: without required key %s the model loads", m->id,
                              r->key);
                /* and the message names the key it misses */
                const char *leaf = strrchr(r->key, '.');
                leaf = leaf ? leaf + 1 : r->key;
                ck_assert_msg(strstr(err.msg, leaf) != NULL,
                              "%s: without required key %s the message is \"%s\"", m->id,
                              r->key, err.msg);
                n_required++;
            } else {
                ck_assert_msg(rc == 0, "%s: without optional key %s: %s", m->id, r->key,
                              err.msg);
            }
            free(p);
        }
        /* every key the model's metadata has is in the table */
        for (const meta_line *l = m->meta; l->key; l++) {
            bool known = false;
            for (size_t i = 0; i < sq_sqm_n_meta_rules; i++)
                known |= !strcmp(sq_sqm_meta_rules[i].key, l->key);
            ck_assert_msg(known, "metadata key %s is not in the schema", l->key);
        }
    }
    fprintf(stderr, "%d required metadata keys refused when absent\n", n_required);
    ck_assert_int_ge(n_required, 55);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sqm_schema");
    TCase *tc = tcase_create("sqm_schema");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, valid_models_pass);
    tcase_add_test(tc, forged_rows_fail_naming_the_tensor);
    tcase_add_test(tc, pairs_refusals_and_strict);
    tcase_add_test(tc, metadata_keys);
    SRunner *sr = srunner_create(s);
    suite_add_tcase(s, tc);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

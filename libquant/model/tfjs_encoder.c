#include "tfjs_encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "tfjs_model.h"

/* Weight and constant names of the USE Lite graph ("KonaTransformer"). The
 * variables live under module/..., the constants folded by the converter
 * under module_apply_default/... (see tests/oracle/use_lite/README.md). */
#define ROOT "module_apply_default/Encoder_en/KonaTransformer/"
#define ENC ROOT "Encode/"
#define STACK ENC "TransformerStack/"
#define VARS "module/Encoder_en/KonaTransformer/Encode/"

static float *alloc_f(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) == 0 ? p : NULL;
}

/* A copy of an f32 tensor of exactly the given 1-D or 2-D shape. */
static float *copy_f32(const sq_tfjs_model *m, const char *name, int nd, int64_t d0, int64_t d1,
                       sq_err *err)
{
    int64_t want[2] = {d0, d1};
    const sq_tfjs_tensor *t = sq_tfjs_get(m, name, SQ_TFJS_F32, nd, want, err);
    if (!t)
        return NULL;
    float *p = alloc_f((size_t)t->numel);
    if (!p) {
        sq_err_set(err, "out of memory");
        return NULL;
    }
    memcpy(p, t->data, (size_t)t->numel * sizeof(float));
    return p;
}

/* TF stores dense kernels as [in][out] (MatMul) or [1][1][in][out] (1x1
 * Conv2D); squint's linears are [out][in] as Hugging Face stores them. */
static int load_linear(const sq_tfjs_model *m, const char *wname, bool conv, const char *bname,
                       int in, int out, sq_linear *l, sq_err *err)
{
    int64_t want[4] = {1, 1, in, out};
    const sq_tfjs_tensor *t = sq_tfjs_get(m, wname, SQ_TFJS_F32, conv ? 4 : 2,
                                          conv ? want : want + 2, err);
    if (!t)
        return -1;
    l->in = in;
    l->out = out;
    l->qtype = SQ_QT_F32;
    l->w = alloc_f((size_t)in * out);
    if (!l->w)
        return sq_err_set(err, "out of memory");
    const float *src = t->data;
    for (int i = 0; i < in; i++)
        for (int o = 0; o < out; o++)
            l->w[(size_t)o * in + i] = src[(size_t)i * out + o];
    l->b = copy_f32(m, bname, 1, out, 0, err);
    return l->b ? 0 : -1;
}

static const char *fmt(char *buf, size_t n, const char *f, int l)
{
    snprintf(buf, n, f, l);
    return buf;
}

/* Width of a 1x1-conv kernel's input and output, for shape discovery. */
static int conv_dims(const sq_tfjs_model *m, const char *name, int *in, int *out)
{
    const sq_tfjs_tensor *t = sq_tfjs_find(m, name);
    if (!t || t->dtype != SQ_TFJS_F32 || t->ndim != 4 || t->shape[0] != 1 || t->shape[1] != 1 ||
        t->shape[2] < 1 || t->shape[3] < 1 || t->shape[2] > SQ_MAX_HIDDEN ||
        t->shape[3] > 3 * SQ_MAX_HIDDEN)
        return -1;
    *in = (int)t->shape[2];
    *out = (int)t->shape[3];
    return 0;
}

/* The graph must be the computation this loader reproduces: count the ops
 * that would differ in a variant we do not implement. */
static int check_graph(const sq_tfjs_model *m, int layers, sq_err *err)
{
    static const struct {
        const char *op;
        int per_layer, fixed;
    } want[] = {
        {"Softmax", 1, 0}, {"Relu", 1, 0},  {"Rsqrt", 2, 1}, /* 2 LN per layer + l2_normalize */
        {"Tanh", 0, 1},    {"Sin", 0, 1},   {"Cos", 0, 1},   {"Conv2D", 2, 0},
        {"BatchMatMul", 2, 0}, {"Erf", 0, 0}, {"Gelu", 0, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int n = sq_tfjs_count_op(m, want[i].op), e = want[i].per_layer * layers + want[i].fixed;
        if (n != e)
            return sq_err_set(err,
                              "%s: the graph is not the supported USE-Lite encoder "
                              "(%d %s ops, expected %d for %d layers)",
                              m->json_path, n, want[i].op, e, layers);
    }
    /* The layer-0 input: embeddings + (embeddings + timing signal). */
    const json_t *add = sq_tfjs_node(m, STACK "Layer_0/add");
    const char *i0 = add ? sq_tfjs_node_input(add, 0) : NULL, *i1 = add ? sq_tfjs_node_input(add, 1) : NULL;
    const json_t *tadd = sq_tfjs_node(m, STACK "Layer_0/AddTimingSignal/add");
    const char *t1 = tadd ? sq_tfjs_node_input(tadd, 1) : NULL;
    if (!i0 || !i1 || !t1 || strcmp(i0, ENC "Scatter/ScatterNd") != 0 ||
        strcmp(i1, STACK "Layer_0/AddTimingSignal/Scatter/ScatterNd") != 0 ||
        strcmp(t1, STACK "Layer_0/AddTimingSignal/TimingSignal/concat") != 0)
        return sq_err_set(err, "%s: the layer-0 input is not embeddings + (embeddings + timing "
                               "signal) as in the supported USE-Lite graph", m->json_path);
    return 0;
}

static int load_layer(const sq_tfjs_model *m, const sq_bert_config *c, int l, sq_block *L,
                      sq_err *err)
{
    char a[256], b[256];
    const int in = sq_layer_in_dim(c, l), H = c->hidden, F = c->ffn;
#define LN(field_g, field_b, part, D)                                                              \
    if (!(L->field_g = copy_f32(m, fmt(a, sizeof a, ENC "Layer_%d/TransformerLayer/" part            \
                                       "layer_prepostprocess/layer_norm/layer_norm_scale/"          \
                                       "ConcatPartitions/concat", l), 1, D, 0, err)) ||           \
        !(L->field_b = copy_f32(m, fmt(a, sizeof a, ENC "Layer_%d/TransformerLayer/" part            \
                                       "layer_prepostprocess/layer_norm/layer_norm_bias/"           \
                                       "ConcatPartitions/concat", l), 1, D, 0, err)))              \
        return -1;
    LN(n1_g, n1_b, "", in)
    LN(n2_g, n2_b, "FFN/", H)
#undef LN
    if (load_linear(m, fmt(a, sizeof a, VARS "Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0", l), true,
                    fmt(b, sizeof b, ENC "Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", l),
                    in, 3 * in, &L->lin[SQ_LIN_QKV], err) != 0 ||
        load_linear(m, fmt(a, sizeof a, VARS "Layer_%d/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0", l), true,
                    fmt(b, sizeof b, ENC "Layer_%d/TransformerLayer/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", l),
                    in, H, &L->lin[SQ_LIN_ATTN_OUT], err) != 0 ||
        load_linear(m, fmt(a, sizeof a, STACK "Layer_%d/TransformerLayer/FFN/conv1/Tensordot/Reshape_1", l), false,
                    fmt(b, sizeof b, ENC "Layer_%d/TransformerLayer/FFN/conv1/bias/ConcatPartitions/concat", l),
                    H, F, &L->lin[SQ_LIN_FFN_UP], err) != 0 ||
        load_linear(m, fmt(a, sizeof a, STACK "Layer_%d/TransformerLayer/FFN/conv2/Tensordot/Reshape_1", l), false,
                    fmt(b, sizeof b, ENC "Layer_%d/TransformerLayer/FFN/conv2/bias/ConcatPartitions/concat", l),
                    F, H, &L->lin[SQ_LIN_FFN_DOWN], err) != 0)
        return -1;
    /* "AdjustResidualInput": a layer that widens projects its raw input
     * (before the LayerNorm) with a dense layer for the residual path. */
    if (in != H &&
        load_linear(m, fmt(a, sizeof a, ENC "Layer_%d/TransformerLayer/dense/kernel/ConcatPartitions/concat", l), false,
                    fmt(b, sizeof b, ENC "Layer_%d/TransformerLayer/dense/bias/ConcatPartitions/concat", l),
                    in, H, &L->lin[SQ_LIN_RES], err) != 0)
        return -1;
    /* Heads and scale: dh from the split_heads reshape, the query scale
     * must be 1/sqrt(dh) (the executor computes it). */
    int64_t dh;
    double scale;
    if (sq_tfjs_scalar_i32(m, fmt(a, sizeof a, STACK "Layer_%d/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3", l), &dh, err) != 0 ||
        sq_tfjs_scalar_f32(m, fmt(b, sizeof b, STACK "Layer_%d/TransformerLayer/MultiheadAttention/mul/y", l), &scale, err) != 0)
        return -1;
    if (dh * c->heads != in)
        return sq_err_set(err, "%s: layer %d attends over %d channels with %d heads of %lld",
                          m->json_path, l, in, c->heads, (long long)dh);
    if (fabs(scale * sqrt((double)dh) - 1.0) > 1e-6)
        return sq_err_set(err, "%s: layer %d scales queries by %g, not 1/sqrt(%lld)", m->json_path,
                          l, scale, (long long)dh);
    return 0;
}

/* The tensor2tensor timing signal for positions 0..P-1 from the graph's own
 * inv_timescales [1][E/2]: [sin(p * inv_i) | cos(p * inv_i)]. The product
 * is rounded to f32 as the graph's Mul does, sin/cos then taken in double
 * and rounded (tfjs' CPU backend calls Math.sin on the f32 value). */
static float *timing_table(const sq_tfjs_model *m, int P, int E, sq_err *err)
{
    int64_t want[2] = {1, E / 2};
    const sq_tfjs_tensor *t = sq_tfjs_get(m, STACK "Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1",
                                          SQ_TFJS_F32, 2, want, err);
    if (!t)
        return NULL;
    const float *inv = t->data;
    float *tab = alloc_f((size_t)P * E);
    if (!tab) {
        sq_err_set(err, "out of memory");
        return NULL;
    }
    for (int p = 0; p < P; p++)
        for (int i = 0; i < E / 2; i++) {
            float arg = (float)p * inv[i];
            tab[(size_t)p * E + i] = (float)sin((double)arg);
            tab[(size_t)p * E + E / 2 + i] = (float)cos((double)arg);
        }
    return tab;
}

static int build(const sq_tfjs_model *m, sq_encoder *enc, sq_err *err)
{
    sq_bert_config *c = &enc->cfg;
    char name[256];
    int layers = 0, in0 = 0, qkv0 = 0;
    while (layers < SQ_MAX_LAYERS &&
           conv_dims(m, fmt(name, sizeof name, VARS "Layer_%d/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0", layers), &in0, &qkv0) == 0)
        layers++;
    if (layers == 0)
        return sq_err_set(err, "%s: no transformer layers found (is this the USE-Lite model?)",
                          m->json_path);
    int E, Q, H;
    if (conv_dims(m, VARS "Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0", &E, &Q) != 0 ||
        conv_dims(m, VARS "Layer_0/TransformerLayer/MultiheadAttention/output_transform_single/kernel/part_0", &E, &H) != 0)
        return sq_err_set(err, "%s: layer 0 attention kernels are missing or malformed", m->json_path);
    const sq_tfjs_tensor *emb = sq_tfjs_find(m, "module/Embeddings_en");
    const sq_tfjs_tensor *up = sq_tfjs_find(m, STACK "Layer_0/TransformerLayer/FFN/conv1/Tensordot/Reshape_1");
    if (!emb || emb->ndim != 2 || !up || up->ndim != 2)
        return sq_err_set(err, "%s: embedding or FFN weights are missing", m->json_path);
    int64_t heads, maxlen;
    double eps;
    if (sq_tfjs_scalar_i32(m, STACK "Layer_1/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2", &heads, err) != 0 &&
        sq_tfjs_scalar_i32(m, STACK "Layer_0/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2", &heads, err) != 0)
        return -1;
    char epsname[256];
    if (sq_tfjs_scalar_i32(m, ROOT "ClipToMaxLength/Less/y", &maxlen, err) != 0 ||
        sq_tfjs_scalar_f32(m, fmt(epsname, sizeof epsname, STACK "Layer_%d/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x", layers - 1), &eps, err) != 0)
        return -1;
    *c = (sq_bert_config){
        .vocab_size = (int)(emb->shape[0] > 0 && emb->shape[0] <= SQ_MAX_VOCAB ? emb->shape[0] : 0),
        .hidden = H,
        .layers = layers,
        .heads = (int)(heads > 0 && heads <= SQ_MAX_HIDDEN ? heads : 0),
        .ffn = (int)(up->shape[1] > 0 && up->shape[1] <= SQ_MAX_FFN ? up->shape[1] : 0),
        .max_pos = (int)(maxlen >= 2 && maxlen <= SQ_MAX_POSITIONS ? maxlen : 0),
        .type_vocab = 0,
        .pad_token_id = 0,
        .ln_eps = eps,
        .embed_dim = E,
        .norm = SQ_NORM_PRE,
        .act = SQ_ACT_RELU,
        .positions = SQ_POS_SINUSOIDAL,
        .emb_ln = false,
        .head = SQ_HEAD_TANH,
    };
    if (!c->vocab_size || !c->heads || !c->ffn || !c->max_pos || E > H || E % 2 || H % 2 ||
        Q != 3 * E || emb->shape[1] != E || !(eps > 0 && eps <= 1e-2))
        return sq_err_set(err, "%s: unsupported shapes (vocab %lld, embed %d, hidden %d, qkv %d, "
                               "heads %lld, max length %lld, eps %g)",
                          m->json_path, (long long)emb->shape[0], E, H, Q, (long long)heads,
                          (long long)maxlen, eps);
    if (check_graph(m, layers, err) != 0)
        return -1;
    if (!(enc->word_emb = copy_f32(m, "module/Embeddings_en", 2, c->vocab_size, E, err)) ||
        !(enc->pos_emb = timing_table(m, c->max_pos, E, err)))
        return -1;
    /* The exported graph adds the embeddings twice: Layer_0/add is
     * x + AddTimingSignal(x) = x + (x + timing). Checked above; doubling the
     * table (exact in binary floating point) reproduces it. */
    for (size_t i = 0; i < (size_t)c->vocab_size * E; i++)
        enc->word_emb[i] *= 2.0f;
    enc->word_qt = SQ_QT_F32;
    enc->layers = calloc((size_t)layers, sizeof *enc->layers);
    if (!enc->layers)
        return sq_err_set(err, "out of memory");
    for (int l = 0; l < layers; l++)
        if (load_layer(m, c, l, &enc->layers[l], err) != 0)
            return -1;
    return load_linear(m, "module/Encoder_en/hidden_layers/tanh_layer_0/weights", false,
                       "module/Encoder_en/hidden_layers/tanh_layer_0/bias", H, H, &enc->head, err);
}

int sq_tfjs_load_encoder(const char *dir, sq_encoder *enc, sq_wordpiece_spec *tok,
                         sq_pooling_config *pool, sq_err *err)
{
    memset(enc, 0, sizeof *enc);
    memset(tok, 0, sizeof *tok);
    sq_tfjs_model m;
    if (sq_tfjs_open(dir, &m, err) != 0)
        return -1;
    int rc = build(&m, enc, err);
    sq_tfjs_close(&m);
    if (rc == 0) {
        char *vp = sq_path_join(dir, "vocab.json");
        if (!vp)
            rc = sq_err_set(err, "out of memory");
        else if (!sq_file_exists(vp))
            rc = sq_err_set(err, "%s: no vocab.json next to model.json (the SentencePiece vocabulary)",
                            dir);
        else
            rc = sq_unigram_spec_load_use_vocab(vp, tok, err);
        free(vp);
    }
    if (rc == 0 && tok->vocab_size > enc->cfg.vocab_size)
        rc = sq_err_set(err, "%s: vocab.json has %d pieces but the embedding has %d rows", dir,
                        tok->vocab_size, enc->cfg.vocab_size);
    if (rc != 0) {
        sq_encoder_free(enc);
        sq_wordpiece_spec_free(tok);
        return -1;
    }
    tok->model_max_length = enc->cfg.max_pos;
    /* The graph ends in mean pooling, the tanh layer and l2_normalize. */
    pool->pooling = SQ_POOL_MEAN;
    pool->normalize = true;
    pool->from_sentence_transformers = false;
    return 0;
}

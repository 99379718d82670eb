#include "bert_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "hf_weights.h"
#include "modernbert_model.h"
#include "nomic_model.h"

typedef sq_hf_weights weights;

static float *load(const weights *w, const char *name, int64_t d0, int64_t d1, sq_err *err)
{
    return sq_hf_weights_load(w, name, d0, d1, err);
}

static int load_linear(const weights *w, const char *base, int out, int in, sq_linear *l,
                       sq_err *err)
{
    char name[256];
    snprintf(name, sizeof name, "%s.weight", base);
    l->w = load(w, name, out, in, err);
    if (!l->w)
        return -1;
    snprintf(name, sizeof name, "%s.bias", base);
    l->b = load(w, name, out, 0, err);
    if (!l->b)
        return -1;
    l->in = in;
    l->out = out;
    l->qtype = SQ_QT_F32;
    return 0;
}

/* Where a family's checkpoint keeps each tensor of a layer (%d: the layer;
 * the q/k/v pattern also takes the part's name). The blocks are the same. */
typedef struct family_names {
    const char *prefix; /* of the encoder's tensors in task checkpoints */
    const char *qkv, *q_k_v[3], *attn_out, *ln1, *ffn_up, *ffn_down, *ln2;
} family_names;

static const family_names bert_names = {
    "bert.",
    "encoder.layer.%d.attention.self.%s", {"query", "key", "value"},
    "encoder.layer.%d.attention.output.dense", "encoder.layer.%d.attention.output.LayerNorm",
    "encoder.layer.%d.intermediate.dense", "encoder.layer.%d.output.dense",
    "encoder.layer.%d.output.LayerNorm",
};

static const family_names mpnet_names = {
    "mpnet.",
    "encoder.layer.%d.attention.attn.%s", {"q", "k", "v"},
    "encoder.layer.%d.attention.attn.o", "encoder.layer.%d.attention.LayerNorm",
    "encoder.layer.%d.intermediate.dense", "encoder.layer.%d.output.dense",
    "encoder.layer.%d.output.LayerNorm",
};

/* Q, K and V share their input: fuse them into one [3H][H] linear. */
static int load_qkv(const weights *w, const family_names *fn, int layer, int H, sq_linear *l,
                    sq_err *err)
{
    l->in = H;
    l->out = 3 * H;
    l->qtype = SQ_QT_F32;
    l->w = malloc((size_t)3 * H * H * sizeof(float));
    l->b = malloc((size_t)3 * H * sizeof(float));
    if (!l->w || !l->b)
        return sq_err_set(err, "out of memory");
    for (int p = 0; p < 3; p++) {
        char base[128];
        snprintf(base, sizeof base, fn->qkv, layer, fn->q_k_v[p]);
        sq_linear part = {0};
        if (load_linear(w, base, H, H, &part, err) != 0) {
            sq_linear_free(&part);
            return -1;
        }
        memcpy(l->w + (size_t)p * H * H, part.w, (size_t)H * H * sizeof(float));
        memcpy(l->b + (size_t)p * H, part.b, (size_t)H * sizeof(float));
        sq_linear_free(&part);
    }
    return 0;
}

static int load_norm(const weights *w, const char *pattern, int i, int H, float **g, float **b,
                     sq_err *err)
{
    char base[128], name[160];
    snprintf(base, sizeof base, pattern, i);
    snprintf(name, sizeof name, "%s.weight", base);
    if (!(*g = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "%s.bias", base);
    return (*b = load(w, name, H, 0, err)) ? 0 : -1;
}

static int load_layer(const weights *w, const family_names *fn, const sq_bert_config *c, int i,
                      sq_block *L, sq_err *err)
{
    const int H = c->hidden, F = c->ffn;
    char base[128];
    if (load_qkv(w, fn, i, H, &L->lin[SQ_LIN_QKV], err) != 0)
        return -1;
    snprintf(base, sizeof base, fn->attn_out, i);
    if (load_linear(w, base, H, H, &L->lin[SQ_LIN_ATTN_OUT], err) != 0)
        return -1;
    snprintf(base, sizeof base, fn->ffn_up, i);
    if (load_linear(w, base, F, H, &L->lin[SQ_LIN_FFN_UP], err) != 0)
        return -1;
    snprintf(base, sizeof base, fn->ffn_down, i);
    if (load_linear(w, base, H, F, &L->lin[SQ_LIN_FFN_DOWN], err) != 0)
        return -1;
    if (load_norm(w, fn->ln1, i, H, &L->n1_g, &L->n1_b, err) != 0 ||
        load_norm(w, fn->ln2, i, H, &L->n2_g, &L->n2_b, err) != 0)
        return -1;
    return 0;
}

/* BertForSequenceClassification: the pooler (dense + tanh on [CLS], the
 * encoder's pooling head) and the classifier, which transformers saves
 * without the "bert." prefix. */
static int load_classifier(weights *w, const sq_bert_config *c, sq_encoder *enc, sq_err *err)
{
    const int H = c->hidden;
    const char *prefix = w->prefix;
    /* MPNet's and RoBERTa's classification head (MPNetForSequenceClassification,
     * XLMRobertaForSequenceClassification): classifier.dense + tanh on <s>,
     * then classifier.out_proj; no pooler. Both outside the encoder's prefix. */
    w->prefix = "";
    const sq_safetensors *dummy;
    const bool roberta_head = sq_hf_weights_find(w, "classifier.out_proj.weight", &dummy);
    if (!roberta_head)
        w->prefix = prefix;
    int rc = load_linear(w, roberta_head ? "classifier.dense" : "pooler.dense", H, H, &enc->head,
                         err);
    w->prefix = "";
    if (rc == 0)
        rc = load_linear(w, roberta_head ? "classifier.out_proj" : "classifier", c->num_labels, H,
                         &enc->score, err);
    w->prefix = prefix;
    return rc;
}

int sq_bert_load_dir(const char *dir, sq_encoder *enc, sq_err *err)
{
    memset(enc, 0, sizeof *enc);
    char *cfg_path = sq_path_join(dir, "config.json");
    if (!cfg_path)
        return sq_err_set(err, "out of memory");
    int rc = sq_bert_config_load(cfg_path, &enc->cfg, err);
    free(cfg_path);
    if (rc != 0)
        return -1;
    weights w;
    if (sq_hf_weights_open(dir, &w, err) != 0)
        return -1;
    if (enc->cfg.act == SQ_ACT_GEGLU) { /* ModernBERT: its own names */
        rc = sq_modernbert_load_weights(&w, enc, err);
        sq_hf_weights_close(&w);
        if (rc != 0)
            sq_encoder_free(enc);
        return rc;
    }
    if (enc->cfg.positions == SQ_POS_ROTARY) { /* NomicBERT: its own names */
        w.prefix = "";
        rc = sq_nomic_load_weights(&w, enc, err);
        sq_hf_weights_close(&w);
        if (rc != 0)
            sq_encoder_free(enc);
        return rc;
    }
    const sq_safetensors *dummy;
    const family_names *fn = enc->cfg.rel_buckets > 0 ? &mpnet_names : &bert_names;
    char probe[64];
    snprintf(probe, sizeof probe, "%sembeddings.word_embeddings.weight", fn->prefix);
    w.prefix = sq_hf_weights_find(&w, probe, &dummy) ? fn->prefix : "";
    /* XLM-RoBERTa's task checkpoints keep BERT's names under "roberta." */
    if (!w.prefix[0] && fn == &bert_names &&
        sq_hf_weights_find(&w, "roberta.embeddings.word_embeddings.weight", &dummy))
        w.prefix = "roberta.";
    /* A classification head in the weights makes a sequence classifier even
     * when config.json's "architectures" is missing or empty: run as an
     * embedding model, its head would be dropped without a word. */
    if (enc->cfg.num_labels == 0 &&
        (sq_hf_weights_find(&w, "classifier.weight", &dummy) ||
         sq_hf_weights_find(&w, "classifier.out_proj.weight", &dummy))) {
        char *cp = sq_path_join(dir, "config.json");
        rc = cp ? sq_bert_config_load_classifier(cp, &enc->cfg, err) : sq_err_set(err, "out of memory");
        free(cp);
        if (rc != 0) {
            sq_hf_weights_close(&w);
            return -1;
        }
    }
    const sq_bert_config *c = &enc->cfg;
    const int H = c->hidden;
    rc = -1;
    if (sq_hf_weights_check_layers(&w, "encoder.layer.", c->layers,
                                   "config.json num_hidden_layers", err) != 0)
        goto out;
    if (!(enc->word_emb = load(&w, "embeddings.word_embeddings.weight", c->vocab_size, H, err)) ||
        !(enc->pos_emb = load(&w, "embeddings.position_embeddings.weight", c->max_pos, H, err)) ||
        (c->type_vocab > 0 &&
         !(enc->type_emb = load(&w, "embeddings.token_type_embeddings.weight", c->type_vocab, H, err))) ||
        !(enc->emb_ln_g = load(&w, "embeddings.LayerNorm.weight", H, 0, err)) ||
        !(enc->emb_ln_b = load(&w, "embeddings.LayerNorm.bias", H, 0, err)))
        goto out;
    if (c->rel_buckets > 0 &&
        (!(enc->rel_bias = load(&w, "encoder.relative_attention_bias.weight", c->rel_buckets,
                                c->heads, err)) ||
         sq_encoder_build_rel_table(enc, err) != 0))
        goto out;
    enc->layers = calloc((size_t)c->layers, sizeof *enc->layers);
    if (!enc->layers) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < c->layers; i++)
        if (load_layer(&w, fn, c, i, &enc->layers[i], err) != 0)
            goto out;
    if (c->num_labels > 0 && load_classifier(&w, c, enc, err) != 0)
        goto out;
    rc = 0;
out:
    sq_hf_weights_close(&w);
    if (rc != 0)
        sq_encoder_free(enc);
    return rc;
}

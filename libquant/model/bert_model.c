#include "bert_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "hf_weights.h"

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

/* Q, K and V share their input: fuse them into one [3H][H] linear. */
static int load_qkv(const weights *w, int layer, int H, sq_linear *l, sq_err *err)
{
    static const char *const parts[3] = {"query", "key", "value"};
    l->in = H;
    l->out = 3 * H;
    l->qtype = SQ_QT_F32;
    l->w = malloc((size_t)3 * H * H * sizeof(float));
    l->b = malloc((size_t)3 * H * sizeof(float));
    if (!l->w || !l->b)
        return sq_err_set(err, "out of memory");
    for (int p = 0; p < 3; p++) {
        char base[128];
        snprintf(base, sizeof base, "encoder.layer.%d.attention.self.%s", layer, parts[p]);
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

static int load_layer(const weights *w, const sq_bert_config *c, int i, sq_block *L,
                      sq_err *err)
{
    const int H = c->hidden, F = c->ffn;
    char base[128], name[160];
    if (load_qkv(w, i, H, &L->lin[SQ_LIN_QKV], err) != 0)
        return -1;
    snprintf(base, sizeof base, "encoder.layer.%d.attention.output.dense", i);
    if (load_linear(w, base, H, H, &L->lin[SQ_LIN_ATTN_OUT], err) != 0)
        return -1;
    snprintf(base, sizeof base, "encoder.layer.%d.intermediate.dense", i);
    if (load_linear(w, base, F, H, &L->lin[SQ_LIN_FFN_UP], err) != 0)
        return -1;
    snprintf(base, sizeof base, "encoder.layer.%d.output.dense", i);
    if (load_linear(w, base, H, F, &L->lin[SQ_LIN_FFN_DOWN], err) != 0)
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.attention.output.LayerNorm.weight", i);
    if (!(L->n1_g = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.attention.output.LayerNorm.bias", i);
    if (!(L->n1_b = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.output.LayerNorm.weight", i);
    if (!(L->n2_g = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.output.LayerNorm.bias", i);
    if (!(L->n2_b = load(w, name, H, 0, err)))
        return -1;
    return 0;
}

/* BertForSequenceClassification: the pooler (dense + tanh on [CLS], the
 * encoder's pooling head) and the classifier, which transformers saves
 * without the "bert." prefix. */
static int load_classifier(weights *w, const sq_bert_config *c, sq_encoder *enc, sq_err *err)
{
    const int H = c->hidden;
    if (load_linear(w, "pooler.dense", H, H, &enc->head, err) != 0)
        return -1;
    const char *prefix = w->prefix;
    w->prefix = "";
    int rc = load_linear(w, "classifier", c->num_labels, H, &enc->score, err);
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
    const sq_safetensors *dummy;
    w.prefix = sq_hf_weights_find(&w, "bert.embeddings.word_embeddings.weight", &dummy) ? "bert."
                                                                                          : "";
    /* A classification head in the weights makes a sequence classifier even
     * when config.json's "architectures" is missing or empty: run as an
     * embedding model, its head would be dropped without a word. */
    if (enc->cfg.num_labels == 0 && sq_hf_weights_find(&w, "classifier.weight", &dummy)) {
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
        !(enc->type_emb = load(&w, "embeddings.token_type_embeddings.weight", c->type_vocab, H, err)) ||
        !(enc->emb_ln_g = load(&w, "embeddings.LayerNorm.weight", H, 0, err)) ||
        !(enc->emb_ln_b = load(&w, "embeddings.LayerNorm.bias", H, 0, err)))
        goto out;
    enc->layers = calloc((size_t)c->layers, sizeof *enc->layers);
    if (!enc->layers) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < c->layers; i++)
        if (load_layer(&w, c, i, &enc->layers[i], err) != 0)
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

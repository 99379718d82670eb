#include "bert_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "safetensors.h"

/* The checkpoint's tensors, possibly across several shard files. */
typedef struct weights {
    sq_safetensors *shards;
    int n_shards;
    const char *prefix; /* "" or "bert." */
} weights;

static const sq_st_tensor *find_any(const weights *w, const char *name, const sq_safetensors **in)
{
    for (int i = 0; i < w->n_shards; i++) {
        const sq_st_tensor *t = sq_safetensors_find(&w->shards[i], name);
        if (t) {
            *in = &w->shards[i];
            return t;
        }
    }
    return NULL;
}

/* Load tensor `name` (prefix added) of exactly the given shape as f32. */
static float *load(const weights *w, const char *name, int64_t d0, int64_t d1, sq_err *err)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", w->prefix, name);
    const sq_safetensors *st = NULL;
    const sq_st_tensor *t = find_any(w, full, &st);
    if (!t) {
        sq_err_set(err, "%s: missing tensor \"%s\"", w->shards[0].mf.path, full);
        return NULL;
    }
    int want_nd = d1 > 0 ? 2 : 1;
    if (t->ndim != want_nd || t->shape[0] != d0 || (want_nd == 2 && t->shape[1] != d1)) {
        char got[128] = "";
        int n = 0;
        for (int i = 0; i < t->ndim && n < 100; i++)
            n += snprintf(got + n, sizeof got - (size_t)n, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        if (want_nd == 2)
            sq_err_set(err, "%s: tensor \"%s\" has shape [%s], expected [%lld, %lld]", st->mf.path,
                       full, got, (long long)d0, (long long)d1);
        else
            sq_err_set(err, "%s: tensor \"%s\" has shape [%s], expected [%lld]", st->mf.path, full,
                       got, (long long)d0);
        return NULL;
    }
    float *dst = NULL;
    if (posix_memalign((void **)&dst, 64, (size_t)t->numel * sizeof(float) + 64) != 0) {
        sq_err_set(err, "out of memory loading \"%s\"", full);
        return NULL;
    }
    if (sq_safetensors_read_f32(st, t, dst, err) != 0) {
        free(dst);
        return NULL;
    }
    return dst;
}

/* Shard list from model.safetensors.index.json ("weight_map": name -> file). */
static int open_index(const char *dir, const char *index_path, weights *w, sq_err *err);

/* Distinct shards of one checkpoint opened at once (each is a mapping and a
 * file descriptor; real checkpoints have a handful). */
#define SQ_MAX_SHARDS 1024

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int open_weights(const char *dir, weights *w, sq_err *err)
{
    memset(w, 0, sizeof *w);
    char *single = sq_path_join(dir, "model.safetensors");
    char *index = sq_path_join(dir, "model.safetensors.index.json");
    int rc = -1;
    if (!single || !index) {
        sq_err_set(err, "out of memory");
    } else if (sq_file_exists(single)) {
        w->shards = calloc(1, sizeof *w->shards);
        if (w->shards && sq_safetensors_open(single, &w->shards[0], err) == 0) {
            w->n_shards = 1;
            rc = 0;
        }
    } else if (sq_file_exists(index)) {
        rc = open_index(dir, index, w, err);
    } else {
        char *bin = sq_path_join(dir, "pytorch_model.bin");
        if (bin && sq_file_exists(bin))
            sq_err_set(err, "%s: only pytorch_model.bin (pickle) is present; squint reads "
                            "safetensors (convert with safetensors' convert script)",
                       dir);
        else
            sq_err_set(err, "%s: no model.safetensors or model.safetensors.index.json", dir);
        free(bin);
    }
    free(single);
    free(index);
    return rc;
}

static int open_index(const char *dir, const char *index_path, weights *w, sq_err *err)
{
    json_t *root = sq_json_load_object(index_path, err);
    if (!root)
        return -1;
    json_t *map = json_object_get(root, "weight_map");
    int rc = -1;
    if (!json_is_object(map) || json_object_size(map) == 0) {
        sq_err_set(err, "%s: missing or empty \"weight_map\"", index_path);
        goto out;
    }
    /* Distinct shard names, in sorted order so loading is deterministic:
     * sort, then drop repeats (O(n log n): an index may name 10^5 tensors). */
    size_t n = json_object_size(map), nf = 0;
    const char **files = calloc(n, sizeof *files);
    if (!files) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(map, key, val)
    {
        if (!json_is_string(val)) {
            sq_err_set(err, "%s: weight_map entry \"%s\" is not a file name", index_path, key);
            free(files);
            goto out;
        }
        const char *f = json_string_value(val);
        if (strchr(f, '/') || strcmp(f, "..") == 0 || !*f) {
            sq_err_set(err, "%s: shard name \"%s\" must be a plain file name", index_path, f);
            free(files);
            goto out;
        }
        files[nf++] = f;
    }
    qsort(files, nf, sizeof *files, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < nf; i++)
        if (u == 0 || strcmp(files[u - 1], files[i]) != 0)
            files[u++] = files[i];
    nf = u;
    if (nf > SQ_MAX_SHARDS) {
        sq_err_set(err, "%s: %zu shard files; at most %d are opened", index_path, nf,
                   SQ_MAX_SHARDS);
        free(files);
        goto out;
    }
    w->shards = calloc(nf, sizeof *w->shards);
    if (!w->shards) {
        free(files);
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nf; i++) {
        char *p = sq_path_join(dir, files[i]);
        int ok = p && sq_safetensors_open(p, &w->shards[w->n_shards], err) == 0;
        free(p);
        if (!ok) {
            free(files);
            goto out;
        }
        w->n_shards++;
    }
    free(files);
    rc = 0;
out:
    json_decref(root);
    return rc;
}

static void close_weights(weights *w)
{
    for (int i = 0; i < w->n_shards; i++)
        sq_safetensors_close(&w->shards[i]);
    free(w->shards);
    memset(w, 0, sizeof *w);
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

static int load_layer(const weights *w, const sq_bert_config *c, int i, sq_encoder_layer *L,
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
    if (!(L->ln_attn_g = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.attention.output.LayerNorm.bias", i);
    if (!(L->ln_attn_b = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.output.LayerNorm.weight", i);
    if (!(L->ln_ffn_g = load(w, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof name, "encoder.layer.%d.output.LayerNorm.bias", i);
    if (!(L->ln_ffn_b = load(w, name, H, 0, err)))
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
    if (open_weights(dir, &w, err) != 0) {
        close_weights(&w); /* the shards opened before the failure */
        return -1;
    }
    const sq_safetensors *dummy;
    w.prefix = find_any(&w, "bert.embeddings.word_embeddings.weight", &dummy) ? "bert." : "";
    const sq_bert_config *c = &enc->cfg;
    const int H = c->hidden;
    rc = -1;
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
    close_weights(&w);
    if (rc != 0)
        sq_encoder_free(enc);
    return rc;
}

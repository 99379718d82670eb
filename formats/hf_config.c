#include "hf_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "hf_modernbert_config.h"
#include "hf_nomic_config.h"

void sq_bert_config_set_bert_defaults(sq_bert_config *c)
{
    c->embed_dim = c->hidden;
    c->norm = SQ_NORM_POST;
    c->act = SQ_ACT_GELU;
    c->positions = SQ_POS_LEARNED;
    c->emb_ln = true;
    c->head = SQ_HEAD_NONE;
    c->pos_ids = SQ_POS_IDS_INDEX;
    c->rel_buckets = 0;
    c->rel_max_distance = 0;
    c->rotary_base = 0;
    c->global_every = 0;
    c->local_window = 0;
    c->rotary_base_local = 0;
    c->first_attn_norm_absent = false;
    c->final_norm = false;
}

int sq_layer_window(const sq_bert_config *c, int layer)
{
    return c->global_every > 0 && layer % c->global_every != 0 ? c->local_window / 2 : -1;
}

double sq_layer_rotary_base(const sq_bert_config *c, int layer)
{
    return sq_layer_window(c, layer) >= 0 ? c->rotary_base_local : c->rotary_base;
}

const char *sq_pos_ids_name(sq_pos_ids v)
{
    return v == SQ_POS_IDS_ROBERTA ? "roberta" : "index";
}

int sq_bert_max_tokens(const sq_bert_config *c)
{
    return c->pos_ids == SQ_POS_IDS_ROBERTA ? c->max_pos - c->pad_token_id - 1 : c->max_pos;
}

int sq_rel_bucket(int rel, int buckets, int max_distance)
{
    const int half = buckets / 2, exact = half / 2;
    int n = -rel; /* query index - key index */
    int ret = n < 0 ? half : 0;
    n = n < 0 ? -n : n;
    if (n < exact)
        return ret + n;
    /* float32 steps, as the reference's tensor arithmetic: the exact
     * boundaries (n = 16, 32, 64 at 32 buckets) must land where it lands */
    float x = logf((float)n / (float)exact) / (float)log((double)max_distance / exact) *
              (float)(half - exact);
    int v = exact + (int)x;
    return ret + (v < half - 1 ? v : half - 1);
}

const char *sq_norm_place_name(sq_norm_place v)
{
    return v == SQ_NORM_PRE ? "pre" : "post";
}

const char *sq_act_name(sq_act v)
{
    return v == SQ_ACT_RELU     ? "relu"
           : v == SQ_ACT_SWIGLU ? "swiglu"
           : v == SQ_ACT_GEGLU  ? "geglu"
                                : "gelu";
}

const char *sq_pos_kind_name(sq_pos_kind v)
{
    return v == SQ_POS_SINUSOIDAL ? "sinusoidal" : v == SQ_POS_ROTARY ? "rotary" : "learned";
}

const char *sq_head_kind_name(sq_head_kind v)
{
    return v == SQ_HEAD_TANH ? "tanh" : v == SQ_HEAD_IDENTITY ? "identity" : "none";
}

const char *sq_score_act_name(sq_score_act v)
{
    static const char *const n[] = {"identity", "sigmoid", "tanh", "softmax"};
    return (unsigned)v < 4 ? n[v] : "?";
}

int sq_score_act_parse(const char *s, sq_score_act *v)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, sq_score_act_name((sq_score_act)i)) == 0) {
            *v = (sq_score_act)i;
            return 0;
        }
    return -1;
}

const char *sq_architecture_name(const sq_bert_config *c)
{
    return c->act == SQ_ACT_GEGLU           ? "modernbert"
           : c->positions == SQ_POS_ROTARY ? "nomic_bert"
           : c->rel_buckets > 0           ? "mpnet"
           : c->norm == SQ_NORM_PRE       ? "t2t"
                                          : "bert";
}

/* architectures: BertModel (or none) is an embedding model;
 * BertForSequenceClassification a sequence classifier (*classifier). Other
 * task heads would be embedded silently without their head: refused. */
static int check_architectures(json_t *root, const char *path, bool *classifier, sq_err *err)
{
    json_t *arch = json_object_get(root, "architectures");
    if (!arch || !json_is_array(arch))
        return 0;
    static const char *const heads[] = {"ForTokenClassification", "ForQuestionAnswering",
                                        "ForMultipleChoice", "ForNextSentencePrediction"};
    size_t ai;
    json_t *av;
    json_array_foreach(arch, ai, av)
    {
        const char *a = json_string_value(av);
        if (a && (strcmp(a, "BertForSequenceClassification") == 0 ||
                  strcmp(a, "MPNetForSequenceClassification") == 0 ||
                  strcmp(a, "XLMRobertaForSequenceClassification") == 0)) {
            *classifier = true;
            continue;
        }
        for (size_t h = 0; a && h < sizeof heads / sizeof heads[0]; h++)
            if (strstr(a, heads[h]))
                return sq_err_set(err, "%s: architectures lists %s: a checkpoint with a task "
                                       "head squint cannot run (it runs BertModel encoders and "
                                       "BertForSequenceClassification cross-encoders / "
                                       "classifiers)",
                                  path, a);
    }
    return 0;
}

/* The activation sentence-transformers' CrossEncoder applies, by class name
 * ("torch.nn.modules.activation.Sigmoid"): the old top-level key or the
 * sentence_transformers.activation_fn of version 4. *found false: neither. */
static int ce_activation(json_t *root, const char *path, sq_score_act *act, bool *found,
                         sq_err *err)
{
    *found = false;
    json_t *v = json_object_get(root, "sbert_ce_default_activation_function");
    json_t *st = json_object_get(root, "sentence_transformers");
    if ((!v || json_is_null(v)) && json_is_object(st))
        v = json_object_get(st, "activation_fn");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return sq_err_set(err, "%s: the cross-encoder activation must be a class name string",
                          path);
    const char *name = json_string_value(v), *dot = strrchr(name, '.');
    const char *cls = dot ? dot + 1 : name;
    if (strcmp(cls, "Sigmoid") == 0)
        *act = SQ_SCORE_SIGMOID;
    else if (strcmp(cls, "Identity") == 0)
        *act = SQ_SCORE_IDENTITY;
    else if (strcmp(cls, "Tanh") == 0)
        *act = SQ_SCORE_TANH;
    else
        return sq_err_set(err, "%s: cross-encoder activation \"%s\" is not supported "
                               "(Sigmoid, Identity or Tanh)",
                          path, name);
    *found = true;
    return 0;
}

/* num_labels (len(id2label), else num_labels, else 2 as transformers'
 * default) and the score activation of a BertForSequenceClassification. */
static int classifier_config(json_t *root, const char *path, sq_bert_config *cfg, sq_err *err)
{
    json_t *map = json_object_get(root, "id2label");
    int64_t n = 2;
    if (map && !json_is_object(map))
        return sq_err_set(err, "%s: id2label must be an object", path);
    if (map && json_object_size(map) > 0)
        n = (int64_t)json_object_size(map);
    else if (sq_json_int(root, "num_labels", 1, SQ_MAX_LABELS, true, 2, &n, path, err) != 0)
        return -1;
    if (n < 1 || n > SQ_MAX_LABELS)
        return sq_err_set(err, "%s: %lld labels (squint takes 1..%d)", path, (long long)n,
                          SQ_MAX_LABELS);
    cfg->num_labels = (int)n;
    const char *pt = NULL;
    if (sq_json_str(root, "problem_type", true, &pt, path, err) != 0)
        return -1;
    if (pt && strcmp(pt, "regression") != 0 && strcmp(pt, "single_label_classification") != 0 &&
        strcmp(pt, "multi_label_classification") != 0)
        return sq_err_set(err, "%s: problem_type \"%s\" is unknown", path, pt);
    bool found;
    sq_score_act act = SQ_SCORE_SIGMOID; /* CrossEncoder's default for one label */
    if (ce_activation(root, path, &act, &found, err) != 0)
        return -1;
    if (n == 1)
        cfg->score_act = act;
    else if (pt && strcmp(pt, "multi_label_classification") == 0)
        cfg->score_act = SQ_SCORE_SIGMOID;
    else
        cfg->score_act = SQ_SCORE_SOFTMAX;
    /* the pooler: CLS through dense + tanh (loaded as the pooling head) */
    cfg->head = SQ_HEAD_TANH;
    return 0;
}

/* MPNet (MPNetModel, sentence-transformers' all-mpnet-base-v2): BERT's
 * blocks with RoBERTa position ids and a relative attention bias. The
 * reference computes its buckets with 32 and a distance of 128 whatever
 * the config says (MPNetEncoder.compute_position_bias): another bucket
 * count would be read by squint one way and run by the reference another,
 * so it is refused. */
static int mpnet_config(json_t *root, const char *path, sq_bert_config *cfg, sq_err *err)
{
    int64_t v;
    if (sq_json_int(root, "relative_attention_num_buckets", 1, SQ_REL_MAX_BUCKETS, true, 32, &v,
                    path, err) != 0)
        return -1;
    if (v != 32)
        return sq_err_set(err, "%s: relative_attention_num_buckets %lld is not supported (MPNet "
                               "computes its bias with 32 buckets)",
                          path, (long long)v);
    cfg->rel_buckets = 32;
    cfg->rel_max_distance = 128;
    cfg->pos_ids = SQ_POS_IDS_ROBERTA;
    if (cfg->max_pos <= cfg->pad_token_id + 3)
        return sq_err_set(err, "%s: max_position_embeddings %d leaves no room for a sequence "
                               "after pad_token_id %d (positions start at pad_token_id + 1)",
                          path, cfg->max_pos, cfg->pad_token_id);
    return 0;
}

static int load_bert_config(const char *path, bool force_classifier, sq_bert_config *cfg,
                            sq_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return -1;
    int rc = -1;
    const char *model_type, *act, *pos_type;
    if (sq_json_str(root, "model_type", false, &model_type, path, err) != 0)
        goto out;
    if (strcmp(model_type, "llama") == 0) { /* a decoder: say which commands run it */
        sq_err_set(err, "%s: model_type \"llama\" is a causal LM, not an encoder: run it with "
                        "squint generate, perplexity or serve",
                   path);
        goto out;
    }
    if (strcmp(model_type, "modernbert") == 0) { /* its own keys: hf_modernbert_config.c */
        rc = sq_modernbert_config(root, path, cfg, err);
        goto out;
    }
    if (strcmp(model_type, "nomic_bert") == 0) { /* its own keys: hf_nomic_config.c */
        rc = sq_nomic_config(root, path, cfg, err);
        goto out;
    }
    const bool mpnet = strcmp(model_type, "mpnet") == 0;
    /* XLM-RoBERTa (multilingual-e5, bge-m3, bge-reranker-base): BERT's
     * blocks and names with RoBERTa's position ids */
    const bool xlmr = strcmp(model_type, "xlm-roberta") == 0;
    if (strcmp(model_type, "bert") != 0 && !mpnet && !xlmr) {
        sq_err_set(err, "%s: model_type \"%s\" is not supported (squint reads the encoders "
                        "\"bert\", \"mpnet\", \"xlm-roberta\", \"nomic_bert\" and \"modernbert\")",
                   path, model_type);
        goto out;
    }
    bool is_decoder = false;
    if (sq_json_bool(root, "is_decoder", true, false, &is_decoder, path, err) != 0)
        goto out;
    if (is_decoder) {
        sq_err_set(err, "%s: is_decoder is true; only encoders are supported", path);
        goto out;
    }
    bool classifier = force_classifier;
    if (check_architectures(root, path, &classifier, err) != 0)
        goto out;
    if (sq_json_str(root, "hidden_act", true, &act, path, err) != 0)
        goto out;
    if (act && strcmp(act, "gelu") != 0) {
        sq_err_set(err, "%s: hidden_act \"%s\" is not supported (only \"gelu\", the exact erf GELU)",
                   path, act);
        goto out;
    }
    if (sq_json_str(root, "position_embedding_type", true, &pos_type, path, err) != 0)
        goto out;
    if (pos_type && strcmp(pos_type, "absolute") != 0) {
        sq_err_set(err, "%s: position_embedding_type \"%s\" is not supported (only \"absolute\")",
                   path, pos_type);
        goto out;
    }
    int64_t v;
#define GET_INT(field, key, lo, hi, hasdef, def)                                                   \
    do {                                                                                           \
        if (sq_json_int(root, key, lo, hi, hasdef, def, &v, path, err) != 0)                       \
            goto out;                                                                              \
        cfg->field = (int)v;                                                                       \
    } while (0)
    GET_INT(vocab_size, "vocab_size", 1, SQ_MAX_VOCAB, false, 0);
    GET_INT(hidden, "hidden_size", 1, SQ_MAX_HIDDEN, false, 0);
    GET_INT(layers, "num_hidden_layers", 1, SQ_MAX_LAYERS, false, 0);
    GET_INT(heads, "num_attention_heads", 1, SQ_MAX_HIDDEN, false, 0);
    GET_INT(ffn, "intermediate_size", 1, SQ_MAX_FFN, false, 0);
    GET_INT(max_pos, "max_position_embeddings", 2, SQ_MAX_POSITIONS, false, 0);
    if (mpnet) /* no token types; MPNetConfig's pad_token_id default is 1 */
        cfg->type_vocab = 0;
    else
        GET_INT(type_vocab, "type_vocab_size", 1, 1024, true, 2);
    GET_INT(pad_token_id, "pad_token_id", 0, SQ_MAX_VOCAB, true, mpnet || xlmr ? 1 : 0);
#undef GET_INT
    if (cfg->hidden % cfg->heads != 0) {
        sq_err_set(err, "%s: hidden_size %d is not divisible by num_attention_heads %d", path,
                   cfg->hidden, cfg->heads);
        goto out;
    }
    if (cfg->pad_token_id >= cfg->vocab_size) {
        sq_err_set(err, "%s: pad_token_id %d is outside the vocabulary (%d)", path,
                   cfg->pad_token_id, cfg->vocab_size);
        goto out;
    }
    if (sq_json_real(root, "layer_norm_eps", true, 1e-12, &cfg->ln_eps, path, err) != 0)
        goto out;
    if (!(cfg->ln_eps > 0 && cfg->ln_eps <= 1e-2)) {
        sq_err_set(err, "%s: layer_norm_eps %g is outside (0, 0.01]", path, cfg->ln_eps);
        goto out;
    }
    sq_bert_config_set_bert_defaults(cfg);
    if (mpnet && mpnet_config(root, path, cfg, err) != 0)
        goto out;
    if (xlmr) {
        cfg->pos_ids = SQ_POS_IDS_ROBERTA;
        if (sq_bert_max_tokens(cfg) < 3) {
            sq_err_set(err, "%s: max_position_embeddings %d leaves no room for a sequence after "
                            "pad_token_id %d (positions start at pad_token_id + 1)",
                       path, cfg->max_pos, cfg->pad_token_id);
            goto out;
        }
    }
    if (classifier && classifier_config(root, path, cfg, err) != 0)
        goto out;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int sq_bert_config_load(const char *path, sq_bert_config *cfg, sq_err *err)
{
    return load_bert_config(path, false, cfg, err);
}

int sq_bert_config_load_classifier(const char *path, sq_bert_config *cfg, sq_err *err)
{
    return load_bert_config(path, true, cfg, err);
}

int sq_config_labels_load(const char *path, int num_labels, char ***labels, sq_err *err)
{
    *labels = NULL;
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return -1;
    json_t *map = json_object_get(root, "id2label");
    char **l = calloc((size_t)num_labels, sizeof *l);
    int rc = -1;
    if (!l) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < num_labels; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        json_t *v = json_is_object(map) ? json_object_get(map, key) : NULL;
        if (v && !json_is_string(v)) {
            sq_err_set(err, "%s: id2label \"%s\" is not a string", path, key);
            goto out;
        }
        char fallback[32];
        snprintf(fallback, sizeof fallback, "LABEL_%d", i);
        if (!(l[i] = strdup(v ? json_string_value(v) : fallback))) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        const char *why = sq_label_problem(l, i);
        if (why) {
            sq_err_set(err, "%s: id2label \"%s\" (\"%.64s\") %s", path, key, l[i], why);
            goto out;
        }
    }
    *labels = l;
    l = NULL;
    rc = 0;
out:
    sq_labels_free(l, num_labels);
    json_decref(root);
    return rc;
}

const char *sq_label_problem(char *const *labels, int i)
{
    size_t n = strlen(labels[i]);
    if (n == 0 || n > 256)
        return "has no bytes or more than 256";
    for (int j = 0; j < i; j++)
        if (strcmp(labels[j], labels[i]) == 0)
            return "appears twice";
    return NULL;
}

void sq_labels_free(char **labels, int n)
{
    if (!labels)
        return;
    for (int i = 0; i < n; i++)
        free(labels[i]);
    free(labels);
}

const char *sq_pooling_name(sq_pooling p)
{
    return p == SQ_POOL_MEAN ? "mean" : p == SQ_POOL_LAST ? "last" : "cls";
}

int sq_pooling_parse(const char *s, sq_pooling *out)
{
    if (strcmp(s, "cls") == 0)
        *out = SQ_POOL_CLS;
    else if (strcmp(s, "mean") == 0)
        *out = SQ_POOL_MEAN;
    else if (strcmp(s, "last") == 0 || strcmp(s, "lasttoken") == 0)
        *out = SQ_POOL_LAST;
    else
        return -1;
    return 0;
}

/* A module path from modules.json must stay inside the checkpoint directory. */
static bool safe_rel_path(const char *p)
{
    if (p[0] == '/' || strlen(p) > 256)
        return false;
    for (const char *s = p; *s; s++) {
        if (s[0] == '.' && s[1] == '.' && (s == p || s[-1] == '/'))
            return false;
    }
    return true;
}

static int read_pooling_module(const char *dir, const char *sub, sq_pooling_config *pc,
                               sq_err *err)
{
    char *mdir = sq_path_join(dir, sub);
    char *path = mdir ? sq_path_join(mdir, "config.json") : NULL;
    free(mdir);
    if (!path)
        return sq_err_set(err, "out of memory");
    json_t *root = sq_json_load_object(path, err);
    int rc = -1;
    if (!root)
        goto out;
    const char *mode;
    if (sq_json_str(root, "pooling_mode", true, &mode, path, err) != 0)
        goto out;
    if (mode) {
        if (sq_pooling_parse(mode, &pc->pooling) != 0) {
            sq_err_set(err, "%s: pooling_mode \"%s\" is not supported (cls, mean or lasttoken)",
                       path, mode);
            goto out;
        }
    } else {
        static const char *const other[] = {"pooling_mode_max_tokens",
                                            "pooling_mode_mean_sqrt_len_tokens",
                                            "pooling_mode_weightedmean_tokens"};
        bool cls = false, mean = false, last = false, b;
        if (sq_json_bool(root, "pooling_mode_cls_token", true, false, &cls, path, err) != 0 ||
            sq_json_bool(root, "pooling_mode_mean_tokens", true, false, &mean, path, err) != 0 ||
            sq_json_bool(root, "pooling_mode_lasttoken", true, false, &last, path, err) != 0)
            goto out;
        for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
            if (sq_json_bool(root, other[i], true, false, &b, path, err) != 0)
                goto out;
            if (b) {
                sq_err_set(err, "%s: %s is not supported (cls, mean or lasttoken pooling only)",
                           path, other[i]);
                goto out;
            }
        }
        if (cls + mean + last != 1) {
            sq_err_set(err, "%s: exactly one of pooling_mode_cls_token, pooling_mode_mean_tokens "
                            "and pooling_mode_lasttoken must be true",
                       path);
            goto out;
        }
        pc->pooling = cls ? SQ_POOL_CLS : mean ? SQ_POOL_MEAN : SQ_POOL_LAST;
    }
    /* include_prompt false (INSTRUCTOR-style) leaves a prompt's tokens out
     * of a mean: squint pools every token, so it refuses rather than
     * average the instruction in */
    bool include_prompt = true;
    if (sq_json_bool(root, "include_prompt", true, true, &include_prompt, path, err) != 0)
        goto out;
    if (!include_prompt && pc->pooling == SQ_POOL_MEAN) {
        sq_err_set(err, "%s: include_prompt false with mean pooling is not supported (squint "
                        "pools the prompt's tokens too)",
                   path);
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    free(path);
    return rc;
}

/* max_seq_length of <dir>/<sub>/sentence_bert_config.json, when the file
 * exists (sentence-transformers truncates there, below the model's own
 * limit; e.g. all-MiniLM-L6-v2 says 256 of 512 positions). */
static int read_sentence_bert_config(const char *dir, const char *sub, sq_pooling_config *pc,
                                     sq_err *err)
{
    char *mdir = sq_path_join(dir, sub);
    char *path = mdir ? sq_path_join(mdir, "sentence_bert_config.json") : NULL;
    free(mdir);
    if (!path)
        return sq_err_set(err, "out of memory");
    int rc = 0;
    if (sq_file_exists(path)) {
        json_t *root = sq_json_load_object(path, err);
        int64_t v = 0;
        json_t *msl = root ? json_object_get(root, "max_seq_length") : NULL;
        if (!root)
            rc = -1;
        else if (msl && !json_is_null(msl) &&
                 sq_json_int(root, "max_seq_length", 3, 65536, false, 0, &v, path, err) != 0)
            rc = -1;
        else
            pc->max_seq_length = (int)v;
        json_decref(root);
    }
    free(path);
    return rc;
}

int sq_pooling_config_load_dir(const char *dir, sq_pooling_config *pc, sq_err *err)
{
    memset(pc, 0, sizeof *pc);
    pc->pooling = SQ_POOL_CLS;
    char *path = sq_path_join(dir, "modules.json");
    if (!path)
        return sq_err_set(err, "out of memory");
    if (!sq_file_exists(path)) {
        free(path);
        return read_sentence_bert_config(dir, "", pc, err);
    }
    char *buf = NULL;
    size_t len;
    json_t *root = NULL;
    json_error_t je;
    int rc = -1;
    if (sq_read_regular_file(path, SQ_JSON_MAX_FILE, &buf, &len, err) != 0)
        goto out;
    root = json_loadb(buf, len, SQ_JSON_FLAGS, &je);
    if (!root) {
        sq_err_set(err, "%s: invalid JSON at line %d, column %d: %s", path, je.line, je.column,
                   je.text);
        goto out;
    }
    if (!json_is_array(root)) {
        sq_err_set(err, "%s: expected a JSON array of modules", path);
        goto out;
    }
    bool have_pool = false, have_transformer = false;
    size_t i;
    json_t *m;
    json_array_foreach(root, i, m)
    {
        const char *type, *sub;
        if (!json_is_object(m)) {
            sq_err_set(err, "%s: module %zu is not an object", path, i);
            goto out;
        }
        if (sq_json_str(m, "type", false, &type, path, err) != 0 ||
            sq_json_str(m, "path", true, &sub, path, err) != 0)
            goto out;
        const char *last = strrchr(type, '.');
        last = last ? last + 1 : type;
        if (strcmp(last, "Pooling") == 0) {
            if (have_pool) {
                sq_err_set(err, "%s: more than one Pooling module", path);
                goto out;
            }
            if (!sub || !safe_rel_path(sub)) {
                sq_err_set(err, "%s: Pooling module path is missing or leaves the model directory",
                           path);
                goto out;
            }
            if (read_pooling_module(dir, sub, pc, err) != 0)
                goto out;
            have_pool = true;
        } else if (strcmp(last, "Normalize") == 0) {
            pc->normalize = true;
        } else if (strcmp(last, "Dense") == 0) {
            /* After the pooling, before the normalization, one of them:
             * the order sentence-transformers models use. */
            if (pc->dense_path[0] || !have_pool || pc->normalize) {
                sq_err_set(err, "%s: module %zu, Dense: squint runs one Dense module, after "
                                "Pooling and before Normalize",
                           path, i);
                goto out;
            }
            if (!sub || !sub[0] || !safe_rel_path(sub) || strlen(sub) >= sizeof pc->dense_path) {
                sq_err_set(err, "%s: Dense module path is missing or leaves the model directory",
                           path);
                goto out;
            }
            snprintf(pc->dense_path, sizeof pc->dense_path, "%s", sub);
        } else if (strcmp(last, "Transformer") == 0) {
            if (have_transformer) {
                sq_err_set(err, "%s: more than one Transformer module", path);
                goto out;
            }
            if (sub && !safe_rel_path(sub)) {
                sq_err_set(err, "%s: Transformer module path \"%s\" leaves the model directory",
                           path, sub);
                goto out;
            }
            snprintf(pc->transformer_path, sizeof pc->transformer_path, "%s", sub ? sub : "");
            if (read_sentence_bert_config(dir, pc->transformer_path, pc, err) != 0)
                goto out;
            have_transformer = true;
        } else {
            sq_err_set(err, "%s: module %zu, type \"%s\", is not supported: squint runs "
                            "Transformer, Pooling, Dense and Normalize modules (another "
                            "module would be silently skipped)",
                       path, i, type);
            goto out;
        }
    }
    pc->from_sentence_transformers = true;
    rc = 0;
out:
    json_decref(root);
    free(buf);
    free(path);
    return rc;
}

int sq_st_prompt_load(const char *dir, const char *name, char **out, sq_err *err)
{
    *out = NULL;
    char *path = sq_path_join(dir, "config_sentence_transformers.json");
    if (!path)
        return sq_err_set(err, "out of memory");
    int rc = -1;
    json_t *root = NULL;
    if (!sq_file_exists(path)) {
        sq_err_set(err, "%s: no config_sentence_transformers.json: --prompt %s names nothing "
                        "(give the text with --prefix)",
                   dir, name);
        goto out;
    }
    if (!(root = sq_json_load_object(path, err)))
        goto out;
    json_t *prompts = json_object_get(root, "prompts");
    json_t *v = json_is_object(prompts) ? json_object_get(prompts, name) : NULL;
    if (!json_is_string(v)) {
        char names[512] = "";
        size_t k = 0;
        const char *key;
        json_t *val;
        if (json_is_object(prompts))
            json_object_foreach(prompts, key, val)
            {
                int w = snprintf(names + k, sizeof names - k, "%s%s", k ? ", " : "", key);
                if (w < 0 || (size_t)w >= sizeof names - k)
                    break;
                k += (size_t)w;
            }
        sq_err_set(err, "%s: no prompt named \"%s\" (prompts: %s)", path, name,
                   k ? names : "none");
        goto out;
    }
    if (!(*out = strdup(json_string_value(v)))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    free(path);
    return rc;
}

/* ---- causal LMs ---- */

static bool names_causal_lm(json_t *root)
{
    json_t *arch = json_object_get(root, "architectures"), *mt = json_object_get(root, "model_type");
    size_t i;
    json_t *v;
    if (json_is_array(arch))
        json_array_foreach(arch, i, v)
        {
            const char *a = json_string_value(v);
            size_t n = a ? strlen(a) : 0;
            if (n >= 11 && strcmp(a + n - 11, "ForCausalLM") == 0)
                return true;
        }
    return json_is_string(mt) && (strcmp(json_string_value(mt), "llama") == 0 ||
                                  strcmp(json_string_value(mt), "qwen3") == 0);
}

bool sq_hf_dir_is_causal_lm(const char *dir)
{
    if (!sq_dir_exists(dir))
        return false;
    char *p = sq_path_join(dir, "config.json");
    sq_err ignored;
    json_t *root = p && sq_file_exists(p) ? sq_json_load_object(p, &ignored) : NULL;
    bool yes = root && names_causal_lm(root);
    json_decref(root);
    free(p);
    return yes;
}

/* A token id: an int, or a non-empty list of ints (the first counts); null
 * or absent: -1. */
static int token_id(json_t *root, const char *key, int vocab, int *out, const char *path,
                    sq_err *err)
{
    json_t *v = json_object_get(root, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_array(v) && json_array_size(v) > 0)
        v = json_array_get(v, 0);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= vocab)
        return sq_err_set(err, "%s: %s must be a token id in [0, %d)", path, key, vocab);
    *out = (int)json_integer_value(v);
    return 0;
}

int sq_hf_llama_config_load(const char *path, sq_hf_llama_config *c, sq_err *err)
{
    memset(c, 0, sizeof *c);
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return -1;
    int rc = -1;
    const char *mt = NULL, *act = NULL;
    json_t *arch = json_object_get(root, "architectures");
    bool llama = false, qwen3 = false;
    size_t i;
    json_t *v;
    if (json_is_array(arch))
        json_array_foreach(arch, i, v) if (json_is_string(v))
        {
            llama |= strcmp(json_string_value(v), "LlamaForCausalLM") == 0;
            qwen3 |= strcmp(json_string_value(v), "Qwen3ForCausalLM") == 0;
        }
    if (sq_json_str(root, "model_type", true, &mt, path, err) != 0)
        goto out;
    if (!llama && !qwen3 && mt && strcmp(mt, "qwen3") == 0)
        qwen3 = true;
    if (llama && qwen3) {
        sq_err_set(err, "%s: architectures names both LlamaForCausalLM and Qwen3ForCausalLM", path);
        goto out;
    }
    if (!llama && !qwen3 && !(mt && strcmp(mt, "llama") == 0)) {
        const char *a0 = json_is_array(arch) ? json_string_value(json_array_get(arch, 0)) : NULL;
        sq_err_set(err, "%s: %s \"%s\" is not supported (squint's decoder runs LlamaForCausalLM "
                        "and Qwen3ForCausalLM)",
                   path, a0 ? "architectures" : "model_type", a0 ? a0 : mt ? mt : "(none)");
        goto out;
    }
    c->qwen3 = qwen3;
    static const char *const refused[][2] = {
        {"rope_scaling", "RoPE scaling (linear / dynamic / llama3 / yarn) is not supported"},
        {"quantization_config", "an already quantized checkpoint is not read"},
        {"sliding_window", "sliding-window attention is not supported"},
    };
    /* Qwen3 configs carry sliding_window (null or a width) with
     * use_sliding_window false: every layer attends fully then (transformers'
     * Qwen3Attention), so the width is ignored and use_sliding_window true is
     * what is refused. */
    if (qwen3) {
        bool sw = false;
        if (sq_json_bool(root, "use_sliding_window", true, false, &sw, path, err) != 0)
            goto out;
        if (sw) {
            sq_err_set(err, "%s: use_sliding_window is true: sliding-window attention is not "
                            "supported",
                       path);
            goto out;
        }
        json_t *lt = json_object_get(root, "layer_types");
        if (lt && !json_is_null(lt) && !json_is_array(lt)) {
            sq_err_set(err, "%s: layer_types is not a list", path);
            goto out;
        }
        if (lt && !json_is_null(lt))
            json_array_foreach(lt, i, v) if (!json_is_string(v) ||
                                             strcmp(json_string_value(v), "full_attention") != 0)
            {
                sq_err_set(err, "%s: layer_types[%zu] is not \"full_attention\": sliding-window "
                                "attention is not supported",
                           path, i);
                goto out;
            }
    }
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        if (qwen3 && strcmp(refused[k][0], "sliding_window") == 0)
            continue;
        json_t *x = json_object_get(root, refused[k][0]);
        if (x && !json_is_null(x)) {
            sq_err_set(err, "%s: %s is set: %s", path, refused[k][0], refused[k][1]);
            goto out;
        }
    }
    static const char *const no_bias[] = {"attention_bias", "mlp_bias"};
    for (size_t k = 0; k < 2; k++) {
        bool b = false;
        if (sq_json_bool(root, no_bias[k], true, false, &b, path, err) != 0)
            goto out;
        if (b) {
            sq_err_set(err, "%s: %s is true: biases in a %s layer are not supported", path,
                       no_bias[k], qwen3 ? "Qwen3" : "Llama");
            goto out;
        }
    }
    if (sq_json_str(root, "hidden_act", true, &act, path, err) != 0)
        goto out;
    if (act && strcmp(act, "silu") != 0) {
        sq_err_set(err, "%s: hidden_act \"%s\" is not supported (silu: SwiGLU)", path, act);
        goto out;
    }
    int64_t x;
#define GET(field, key, lo, hi, hasdef, def)                                                       \
    do {                                                                                           \
        if (sq_json_int(root, key, lo, hi, hasdef, def, &x, path, err) != 0)                       \
            goto out;                                                                              \
        c->field = (int)x;                                                                         \
    } while (0)
    GET(hidden, "hidden_size", 2, SQ_MAX_HIDDEN * 4, false, 0);
    GET(ffn, "intermediate_size", 1, SQ_MAX_FFN * 4, false, 0);
    GET(layers, "num_hidden_layers", 1, 1024, false, 0);
    GET(heads, "num_attention_heads", 1, 1024, false, 0);
    GET(kv_heads, "num_key_value_heads", 1, c->heads, true, c->heads);
    GET(max_pos, "max_position_embeddings", 1, 1 << 20, false, 0);
    GET(vocab, "vocab_size", 3, SQ_MAX_VOCAB, false, 0);
    if (qwen3) {
        /* transformers' Qwen3Config: head_dim=128 when absent */
        GET(head_dim, "head_dim", 2, 1024, true, 128);
        if (c->head_dim % 2 != 0) {
            sq_err_set(err, "%s: head_dim %d is odd (RoPE rotates pairs)", path, c->head_dim);
            goto out;
        }
        if ((int64_t)c->heads * c->head_dim > 65536) {
            sq_err_set(err, "%s: num_attention_heads %d x head_dim %d is over 65536", path,
                       c->heads, c->head_dim);
            goto out;
        }
    }
#undef GET
    if (!qwen3 && (c->hidden % c->heads != 0 || (c->hidden / c->heads) % 2 != 0)) {
        sq_err_set(err, "%s: hidden_size %d is not num_attention_heads %d times an even head size "
                        "(RoPE rotates pairs)",
                   path, c->hidden, c->heads);
        goto out;
    }
    if (c->heads % c->kv_heads != 0) {
        sq_err_set(err, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                   path, c->heads, c->kv_heads);
        goto out;
    }
    json_t *hd = qwen3 ? NULL : json_object_get(root, "head_dim");
    if (!qwen3)
        c->head_dim = c->hidden / c->heads;
    if (hd && !json_is_null(hd) &&
        (!json_is_integer(hd) || json_integer_value(hd) != c->hidden / c->heads)) {
        sq_err_set(err, "%s: head_dim is not hidden_size / num_attention_heads = %d (a decoupled "
                        "head size is not supported)",
                   path, c->hidden / c->heads);
        goto out;
    }
    if (sq_json_real(root, "rms_norm_eps", true, 1e-6, &c->rms_eps, path, err) != 0 ||
        sq_json_real(root, "rope_theta", true, 10000.0, &c->rope_theta, path, err) != 0 ||
        sq_json_bool(root, "tie_word_embeddings", true, false, &c->tied, path, err) != 0 ||
        token_id(root, "bos_token_id", c->vocab, &c->bos, path, err) != 0 ||
        token_id(root, "eos_token_id", c->vocab, &c->eos, path, err) != 0)
        goto out;
    if (!(c->rms_eps >= 1e-30 && c->rms_eps <= 1e-2)) {
        sq_err_set(err, "%s: rms_norm_eps %g is outside [1e-30, 1e-2]", path, c->rms_eps);
        goto out;
    }
    if (!(c->rope_theta >= 1 && c->rope_theta <= 1e12)) {
        sq_err_set(err, "%s: rope_theta %g is outside [1, 1e12]", path, c->rope_theta);
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

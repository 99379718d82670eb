/* ModernBERT's config.json (see hf_modernbert_config.h). The keys and
 * their defaults are ModernBertConfig's; a value squint does not run is
 * refused with the key's name rather than run as something else. */
#include "hf_modernbert_config.h"

#include <string.h>

#include "json_util.h"

/* A boolean key that must be false (its default). */
static int require_false(json_t *root, const char *key, const char *why, const char *path,
                         sq_err *err)
{
    bool v;
    if (sq_json_bool(root, key, true, false, &v, path, err) != 0)
        return -1;
    if (v)
        return sq_err_set(err, "%s: %s true is not supported (%s)", path, key, why);
    return 0;
}

/* ModernBertModel, or the masked LM whose encoder is under "model." (its
 * head is not read); a task head is refused. */
static int check_architectures(json_t *root, const char *path, sq_err *err)
{
    json_t *arch = json_object_get(root, "architectures");
    if (!arch || json_is_null(arch))
        return 0;
    if (!json_is_array(arch))
        return sq_err_set(err, "%s: architectures must be a list", path);
    size_t i;
    json_t *a;
    json_array_foreach(arch, i, a)
    {
        const char *s = json_string_value(a);
        if (!s)
            return sq_err_set(err, "%s: architectures[%zu] is not a string", path, i);
        if (strcmp(s, "ModernBertModel") != 0 && strcmp(s, "ModernBertForMaskedLM") != 0)
            return sq_err_set(err, "%s: architectures lists %s: squint runs ModernBertModel "
                                   "(an embedding model; a ModernBertForMaskedLM's encoder) only",
                              path, s);
    }
    return 0;
}

/* layer_types (newer configs): when present, exactly the pattern that
 * global_attn_every_n_layers gives. */
static int check_layer_types(json_t *root, const sq_bert_config *cfg, const char *path,
                             sq_err *err)
{
    json_t *lt = json_object_get(root, "layer_types");
    if (!lt || json_is_null(lt))
        return 0;
    if (!json_is_array(lt) || (int)json_array_size(lt) != cfg->layers)
        return sq_err_set(err, "%s: layer_types must be a list of num_hidden_layers (%d) names",
                          path, cfg->layers);
    for (int l = 0; l < cfg->layers; l++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)l));
        const char *want =
            sq_layer_window(cfg, l) >= 0 ? "sliding_attention" : "full_attention";
        if (!s || strcmp(s, want) != 0)
            return sq_err_set(err, "%s: layer_types[%d] is not \"%s\" (squint runs a global "
                                   "layer every global_attn_every_n_layers)",
                              path, l, want);
    }
    return 0;
}

/* A rotary base: finite, above 1 (base^(-2i/d) must shrink with i). */
static int rope_theta(json_t *root, const char *key, double def, double *out, const char *path,
                      sq_err *err)
{
    if (sq_json_real(root, key, true, def, out, path, err) != 0)
        return -1;
    if (!(*out > 1.0 && *out <= 1e12))
        return sq_err_set(err, "%s: %s %g is outside (1, 1e12]", path, key, *out);
    return 0;
}

int sq_modernbert_config(json_t *root, const char *path, sq_bert_config *cfg, sq_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    if (check_architectures(root, path, err) != 0)
        return -1;
    int64_t v;
#define GET_INT(field, key, lo, hi, hasdef, def)                                                   \
    do {                                                                                           \
        if (sq_json_int(root, key, lo, hi, hasdef, def, &v, path, err) != 0)                       \
            return -1;                                                                             \
        cfg->field = (int)v;                                                                       \
    } while (0)
    GET_INT(vocab_size, "vocab_size", 1, SQ_MAX_VOCAB, false, 0);
    GET_INT(hidden, "hidden_size", 2, SQ_MAX_HIDDEN, false, 0);
    GET_INT(layers, "num_hidden_layers", 1, SQ_MAX_LAYERS, false, 0);
    GET_INT(heads, "num_attention_heads", 1, SQ_MAX_HIDDEN, false, 0);
    GET_INT(ffn, "intermediate_size", 1, SQ_MAX_FFN, false, 0);
    GET_INT(max_pos, "max_position_embeddings", 2, SQ_MAX_POSITIONS, true, 8192);
    GET_INT(pad_token_id, "pad_token_id", 0, SQ_MAX_VOCAB, true, 50283);
    GET_INT(local_window, "local_attention", 1, SQ_MAX_POSITIONS, true, 128);
    GET_INT(global_every, "global_attn_every_n_layers", 1, SQ_MAX_LAYERS, true, 3);
#undef GET_INT
    if (cfg->hidden % cfg->heads != 0 || (cfg->hidden / cfg->heads) % 2 != 0)
        return sq_err_set(err, "%s: hidden_size %d must be num_attention_heads %d times an even "
                               "head size",
                          path, cfg->hidden, cfg->heads);
    if (cfg->pad_token_id >= cfg->vocab_size)
        return sq_err_set(err, "%s: pad_token_id %d is outside the vocabulary (%d)", path,
                          cfg->pad_token_id, cfg->vocab_size);
    if (sq_json_real(root, "norm_eps", true, 1e-5, &cfg->ln_eps, path, err) != 0)
        return -1;
    if (!(cfg->ln_eps > 0 && cfg->ln_eps <= 1e-2))
        return sq_err_set(err, "%s: norm_eps %g is outside (0, 0.01]", path, cfg->ln_eps);
    const char *act = NULL;
    if (sq_json_str(root, "hidden_activation", true, &act, path, err) != 0)
        return -1;
    if (act && strcmp(act, "gelu") != 0)
        return sq_err_set(err, "%s: hidden_activation \"%s\" is not supported (squint runs "
                               "ModernBERT's \"gelu\", the exact GELU, in GeGLU)",
                          path, act);
    double global_theta, local_theta;
    if (rope_theta(root, "global_rope_theta", 160000.0, &global_theta, path, err) != 0 ||
        rope_theta(root, "local_rope_theta", 10000.0, &local_theta, path, err) != 0)
        return -1;
    if (require_false(root, "norm_bias", "the LayerNorms have no bias", path, err) != 0 ||
        require_false(root, "attention_bias", "the attention linears have no bias", path,
                      err) != 0 ||
        require_false(root, "mlp_bias", "the MLP linears have no bias", path, err) != 0 ||
        require_false(root, "causal_mask", "an encoder attends both ways", path, err) != 0)
        return -1;
    json_t *scaling = json_object_get(root, "rope_scaling");
    if (scaling && !json_is_null(scaling))
        return sq_err_set(err, "%s: rope_scaling is set; it is not supported (plain rotary "
                               "positions)",
                          path);
    if (json_object_get(root, "rope_parameters"))
        return sq_err_set(err, "%s: rope_parameters is not read (squint reads "
                               "global_rope_theta and local_rope_theta)",
                          path);
    const int window = cfg->local_window, every = cfg->global_every;
    sq_bert_config_set_bert_defaults(cfg); /* resets the variant fields */
    cfg->type_vocab = 0;
    cfg->norm = SQ_NORM_PRE;
    cfg->act = SQ_ACT_GEGLU;
    cfg->positions = SQ_POS_ROTARY;
    cfg->rotary_base = global_theta;
    cfg->rotary_base_local = local_theta;
    cfg->global_every = every;
    cfg->local_window = window;
    cfg->first_attn_norm_absent = true;
    cfg->final_norm = true;
    return check_layer_types(root, cfg, path, err);
}

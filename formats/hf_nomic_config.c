/* NomicBERT's config.json (see hf_nomic_config.h). The keys and their
 * defaults are NomicBertConfig's; a value squint does not run is refused
 * with the key's name rather than run as something else. */
#include "hf_nomic_config.h"

#include <math.h>
#include <string.h>

#include "json_util.h"

/* The gated MLP rounds its width up to a multiple of 256
 * (NomciBertGatedMLP's multiple_of): the tensors have the rounded width. */
#define NOMIC_MLP_MULTIPLE 256

/* A boolean key that must have the value `want` (def: its default). */
static int require_bool(json_t *root, const char *key, bool def, bool want, const char *why,
                        const char *path, sq_err *err)
{
    bool v;
    if (sq_json_bool(root, key, true, def, &v, path, err) != 0)
        return -1;
    if (v != want)
        return sq_err_set(err, "%s: %s %s is not supported (%s)", path, key,
                          v ? "true" : "false", why);
    return 0;
}

/* A key that must be absent or null. */
static int require_null(json_t *root, const char *key, const char *why, const char *path,
                        sq_err *err)
{
    json_t *v = json_object_get(root, key);
    if (v && !json_is_null(v))
        return sq_err_set(err, "%s: %s is set; it is not supported (%s)", path, key, why);
    return 0;
}

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
        if (strcmp(s, "NomicBertModel") != 0)
            return sq_err_set(err, "%s: architectures lists %s: squint runs NomicBertModel "
                                   "(an embedding model) only",
                              path, s);
    }
    return 0;
}

int sq_nomic_config(json_t *root, const char *path, sq_bert_config *cfg, sq_err *err)
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
    GET_INT(hidden, "n_embd", 2, SQ_MAX_HIDDEN, false, 0);
    GET_INT(layers, "n_layer", 1, SQ_MAX_LAYERS, false, 0);
    GET_INT(heads, "n_head", 1, SQ_MAX_HIDDEN, false, 0);
    GET_INT(ffn, "n_inner", 1, SQ_MAX_FFN, false, 0);
    GET_INT(max_pos, "n_positions", 2, SQ_MAX_POSITIONS, false, 0);
    GET_INT(type_vocab, "type_vocab_size", 0, 1024, true, 2);
    GET_INT(pad_token_id, "pad_token_id", 0, SQ_MAX_VOCAB, true, 0);
#undef GET_INT
    /* NomicBertModel pads the vocabulary up to pad_vocab_size_multiple
     * before it builds the embedding: the tensor has the padded rows */
    if (sq_json_int(root, "pad_vocab_size_multiple", 1, 65536, true, 1, &v, path, err) != 0)
        return -1;
    const int64_t vocab = ((int64_t)cfg->vocab_size + v - 1) / v * v;
    if (vocab > SQ_MAX_VOCAB)
        return sq_err_set(err, "%s: vocab_size %d padded to a multiple of %lld is over %d", path,
                          cfg->vocab_size, (long long)v, SQ_MAX_VOCAB);
    cfg->vocab_size = (int)vocab;
    const int64_t ffn = ((int64_t)cfg->ffn + NOMIC_MLP_MULTIPLE - 1) / NOMIC_MLP_MULTIPLE *
                        NOMIC_MLP_MULTIPLE;
    if (ffn > SQ_MAX_FFN)
        return sq_err_set(err, "%s: n_inner %d rounded up to a multiple of %d is over %d", path,
                          cfg->ffn, NOMIC_MLP_MULTIPLE, SQ_MAX_FFN);
    cfg->ffn = (int)ffn;
    if (cfg->hidden % cfg->heads != 0 || (cfg->hidden / cfg->heads) % 2 != 0)
        return sq_err_set(err, "%s: n_embd %d must be n_head %d times an even head size", path,
                          cfg->hidden, cfg->heads);
    if (cfg->pad_token_id >= cfg->vocab_size)
        return sq_err_set(err, "%s: pad_token_id %d is outside the vocabulary (%d)", path,
                          cfg->pad_token_id, cfg->vocab_size);
    if (sq_json_real(root, "layer_norm_epsilon", true, 1e-5, &cfg->ln_eps, path, err) != 0)
        return -1;
    if (!(cfg->ln_eps > 0 && cfg->ln_eps <= 1e-2))
        return sq_err_set(err, "%s: layer_norm_epsilon %g is outside (0, 0.01]", path,
                          cfg->ln_eps);

    const char *act = NULL;
    if (sq_json_str(root, "activation_function", true, &act, path, err) != 0)
        return -1;
    if (!act || strcmp(act, "swiglu") != 0)
        return sq_err_set(err, "%s: activation_function \"%s\" is not supported (squint runs "
                               "NomicBERT's \"swiglu\")",
                          path, act ? act : "(absent: gelu)");
    double frac, base;
    if (sq_json_real(root, "rotary_emb_fraction", true, 0.0, &frac, path, err) != 0 ||
        sq_json_real(root, "rotary_emb_base", true, 10000.0, &base, path, err) != 0)
        return -1;
    if (frac != 1.0)
        return sq_err_set(err, "%s: rotary_emb_fraction %g is not supported (squint rotates "
                               "whole heads: 1.0)",
                          path, frac);
    /* base^(-2i/d) must shrink with i and stay finite */
    if (!(base > 1.0 && base <= 1e12))
        return sq_err_set(err, "%s: rotary_emb_base %g is outside (1, 1e12]", path, base);
    int64_t kv;
    if (sq_json_int(root, "num_heads_kv", 1, SQ_MAX_HIDDEN, true, cfg->heads, &kv, path, err) != 0)
        return -1;
    if (kv != cfg->heads)
        return sq_err_set(err, "%s: num_heads_kv %lld differs from n_head %d (grouped "
                               "attention is not supported)",
                          path, (long long)kv, cfg->heads);
    if (require_bool(root, "rotary_emb_interleaved", false, false,
                     "squint pairs dimension i with i + head_size / 2", path, err) != 0 ||
        require_bool(root, "prenorm", false, false, "squint runs post-LN NomicBERT", path,
                     err) != 0 ||
        require_bool(root, "causal", false, false, "an encoder attends both ways", path,
                     err) != 0 ||
        require_bool(root, "scale_attn_weights", true, true, "scores are scaled by "
                     "1/sqrt(head size)", path, err) != 0 ||
        require_bool(root, "qkv_proj_bias", true, false, "the linears have no bias", path,
                     err) != 0 ||
        require_bool(root, "mlp_fc1_bias", true, false, "the linears have no bias", path,
                     err) != 0 ||
        require_bool(root, "mlp_fc2_bias", true, false, "the linears have no bias", path,
                     err) != 0 ||
        require_bool(root, "rotary_head_dim", false, false, "rotation over the sequence", path,
                     err) != 0 ||
        require_bool(root, "use_rms_norm", false, false, "LayerNorm", path, err) != 0 ||
        require_bool(root, "parallel_block", false, false, "attention then MLP", path,
                     err) != 0 ||
        require_bool(root, "scale_attn_by_inverse_layer_idx", false, false,
                     "one score scale for every layer", path, err) != 0 ||
        require_null(root, "rotary_scaling_factor", "dynamic NTK scaling", path, err) != 0 ||
        require_null(root, "rotary_emb_scale_base", "xPos scaling", path, err) != 0)
        return -1;
    /* nomic-embed-text-v2-moe shares the model_type */
    if (sq_json_int(root, "num_experts", 0, 1 << 20, true, 0, &v, path, err) != 0)
        return -1;
    if (v > 0)
        return sq_err_set(err, "%s: num_experts %lld: mixture-of-experts layers are not "
                               "supported",
                          path, (long long)v);

    sq_bert_config_set_bert_defaults(cfg);
    cfg->act = SQ_ACT_SWIGLU;
    cfg->positions = SQ_POS_ROTARY;
    cfg->rotary_base = base;
    return 0;
}

#include "decoder_config.h"

#include <math.h>
#include <string.h>

bool sq_decoder_linear_shape(const sq_decoder_config *c, sq_linear_kind k, int *N, int *K)
{
    switch (k) {
    case SQ_LIN_QKV: *N = c->q_dim + 2 * c->kv_dim, *K = c->dim; return true;
    case SQ_LIN_ATTN_OUT: *N = c->dim, *K = c->q_dim; return true;
    case SQ_LIN_FFN_UP: *N = 2 * c->hidden, *K = c->dim; return true;
    case SQ_LIN_FFN_DOWN: *N = c->dim, *K = c->hidden; return true;
    default: *N = *K = 0; return false;
    }
}

void sq_decoder_config_to_yaml(sq_strbuf *sb, const sq_decoder_config *c, const char *in)
{
    sq_sb_printf(sb,
                 "%svocab_size: %d\n%shidden: %d\n%slayers: %d\n%sheads: %d\n%skv_heads: %d\n"
                 "%sffn: %d\n%smax_positions: %d\n%srms_norm_eps: %.9g\n%srope_theta: %.9g\n"
                 "%stied_embeddings: %s\n%sbos_token_id: %d\n%seos_token_id: %d\n",
                 in, c->vocab, in, c->dim, in, c->n_layers, in, c->n_heads, in, c->n_kv_heads, in,
                 c->hidden, in, c->max_pos, in, (double)c->norm_eps, in, (double)c->rope_theta,
                 in, c->tied_classifier ? "true" : "false", in, (int)c->bos, in, (int)c->eos);
    if (c->head_dim * c->n_heads != c->dim)
        sq_sb_printf(sb, "%shead_dim: %d\n", in, c->head_dim);
    if (c->qk_norm)
        sq_sb_printf(sb, "%sqk_norm: true\n", in);
}

int sq_decoder_config_from_yaml(const yt_node *conf, sq_decoder_config *c, sq_err *err)
{
    memset(c, 0, sizeof *c);
    int64_t v[9];
    static const char *const keys[9] = {"vocab_size", "hidden", "layers", "heads", "kv_heads",
                                        "ffn", "max_positions", "bos_token_id", "eos_token_id"};
    static const int64_t hi[9] = {1 << 22, 65536, 1024, 1024, 1024, 262144, 1 << 20, 1 << 22,
                                  1 << 22};
    if (yt_expect(conf, YT_MAPPING, "config", err) != 0)
        return -1;
    const yt_node *n;
    for (int i = 0; i < 9; i++)
        if (!(n = yt_require(conf, keys[i], err)) ||
            yt_as_int64(n, keys[i], i < 7 ? 1 : 0, hi[i], &v[i], err) != 0)
            return -1;
    double eps, theta;
    if (!(n = yt_require(conf, "rms_norm_eps", err)) ||
        yt_as_double(n, "rms_norm_eps", 1e-30, 1e-2, &eps, err) != 0 ||
        !(n = yt_require(conf, "rope_theta", err)) ||
        yt_as_double(n, "rope_theta", 1.0, 1e12, &theta, err) != 0 ||
        !(n = yt_require(conf, "tied_embeddings", err)) ||
        yt_as_bool(n, "tied_embeddings", &c->tied_classifier, err) != 0)
        return -1;
    c->vocab = (int)v[0], c->dim = (int)v[1], c->n_layers = (int)v[2], c->n_heads = (int)v[3];
    c->n_kv_heads = (int)v[4], c->hidden = (int)v[5], c->max_pos = (int)v[6];
    c->bos = (int32_t)v[7], c->eos = (int32_t)v[8];
    c->norm_eps = (float)eps;
    c->rope_theta = (float)theta;
    const yt_node *hdn = yt_get(conf, "head_dim"), *qkn = yt_get(conf, "qk_norm");
    if (hdn) {
        int64_t hd;
        if (yt_as_int64(hdn, "head_dim", 2, 1024, &hd, err) != 0)
            return -1;
        if (hd % 2 != 0)
            return yt_error(hdn, err, "head_dim %d is odd (RoPE rotates pairs)", (int)hd);
        c->head_dim = (int)hd;
    } else {
        if (c->dim % c->n_heads != 0 || (c->dim / c->n_heads) % 2 != 0)
            return yt_error(conf, err, "hidden %d is not heads %d times an even head size", c->dim,
                            c->n_heads);
        c->head_dim = c->dim / c->n_heads;
    }
    if ((int64_t)c->head_dim * c->n_heads > 65536)
        return yt_error(conf, err, "heads %d x head_dim %d is over 65536", c->n_heads, c->head_dim);
    if (qkn && yt_as_bool(qkn, "qk_norm", &c->qk_norm, err) != 0)
        return -1;
    if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads != 0)
        return yt_error(conf, err, "heads %d is not a multiple of kv_heads %d", c->n_heads,
                        c->n_kv_heads);
    if (c->bos >= c->vocab || c->eos >= c->vocab)
        return yt_error(conf, err, "bos_token_id / eos_token_id beyond vocab_size %d", c->vocab);
    c->kv_dim = c->head_dim * c->n_kv_heads;
    c->q_dim = c->head_dim * c->n_heads;
    return 0;
}

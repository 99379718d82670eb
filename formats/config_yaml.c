#include "config_yaml.h"

#include <stddef.h>
#include <string.h>

#include "yaml_tree.h"

void sq_bert_config_to_yaml(sq_strbuf *sb, const sq_bert_config *c, const char *in)
{
    sq_sb_printf(sb,
                 "%svocab_size: %d\n%shidden: %d\n%slayers: %d\n%sheads: %d\n%sffn: %d\n"
                 "%smax_positions: %d\n%stype_vocab: %d\n%spad_token_id: %d\n"
                 "%slayer_norm_eps: %.17g\n",
                 in, c->vocab_size, in, c->hidden, in, c->layers, in, c->heads, in, c->ffn, in,
                 c->max_pos, in, c->type_vocab, in, c->pad_token_id, in, c->ln_eps);
    sq_sb_printf(sb,
                 "%sembed_dim: %d\n%snorm: %s\n%sactivation: %s\n%spositions: %s\n"
                 "%sembedding_layernorm: %s\n%spooling_head: %s\n",
                 in, c->embed_dim, in, sq_norm_place_name(c->norm), in, sq_act_name(c->act), in,
                 sq_pos_kind_name(c->positions), in, c->emb_ln ? "true" : "false", in,
                 sq_head_kind_name(c->head));
    if (c->pos_ids != SQ_POS_IDS_INDEX) /* absent for BERT: its files stay as they were */
        sq_sb_printf(sb, "%sposition_ids: %s\n", in, sq_pos_ids_name(c->pos_ids));
    if (c->positions == SQ_POS_ROTARY) /* %.17g: the double reads back exactly */
        sq_sb_printf(sb, "%srotary_base: %.17g\n", in, c->rotary_base);
    if (c->global_every > 0) /* ModernBERT's alternating attention (absent for the others) */
        sq_sb_printf(sb, "%slocal_window: %d\n%sglobal_every: %d\n%srotary_base_local: %.17g\n", in,
                     c->local_window, in, c->global_every, in, c->rotary_base_local);
    if (c->first_attn_norm_absent)
        sq_sb_printf(sb, "%sfirst_attention_norm: false\n", in);
    if (c->final_norm)
        sq_sb_printf(sb, "%sfinal_norm: true\n", in);
    if (c->rel_buckets > 0)
        sq_sb_printf(sb, "%srelative_buckets: %d\n%srelative_max_distance: %d\n", in,
                     c->rel_buckets, in, c->rel_max_distance);
    if (c->num_labels > 0) /* absent for embedding models: their files stay as they were */
        sq_sb_printf(sb, "%snum_labels: %d\n%sscore_activation: %s\n", in, c->num_labels, in,
                     sq_score_act_name(c->score_act));
}

/* An optional enumerated key: absent leaves *out (the BERT default). */
static int get_enum(const yt_node *conf, const char *key, const char *const *names, int n,
                    int *out, sq_err *err)
{
    const yt_node *v = yt_get(conf, key);
    if (!v)
        return 0;
    const char *s;
    if (yt_get_string(conf, key, &s, err) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return yt_error(v, err, "'%s' has the unknown value \"%s\"", key, s);
}

/* ModernBERT's rows: the local window, the global layer period and the
 * local rotary base come together (rotary positions only); no norm before
 * layer 0's attention (pre-LN only); a norm after the last layer. */
static int modernbert_from_yaml(const yt_node *conf, int norm, int pos, sq_bert_config *cfg,
                                sq_err *err)
{
    const int n = (yt_get(conf, "local_window") != NULL) + (yt_get(conf, "global_every") != NULL) +
                  (yt_get(conf, "rotary_base_local") != NULL);
    if (n != 0 && n != 3)
        return yt_error(conf, err, "local_window, global_every and rotary_base_local come "
                                   "together");
    if (n == 3) {
        int64_t w, g;
        if (pos != SQ_POS_ROTARY)
            return yt_error(conf, err, "local_window needs positions rotary");
        if (yt_get_int64(conf, "local_window", 1, SQ_MAX_POSITIONS, &w, err) != 0 ||
            yt_get_int64(conf, "global_every", 1, SQ_MAX_LAYERS, &g, err) != 0 ||
            yt_get_double(conf, "rotary_base_local", 1.0, 1e12, &cfg->rotary_base_local, err) !=
                0)
            return -1;
        if (!(cfg->rotary_base_local > 1.0))
            return yt_error(conf, err, "rotary_base_local %g must be above 1",
                            cfg->rotary_base_local);
        cfg->local_window = (int)w;
        cfg->global_every = (int)g;
    }
    if (yt_get(conf, "first_attention_norm")) {
        bool has;
        if (yt_get_bool(conf, "first_attention_norm", &has, err) != 0)
            return -1;
        if (!has && norm != SQ_NORM_PRE)
            return yt_error(conf, err, "first_attention_norm false needs norm pre");
        cfg->first_attn_norm_absent = !has;
    }
    if (yt_get(conf, "final_norm") && yt_get_bool(conf, "final_norm", &cfg->final_norm, err) != 0)
        return -1;
    return 0;
}

/* The architecture variants; files written before they existed are BERT. */
static int variants_from_yaml(const yt_node *conf, sq_bert_config *cfg, sq_err *err)
{
    static const char *const norms[] = {"post", "pre"}, *const acts[] = {"gelu", "relu", "swiglu", "geglu"},
                             *const poss[] = {"learned", "sinusoidal", "rotary"},
                             *const heads[] = {"none", "tanh", "identity"},
                             *const pos_ids[] = {"index", "roberta"};
    sq_bert_config_set_bert_defaults(cfg);
    int norm = cfg->norm, act = cfg->act, pos = cfg->positions, head = cfg->head,
        pids = cfg->pos_ids;
    if (get_enum(conf, "norm", norms, 2, &norm, err) != 0 ||
        get_enum(conf, "activation", acts, 4, &act, err) != 0 ||
        get_enum(conf, "positions", poss, 3, &pos, err) != 0 ||
        get_enum(conf, "pooling_head", heads, 3, &head, err) != 0 ||
        get_enum(conf, "position_ids", pos_ids, 2, &pids, err) != 0)
        return -1;
    cfg->pos_ids = (sq_pos_ids)pids;
    if (sq_bert_max_tokens(cfg) < 3)
        return yt_error(conf, err, "max_positions %d leaves fewer than 3 positions after "
                                   "pad_token_id %d (position_ids: roberta)",
                        cfg->max_pos, cfg->pad_token_id);
    if (yt_get(conf, "relative_buckets") || yt_get(conf, "relative_max_distance")) {
        int64_t nb, md;
        if (yt_need_int64(conf, "relative_buckets", 4, SQ_REL_MAX_BUCKETS, &nb, err) != 0 ||
            yt_need_int64(conf, "relative_max_distance", 1, SQ_MAX_POSITIONS, &md, err) != 0)
            return -1;
        if (nb % 4 != 0 || md <= nb / 4)
            return yt_error(conf, err, "relative_buckets %lld must be a multiple of 4 and "
                                       "relative_max_distance %lld above a quarter of it",
                            (long long)nb, (long long)md);
        cfg->rel_buckets = (int)nb;
        cfg->rel_max_distance = (int)md;
    }
    /* rotary positions and their base come together (SQM.md 6.12) */
    if ((pos == SQ_POS_ROTARY) != (yt_get(conf, "rotary_base") != NULL))
        return yt_error(conf, err, "positions %s %s rotary_base",
                        sq_pos_kind_name((sq_pos_kind)pos),
                        pos == SQ_POS_ROTARY ? "needs" : "takes no");
    if (pos == SQ_POS_ROTARY) {
        if (yt_need_double(conf, "rotary_base", 1.0, 1e12, &cfg->rotary_base, err) != 0)
            return -1;
        if (!(cfg->rotary_base > 1.0))
            return yt_error(conf, err, "rotary_base %g must be above 1", cfg->rotary_base);
        if (cfg->pos_ids != SQ_POS_IDS_INDEX || (cfg->hidden / cfg->heads) % 2 != 0)
            return yt_error(conf, err, "positions rotary needs position_ids index and an even "
                                       "head size");
    }
    if (modernbert_from_yaml(conf, norm, pos, cfg, err) != 0)
        return -1;
    /* GeGLU is ModernBERT's, which always has its window rows, and only it */
    if ((act == SQ_ACT_GEGLU) != (cfg->global_every > 0))
        return yt_error(conf, err, "activation %s %s local_window, global_every and "
                                   "rotary_base_local (ModernBERT's rows come together)",
                        sq_act_name((sq_act)act), act == SQ_ACT_GEGLU ? "needs" : "takes no");
    cfg->norm = (sq_norm_place)norm;
    cfg->act = (sq_act)act;
    cfg->positions = (sq_pos_kind)pos;
    cfg->head = (sq_head_kind)head;
    if (yt_get(conf, "embedding_layernorm") &&
        yt_get_bool(conf, "embedding_layernorm", &cfg->emb_ln, err) != 0)
        return -1;
    if (yt_get(conf, "embed_dim")) {
        int64_t v;
        if (yt_get_int64(conf, "embed_dim", 1, cfg->hidden, &v, err) != 0)
            return -1;
        cfg->embed_dim = (int)v;
    }
    if (cfg->embed_dim % cfg->heads != 0)
        return yt_error(conf, err, "embed_dim %d is not divisible by heads %d", cfg->embed_dim,
                        cfg->heads);
    if (yt_get(conf, "num_labels")) {
        int64_t v;
        if (yt_get_int64(conf, "num_labels", 0, SQ_MAX_LABELS, &v, err) != 0)
            return -1;
        cfg->num_labels = (int)v;
    }
    static const char *const score_acts[] = {"identity", "sigmoid", "tanh", "softmax"};
    int sa = SQ_SCORE_IDENTITY;
    if (get_enum(conf, "score_activation", score_acts, 4, &sa, err) != 0)
        return -1;
    cfg->score_act = (sq_score_act)sa;
    return 0;
}

int sq_bert_config_from_yaml(const yt_node *conf, sq_bert_config *cfg, sq_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    static const struct {
        const char *key;
        size_t off;
        int64_t lo, hi;
    } f[] = {
        {"vocab_size", offsetof(sq_bert_config, vocab_size), 1, SQ_MAX_VOCAB},
        {"hidden", offsetof(sq_bert_config, hidden), 1, SQ_MAX_HIDDEN},
        {"layers", offsetof(sq_bert_config, layers), 1, SQ_MAX_LAYERS},
        {"heads", offsetof(sq_bert_config, heads), 1, SQ_MAX_HIDDEN},
        {"ffn", offsetof(sq_bert_config, ffn), 1, SQ_MAX_FFN},
        {"max_positions", offsetof(sq_bert_config, max_pos), 2, SQ_MAX_POSITIONS},
        {"type_vocab", offsetof(sq_bert_config, type_vocab), 0, 1024},
        {"pad_token_id", offsetof(sq_bert_config, pad_token_id), 0, SQ_MAX_VOCAB},
    };
    if (yt_expect(conf, YT_MAPPING, "config", err) != 0)
        return -1;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        int64_t v;
        if (yt_get_int64(conf, f[i].key, f[i].lo, f[i].hi, &v, err) != 0) {
            if (!yt_get(conf, f[i].key))
                yt_error(conf, err, "config lacks '%s'", f[i].key);
            return -1;
        }
        *(int *)((char *)cfg + f[i].off) = (int)v;
    }
    if (yt_get_double(conf, "layer_norm_eps", 1e-30, 1e-2, &cfg->ln_eps, err) != 0) {
        if (!yt_get(conf, "layer_norm_eps"))
            yt_error(conf, err, "config lacks 'layer_norm_eps'");
        return -1;
    }
    if (cfg->hidden % cfg->heads != 0)
        return yt_error(conf, err, "hidden %d is not divisible by heads %d", cfg->hidden,
                        cfg->heads);
    if (cfg->pad_token_id >= cfg->vocab_size)
        return yt_error(conf, err, "pad_token_id %d is outside the vocabulary", cfg->pad_token_id);
    return variants_from_yaml(conf, cfg, err);
}

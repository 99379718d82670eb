#include "config_yaml.h"

#include <stddef.h>
#include <string.h>

void sq_bert_config_to_yaml(sq_strbuf *sb, const sq_bert_config *c, const char *in)
{
    sq_sb_printf(sb,
                 "%svocab_size: %d\n%shidden: %d\n%slayers: %d\n%sheads: %d\n%sffn: %d\n"
                 "%smax_positions: %d\n%stype_vocab: %d\n%spad_token_id: %d\n"
                 "%slayer_norm_eps: %.17g\n",
                 in, c->vocab_size, in, c->hidden, in, c->layers, in, c->heads, in, c->ffn, in,
                 c->max_pos, in, c->type_vocab, in, c->pad_token_id, in, c->ln_eps);
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
        {"type_vocab", offsetof(sq_bert_config, type_vocab), 1, 1024},
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
    return 0;
}

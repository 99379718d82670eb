#include "embed_model.h"

#include <string.h>

#include "bert_model.h"

int sq_embed_model_open(const char *arg, sq_embed_model *m, sq_err *err)
{
    memset(m, 0, sizeof *m);
    if (sq_checkpoint_open(arg, &m->ckpt, err) != 0)
        return -1;
    const char *dir = m->ckpt.dir;
    if (sq_bert_load_dir(dir, &m->enc, err) != 0)
        goto fail;
    if (sq_wordpiece_spec_load_dir(dir, &m->tok_spec, err) != 0)
        goto fail;
    m->tok = sq_tokenizer_new(&m->tok_spec, err);
    int limit = m->tok_spec.model_max_length;
    if (!m->tok)
        goto fail;
    if (sq_tokenizer_vocab_size(m->tok) > m->enc.cfg.vocab_size) {
        sq_err_set(err, "%s: the tokenizer has %d tokens but the model's vocab_size is %d", dir,
                   sq_tokenizer_vocab_size(m->tok), m->enc.cfg.vocab_size);
        goto fail;
    }
    if (sq_pooling_config_load_dir(dir, &m->pool, err) != 0)
        goto fail;
    m->max_seq = m->enc.cfg.max_pos;
    if (limit > 1 && limit < m->max_seq)
        m->max_seq = limit;
    return 0;
fail:
    sq_embed_model_close(m);
    return -1;
}

void sq_embed_model_close(sq_embed_model *m)
{
    sq_encoder_free(&m->enc);
    sq_tokenizer_free(m->tok);
    sq_wordpiece_spec_free(&m->tok_spec);
    sq_checkpoint_close(&m->ckpt);
    memset(m, 0, sizeof *m);
}

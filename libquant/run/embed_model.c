#include "embed_model.h"
#include "sqm_schema.h"
#include "st_dense.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bert_model.h"
#include "dec_sqm.h"
#include "fileio.h"
#include "linear.h"
#include "sqm_class_head.h"
#include "sqm_decoder.h"
#include "sqm_model.h"
#include "sqm_tokenizer.h"
#include "tfjs_encoder.h"
#include "tfjs_model.h"

/* Everything of an open .sqm that `embed` runs on: the encoder (whose
 * loader proves every tensor consistent, sqm_model.c), the tokenizer and the
 * pooling. The one set of model checks: `verify` runs it too. */
static int load_sqm_parts(sq_embed_model *m, sq_err *err)
{
    sq_sqm_info info;
    if (sq_sqm_load_encoder(&m->sqm, &m->enc, &info, err) != 0 ||
        sq_sqm_tokenizer_spec(&m->sqm, &m->tok_spec, err) != 0 ||
        !(m->tok = sq_tokenizer_new(&m->tok_spec, err)))
        return -1;
    m->pool = info.pool;
    m->max_seq = info.max_seq;
    if (m->enc.cfg.num_labels > 0) { /* SQM.md 6.11: [CLS], unnormalized, whatever the keys say */
        m->pool.pooling = SQ_POOL_CLS;
        m->pool.normalize = false;
        if (sq_sqm_labels(&m->sqm, m->enc.cfg.num_labels, &m->labels, err) != 0)
            return -1;
    }
    return 0;
}

/* Every model error names the file: the tokenizer's and encoder's own
 * messages ("unk id -1 ...") do not know where their input came from. */
static int named(const char *path, sq_err *err)
{
    size_t n = strlen(path);
    if (strncmp(err->msg, path, n) != 0)
        sq_err_prefix(err, "%s", path);
    return -1;
}

static void causal_setup(sq_embed_model *m);

/* A causal LM .sqm: a causal embedding model (SQM.md 10.8), or refused. */
static int open_causal_sqm(const char *path, sq_embed_model *m, sq_err *err)
{
    if (!(m->lm = calloc(1, sizeof *m->lm)))
        return sq_err_set(err, "out of memory");
    if (sq_dec_sqm_open(path, m->lm, err) != 0) {
        free(m->lm);
        m->lm = NULL;
        return named(path, err);
    }
    if (!m->lm->emb.on)
        return sq_err_set(err, "%s is a causal LM without last-token pooling (no `pooling: last` "
                               "in its metadata, SQM.md 10.8): generate text with `squint "
                               "generate`",
                          path);
    causal_setup(m);
    return 0;
}

static int open_sqm(const char *path, sq_embed_model *m, sq_err *err)
{
    if (sq_dec_sqm_is_decoder(path))
        return open_causal_sqm(path, m, err);
    m->is_sqm = true;
    if (sq_container_open(path, SQ_KIND_SQM, &m->sqm, err) != 0 || load_sqm_parts(m, err) != 0)
        return named(path, err);
    /* Refuse a forced SQUINT_ISA this CPU lacks now, not in the middle of a run. */
    sq_isa isa;
    return sq_linear_isa(&isa, err);
}

int sq_sqm_check_runnable(const sq_container *c, sq_err *err)
{
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    if (sq_sqm_read_meta(c, &ctx, &info, err) == 0 && ctx.decoder) {
        /* the one decoder loader, as generate and serve run it */
        sq_decoder d;
        sq_tokenizer *tok;
        if (sq_sqm_load_decoder(c, &d, &tok, err) != 0)
            return named(c->path, err);
        sq_decoder_free(&d);
        sq_tokenizer_free(tok);
        return 0;
    }
    sq_embed_model m;
    memset(&m, 0, sizeof m);
    m.sqm = *c; /* borrowed: never closed here */
    int rc = load_sqm_parts(&m, err) == 0 ? 0 : named(c->path, err);
    sq_labels_free(m.labels, m.enc.cfg.num_labels);
    /* A stored classification head (SQM.md section 9) must be readable too. */
    sq_sqm_class_head ch;
    if (rc == 0 && sq_sqm_class_head_read(c, &ch, err) < 0)
        rc = named(c->path, err);
    else if (rc == 0)
        sq_sqm_class_head_free(&ch);
    sq_encoder_free(&m.enc);
    sq_tokenizer_free(m.tok);
    sq_wordpiece_spec_free(&m.tok_spec);
    return rc;
}

/* A checkpoint read from an archive lives in a temporary folder that is gone
 * once the command ends: name its files as archive members instead
 * ("m.tar.gz: m/config.json: ..." rather than "/tmp/squint-model-XXXX/m/..."). */
static void strip_extraction_root(const sq_checkpoint_dir *cd, sq_err *err)
{
    if (!cd->tmp_root)
        return;
    size_t n = strlen(cd->tmp_root);
    char *p;
    while ((p = strstr(err->msg, cd->tmp_root)) != NULL) {
        size_t cut = n + (p[n] == '/' ? 1 : 0);
        memmove(p, p + cut, strlen(p + cut) + 1);
    }
}

/* A sequence classifier pools [CLS] through its pooler, unnormalized: a
 * sentence-transformers module list meant for embeddings does not apply. */
static int classifier_setup(sq_embed_model *m, sq_err *err)
{
    if (m->pool.dense_path[0])
        return sq_err_set(err, "%s: a sequence classifier (BertForSequenceClassification) with "
                               "a sentence-transformers Dense module is not supported",
                          m->ckpt.dir);
    m->pool.pooling = SQ_POOL_CLS;
    m->pool.normalize = false;
    char *cfg = sq_path_join(m->model_dir, "config.json");
    if (!cfg)
        return sq_err_set(err, "out of memory");
    int rc = sq_config_labels_load(cfg, m->enc.cfg.num_labels, &m->labels, err);
    free(cfg);
    return rc;
}

/* The interface a causal embedding model shows through enc.cfg: its width
 * and context; no layers (embedder.c runs the decoder instead). */
static void causal_interface(sq_embed_model *m)
{
    const sq_decoder_config *c = &m->lm->dec.cfg;
    sq_bert_config *e = &m->enc.cfg;
    memset(e, 0, sizeof *e);
    sq_bert_config_set_bert_defaults(e);
    e->hidden = e->embed_dim = c->dim;
    e->heads = c->n_heads;
    e->ffn = c->hidden;
    e->vocab_size = c->vocab;
    e->max_pos = c->max_pos;
    e->pos_ids = SQ_POS_IDS_INDEX;
}

/* The embedder's view of a causal embedding model m->lm (m->lm->emb on). */
static void causal_setup(sq_embed_model *m)
{
    m->tok = m->lm->tok; /* borrowed */
    m->lm_wrap = m->lm->emb.wrap;
    m->pool.pooling = SQ_POOL_LAST;
    m->pool.normalize = m->lm->emb.normalize;
    m->max_seq = m->lm->emb.max_seq;
    causal_interface(m);
}

/* A causal LM folder as an embedding model: only when its
 * sentence-transformers Pooling module pools the last token (Qwen3-Embedding);
 * the special tokens around each text are its tokenizer.json post-processor's. */
static int open_causal(sq_embed_model *m, sq_err *err)
{
    const char *mdir = m->model_dir;
    if (m->pool.pooling != SQ_POOL_LAST)
        return sq_err_set(err, "%s is a causal LM without last-token pooling: squint embeds "
                               "with a causal LM only when its sentence-transformers Pooling "
                               "module pools the last token (pooling_mode_lasttoken, as "
                               "Qwen3-Embedding's); generate text with `squint generate`",
                          mdir);
    if (!(m->lm = calloc(1, sizeof *m->lm)))
        return sq_err_set(err, "out of memory");
    if (sq_llama_model_open(mdir, NULL, m->lm, err) != 0) {
        free(m->lm);
        m->lm = NULL;
        return -1;
    }
    /* modules.json one folder up (a Transformer module in a subfolder) */
    if (!m->lm->emb.on && sq_llama_embedding_init(m->lm, &m->pool, err) != 0)
        return -1;
    causal_setup(m);
    return 0;
}

static int open_checkpoint(const char *arg, sq_embed_model *m, sq_err *err)
{
    if (sq_checkpoint_open(arg, &m->ckpt, err) != 0)
        return -1;
    const char *dir = m->ckpt.dir;
    if (sq_tfjs_is_model_dir(dir)) { /* USE Lite as TensorFlow.js exports it */
        if (sq_tfjs_load_encoder(dir, &m->enc, &m->tok_spec, &m->pool, err) != 0 ||
            !(m->tok = sq_tokenizer_new(&m->tok_spec, err)))
            return -1;
        m->max_seq = sq_bert_max_tokens(&m->enc.cfg);
        m->model_dir = strdup(dir);
        return m->model_dir ? 0 : sq_err_set(err, "out of memory");
    }
    /* modules.json first: it says where the Transformer module lives and
     * how sentence-transformers truncates. */
    if (sq_pooling_config_load_dir(dir, &m->pool, err) != 0)
        return -1;
    m->model_dir = m->pool.transformer_path[0] ? sq_path_join(dir, m->pool.transformer_path)
                                               : strdup(dir);
    if (!m->model_dir)
        return sq_err_set(err, "out of memory");
    const char *mdir = m->model_dir;
    if (sq_hf_dir_is_causal_lm(mdir))
        return open_causal(m, err);
    if (sq_bert_load_dir(mdir, &m->enc, err) != 0)
        return -1;
    if (m->enc.cfg.num_labels > 0 && classifier_setup(m, err) != 0)
        return -1;
    if (m->pool.dense_path[0] && sq_st_dense_load(dir, &m->pool, &m->enc, err) != 0)
        return -1;
    if (sq_wordpiece_spec_load_dir(mdir, &m->tok_spec, err) != 0)
        return -1;
    m->tok = sq_tokenizer_new(&m->tok_spec, err);
    if (!m->tok)
        return -1;
    if (sq_tokenizer_vocab_size(m->tok) > m->enc.cfg.vocab_size)
        return sq_err_set(err, "%s: the tokenizer has %d tokens but the model's vocab_size is %d",
                          mdir, sq_tokenizer_vocab_size(m->tok), m->enc.cfg.vocab_size);
    /* The default truncation: the smallest of the model's positions, the
     * tokenizer's model_max_length and sentence-transformers' max_seq_length. */
    int limit = m->tok_spec.model_max_length;
    m->max_seq = sq_bert_max_tokens(&m->enc.cfg); /* the positions (less RoBERTa's offset) */
    if (limit > 1 && limit < m->max_seq)
        m->max_seq = limit;
    if (m->pool.max_seq_length >= 3 && m->pool.max_seq_length < m->max_seq)
        m->max_seq = m->pool.max_seq_length;
    return 0;
}

int sq_embed_model_open(const char *arg, sq_embed_model *m, sq_err *err)
{
    memset(m, 0, sizeof *m);
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        return sq_err_set(err, "%s: empty file: not a model (.sqm), checkpoint or archive", arg);
    int rc = !sq_dir_exists(arg) && sq_sqm_sniff(arg) ? open_sqm(arg, m, err)
                                                      : open_checkpoint(arg, m, err);
    if (rc != 0) {
        strip_extraction_root(&m->ckpt, err);
        named(arg, err);
        sq_embed_model_close(m);
    }
    return rc;
}

bool sq_embed_model_is_packed(const sq_embed_model *m)
{
    return m->is_sqm || (m->lm && m->lm->sqm);
}

void sq_embed_model_close(sq_embed_model *m)
{
    sq_labels_free(m->labels, m->enc.cfg.num_labels);
    sq_encoder_free(&m->enc);
    if (m->lm) { /* m->tok is the decoder's */
        sq_llama_model_close(m->lm);
        free(m->lm);
    } else {
        sq_tokenizer_free(m->tok);
    }
    sq_wordpiece_spec_free(&m->tok_spec);
    if (m->is_sqm)
        sq_container_close(&m->sqm);
    else
        sq_checkpoint_close(&m->ckpt);
    free(m->model_dir);
    memset(m, 0, sizeof *m);
}

int sq_embed_model_require_embeddings(const sq_embed_model *m, const char *arg, sq_err *err)
{
    if (m->enc.cfg.num_labels == 0)
        return 0;
    return sq_err_set(err, "%s is a sequence classifier (BertForSequenceClassification, %d "
                           "label%s), not an embedding model: score query/document pairs with "
                           "`squint rerank`",
                      arg, m->enc.cfg.num_labels, m->enc.cfg.num_labels == 1 ? "" : "s");
}

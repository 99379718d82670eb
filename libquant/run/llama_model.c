#include "llama_model.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "hf_config.h"
#include "hf_llama.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "dec_sqm.h"
#include <sys/stat.h>

static char *dir_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return NULL;
    char *d = strdup(dirname(copy));
    free(copy);
    return d;
}

static int open_tokenizer(const char *path, const char *tokenizer, const char *opt,
                          const sq_decoder_config *c,
                          sq_llama_model *m, sq_err *err)
{
    const int vocab = c->vocab;
    if (tokenizer) {
        /* a tokenizer.json (eos: the model's id; BOS: what its post-processor
         * puts before a text, as transformers' tokenizer does: Llama's <s>,
         * nothing for Qwen3), else a llama2.c file (bos / eos: the model's) */
        int32_t bos = c->bos;
        const size_t tl = strlen(tokenizer);
        if (tl >= 5 && strcmp(tokenizer + tl - 5, ".json") == 0) {
            if (sq_hf_single_template_load(tokenizer, vocab, &m->tmpl, err) != 0)
                return -1;
            if (m->tmpl.n_prefix > 1)
                return sq_err_set(err, "%s: post_processor puts %d tokens before a text: a causal "
                                       "LM takes one BOS at most",
                                  tokenizer, m->tmpl.n_prefix);
            m->has_template = true;
            bos = m->tmpl.n_prefix ? m->tmpl.prefix[0] : -1;
        }
        if (!(m->tok = sq_tokenizer_load_bpe_file(tokenizer, bos, c->eos, err)))
            return -1;
        /* a byte-level tokenizer may have fewer ids than the model has rows
         * (Qwen3: 151,669 of 151,936; the rows past it are never encoded to,
         * and decode to nothing when sampled) */
        const int32_t tv = sq_tokenizer_vocab_size(m->tok);
        if (tv > vocab ||
            (tv != vocab && sq_tokenizer_kind_of(m->tok) != SQ_TOKENIZER_BYTELEVEL))
            return sq_err_set(err, "%s: %d tokens, but the model %s has a vocabulary of %d",
                              tokenizer, (int)tv, path, vocab);
        return (m->tokenizer_path = strdup(tokenizer)) ? 0 : sq_err_set(err, "out of memory");
    }
    static const char *const names[] = {"tokenizer.bin", "tok512.bin"};
    char *dir = dir_of(path);
    if (!dir)
        return sq_err_set(err, "out of memory");
    char found[512] = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *cand = sq_path_join(dir, names[i]);
        if (!cand)
            break;
        if (!sq_file_exists(cand)) {
            free(cand);
            continue;
        }
        sq_tokenizer *t = sq_tokenizer_load_bpe_file(cand, -1, -1, err);
        if (!t) {
            free(cand);
            free(dir);
            return -1;
        }
        if (sq_tokenizer_vocab_size(t) == vocab) {
            m->tok = t;
            m->tokenizer_path = cand;
            free(dir);
            return 0;
        }
        snprintf(found + strlen(found), sizeof found - strlen(found), "%s%s has %d tokens",
                 found[0] ? "; " : " (", cand, (int)sq_tokenizer_vocab_size(t));
        sq_tokenizer_free(t);
        free(cand);
    }
    free(dir);
    return sq_err_set(err, "%s: no tokenizer of %d tokens next to it (tokenizer.bin, tok512.bin%s%s): "
                           "give one with %s",
                      path, vocab, found[0] ? found : "", found[0] ? ")" : "", opt);
}

/* An HF folder: the tokenizer option (opt), else its tokenizer.json. */
static int open_hf_tokenizer(const char *dir, const char *tokenizer, const char *opt,
                             const sq_decoder_config *c,
                             sq_llama_model *m, sq_err *err)
{
    if (tokenizer)
        return open_tokenizer(dir, tokenizer, opt, c, m, err);
    char *p = sq_path_join(dir, "tokenizer.json");
    if (!p)
        return sq_err_set(err, "out of memory");
    if (!sq_file_exists(p)) {
        sq_err_set(err, "%s: no tokenizer.json (give a tokenizer with %s)", dir, opt);
        free(p);
        return -1;
    }
    int rc = open_tokenizer(dir, p, opt, c, m, err);
    free(p);
    return rc;
}

/* A regular file whose seven-int32 header is a valid llama2.c config
 * implying exactly its size, or a versioned llama2.c export ("ak42", which
 * the reader then refuses by name). Anything else (an archive of a BERT
 * checkpoint, a .sqm) is not a llama2.c checkpoint. */
bool sq_llama_is_checkpoint(const char *path)
{
    if (sq_hf_dir_is_causal_lm(path))
        return true;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sq_sqm_sniff(path))
        return false;
    FILE *f = fopen(path, "rb");
    int32_t hdr[7];
    bool ok = f && fread(hdr, sizeof hdr, 1, f) == 1;
    if (f)
        fclose(f);
    if (!ok)
        return false;
    if ((uint32_t)hdr[0] == 0x616b3432u) /* "ak42" */
        return true;
    sq_llama_config cfg;
    uint64_t want = 0;
    sq_err ignored;
    return sq_llama_config_from_header(hdr, &cfg, &want, path, &ignored) == 0 &&
           want == (uint64_t)sb.st_size;
}

bool sq_llama_is_embedding(const char *path)
{
    sq_err ignored;
    if (sq_hf_dir_is_causal_lm(path)) {
        sq_pooling_config pc;
        return sq_pooling_config_load_dir(path, &pc, &ignored) == 0 &&
               pc.from_sentence_transformers && pc.pooling == SQ_POOL_LAST;
    }
    if (!sq_sqm_sniff(path))
        return false;
    sq_container c;
    if (sq_container_open(path, SQ_KIND_SQM, &c, &ignored) != 0)
        return false;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    const bool emb = sq_sqm_read_meta(&c, &ctx, &info, &ignored) == 0 && ctx.decoder &&
                     ctx.dec_embedding;
    sq_container_close(&c);
    return emb;
}

int sq_llama_embedding_init(sq_llama_model *m, const sq_pooling_config *pc, sq_err *err)
{
    const int ctx = m->dec.cfg.max_pos;
    if (pc->pooling != SQ_POOL_LAST)
        return sq_err_set(err, "a causal LM embeds with last-token pooling only (its pooling is "
                               "%s)", sq_pooling_name(pc->pooling));
    if (pc->dense_path[0])
        return sq_err_set(err, "a Dense module after a causal LM's pooling is not supported");
    if (!m->tokenizer_path || m->sqm)
        return sq_err_set(err, "a causal embedding model needs its tokenizer.json");
    if (!m->has_template)
        return sq_err_set(err, "%s: a causal embedding model needs a tokenizer.json",
                          m->tokenizer_path);
    memset(&m->emb, 0, sizeof m->emb);
    m->emb.wrap = m->tmpl;
    m->emb.on = true;
    m->emb.normalize = pc->normalize;
    m->emb.max_seq = pc->max_seq_length >= 3 && pc->max_seq_length < ctx ? pc->max_seq_length : ctx;
    return 0;
}

/* opt: the command-line option that names the tokenizer, for messages. */
static int model_open(const char *path, const char *tokenizer, const char *opt, sq_llama_model *m,
                      sq_err *err)
{
    memset(m, 0, sizeof *m);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sq_sqm_sniff(path)) { /* never a FIFO */
        if (tokenizer)
            return sq_err_set(err, "%s: a packed model holds its tokenizer: %s does not "
                                   "apply", path, opt);
        return sq_dec_sqm_open(path, m, err);
    }
    /* any folder is read as a Hugging Face one, so its config.json's problem
     * (broken JSON, another architecture) is the one named */
    const bool hf = sq_hf_dir_is_causal_lm(path) || sq_dir_exists(path);
    sq_llama_ckpt ck;
    if ((hf ? sq_hf_llama_load(path, &ck, err) : sq_llama_ckpt_load(path, &ck, err)) != 0)
        return -1;
    if (sq_decoder_from_llama(&ck, &m->dec, err) != 0)
        return -1;
    if ((hf ? open_hf_tokenizer(path, tokenizer, opt, &m->dec.cfg, m, err)
            : open_tokenizer(path, tokenizer, opt, &m->dec.cfg, m, err)) != 0) {
        sq_llama_model_close(m);
        return -1;
    }
    /* A causal embedding model: its sentence-transformers modules pool the
     * last token. A folder whose modules say anything else is still a causal
     * LM for generation; embed names the problem (embed_model.c). */
    sq_pooling_config pc;
    sq_err ignored;
    if (hf && sq_pooling_config_load_dir(path, &pc, &ignored) == 0 &&
        pc.from_sentence_transformers && pc.pooling == SQ_POOL_LAST &&
        sq_llama_embedding_init(m, &pc, err) != 0) {
        sq_err_prefix(err, "%s", path);
        sq_llama_model_close(m);
        return -1;
    }
    return 0;
}

int sq_llama_model_open(const char *path, const char *tokenizer, sq_llama_model *m, sq_err *err)
{
    return model_open(path, tokenizer, "--tokenizer", m, err);
}

int sq_llama_draft_open(const char *path, const char *tokenizer, sq_llama_model *m, sq_err *err)
{
    if (model_open(path, tokenizer, "--draft-tokenizer", m, err) != 0)
        return sq_err_prefix(err, "--draft");
    return 0;
}

void sq_llama_model_close(sq_llama_model *m)
{
    sq_decoder_free(&m->dec);
    sq_tokenizer_free(m->tok);
    free(m->tokenizer_path);
    if (m->sqm) {
        sq_container_close(m->sqm);
        free(m->sqm);
    }
    memset(m, 0, sizeof *m);
}

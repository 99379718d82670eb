#include "sqm_tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqm_schema.h"
#include "tokenizer_bpe.h"
#include "tokenizer_bytelevel.h"
#include "tokenizer_hf_unigram.h"
#include "yaml_tree.h"

_Static_assert(SQ_PRETOK_GPT2 == 1 && SQ_PRETOK_QWEN2 == 2,
               "sqm_model.c reads tokenizer.pattern into these values");

static int get_id(const yt_node *t, const char *key, int32_t vocab, int32_t *out, sq_err *err)
{
    int64_t v = -1;
    const yt_node *n = yt_get(t, key);
    if (n && !yt_is_null(n) && yt_as_int64(n, key, -1, vocab - 1, &v, err) != 0)
        return -1;
    *out = (int32_t)v;
    return 0;
}

/* A tokenizer tensor against the schema (sqm_schema.c): `tokenize` reads
 * the tokenizer without the encoder's loader, which checks it too. */
static int check_tensor(const sq_container *c, enum sq_sqm_row row, bool unigram,
                        int64_t vocab_size, sq_err *err)
{
    sq_sqm_schema_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.unigram = unigram;
    ctx.hf_unigram = row == SQ_ROW_TOK_CHARSMAP;
    ctx.bytelevel = row == SQ_ROW_TOK_MERGES || row == SQ_ROW_TOK_ADDED;
    ctx.tok_vocab_size = vocab_size;
    return sq_sqm_check_row(c, &ctx, row, err);
}

/* The vocabulary tensor: exactly vocab_size NUL-terminated, non-empty strings. */
static int read_vocab(const sq_container *c, sq_wordpiece_spec *spec, sq_err *err)
{
    if (check_tensor(c, SQ_ROW_TOK_VOCAB, spec->type == SQ_TOK_UNIGRAM, spec->vocab_size, err) != 0)
        return -1;
    const sq_container_tensor *v = sq_container_find(c, "tokenizer.vocab");
    const char *p = v->data, *end = p + v->size;
    if (end[-1] != '\0')
        return sq_err_set(err, "%s: \"tokenizer.vocab\" does not end with a NUL byte", c->path);
    spec->vocab = calloc((size_t)spec->vocab_size, sizeof *spec->vocab);
    if (!spec->vocab)
        return sq_err_set(err, "out of memory");
    int32_t n = 0;
    while (p < end) {
        size_t len = strlen(p);
        if (len == 0 || n >= spec->vocab_size)
            return sq_err_set(err, "%s: \"tokenizer.vocab\" holds %s (token %d)", c->path,
                              len == 0 ? "an empty token" : "more tokens than vocab_size", n);
        if (!(spec->vocab[n++] = strdup(p)))
            return sq_err_set(err, "out of memory");
        p += len + 1;
    }
    if (n != spec->vocab_size)
        return sq_err_set(err, "%s: \"tokenizer.vocab\" holds %d tokens, metadata says %d",
                          c->path, n, spec->vocab_size);
    return 0;
}

/* The f64 piece scores (tokenizer.scores, finite) into spec->scores. */
static int read_scores(const sq_container *c, sq_wordpiece_spec *spec, sq_err *err)
{
    const int64_t vs = spec->vocab_size;
    if (check_tensor(c, SQ_ROW_TOK_SCORES, true, vs, err) != 0)
        return -1;
    const sq_container_tensor *sc = sq_container_find(c, "tokenizer.scores");
    spec->scores = malloc((size_t)vs * sizeof *spec->scores);
    if (!spec->scores)
        return sq_err_set(err, "out of memory");
    memcpy(spec->scores, sc->data, (size_t)vs * sizeof *spec->scores);
    for (int64_t i = 0; i < vs; i++)
        if (!isfinite(spec->scores[i]))
            return sq_err_set(err, "%s: tokenizer.scores[%lld] is not finite", c->path,
                              (long long)i);
    return 0;
}

/* type: unigram: vocab_size, unk_id (0), model_max_length, plus the
 * tokenizer.scores tensor (f64 [vocab_size], finite). */
static int unigram_spec(const sq_container *c, const yt_node *t, sq_wordpiece_spec *spec,
                        sq_err *err)
{
    int64_t vs, unk, mml = 0;
    if (yt_need_int64(t, "vocab_size", 1, 1 << 22, &vs, err) != 0 ||
        yt_need_int64(t, "unk_id", 0, 0, &unk, err) != 0 ||
        yt_get_int64(t, "model_max_length", 0, 1 << 30, &mml, err) < 0)
        return -1;
    spec->type = SQ_TOK_UNIGRAM;
    spec->vocab_size = (int32_t)vs;
    spec->unk_id = 0;
    spec->cls_id = spec->sep_id = spec->pad_id = spec->mask_id = -1;
    spec->model_max_length = (int32_t)mml;
    if (read_vocab(c, spec, err) != 0)
        return -1;
    return read_scores(c, spec, err);
}

/* A list of ids (absent: empty) into *ids (malloc'd), *n. */
static int id_list(const yt_node *t, const char *key, int32_t vocab, int32_t **ids, int32_t *n,
                   sq_err *err)
{
    *ids = NULL;
    *n = 0;
    const yt_node *l = yt_get(t, key);
    if (!l || yt_len(l) == 0)
        return 0;
    if (yt_expect(l, YT_SEQUENCE, key, err) != 0)
        return -1;
    if (yt_len(l) > SQ_HFU_MAX_ADDED)
        return yt_error(l, err, "tokenizer %s has more than %d ids", key, SQ_HFU_MAX_ADDED);
    *ids = malloc(yt_len(l) * sizeof **ids);
    if (!*ids)
        return sq_err_set(err, "out of memory");
    for (size_t i = 0; i < yt_len(l); i++) {
        int64_t v;
        if (yt_as_int64(yt_at(l, i), key, 0, vocab - 1, &v, err) != 0)
            return -1;
        (*ids)[(*n)++] = (int32_t)v;
    }
    return 0;
}

/* type: hf-unigram (SQM.md 2.4): the Hugging Face Unigram kind of an
 * XLM-RoBERTa tokenizer.json; tokenizer.scores and, when the file had a
 * Precompiled step, tokenizer.charsmap (checked by the kind's constructor). */
static int hf_unigram_spec(const sq_container *c, const yt_node *t, sq_wordpiece_spec *spec,
                           sq_err *err)
{
    int64_t vs, mml = 0;
    const char *ps = "always";
    bool split = true, collapse = false;
    if (yt_need_int64(t, "vocab_size", 1, 1 << 22, &vs, err) != 0 ||
        yt_get_int64(t, "model_max_length", 0, 1 << 30, &mml, err) < 0 ||
        yt_get_string(t, "prepend_scheme", &ps, err) < 0 ||
        yt_get_bool(t, "split", &split, err) < 0 ||
        yt_get_bool(t, "collapse_spaces", &collapse, err) < 0)
        return -1;
    spec->type = SQ_TOK_HF_UNIGRAM;
    spec->vocab_size = (int32_t)vs;
    spec->model_max_length = (int32_t)mml;
    spec->metaspace_split = split;
    spec->collapse_spaces = collapse;
    spec->pair_double_sep = true;
    if (strcmp(ps, "always") == 0)
        spec->prepend_scheme = SQ_PREPEND_ALWAYS;
    else if (strcmp(ps, "first") == 0)
        spec->prepend_scheme = SQ_PREPEND_FIRST;
    else if (strcmp(ps, "never") == 0)
        spec->prepend_scheme = SQ_PREPEND_NEVER;
    else
        return yt_error(yt_get(t, "prepend_scheme"), err,
                        "tokenizer prepend_scheme '%s' is not always, first or never", ps);
    if (get_id(t, "unk_id", spec->vocab_size, &spec->unk_id, err) != 0 ||
        get_id(t, "cls_id", spec->vocab_size, &spec->cls_id, err) != 0 ||
        get_id(t, "sep_id", spec->vocab_size, &spec->sep_id, err) != 0 ||
        get_id(t, "pad_id", spec->vocab_size, &spec->pad_id, err) != 0 ||
        get_id(t, "mask_id", spec->vocab_size, &spec->mask_id, err) != 0)
        return -1;
    if (spec->unk_id < 0 || spec->cls_id < 0 || spec->sep_id < 0)
        return sq_err_set(err, "%s: metadata tokenizer (hf-unigram) needs unk_id, cls_id and "
                          "sep_id", c->path);
    if (read_vocab(c, spec, err) != 0 || read_scores(c, spec, err) != 0)
        return -1;
    int32_t *add = NULL, *ls = NULL, *rs = NULL, na, nl, nr;
    int rc = -1;
    if (id_list(t, "added_tokens", spec->vocab_size, &add, &na, err) != 0 ||
        id_list(t, "lstrip_tokens", spec->vocab_size, &ls, &nl, err) != 0 ||
        id_list(t, "rstrip_tokens", spec->vocab_size, &rs, &nr, err) != 0)
        goto out;
    spec->added = calloc((size_t)na + 1, sizeof *spec->added);
    if (!spec->added) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int32_t i = 0; i < na; i++) {
        sq_added_token *a = &spec->added[i];
        a->id = add[i];
        for (int32_t k = 0; k < nl; k++)
            a->lstrip |= ls[k] == add[i];
        for (int32_t k = 0; k < nr; k++)
            a->rstrip |= rs[k] == add[i];
        if (!(a->content = strdup(spec->vocab[add[i]]))) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        spec->n_added++;
    }
    for (int32_t k = 0; k < nl + nr; k++) { /* strip flags only on added tokens */
        int32_t id = k < nl ? ls[k] : rs[k - nl];
        bool found = false;
        for (int32_t i = 0; i < na; i++)
            found |= add[i] == id;
        if (!found) {
            sq_err_set(err, "%s: metadata tokenizer %s_tokens names id %d, which is not in "
                       "added_tokens", c->path, k < nl ? "lstrip" : "rstrip", id);
            goto out;
        }
    }
    const sq_container_tensor *cm = sq_container_find(c, "tokenizer.charsmap");
    if (cm) {
        if (check_tensor(c, SQ_ROW_TOK_CHARSMAP, false, vs, err) != 0)
            goto out;
        if (!(spec->charsmap = malloc(cm->size ? cm->size : 1))) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        memcpy(spec->charsmap, cm->data, cm->size);
        spec->charsmap_len = cm->size;
    }
    rc = 0;
out:
    free(add);
    free(ls);
    free(rs);
    return rc;
}

/* type: hf-bytelevel of an encoder (SQM.md 2.4, ModernBERT): 10.5's keys and
 * rows (tokenizer.vocab, .merges, .added) plus the encoder's ids, pair,
 * lstrip_tokens / rstrip_tokens; sq_tokenizer_new checks the rest (every
 * byte's piece, merges making pieces, no duplicates). */
static int hf_bytelevel_spec(const sq_container *c, const yt_node *t, sq_wordpiece_spec *spec,
                             sq_err *err)
{
    int64_t vs, mml = 0;
    const char *pat, *ps = "bert";
    static const char *const required[] = {"vocab_size", "nfc", "add_prefix_space",
                                            "ignore_merges", "pattern", "cls_id", "sep_id"};
    for (size_t k = 0; k < sizeof required / sizeof *required; k++)
        if (!yt_require(t, required[k], err))
            return -1;
    if (yt_get_int64(t, "vocab_size", 256, 1 << 22, &vs, err) != 0 ||
        yt_get_bool(t, "nfc", &spec->bl_nfc, err) != 0 ||
        yt_get_bool(t, "add_prefix_space", &spec->bl_add_prefix_space, err) != 0 ||
        yt_get_bool(t, "ignore_merges", &spec->bl_ignore_merges, err) != 0 ||
        yt_get_string(t, "pattern", &pat, err) != 0 ||
        yt_get_int64(t, "model_max_length", 0, 1 << 30, &mml, err) < 0 ||
        yt_get_string(t, "pair", &ps, err) < 0)
        return -1;
    spec->type = SQ_TOK_HF_BYTELEVEL;
    spec->vocab_size = (int32_t)vs;
    spec->model_max_length = (int32_t)mml;
    spec->bl_pattern = strcmp(pat, "gpt2") == 0 ? SQ_PRETOK_GPT2
                       : strcmp(pat, "qwen2") == 0 ? SQ_PRETOK_QWEN2
                                                   : 0;
    if (strcmp(pat, "none") != 0 && spec->bl_pattern == 0)
        return yt_error(yt_get(t, "pattern"), err, "tokenizer pattern '%s' is not none, gpt2 or "
                        "qwen2", pat);
    if (strcmp(ps, "bert") != 0 && strcmp(ps, "roberta") != 0)
        return yt_error(yt_get(t, "pair"), err, "tokenizer pair '%s' is not bert or roberta", ps);
    spec->pair_double_sep = strcmp(ps, "roberta") == 0;
    if (get_id(t, "unk_id", spec->vocab_size, &spec->unk_id, err) != 0 ||
        get_id(t, "cls_id", spec->vocab_size, &spec->cls_id, err) != 0 ||
        get_id(t, "sep_id", spec->vocab_size, &spec->sep_id, err) != 0 ||
        get_id(t, "pad_id", spec->vocab_size, &spec->pad_id, err) != 0 ||
        get_id(t, "mask_id", spec->vocab_size, &spec->mask_id, err) != 0)
        return -1;
    if (spec->cls_id < 0 || spec->sep_id < 0)
        return sq_err_set(err, "%s: metadata tokenizer (hf-bytelevel of an encoder) needs cls_id "
                          "and sep_id", c->path);
    if (read_vocab(c, spec, err) != 0 ||
        check_tensor(c, SQ_ROW_TOK_MERGES, false, vs, err) != 0)
        return -1;
    const sq_container_tensor *tm = sq_container_find(c, "tokenizer.merges");
    if (tm->dims[0] > SQ_BPE_MAX_MERGES)
        return sq_err_set_at(err, "tokenizer.merges", "%s: tensor \"tokenizer.merges\" has more "
                             "than %d rows", c->path, SQ_BPE_MAX_MERGES);
    spec->n_merges = (int32_t)tm->dims[0];
    if (!(spec->merges = malloc((size_t)spec->n_merges * 2 * sizeof *spec->merges + 1)))
        return sq_err_set(err, "out of memory");
    memcpy(spec->merges, tm->data, (size_t)spec->n_merges * 2 * sizeof *spec->merges);
    const sq_container_tensor *ta = sq_container_find(c, "tokenizer.added");
    if (ta && check_tensor(c, SQ_ROW_TOK_ADDED, false, vs, err) != 0)
        return -1;
    const int64_t na = ta ? (int64_t)ta->dims[0] : 0;
    if (na > vs)
        return sq_err_set_at(err, "tokenizer.added", "%s: tensor \"tokenizer.added\" has more "
                             "rows than tokenizer.vocab_size %d", c->path, (int)vs);
    int32_t *ls = NULL, *rs = NULL, nl, nr;
    int rc = -1;
    if (id_list(t, "lstrip_tokens", spec->vocab_size, &ls, &nl, err) != 0 ||
        id_list(t, "rstrip_tokens", spec->vocab_size, &rs, &nr, err) != 0)
        goto out;
    if (!(spec->added = calloc((size_t)na + 1, sizeof *spec->added))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    const int32_t *a = ta ? ta->data : NULL;
    for (int64_t i = 0; i < na; i++) {
        const int32_t id = a[3 * i], nz = a[3 * i + 1], sp = a[3 * i + 2];
        if (id < 0 || id >= vs || (nz != 0 && nz != 1) || (sp != 0 && sp != 1)) {
            sq_err_set_at(err, "tokenizer.added", "%s: tensor \"tokenizer.added\" row %d is (%d, "
                          "%d, %d): not (an id below %d, 0 or 1, 0 or 1)", c->path, (int)i,
                          (int)id, (int)nz, (int)sp, (int)vs);
            goto out;
        }
        sq_added_token *x = &spec->added[i];
        x->id = id;
        x->normalized = nz == 1;
        x->special = sp == 1;
        for (int32_t k = 0; k < nl; k++)
            x->lstrip |= ls[k] == id;
        for (int32_t k = 0; k < nr; k++)
            x->rstrip |= rs[k] == id;
        if (!(x->content = strdup(spec->vocab[id]))) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        spec->n_added++;
    }
    for (int32_t k = 0; k < nl + nr; k++) { /* strip flags only on added tokens */
        int32_t id = k < nl ? ls[k] : rs[k - nl];
        bool found = false;
        for (int64_t i = 0; i < na; i++)
            found |= a[3 * i] == id;
        if (!found) {
            sq_err_set(err, "%s: metadata tokenizer %s_tokens names id %d, which is not a "
                       "tokenizer.added row", c->path, k < nl ? "lstrip" : "rstrip", id);
            goto out;
        }
    }
    rc = 0;
out:
    free(ls);
    free(rs);
    return rc;
}

int sq_sqm_tokenizer_spec(const sq_container *c, sq_wordpiece_spec *spec, sq_err *err)
{
    memset(spec, 0, sizeof *spec);
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    int rc = -1;
    const yt_node *t = yt_require(yt_root(doc), "tokenizer", err);
    const char *type, *prefix = "##";
    int64_t vs, maxc = 100, mml = 0;
    if (!t || yt_need_string(t, "type", &type, err) != 0)
        goto out;
    if (strcmp(type, "unigram") == 0) {
        rc = unigram_spec(c, t, spec, err);
        goto out;
    }
    if (strcmp(type, "hf-unigram") == 0) {
        rc = hf_unigram_spec(c, t, spec, err);
        goto out;
    }
    if (strcmp(type, "hf-bytelevel") == 0) {
        rc = hf_bytelevel_spec(c, t, spec, err);
        goto out;
    }
    if (strcmp(type, "wordpiece") != 0) {
        yt_error(yt_get(t, "type"), err, "tokenizer type '%s' is not supported", type);
        goto out;
    }
    if (yt_need_int64(t, "vocab_size", 1, 1 << 22, &vs, err) != 0 ||
        yt_get_bool(t, "lowercase", &spec->lowercase, err) < 0 ||
        yt_get_bool(t, "clean_text", &spec->clean_text, err) < 0 ||
        yt_get_bool(t, "handle_chinese_chars", &spec->handle_chinese_chars, err) < 0 ||
        yt_get_string(t, "continuing_subword_prefix", &prefix, err) < 0 ||
        yt_get_int64(t, "max_input_chars_per_word", 1, 1 << 20, &maxc, err) < 0 ||
        yt_get_int64(t, "model_max_length", 0, 1 << 30, &mml, err) < 0)
        goto out;
    const yt_node *sa = yt_get(t, "strip_accents");
    bool b;
    spec->strip_accents = -1;
    if (sa && !yt_is_null(sa)) {
        if (yt_as_bool(sa, "strip_accents", &b, err) != 0)
            goto out;
        spec->strip_accents = b;
    }
    spec->vocab_size = (int32_t)vs;
    spec->max_input_chars_per_word = (int32_t)maxc;
    spec->model_max_length = (int32_t)mml;
    if (!yt_require(t, "unk_id", err) || /* required (SQM.md 2.4); the others may be null */
        get_id(t, "unk_id", spec->vocab_size, &spec->unk_id, err) != 0 ||
        get_id(t, "cls_id", spec->vocab_size, &spec->cls_id, err) != 0 ||
        get_id(t, "sep_id", spec->vocab_size, &spec->sep_id, err) != 0 ||
        get_id(t, "pad_id", spec->vocab_size, &spec->pad_id, err) != 0 ||
        get_id(t, "mask_id", spec->vocab_size, &spec->mask_id, err) != 0)
        goto out;
    const yt_node *pair = yt_get(t, "pair");
    if (pair) {
        const char *ps;
        if (yt_get_string(t, "pair", &ps, err) != 0)
            goto out;
        if (strcmp(ps, "bert") != 0 && strcmp(ps, "roberta") != 0) {
            yt_error(pair, err, "tokenizer pair '%s' is not bert or roberta", ps);
            goto out;
        }
        spec->pair_double_sep = strcmp(ps, "roberta") == 0;
    }
    spec->continuing_subword_prefix = strdup(prefix);
    if (!spec->continuing_subword_prefix) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    if (read_vocab(c, spec, err) != 0)
        goto out;
    const yt_node *added = yt_get(t, "added_tokens");
    if (added && yt_len(added) > 0) {
        if (yt_expect(added, YT_SEQUENCE, "added_tokens", err) != 0)
            goto out;
        spec->added = calloc(yt_len(added), sizeof *spec->added);
        if (!spec->added) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < yt_len(added); i++) {
            int64_t id;
            if (yt_as_int64(yt_at(added, i), "added token id", 0, spec->vocab_size - 1, &id, err) != 0)
                goto out;
            spec->added[i].id = (int32_t)id;
            spec->added[i].content = strdup(spec->vocab[id]);
            spec->n_added++;
            if (!spec->added[i].content) {
                sq_err_set(err, "out of memory");
                goto out;
            }
        }
    }
    rc = 0;
out:
    yt_free(doc);
    if (rc != 0)
        sq_wordpiece_spec_free(spec);
    return rc;
}

sq_tokenizer *sq_sqm_tokenizer_load(const sq_container *c, sq_err *err)
{
    sq_wordpiece_spec spec;
    if (sq_sqm_tokenizer_spec(c, &spec, err) != 0)
        return NULL;
    sq_tokenizer *t = sq_tokenizer_new(&spec, err);
    sq_wordpiece_spec_free(&spec);
    return t;
}

/* The hf-bpe tokenizer (SQM.md 10.5): the metadata keys, the pieces and
 * the merges into the HF kind's constructor (which checks them). */
static int load_hf_tokenizer(const sq_container *c, const sq_sqm_schema_ctx *ctx, int vocab,
                             const char *p, sq_bpe **tok, sq_err *err)
{
    /* sq_sqm_read_meta proved the keys and the special ids' range */
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, c->path, err);
    if (!doc)
        return -1;
    const yt_node *sp = yt_get(yt_get(yt_root(doc), "tokenizer"), "special_ids");
    const size_t nsp = yt_len(sp);
    const char **pieces = malloc((size_t)vocab * sizeof *pieces);
    int32_t *special = malloc((nsp + 1) * sizeof *special);
    int rc = -1;
    if (!pieces || !special) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nsp; i++)
        special[i] = (int32_t)strtol(yt_scalar(yt_at(sp, i)), NULL, 10);
    for (int i = 0; i < vocab; i++, p += strlen(p) + 1)
        pieces[i] = p;
    const sq_container_tensor *tm = sq_container_find(c, "tokenizer.merges");
    if (tm->dims[0] > SQ_BPE_MAX_MERGES) {
        sq_err_set_at(err, "tokenizer.merges", "%s: tensor \"tokenizer.merges\" has more than %d "
                      "rows", c->path, SQ_BPE_MAX_MERGES);
        goto out;
    }
    sq_bpe_hf h = {pieces, vocab, tm->data, (int32_t)tm->dims[0], ctx->hf_add_prefix,
                   ctx->hf_split, ctx->hf_byte_fallback, ctx->hf_fuse_unk, ctx->hf_unk,
                   ctx->dec.bos, ctx->dec.eos, special, (int32_t)nsp};
    char what[600];
    snprintf(what, sizeof what, "%s (tokenizer.vocab, tokenizer.merges)", c->path);
    rc = (*tok = sq_bpe_from_hf(&h, what, err)) ? 0 : -1;
out:
    free(pieces);
    free(special);
    yt_free(doc);
    return rc;
}

/* The llama2.c tokenizer file's bytes from tokenizer.vocab and
 * tokenizer.scores, for the tokenizer's own reader (which checks them); or
 * the hf-bpe tokenizer. */
static int load_bpe(const sq_container *c, const sq_sqm_schema_ctx *ctx, int vocab,
                    sq_bpe **tok, sq_err *err)
{
    const sq_container_tensor *tv = sq_container_find(c, "tokenizer.vocab");
    const char *p = tv->data, *end = p + tv->size;
    if (tv->size == 0 || end[-1] != '\0')
        return sq_err_set_at(err, "tokenizer.vocab", "%s: tensor \"tokenizer.vocab\" does not end "
                             "with a NUL byte", c->path);
    size_t bytes = 4, maxlen = 1;
    int n = 0;
    for (const char *q = p; q < end; q += strlen(q) + 1, n++) {
        size_t len = strlen(q);
        bytes += 8 + len;
        if (len > maxlen)
            maxlen = len;
    }
    if (n != vocab)
        return sq_err_set_at(err, "tokenizer.vocab", "%s: tensor \"tokenizer.vocab\" holds %d "
                             "pieces, config.vocab_size is %d", c->path, n, vocab);
    if (ctx->hf_bpe)
        return load_hf_tokenizer(c, ctx, vocab, p, tok, err);
    const double *sc = sq_container_find(c, "tokenizer.scores")->data;
    /* the llama2.c tokenizer holds f32 scores: a finite f64 beyond f32's
     * range would become infinite */
    for (int i = 0; i < n; i++)
        if (!isfinite((float)sc[i]))
            return sq_err_set_at(err, "tokenizer.scores", "%s: tensor \"tokenizer.scores\": "
                                 "token %d's score %g is not a finite f32", c->path, i, sc[i]);
    uint8_t *buf = malloc(bytes), *o = buf;
    if (!buf)
        return sq_err_set(err, "out of memory");
    int32_t ml = (int32_t)maxlen;
    memcpy(o, &ml, 4), o += 4;
    const char *q = p;
    for (int i = 0; i < n; i++) {
        float s = (float)sc[i];
        int32_t len = (int32_t)strlen(q);
        memcpy(o, &s, 4), o += 4;
        memcpy(o, &len, 4), o += 4;
        memcpy(o, q, (size_t)len), o += len;
        q += len + 1;
    }
    char what[600];
    snprintf(what, sizeof what, "%s (tokenizer.vocab)", c->path);
    *tok = sq_bpe_from_memory(buf, bytes, what, err);
    free(buf);
    return *tok ? 0 : -1;
}

/* What a causal LM's text starts with: tokenizer.single_prefix when the
 * file has it (the tokenizer.json post-processor's: none for Qwen3), else
 * config.bos_token_id (files written before the key, SQM.md 10.5). */
static int32_t bytelevel_bos(const sq_sqm_schema_ctx *ctx)
{
    if (!ctx->dec_has_wrap)
        return ctx->dec.bos;
    return ctx->dec_wrap.n_prefix == 1 ? ctx->dec_wrap.prefix[0] : -1;
}

/* The hf-bytelevel tokenizer (SQM.md 10.5): the pieces (exactly
 * tokenizer.vocab_size, non-empty), the merges and the added tokens into
 * the byte-level kind's constructor, which checks the rest (ids in range,
 * every byte's piece, each merge making a piece, no duplicates). The file is
 * hostile: counts are checked against the tensors' sizes first. */
static sq_tokenizer *load_bytelevel(const sq_container *c, const sq_sqm_schema_ctx *ctx,
                                    sq_err *err)
{
    const int32_t n = (int32_t)ctx->tok_vocab_size;
    const sq_container_tensor *tv = sq_container_find(c, "tokenizer.vocab");
    const sq_container_tensor *tm = sq_container_find(c, "tokenizer.merges");
    const sq_container_tensor *ta = sq_container_find(c, "tokenizer.added");
    const char *p = tv->data, *end = p + tv->size;
    if (tv->size == 0 || end[-1] != '\0') {
        sq_err_set_at(err, "tokenizer.vocab", "%s: tensor \"tokenizer.vocab\" does not end with a "
                      "NUL byte", c->path);
        return NULL;
    }
    if (tm->dims[0] > SQ_BPE_MAX_MERGES) {
        sq_err_set_at(err, "tokenizer.merges", "%s: tensor \"tokenizer.merges\" has more than %d "
                      "rows", c->path, SQ_BPE_MAX_MERGES);
        return NULL;
    }
    const int32_t na = ta ? (int32_t)(ta->dims[0] > (uint64_t)n ? -1 : (int64_t)ta->dims[0]) : 0;
    if (na < 0) {
        sq_err_set_at(err, "tokenizer.added", "%s: tensor \"tokenizer.added\" has more rows than "
                      "tokenizer.vocab_size %d", c->path, (int)n);
        return NULL;
    }
    const char **pieces = malloc((size_t)n * sizeof *pieces);
    sq_bl_added *added = malloc(((size_t)na + 1) * sizeof *added);
    sq_tokenizer *t = NULL;
    if (!pieces || !added) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    int32_t k = 0;
    for (const char *q = p; q < end; q += strlen(q) + 1, k++) {
        if (k >= n || *q == '\0') {
            sq_err_set_at(err, "tokenizer.vocab", "%s: tensor \"tokenizer.vocab\" holds %s (piece "
                          "%d)", c->path, k >= n ? "more pieces than tokenizer.vocab_size" :
                          "an empty piece", (int)k);
            goto out;
        }
        pieces[k] = q;
    }
    if (k != n) {
        sq_err_set_at(err, "tokenizer.vocab", "%s: tensor \"tokenizer.vocab\" holds %d pieces, "
                      "tokenizer.vocab_size is %d", c->path, (int)k, (int)n);
        goto out;
    }
    const int32_t *a = ta ? ta->data : NULL;
    for (int32_t i = 0; i < na; i++) {
        const int32_t id = a[3 * i], nz = a[3 * i + 1], sp = a[3 * i + 2];
        if (id < 0 || id >= n || (nz != 0 && nz != 1) || (sp != 0 && sp != 1)) {
            sq_err_set_at(err, "tokenizer.added", "%s: tensor \"tokenizer.added\" row %d is (%d, "
                          "%d, %d): not (an id below %d, 0 or 1, 0 or 1)", c->path, (int)i,
                          (int)id, (int)nz, (int)sp, (int)n);
            goto out;
        }
        added[i] = (sq_bl_added){id, nz == 1, sp == 1, false, false};
    }
    const sq_bl_spec spec = {pieces, n, tm->data, (int32_t)tm->dims[0], ctx->bl_nfc,
                             (sq_pretok_pattern)ctx->bl_pattern, ctx->bl_add_prefix_space,
                             ctx->bl_ignore_merges, added, na, bytelevel_bos(ctx), ctx->dec.eos};
    char what[600];
    snprintf(what, sizeof what, "%s (tokenizer.vocab, tokenizer.merges, tokenizer.added)", c->path);
    sq_bl *b = sq_bl_new(&spec, what, err);
    t = b ? sq_tokenizer_from_bl(b, err) : NULL;
out:
    free(pieces);
    free(added);
    return t;
}

sq_tokenizer *sq_sqm_tokenizer_load_bpe(const sq_container *c, const sq_sqm_schema_ctx *ctx,
                                        int vocab, sq_err *err)
{
    if (ctx->bytelevel)
        return load_bytelevel(c, ctx, err);
    sq_bpe *b = NULL;
    return load_bpe(c, ctx, vocab, &b, err) == 0 ? sq_tokenizer_from_bpe(b, err) : NULL;
}

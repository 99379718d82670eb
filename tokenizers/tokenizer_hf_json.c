/* A Hugging Face tokenizer.json of a Llama-style (SentencePiece-converted)
 * tokenizer into the HF kind of sq_bpe (tokenizer_bpe.h):
 *   model: type BPE, vocab {piece: id}, merges ("a b" strings or [a, b]
 *     arrays, rank = position), byte_fallback, fuse_unk, unk_token; dropout,
 *     a continuing_subword_prefix / end_of_word_suffix and ignore_merges
 *     are refused by name;
 *   added_tokens: their ids join the vocabulary (content equal to the
 *     vocabulary's piece where both name the id); special ones decode to
 *     nothing;
 *   normalizer: null, Prepend("▁"), Replace(" " -> "▁"), or a Sequence of
 *     those (the "legacy" Llama 2 file);
 *   pre_tokenizer: null or Metaspace (replacement "▁", prepend_scheme
 *     first / always / never or add_prefix_space, split);
 *   decoder / post_processor: not read (the decode is tokenizer_bpe.h's;
 *     BOS is added by the caller with the model's id), except that a
 *     ByteLevel decoder or pre-tokenizer (GPT-2 style BPE) is refused.
 * Spaces must become "▁" (by the normalizer or Metaspace). Hostile input:
 * the JSON reader's size bound, ids in [0, 2^22) each used once, pieces
 * 1..4096 bytes without NUL, at most 2^24 merges, every merge making a
 * piece; every message names the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "tokenizer_bpe.h"
#include "tokenizer_hf_json.h"

#define META "\xe2\x96\x81"


static int type_of(json_t *o, const char **type, const char *what, const char *name, sq_err *err)
{
    if (!json_is_object(o) || !json_is_string(json_object_get(o, "type")))
        return sq_err_set(err, "%s: %s must be an object with a \"type\"", name, what);
    *type = json_string_value(json_object_get(o, "type"));
    return 0;
}

static int one_normalizer(json_t *o, hfj *h, sq_err *err)
{
    const char *type = NULL;
    if (type_of(o, &type, "a normalizer", h->name, err) != 0)
        return -1;
    if (strcmp(type, "Prepend") == 0) {
        json_t *p = json_object_get(o, "prepend");
        if (!json_is_string(p) || strcmp(json_string_value(p), META) != 0)
            return sq_err_set(err, "%s: normalizer Prepend must prepend \"" META "\"", h->name);
        h->add_prefix = true;
        return 0;
    }
    if (strcmp(type, "Replace") == 0) {
        json_t *pat = json_object_get(o, "pattern"), *c = json_object_get(o, "content");
        json_t *ps = json_is_object(pat) ? json_object_get(pat, "String") : NULL;
        if (!json_is_string(ps) || strcmp(json_string_value(ps), " ") != 0 || !json_is_string(c) ||
            strcmp(json_string_value(c), META) != 0)
            return sq_err_set(err, "%s: normalizer Replace must replace \" \" by \"" META
                                   "\" (another replacement is not supported)",
                              h->name);
        h->replace_space = true;
        return 0;
    }
    return sq_err_set(err, "%s: normalizer %s is not supported (Prepend, Replace or a Sequence "
                           "of them, as Llama's SentencePiece conversion writes)",
                      h->name, type);
}

static int read_normalizer(json_t *o, hfj *h, sq_err *err)
{
    if (!o || json_is_null(o))
        return 0;
    const char *type = NULL;
    if (type_of(o, &type, "normalizer", h->name, err) != 0)
        return -1;
    if (strcmp(type, "Sequence") != 0)
        return one_normalizer(o, h, err);
    json_t *list = json_object_get(o, "normalizers");
    if (!json_is_array(list) || json_array_size(list) > 16)
        return sq_err_set(err, "%s: normalizer Sequence needs a list \"normalizers\" (16 at most)",
                          h->name);
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (one_normalizer(v, h, err) != 0) return -1;
    return 0;
}

static int read_pre_tokenizer(json_t *o, hfj *h, sq_err *err)
{
    if (!o || json_is_null(o))
        return 0;
    const char *type = NULL;
    if (type_of(o, &type, "pre_tokenizer", h->name, err) != 0)
        return -1;
    if (strcmp(type, "Metaspace") != 0)
        return sq_err_set(err, "%s: pre_tokenizer %s is not supported (null or Metaspace)",
                          h->name, type);
    const char *rep = NULL, *scheme = NULL;
    if (sq_json_str(o, "replacement", false, &rep, h->name, err) != 0 ||
        sq_json_str(o, "prepend_scheme", true, &scheme, h->name, err) != 0)
        return -1;
    if (strcmp(rep, META) != 0)
        return sq_err_set(err, "%s: Metaspace replacement \"%s\" is not \"" META "\"", h->name,
                          rep);
    if (h->add_prefix)
        return sq_err_set(err, "%s: both the normalizer and Metaspace prepend \"" META "\"",
                          h->name);
    bool add = true, split = true;
    if (sq_json_bool(o, "add_prefix_space", true, true, &add, h->name, err) != 0 ||
        sq_json_bool(o, "split", true, true, &split, h->name, err) != 0)
        return -1;
    if (scheme) {
        /* without special tokens parsed in the text, "first" and "always"
         * both mean: in front of the text */
        if (strcmp(scheme, "first") == 0 || strcmp(scheme, "always") == 0)
            add = true;
        else if (strcmp(scheme, "never") == 0)
            add = false;
        else
            return sq_err_set(err, "%s: Metaspace prepend_scheme \"%s\" is unknown (first, "
                                   "always, never)",
                              h->name, scheme);
    }
    h->add_prefix = add;
    h->split = split;
    h->replace_space = true;
    return 0;
}

/* Put piece p at id (checking it is free or holds the same piece). */
static int place(hfj *h, int64_t id, char *p, const char *what, sq_err *err)
{
    if (id < 0 || id >= h->n)
        return sq_err_set(err, "%s: %s id %lld is outside [0, %d)", h->name, what, (long long)id,
                          (int)h->n);
    size_t l = strlen(p);
    if (l < 1 || l > SQ_BPE_MAX_TOKEN_LEN)
        return sq_err_set(err, "%s: %s id %lld: a piece of %zu bytes (1 .. %d)", h->name, what,
                          (long long)id, l, SQ_BPE_MAX_TOKEN_LEN);
    if (h->pieces[id] && strcmp(h->pieces[id], p) != 0)
        return sq_err_set(err, "%s: id %lld is both \"%.64s\" and \"%.64s\"", h->name,
                          (long long)id, h->pieces[id], p);
    h->pieces[id] = p;
    return 0;
}

static int64_t id_of(json_t *v)
{
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

int sq_hf_read_vocab(json_t *model, json_t *added, hfj *h, sq_err *err)
{
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab) || json_object_size(vocab) == 0)
        return sq_err_set(err, "%s: model.vocab must be a non-empty object {piece: id}", h->name);
    if (added && !json_is_array(added))
        return sq_err_set(err, "%s: added_tokens must be a list", h->name);
    int64_t max = -1;
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v)
    {
        int64_t id = id_of(v);
        if (id < 0 || id >= (1 << 22))
            return sq_err_set(err, "%s: model.vocab \"%.64s\": id must be an integer in [0, %d)",
                              h->name, key, 1 << 22);
        if (id > max)
            max = id;
    }
    size_t i;
    json_array_foreach(added, i, v)
    {
        int64_t id = id_of(json_object_get(v, "id"));
        if (!json_is_object(v) || id < 0 || id >= (1 << 22) ||
            !json_is_string(json_object_get(v, "content")))
            return sq_err_set(err, "%s: added_tokens[%zu] needs an id in [0, %d) and a content",
                              h->name, i, 1 << 22);
        if (id > max)
            max = id;
    }
    h->n = (int32_t)(max + 1);
    h->pieces = calloc((size_t)h->n, sizeof *h->pieces);
    h->special = malloc((json_array_size(added) + 2) * sizeof *h->special);
    if (!h->pieces || !h->special)
        return sq_err_set(err, "%s: out of memory", h->name);
    json_object_foreach(vocab, key, v)
    {
        if (h->pieces[id_of(v)])
            return sq_err_set(err, "%s: model.vocab gives id %lld to \"%.64s\" and \"%.64s\"",
                              h->name, (long long)id_of(v), h->pieces[id_of(v)], key);
        if (place(h, id_of(v), (char *)key, "model.vocab", err) != 0)
            return -1;
    }
    json_array_foreach(added, i, v)
    {
        int64_t id = id_of(json_object_get(v, "id"));
        if (place(h, id, (char *)json_string_value(json_object_get(v, "content")),
                  "added_tokens", err) != 0)
            return -1;
        if (json_is_true(json_object_get(v, "special")))
            h->special[h->n_special++] = (int32_t)id;
    }
    for (int32_t k = 0; k < h->n; k++)
        if (!h->pieces[k])
            return sq_err_set(err, "%s: id %d has no piece (ids must be 0 .. %d without a gap)",
                              h->name, (int)k, (int)h->n - 1);
    return 0;
}

/* The id of piece s (a linear scan is too slow: a lookup table). */
typedef struct lut {
    int32_t *slot;
    size_t cap;
} lut;

static uint64_t fnv(const char *s)
{
    uint64_t x = 1469598103934665603ull;
    for (; *s; s++)
        x = (x ^ (uint8_t)*s) * 1099511628211ull;
    return x ^ (x >> 29);
}

static int32_t lut_find(const lut *l, const hfj *h, const char *s)
{
    for (size_t i = fnv(s) & (l->cap - 1);; i = (i + 1) & (l->cap - 1))
        if (l->slot[i] < 0 || strcmp(h->pieces[l->slot[i]], s) == 0)
            return l->slot[i];
}

int sq_hf_read_merges(json_t *model, hfj *h, sq_err *err)
{
    json_t *merges = json_object_get(model, "merges");
    if (!merges || json_is_null(merges))
        return 0;
    if (!json_is_array(merges) || json_array_size(merges) > SQ_BPE_MAX_MERGES)
        return sq_err_set(err, "%s: model.merges must be a list of at most %d merges", h->name,
                          SQ_BPE_MAX_MERGES);
    lut l = {NULL, 16};
    while (l.cap < (size_t)h->n * 2)
        l.cap *= 2;
    l.slot = malloc(l.cap * sizeof *l.slot);
    h->merges = malloc((json_array_size(merges) * 2 + 1) * sizeof *h->merges);
    if (!l.slot || !h->merges) {
        free(l.slot);
        return sq_err_set(err, "%s: out of memory", h->name);
    }
    memset(l.slot, 0xff, l.cap * sizeof *l.slot);
    for (int32_t k = 0; k < h->n; k++)
        if (lut_find(&l, h, h->pieces[k]) < 0) {
            size_t i = fnv(h->pieces[k]) & (l.cap - 1);
            while (l.slot[i] >= 0)
                i = (i + 1) & (l.cap - 1);
            l.slot[i] = k;
        }
    int rc = 0;
    size_t i;
    json_t *v;
    char pair[2 * SQ_BPE_MAX_TOKEN_LEN + 2];
    json_array_foreach(merges, i, v)
    {
        const char *a = NULL, *b = NULL;
        if (json_is_string(v) && json_string_length(v) < sizeof pair) {
            memcpy(pair, json_string_value(v), json_string_length(v) + 1);
            char *sp = strchr(pair, ' ');
            if (sp && !strchr(sp + 1, ' ')) {
                *sp = 0;
                a = pair, b = sp + 1;
            }
        } else if (json_is_array(v) && json_array_size(v) == 2 &&
                   json_is_string(json_array_get(v, 0)) && json_is_string(json_array_get(v, 1))) {
            a = json_string_value(json_array_get(v, 0));
            b = json_string_value(json_array_get(v, 1));
        }
        if (!a) {
            rc = sq_err_set(err, "%s: model.merges[%zu] is not \"left right\" nor [left, right]",
                            h->name, i);
            break;
        }
        int32_t ia = lut_find(&l, h, a), ib = lut_find(&l, h, b);
        if (ia < 0 || ib < 0) {
            rc = sq_err_set(err, "%s: model.merges[%zu]: \"%.64s\" is not in the vocabulary",
                            h->name, i, ia < 0 ? a : b);
            break;
        }
        h->merges[2 * h->n_merges] = ia;
        h->merges[2 * h->n_merges + 1] = ib;
        h->n_merges++;
    }
    free(l.slot);
    return rc;
}

int sq_hf_check_absent(json_t *o, const char *key, const char *why, const char *name,
                       sq_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v) || json_is_false(v) ||
        (json_is_string(v) && json_string_length(v) == 0))
        return 0;
    return sq_err_set(err, "%s: model.%s is set: %s", name, key, why);
}

sq_bpe *sq_bpe_from_hf_json_tree(json_t *root, const char *name, int32_t bos, int32_t eos,
                                 sq_err *err)
{
    hfj h = {.name = name};
    sq_bpe *t = NULL;
    json_t *model = json_object_get(root, "model");
    const char *type = NULL;
    bool byte_fallback = false, fuse_unk = false;
    const char *unk = NULL;
    if (type_of(model, &type, "model", name, err) != 0)
        goto out;
    if (strcmp(type, "BPE") != 0) {
        sq_err_set(err, "%s: model.type %s is not supported here (a Llama tokenizer is BPE)",
                   name, type);
        goto out;
    }
    if (sq_hf_check_absent(model, "dropout", "BPE dropout is not supported", name, err) ||
        sq_hf_check_absent(model, "continuing_subword_prefix", "not a SentencePiece-style BPE", name,
                     err) ||
        sq_hf_check_absent(model, "end_of_word_suffix", "not a SentencePiece-style BPE", name, err) ||
        sq_hf_check_absent(model, "ignore_merges", "ignore_merges is not supported", name, err) ||
        sq_json_bool(model, "byte_fallback", true, false, &byte_fallback, name, err) ||
        sq_json_bool(model, "fuse_unk", true, false, &fuse_unk, name, err))
        goto out;
    json_t *u = json_object_get(model, "unk_token");
    if (u && !json_is_null(u) && sq_json_str(model, "unk_token", false, &unk, name, err) != 0)
        goto out;
    json_t *dec = json_object_get(root, "decoder");
    const char *dt = NULL;
    if (json_is_object(dec) && type_of(dec, &dt, "decoder", name, err) == 0 &&
        strcmp(dt, "ByteLevel") == 0) {
        sq_err_set(err, "%s: a ByteLevel decoder (GPT-2 style byte-level BPE) is not supported",
                   name);
        goto out;
    }
    if (read_normalizer(json_object_get(root, "normalizer"), &h, err) != 0 ||
        read_pre_tokenizer(json_object_get(root, "pre_tokenizer"), &h, err) != 0)
        goto out;
    if (!h.replace_space) {
        sq_err_set(err, "%s: spaces do not become \"" META "\" (no Replace normalizer, no "
                        "Metaspace pre_tokenizer): not a SentencePiece-style tokenizer",
                   name);
        goto out;
    }
    if (sq_hf_read_vocab(model, json_object_get(root, "added_tokens"), &h, err) != 0 ||
        sq_hf_read_merges(model, &h, err) != 0)
        goto out;
    int32_t unk_id = -1;
    for (int32_t k = 0; unk && k < h.n; k++)
        if (strcmp(h.pieces[k], unk) == 0)
            unk_id = k;
    if (unk && unk_id < 0) {
        sq_err_set(err, "%s: model.unk_token \"%.64s\" is not in the vocabulary", name, unk);
        goto out;
    }
    if (bos >= 0 && bos < h.n)
        h.special[h.n_special++] = bos;
    if (eos >= 0 && eos < h.n)
        h.special[h.n_special++] = eos;
    sq_bpe_hf spec = {(const char *const *)h.pieces, h.n, h.merges, h.n_merges, h.add_prefix,
                      h.split, byte_fallback, fuse_unk, unk_id, bos, eos, h.special,
                      h.n_special};
    t = sq_bpe_from_hf(&spec, name, err);
out:
    free(h.pieces);
    free(h.merges);
    free(h.special);
    return t;
}

sq_bpe *sq_bpe_parse_hf_json(const char *buf, size_t len, const char *name, int32_t bos,
                             int32_t eos, sq_err *err)
{
    json_t *root = sq_json_parse_object(buf, len, name, err);
    if (!root)
        return NULL;
    sq_bpe *t = sq_bpe_from_hf_json_tree(root, name, bos, eos, err);
    json_decref(root);
    return t;
}

sq_bpe *sq_bpe_load_hf_json(const char *path, int32_t bos, int32_t eos, sq_err *err)
{
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return NULL;
    sq_bpe *t = sq_bpe_from_hf_json_tree(root, path, bos, eos, err);
    json_decref(root);
    return t;
}

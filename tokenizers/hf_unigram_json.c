/* A Hugging Face tokenizer.json of model.type Unigram (XLM-RoBERTa, e5,
 * bge-m3) into a spec of type SQ_TOK_HF_UNIGRAM (hf_tokenizer.h). Every
 * setting is read by name; what the kind does not implement is refused by
 * name, never ignored. */
#include "hf_tokenizer.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "precompiled_norm.h"
#include "tokenizer_hf_unigram.h"

/* Strict standard base64 (RFC 4648 section 4, padded), as the Rust crate
 * decodes precompiled_charsmap. */
static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static int b64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (n % 4 != 0)
        return -1;
    uint8_t *o = malloc(n / 4 * 3 + 1);
    if (!o)
        return -2;
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad || (v[k] = b64_value(c)) < 0)
                goto bad;
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        /* non-canonical: bits under the padding must be zero */
        if ((pad == 1 && (x & 0xFF)) || (pad == 2 && (x & 0xFFFF)))
            goto bad;
        o[w++] = (uint8_t)(x >> 16);
        if (pad < 2)
            o[w++] = (uint8_t)(x >> 8);
        if (pad < 1)
            o[w++] = (uint8_t)x;
    }
    *out = o;
    *out_len = w;
    return 0;
bad:
    free(o);
    return -1;
}

static const char *type_of(const json_t *o)
{
    return json_is_object(o) ? json_string_value(json_object_get(o, "type")) : NULL;
}

static int read_model(const json_t *root, sq_wordpiece_spec *spec, const char *path, sq_err *err)
{
    json_t *model = json_object_get(root, "model");
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_array(vocab))
        return sq_err_set(err, "%s: model.vocab must be an array of [piece, score]", path);
    size_t n = json_array_size(vocab);
    if (n == 0 || n > SQ_HFU_MAX_VOCAB)
        return sq_err_set(err, "%s: model.vocab has %zu pieces (1 .. %d)", path, n,
                          SQ_HFU_MAX_VOCAB);
    spec->vocab = calloc(n, sizeof *spec->vocab);
    spec->scores = malloc(n * sizeof *spec->scores);
    if (!spec->vocab || !spec->scores)
        return sq_err_set(err, "%s: out of memory", path);
    spec->vocab_size = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(vocab, i);
        json_t *p = json_array_get(e, 0), *s = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_string(p) ||
            !json_is_number(s))
            return sq_err_set(err, "%s: model.vocab[%zu] must be [piece string, score number]",
                              path, i);
        const char *piece = json_string_value(p);
        size_t len = json_string_length(p);
        if (len == 0 || len > SQ_HFU_MAX_PIECE_BYTES || strlen(piece) != len)
            return sq_err_set(err,
                              "%s: model.vocab[%zu] is empty, longer than %d bytes or holds "
                              "a NUL",
                              path, i, SQ_HFU_MAX_PIECE_BYTES);
        double v = json_number_value(s);
        if (!isfinite(v))
            return sq_err_set(err, "%s: model.vocab[%zu] score is not finite", path, i);
        spec->vocab[i] = strdup(piece);
        if (!spec->vocab[i])
            return sq_err_set(err, "%s: out of memory", path);
        spec->scores[i] = v;
    }
    json_t *unk = json_object_get(model, "unk_id");
    if (!json_is_integer(unk) || json_integer_value(unk) < 0 ||
        json_integer_value(unk) >= (json_int_t)n)
        return sq_err_set(err,
                          "%s: model.unk_id must be a vocab id (a Unigram model without one "
                          "is not supported)",
                          path);
    spec->unk_id = (int32_t)json_integer_value(unk);
    json_t *bf = json_object_get(model, "byte_fallback");
    if (bf && !json_is_null(bf) && !json_is_boolean(bf))
        return sq_err_set(err, "%s: model.byte_fallback must be true or false", path);
    if (json_is_true(bf))
        return sq_err_set(err, "%s: model.byte_fallback true is not supported (Unigram)", path);
    const char *key;
    json_t *val;
    json_object_foreach(model, key, val) {
        if (strcmp(key, "type") && strcmp(key, "vocab") && strcmp(key, "unk_id") &&
            strcmp(key, "byte_fallback"))
            return sq_err_set(err, "%s: model.%.64s is not supported (Unigram)", path, key);
    }
    return 0;
}

/* One normalizer step; *stage: 0 nothing yet, 1 after Precompiled, 2 after Replace. */
static int read_norm_step(const json_t *n, sq_wordpiece_spec *spec, int *stage, const char *path,
                          sq_err *err)
{
    const char *type = type_of(n);
    if (!type)
        return sq_err_set(err, "%s: normalizer step must be an object with a type", path);
    if (strcmp(type, "Precompiled") == 0) {
        if (*stage != 0)
            return sq_err_set(err, "%s: normalizer Precompiled must come first and once", path);
        *stage = 1;
        json_t *cm = json_object_get(n, "precompiled_charsmap");
        if (!cm || json_is_null(cm))
            return 0; /* the Rust crate: no charsmap, no change */
        if (!json_is_string(cm))
            return sq_err_set(err, "%s: normalizer Precompiled.precompiled_charsmap must be a "
                              "base64 string", path);
        int rc = b64_decode(json_string_value(cm), json_string_length(cm), &spec->charsmap,
                            &spec->charsmap_len);
        if (rc == -2)
            return sq_err_set(err, "%s: out of memory", path);
        if (rc != 0)
            return sq_err_set(err, "%s: normalizer Precompiled.precompiled_charsmap is not "
                              "valid base64", path);
        char what[600];
        snprintf(what, sizeof what, "%s: normalizer Precompiled", path);
        sq_pcnorm *p = sq_pcnorm_new(spec->charsmap, spec->charsmap_len, what, err);
        if (!p)
            return -1;
        sq_pcnorm_free(p);
        return 0;
    }
    if (strcmp(type, "Replace") == 0) {
        json_t *pat = json_object_get(n, "pattern");
        const char *re = json_string_value(json_object_get(pat, "Regex"));
        const char *content = json_string_value(json_object_get(n, "content"));
        if (!json_is_object(pat) || json_object_size(pat) != 1 || !re ||
            strcmp(re, " {2,}") != 0 || !content || strcmp(content, " ") != 0)
            return sq_err_set(err,
                              "%s: normalizer Replace is supported only as {\"Regex\": \" {2,}\"} "
                              "-> \" \" (XLM-RoBERTa's space collapse)",
                              path);
        if (*stage == 2)
            return sq_err_set(err, "%s: normalizer Replace given twice", path);
        *stage = 2;
        spec->collapse_spaces = true;
        return 0;
    }
    return sq_err_set(err,
                      "%s: normalizer type \"%.64s\" is not supported with a Unigram model "
                      "(Precompiled, Replace \" {2,}\", or a Sequence of them)",
                      path, type);
}

static int read_normalizer(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                           sq_err *err)
{
    json_t *n = json_object_get(root, "normalizer");
    int stage = 0;
    if (!n || json_is_null(n))
        return 0;
    if (type_of(n) && strcmp(type_of(n), "Sequence") == 0) {
        json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list))
            return sq_err_set(err, "%s: Sequence normalizer needs a \"normalizers\" array", path);
        size_t i;
        json_t *item;
        json_array_foreach(list, i, item) {
            if (read_norm_step(item, spec, &stage, path, err) != 0)
                return -1;
        }
        return 0;
    }
    return read_norm_step(n, spec, &stage, path, err);
}

/* Metaspace settings, as a pre_tokenizer (check_only false) or a decoder
 * (which must agree with the pre_tokenizer on the prepend scheme). */
static int read_metaspace(const json_t *m, const char *where, sq_prepend_scheme *scheme,
                          bool *split, const char *path, sq_err *err)
{
    const char *rep = json_string_value(json_object_get(m, "replacement"));
    if (!rep || strcmp(rep, "\xE2\x96\x81") != 0)
        return sq_err_set(err, "%s: %s Metaspace replacement must be \"\\u2581\"", path, where);
    json_t *aps = json_object_get(m, "add_prefix_space");
    json_t *ps = json_object_get(m, "prepend_scheme");
    json_t *sp = json_object_get(m, "split");
    if ((aps && !json_is_boolean(aps)) || (sp && !json_is_boolean(sp)) ||
        (ps && !json_is_string(ps)))
        return sq_err_set(err, "%s: %s Metaspace add_prefix_space / split must be booleans and "
                          "prepend_scheme a string", path, where);
    *split = !sp || json_is_true(sp);
    if (ps) {
        const char *s = json_string_value(ps);
        if (strcmp(s, "always") == 0)
            *scheme = SQ_PREPEND_ALWAYS;
        else if (strcmp(s, "first") == 0)
            *scheme = SQ_PREPEND_FIRST;
        else if (strcmp(s, "never") == 0)
            *scheme = SQ_PREPEND_NEVER;
        else
            return sq_err_set(err, "%s: %s Metaspace prepend_scheme \"%.32s\" is not always, "
                              "first or never", path, where, s);
        if (aps && json_is_true(aps) != (*scheme != SQ_PREPEND_NEVER))
            return sq_err_set(err, "%s: %s Metaspace add_prefix_space and prepend_scheme "
                              "disagree", path, where);
    } else {
        *scheme = aps && json_is_false(aps) ? SQ_PREPEND_NEVER : SQ_PREPEND_ALWAYS;
    }
    return 0;
}

static int read_pre_tokenizer(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                              sq_err *err)
{
    json_t *p = json_object_get(root, "pre_tokenizer");
    const char *type = type_of(p);
    if (type && strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list) || json_array_size(list) != 1)
            return sq_err_set(err, "%s: pre_tokenizer Sequence must hold Metaspace alone", path);
        p = json_array_get(list, 0);
        type = type_of(p);
    }
    if (!type || strcmp(type, "Metaspace") != 0)
        return sq_err_set(err, "%s: pre_tokenizer %.64s is not supported with a Unigram model "
                          "(only Metaspace)", path, type ? type : "(missing or not an object)");
    return read_metaspace(p, "pre_tokenizer", &spec->prepend_scheme, &spec->metaspace_split,
                          path, err);
}

static int read_decoder(const json_t *root, const sq_wordpiece_spec *spec, const char *path,
                        sq_err *err)
{
    json_t *d = json_object_get(root, "decoder");
    if (!d || json_is_null(d))
        return 0;
    const char *type = type_of(d);
    if (!type || strcmp(type, "Metaspace") != 0)
        return sq_err_set(err, "%s: decoder %.64s is not supported with a Unigram model "
                          "(Metaspace or null)", path, type ? type : "(not an object)");
    sq_prepend_scheme s;
    bool split;
    if (read_metaspace(d, "decoder", &s, &split, path, err) != 0)
        return -1;
    if ((s == SQ_PREPEND_NEVER) != (spec->prepend_scheme == SQ_PREPEND_NEVER))
        return sq_err_set(err, "%s: decoder Metaspace and pre_tokenizer Metaspace disagree on "
                          "the prefix space", path);
    return 0;
}

/* A special token's id from [content, id] (RobertaProcessing) or the
 * TemplateProcessing special_tokens map. */
static int post_id(const json_t *pair, const sq_wordpiece_spec *spec, int32_t *out)
{
    const char *s = json_string_value(json_array_get(pair, 0));
    json_t *id = json_array_get(pair, 1);
    if (!s || !json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) >= spec->vocab_size ||
        strcmp(spec->vocab[json_integer_value(id)], s) != 0)
        return -1;
    *out = (int32_t)json_integer_value(id);
    return 0;
}

static int template_id(const json_t *post, const json_t *piece, const sq_wordpiece_spec *spec,
                       int32_t *out)
{
    const char *name = json_string_value(json_object_get(json_object_get(piece, "SpecialToken"), "id"));
    json_t *entry = json_object_get(json_object_get(post, "special_tokens"), name ? name : "");
    json_t *ids = json_object_get(entry, "ids");
    if (!name || !json_is_array(ids) || json_array_size(ids) != 1)
        return -1;
    json_t *pair = json_pack("[sO]", name, json_array_get(ids, 0));
    int rc = pair ? post_id(pair, spec, out) : -1;
    json_decref(pair);
    return rc;
}

static int read_post_processor(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                               sq_err *err)
{
    json_t *post = json_object_get(root, "post_processor");
    const char *type = type_of(post);
    spec->pair_double_sep = true; /* XLM-RoBERTa: <s> A </s></s> B </s> */
    if (type && strcmp(type, "RobertaProcessing") == 0) {
        if (post_id(json_object_get(post, "cls"), spec, &spec->cls_id) != 0 ||
            post_id(json_object_get(post, "sep"), spec, &spec->sep_id) != 0)
            return sq_err_set(err, "%s: post_processor.cls / .sep must be [token, id] naming a "
                              "vocab entry", path);
        return 0;
    }
    if (type && strcmp(type, "TemplateProcessing") == 0) {
        json_t *single = json_object_get(post, "single");
        json_t *pair = json_object_get(post, "pair");
        int32_t c2, s2, s3, s4;
        if (!json_is_array(single) || json_array_size(single) != 3 ||
            !json_object_get(json_array_get(single, 1), "Sequence") ||
            template_id(post, json_array_get(single, 0), spec, &spec->cls_id) != 0 ||
            template_id(post, json_array_get(single, 2), spec, &spec->sep_id) != 0)
            return sq_err_set(err, "%s: post_processor.single must be [SpecialToken, Sequence A, "
                              "SpecialToken] (<s> $A </s>)", path);
        /* the pair must be <s> A </s> </s> B </s>: what the encoder's pairs are */
        if (!json_is_array(pair) || json_array_size(pair) != 6 ||
            template_id(post, json_array_get(pair, 0), spec, &c2) != 0 ||
            template_id(post, json_array_get(pair, 2), spec, &s2) != 0 ||
            template_id(post, json_array_get(pair, 3), spec, &s3) != 0 ||
            template_id(post, json_array_get(pair, 5), spec, &s4) != 0 || c2 != spec->cls_id ||
            s2 != spec->sep_id || s3 != spec->sep_id || s4 != spec->sep_id)
            return sq_err_set(err, "%s: post_processor.pair must be <s> $A </s> </s> $B </s>",
                              path);
        return 0;
    }
    return sq_err_set(err, "%s: post_processor %.64s is not supported with a Unigram model "
                      "(RobertaProcessing or TemplateProcessing)", path, type ? type : "(missing)");
}

static int read_added(const json_t *root, sq_wordpiece_spec *spec, const char *path, sq_err *err)
{
    json_t *list = json_object_get(root, "added_tokens");
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list) || json_array_size(list) > SQ_HFU_MAX_ADDED)
        return sq_err_set(err, "%s: added_tokens must be an array of at most %d", path,
                          SQ_HFU_MAX_ADDED);
    size_t n = json_array_size(list);
    spec->added = calloc(n ? n : 1, sizeof *spec->added);
    if (!spec->added)
        return sq_err_set(err, "%s: out of memory", path);
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) {
        int64_t id;
        const char *content;
        bool single_word, normalized, special, lstrip, rstrip;
        if (!json_is_object(t))
            return sq_err_set(err, "%s: added_tokens[%zu] must be an object", path, i);
        if (sq_json_int(t, "id", 0, INT32_MAX, false, 0, &id, path, err) ||
            sq_json_str(t, "content", false, &content, path, err) ||
            sq_json_bool(t, "single_word", true, false, &single_word, path, err) ||
            sq_json_bool(t, "normalized", true, false, &normalized, path, err) ||
            sq_json_bool(t, "special", true, false, &special, path, err) ||
            sq_json_bool(t, "lstrip", true, false, &lstrip, path, err) ||
            sq_json_bool(t, "rstrip", true, false, &rstrip, path, err))
            return sq_err_prefix(err, "added_tokens[%zu]", i);
        if (id >= spec->vocab_size || strcmp(spec->vocab[id], content) != 0)
            return sq_err_set(err, "%s: added_tokens[%zu] \"%.64s\" (id %lld) is not the vocab "
                              "entry with that id", path, i, content, (long long)id);
        if (single_word || normalized || !special)
            return sq_err_set(err, "%s: added_tokens[%zu] \"%.64s\": only special tokens matched "
                              "in the raw text are supported (single_word false, normalized "
                              "false, special true)", path, i, content);
        for (int32_t k = 0; k < spec->n_added; k++)
            if (spec->added[k].id == (int32_t)id)
                return sq_err_set(err, "%s: added_tokens[%zu]: id %lld appears twice", path, i,
                                  (long long)id);
        sq_added_token *a = &spec->added[spec->n_added];
        if (!(a->content = strdup(content)))
            return sq_err_set(err, "%s: out of memory", path);
        a->id = (int32_t)id;
        a->lstrip = lstrip;
        a->rstrip = rstrip;
        spec->n_added++;
    }
    return 0;
}

static int32_t find_piece(const sq_wordpiece_spec *spec, const char *tok)
{
    for (int32_t i = 0; i < spec->vocab_size; i++)
        if (strcmp(spec->vocab[i], tok) == 0)
            return i;
    return -1;
}

int sq_hf_unigram_spec_from_json(const json_t *root, const char *path, sq_wordpiece_spec *spec,
                                 sq_err *err)
{
    memset(spec, 0, sizeof *spec);
    spec->type = SQ_TOK_HF_UNIGRAM;
    spec->unk_id = spec->cls_id = spec->sep_id = spec->pad_id = spec->mask_id = -1;
    spec->metaspace_split = true;
    int rc = read_model(root, spec, path, err);
    if (rc == 0)
        rc = read_normalizer(root, spec, path, err);
    if (rc == 0)
        rc = read_pre_tokenizer(root, spec, path, err);
    if (rc == 0)
        rc = read_post_processor(root, spec, path, err);
    if (rc == 0)
        rc = read_decoder(root, spec, path, err);
    if (rc == 0)
        rc = read_added(root, spec, path, err);
    if (rc != 0) {
        sq_wordpiece_spec_free(spec);
        return -1;
    }
    spec->pad_id = find_piece(spec, "<pad>");
    spec->mask_id = find_piece(spec, "<mask>");
    return 0;
}

/* A Hugging Face tokenizer.json of a byte-level BPE (GPT-2, RoBERTa,
 * Qwen2 / Qwen3) into sq_bl (tokenizer_bytelevel.h):
 *   model: type BPE, vocab {piece: id}, merges ("a b" strings or [a, b]
 *     arrays, rank = position), ignore_merges; dropout, a
 *     continuing_subword_prefix or end_of_word_suffix are refused by name
 *     (unk_token, byte_fallback and fuse_unk never act: every byte has its
 *     piece);
 *   normalizer: null or NFC;
 *   pre_tokenizer: ByteLevel (use_regex: the GPT-2 pattern; add_prefix_space),
 *     or Sequence [Split (Regex: the GPT-2 or the Qwen2 pattern, behavior
 *     Isolated, invert false), ByteLevel (use_regex false, add_prefix_space
 *     false)]; any other pattern is refused with its text;
 *   decoder: ByteLevel (or null);
 *   added_tokens: matched as tokenizer_bytelevel.h says (normalized: after
 *     NFC, whose content must then be NFC already); single_word, lstrip and
 *     rstrip are refused when true; special ones decode to nothing;
 *   post_processor: not read (the caller adds BOS / EOS with the model's ids).
 * Hostile input: the JSON reader's size bound, ids in [0, 2^22) each used
 * once, no gap, pieces 1..4096 bytes without NUL, at most 2^24 merges each
 * making a piece and given once, all 256 byte pieces present; every message
 * names the file. */
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "pretok_regex.h"
#include "tokenizer_bytelevel.h"
#include "tokenizer_hf_json.h"
#include "unicode_nfkc.h"
#include "unicode_props.h"

typedef struct blj {
    const char *name;
    bool nfc, add_prefix_space;
    sq_pretok_pattern pattern;
} blj;

static const char *type_str(json_t *o)
{
    json_t *t = json_is_object(o) ? json_object_get(o, "type") : NULL;
    return json_is_string(t) ? json_string_value(t) : NULL;
}

static int read_normalizer(json_t *o, blj *b, sq_err *err)
{
    if (!o || json_is_null(o))
        return 0;
    const char *type = type_str(o);
    if (!type)
        return sq_err_set(err, "%s: normalizer must be an object with a \"type\"", b->name);
    if (strcmp(type, "NFC") != 0)
        return sq_err_set(err, "%s: normalizer %s is not supported for a byte-level BPE (null or "
                               "NFC)",
                          b->name, type);
    b->nfc = true;
    return 0;
}

/* A ByteLevel pre-tokenizer; in_sequence: after a Split (no regex of its own). */
static int read_bytelevel(json_t *o, blj *b, bool in_sequence, sq_err *err)
{
    bool use_regex = true, prefix = false, trim = true;
    if (sq_json_bool(o, "use_regex", true, true, &use_regex, b->name, err) != 0 ||
        sq_json_bool(o, "add_prefix_space", true, false, &prefix, b->name, err) != 0 ||
        sq_json_bool(o, "trim_offsets", true, true, &trim, b->name, err) != 0)
        return -1;
    if (in_sequence && (use_regex || prefix))
        return sq_err_set(err, "%s: a ByteLevel pre-tokenizer after a Split must have use_regex "
                               "and add_prefix_space false",
                          b->name);
    if (use_regex)
        b->pattern = SQ_PRETOK_GPT2;
    b->add_prefix_space = prefix;
    return 0;
}

static int read_split(json_t *o, blj *b, sq_err *err)
{
    json_t *pat = json_object_get(o, "pattern");
    json_t *re = json_is_object(pat) ? json_object_get(pat, "Regex") : NULL;
    const char *behavior = NULL;
    bool invert = false;
    if (!json_is_string(re))
        return sq_err_set(err, "%s: pre_tokenizer Split needs a pattern {\"Regex\": ...}",
                          b->name);
    if (sq_json_str(o, "behavior", false, &behavior, b->name, err) != 0 ||
        sq_json_bool(o, "invert", true, false, &invert, b->name, err) != 0)
        return -1;
    if (strcmp(behavior, "Isolated") != 0 || invert)
        return sq_err_set(err, "%s: pre_tokenizer Split behavior %s%s is not supported "
                               "(Isolated, invert false)",
                          b->name, behavior, invert ? " with invert" : "");
    b->pattern = sq_pretok_recognise(json_string_value(re), json_string_length(re));
    if (!b->pattern)
        return sq_err_set(err, "%s: pre_tokenizer Split pattern \"%.300s\" is not supported "
                               "(only the GPT-2 and the Qwen2 patterns are)",
                          b->name, json_string_value(re));
    return 0;
}

static int read_pre_tokenizer(json_t *o, blj *b, sq_err *err)
{
    const char *type = type_str(o);
    if (!type)
        return sq_err_set(err, "%s: a byte-level BPE needs a pre_tokenizer object with a "
                               "\"type\"",
                          b->name);
    if (strcmp(type, "ByteLevel") == 0)
        return read_bytelevel(o, b, false, err);
    json_t *list = json_object_get(o, "pretokenizers");
    if (strcmp(type, "Sequence") != 0 || !json_is_array(list) || json_array_size(list) != 2 ||
        !type_str(json_array_get(list, 0)) || !type_str(json_array_get(list, 1)) ||
        strcmp(type_str(json_array_get(list, 0)), "Split") != 0 ||
        strcmp(type_str(json_array_get(list, 1)), "ByteLevel") != 0)
        return sq_err_set(err, "%s: pre_tokenizer %s is not supported for a byte-level BPE "
                               "(ByteLevel, or a Sequence of Split and ByteLevel)",
                          b->name, type);
    return read_split(json_array_get(list, 0), b, err) != 0 ||
                   read_bytelevel(json_array_get(list, 1), b, true, err) != 0
               ? -1
               : 0;
}

/* The added tokens' flags (the ids and contents are read with the vocabulary). */
static int read_added(json_t *added, const blj *b, sq_bl_added *out, int32_t *n, sq_err *err)
{
    size_t i;
    json_t *v;
    *n = 0;
    json_array_foreach(added, i, v)
    {
        bool single = false, lstrip = false, rstrip = false, norm = true, special = false;
        if (sq_json_bool(v, "single_word", true, false, &single, b->name, err) != 0 ||
            sq_json_bool(v, "lstrip", true, false, &lstrip, b->name, err) != 0 ||
            sq_json_bool(v, "rstrip", true, false, &rstrip, b->name, err) != 0 ||
            sq_json_bool(v, "special", true, false, &special, b->name, err) != 0 ||
            sq_json_bool(v, "normalized", true, !special, &norm, b->name, err) != 0)
            return -1;
        const char *content = json_string_value(json_object_get(v, "content"));
        if (single || lstrip || rstrip)
            return sq_err_set(err, "%s: added_tokens[%zu] \"%.64s\": %s true is not supported",
                              b->name, i, content,
                              single ? "single_word" : lstrip ? "lstrip" : "rstrip");
        if (norm && b->nfc) { /* its NFC form is what matches: require it to be that form */
            size_t l = strlen(content), m = 0;
            sq_u32buf in = {0}, nf = {0};
            bool same = sq_u32buf_reserve(&in, l + 1) == 0;
            for (size_t k = 0; same && k < l;)
                k += sq_utf8_decode((const uint8_t *)content + k, l - k, &in.v[m++]);
            same = same && sq_nfc(in.v, m, &nf) == 0 && nf.n == m &&
                   memcmp(nf.v, in.v, m * sizeof *in.v) == 0;
            free(in.v);
            free(nf.v);
            if (!same)
                return sq_err_set(err, "%s: added_tokens[%zu] \"%.64s\" is normalized but not "
                                       "in NFC (not supported)",
                                  b->name, i, content);
        }
        out[(*n)++] = (sq_bl_added){(int32_t)json_integer_value(json_object_get(v, "id")), norm,
                                    special};
    }
    return 0;
}

bool sq_bl_json_is_bytelevel(json_t *root)
{
    const char *d = type_str(json_object_get(root, "decoder"));
    json_t *pre = json_object_get(root, "pre_tokenizer");
    const char *p = type_str(pre);
    if ((d && strcmp(d, "ByteLevel") == 0) || (p && strcmp(p, "ByteLevel") == 0))
        return true;
    json_t *list = json_is_object(pre) ? json_object_get(pre, "pretokenizers") : NULL;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        const char *t = type_str(v);
        if (t && strcmp(t, "ByteLevel") == 0)
            return true;
    }
    return false;
}

sq_bl *sq_bl_from_json_tree(json_t *root, const char *name, int32_t bos, int32_t eos,
                            sq_err *err)
{
    blj b = {.name = name};
    hfj h = {.name = name};
    sq_bl *t = NULL;
    sq_bl_added *added = NULL;
    json_t *model = json_object_get(root, "model");
    const char *type = type_str(model);
    bool ignore_merges = false;
    if (!type) {
        sq_err_set(err, "%s: model must be an object with a \"type\"", name);
        goto out;
    }
    if (strcmp(type, "BPE") != 0) {
        sq_err_set(err, "%s: model.type %s is not supported for a byte-level tokenizer (BPE)",
                   name, type);
        goto out;
    }
    if (sq_hf_check_absent(model, "dropout", "BPE dropout is not supported", name, err) ||
        sq_hf_check_absent(model, "continuing_subword_prefix", "not supported", name, err) ||
        sq_hf_check_absent(model, "end_of_word_suffix", "not supported", name, err) ||
        sq_json_bool(model, "ignore_merges", true, false, &ignore_merges, name, err))
        goto out;
    const char *dt = type_str(json_object_get(root, "decoder"));
    json_t *dec = json_object_get(root, "decoder");
    if (dec && !json_is_null(dec) && (!dt || strcmp(dt, "ByteLevel") != 0)) {
        sq_err_set(err, "%s: decoder %s is not supported for a byte-level BPE (ByteLevel)", name,
                   dt ? dt : "without a type");
        goto out;
    }
    if (read_normalizer(json_object_get(root, "normalizer"), &b, err) != 0 ||
        read_pre_tokenizer(json_object_get(root, "pre_tokenizer"), &b, err) != 0)
        goto out;
    json_t *at = json_object_get(root, "added_tokens");
    if (sq_hf_read_vocab(model, at, &h, err) != 0 || sq_hf_read_merges(model, &h, err) != 0)
        goto out;
    int32_t n_added = 0;
    if (!(added = malloc((json_array_size(at) + 1) * sizeof *added))) {
        sq_err_set(err, "%s: out of memory", name);
        goto out;
    }
    if (read_added(at, &b, added, &n_added, err) != 0)
        goto out;
    if (bos < -1 || bos >= h.n || eos < -1 || eos >= h.n) {
        sq_err_set(err, "%s: bos %d / eos %d outside the vocabulary of %d", name, (int)bos,
                   (int)eos, (int)h.n);
        goto out;
    }
    sq_bl_spec spec = {(const char *const *)h.pieces, h.n, h.merges, h.n_merges, b.nfc,
                       b.pattern, b.add_prefix_space, ignore_merges, added, n_added, bos, eos};
    t = sq_bl_new(&spec, name, err);
out:
    free(h.pieces);
    free(h.merges);
    free(h.special);
    free(added);
    return t;
}

sq_bl *sq_bl_parse_json(const char *buf, size_t len, const char *name, int32_t bos, int32_t eos,
                        sq_err *err)
{
    json_t *root = sq_json_parse_object(buf, len, name, err);
    if (!root)
        return NULL;
    sq_bl *t = sq_bl_from_json_tree(root, name, bos, eos, err);
    json_decref(root);
    return t;
}

sq_bl *sq_bl_load_json(const char *path, int32_t bos, int32_t eos, sq_err *err)
{
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return NULL;
    sq_bl *t = sq_bl_from_json_tree(root, path, bos, eos, err);
    json_decref(root);
    return t;
}

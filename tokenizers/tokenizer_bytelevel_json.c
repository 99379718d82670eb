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
 *     NFC, whose content must then be NFC already); single_word is refused
 *     when true, lstrip / rstrip too for a causal LM (its .sqm form has no
 *     place for them), an encoder's are kept; special ones decode to nothing;
 *   post_processor: a causal LM's is not read (the caller adds BOS / EOS
 *     with the model's ids); an encoder's (sq_hf_bytelevel_spec_from_json,
 *     ModernBERT) is TemplateProcessing [CLS] $A [SEP] (pair [CLS] $A [SEP]
 *     $B [SEP] with types 0 / 1, or RoBERTa's two separators), BertProcessing
 *     or RobertaProcessing; a template naming a token that special_tokens
 *     lacks, or an id outside the vocabulary, is refused.
 * Hostile input: the JSON reader's size bound, ids in [0, 2^22) each used
 * once, no gap, pieces 1..4096 bytes without NUL, at most 2^24 merges each
 * making a piece and given once, all 256 byte pieces present; every message
 * names the file. */
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "pretok_regex.h"
#include "hf_template.h"
#include "hf_tokenizer.h"
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
static int read_added(json_t *added, const blj *b, bool allow_strip, sq_bl_added *out,
                      int32_t *n, sq_err *err)
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
        /* a causal LM's .sqm form (SQM.md 10.5) has no strip flags: refused there */
        if (single || (!allow_strip && (lstrip || rstrip)))
            return sq_err_set(err, "%s: added_tokens[%zu] \"%.64s\": %s true is not supported%s",
                              b->name, i, content,
                              single ? "single_word" : lstrip ? "lstrip" : "rstrip",
                              single ? "" : " for a causal LM's tokenizer");
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
                                    special, lstrip, rstrip};
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

/* Everything but the post-processor into b, h (pieces borrowed from root),
 * *added (malloc'd), *ignore_merges; every message names name. */
static int read_tree(json_t *root, const char *name, bool encoder, blj *b, hfj *h,
                     sq_bl_added **added, int32_t *n_added, bool *ignore_merges, sq_err *err)
{
    json_t *model = json_object_get(root, "model");
    const char *type = type_str(model);
    *ignore_merges = false;
    *n_added = 0;
    if (!type)
        return sq_err_set(err, "%s: model must be an object with a \"type\"", name);
    if (strcmp(type, "BPE") != 0)
        return sq_err_set(err, "%s: model.type %s is not supported for a byte-level tokenizer "
                               "(BPE)",
                          name, type);
    if (sq_hf_check_absent(model, "dropout", "BPE dropout is not supported", name, err) ||
        sq_hf_check_absent(model, "continuing_subword_prefix", "not supported", name, err) ||
        sq_hf_check_absent(model, "end_of_word_suffix", "not supported", name, err) ||
        sq_json_bool(model, "ignore_merges", true, false, ignore_merges, name, err))
        return -1;
    const char *dt = type_str(json_object_get(root, "decoder"));
    json_t *dec = json_object_get(root, "decoder");
    if (dec && !json_is_null(dec) && (!dt || strcmp(dt, "ByteLevel") != 0))
        return sq_err_set(err, "%s: decoder %s is not supported for a byte-level BPE (ByteLevel)",
                          name, dt ? dt : "without a type");
    if (read_normalizer(json_object_get(root, "normalizer"), b, err) != 0 ||
        read_pre_tokenizer(json_object_get(root, "pre_tokenizer"), b, err) != 0)
        return -1;
    json_t *at = json_object_get(root, "added_tokens");
    if (!json_object_get(model, "merges"))
        return sq_err_set(err, "%s: model.merges is missing (a byte-level BPE needs its merges "
                               "list)",
                          name);
    if (sq_hf_read_vocab(model, at, h, err) != 0 || sq_hf_read_merges(model, h, err) != 0)
        return -1;
    if (!(*added = malloc((json_array_size(at) + 1) * sizeof **added)))
        return sq_err_set(err, "%s: out of memory", name);
    return read_added(at, b, encoder, *added, n_added, err);
}

sq_bl *sq_bl_from_json_tree(json_t *root, const char *name, int32_t bos, int32_t eos,
                            sq_err *err)
{
    blj b = {.name = name};
    hfj h = {.name = name};
    sq_bl *t = NULL;
    sq_bl_added *added = NULL;
    int32_t n_added = 0;
    bool ignore_merges = false;
    if (read_tree(root, name, false, &b, &h, &added, &n_added, &ignore_merges, err) != 0)
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

/* ---- an encoder's tokenizer.json (hf_tokenizer.h, SQ_TOK_HF_BYTELEVEL) ---- */

/* Sequence id ("A" / "B") of a template piece, 0 when it is not a Sequence. */
static char template_seq(json_t *piece, int32_t *type_id)
{
    json_t *sq = json_object_get(piece, "Sequence");
    const char *id = json_string_value(json_object_get(sq, "id"));
    json_t *tid = json_object_get(sq, "type_id");
    *type_id = json_is_integer(tid) ? (int32_t)json_integer_value(tid) : 0;
    return id && (strcmp(id, "A") == 0 || strcmp(id, "B") == 0) ? id[0] : 0;
}

/* post_processor: TemplateProcessing single [CLS] $A [SEP] with pair
 * [CLS] $A [SEP] $B [SEP] (types 0 0 0 1 1: BERT) or [CLS] $A [SEP] [SEP] $B
 * [SEP] (all type 0: RoBERTa), BertProcessing or RobertaProcessing. */
static int read_encoder_post(json_t *root, const char *path, sq_wordpiece_spec *spec, sq_err *err)
{
    json_t *post = json_object_get(root, "post_processor");
    const char *type = type_str(post);
    const int32_t n = spec->vocab_size;
    if (!type)
        return sq_err_set(err, "%s: an encoder's byte-level tokenizer needs a post_processor "
                               "(TemplateProcessing, BertProcessing or RobertaProcessing) for its "
                               "[CLS] / [SEP]",
                          path);
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        spec->pair_double_sep = type[0] == 'R';
        const char *keys[2] = {"cls", "sep"};
        int32_t *dst[2] = {&spec->cls_id, &spec->sep_id};
        for (int k = 0; k < 2; k++) {
            json_t *idv = json_array_get(json_object_get(post, keys[k]), 1);
            if (!json_is_integer(idv) || json_integer_value(idv) < 0 ||
                json_integer_value(idv) >= n)
                return sq_err_set(err, "%s: post_processor.%s must be [token, id] with an id "
                                       "below %d",
                                  path, keys[k], (int)n);
            *dst[k] = (int32_t)json_integer_value(idv);
        }
        if (type[0] == 'R') {
            bool trim = true, prefix = false;
            if (sq_json_bool(post, "add_prefix_space", true, false, &prefix, path, err) != 0 ||
                sq_json_bool(post, "trim_offsets", true, true, &trim, path, err) != 0)
                return -1;
        }
        return 0;
    }
    if (strcmp(type, "TemplateProcessing") != 0)
        return sq_err_set(err, "%s: post_processor %s is not supported for an encoder's "
                               "byte-level tokenizer (TemplateProcessing, BertProcessing, "
                               "RobertaProcessing)",
                          path, type);
    json_t *single = json_object_get(post, "single"), *pair = json_object_get(post, "pair");
    int32_t ty[6], cls, sep;
    if (!json_is_array(single) || json_array_size(single) != 3 ||
        template_seq(json_array_get(single, 1), &ty[1]) != 'A')
        return sq_err_set(err, "%s: post_processor.single must be [SpecialToken, Sequence A, "
                               "SpecialToken] ([CLS] $A [SEP])",
                          path);
    if ((cls = sq_hf_template_special(post, json_array_get(single, 0), n, &ty[0], path, "single", 0,
                                err)) < 0 ||
        (sep = sq_hf_template_special(post, json_array_get(single, 2), n, &ty[2], path, "single", 2,
                                err)) < 0)
        return -1;
    if (ty[0] || ty[1] || ty[2])
        return sq_err_set(err, "%s: post_processor.single must have type_id 0 throughout", path);
    spec->cls_id = cls;
    spec->sep_id = sep;
    if (!pair || json_is_null(pair))
        return 0;
    const size_t np = json_is_array(pair) ? json_array_size(pair) : 0;
    bool ok = np == 5 || np == 6;
    for (size_t k = 0; ok && k < np; k++) {
        json_t *pc = json_array_get(pair, k);
        const char want = k == 1 ? 'A' : k == np - 2 ? 'B' : 0;
        if (want) {
            ok = template_seq(pc, &ty[k]) == want;
        } else {
            int32_t id = sq_hf_template_special(post, pc, n, &ty[k], path, "pair", k, err);
            if (id < 0)
                return -1;
            ok = id == (k == 0 ? cls : sep);
        }
    }
    /* BERT: types 0 0 0 1 1; RoBERTa's two separators: all 0 */
    if (ok && np == 5)
        ok = !ty[0] && !ty[1] && !ty[2] && ty[3] == 1 && ty[4] == 1;
    if (ok && np == 6)
        ok = !ty[0] && !ty[1] && !ty[2] && !ty[3] && !ty[4] && !ty[5];
    if (!ok)
        return sq_err_set(err, "%s: post_processor.pair must be [CLS]:0 $A:0 [SEP]:0 $B:1 "
                               "[SEP]:1 or [CLS] $A [SEP] [SEP] $B [SEP] of type 0, with the "
                               "single template's tokens",
                          path);
    spec->pair_double_sep = np == 6;
    return 0;
}

int sq_hf_bytelevel_spec_from_json(json_t *root, const char *path, sq_wordpiece_spec *spec,
                                   sq_err *err)
{
    blj b = {.name = path};
    hfj h = {.name = path};
    sq_bl_added *added = NULL;
    int32_t n_added = 0;
    bool ignore_merges = false;
    int rc = -1;
    memset(spec, 0, sizeof *spec);
    spec->type = SQ_TOK_HF_BYTELEVEL;
    spec->unk_id = spec->cls_id = spec->sep_id = spec->pad_id = spec->mask_id = -1;
    if (read_tree(root, path, true, &b, &h, &added, &n_added, &ignore_merges, err) != 0)
        goto out;
    spec->vocab_size = h.n;
    if (read_encoder_post(root, path, spec, err) != 0)
        goto out;
    /* the whole check (byte pieces, merges, duplicates) now, naming the file */
    sq_bl_spec bs = {(const char *const *)h.pieces, h.n, h.merges, h.n_merges, b.nfc, b.pattern,
                     b.add_prefix_space, ignore_merges, added, n_added, spec->cls_id,
                     spec->sep_id};
    sq_bl *t = sq_bl_new(&bs, path, err);
    if (!t)
        goto out;
    sq_bl_free(t);
    spec->vocab = calloc((size_t)h.n, sizeof *spec->vocab);
    spec->added = calloc((size_t)n_added + 1, sizeof *spec->added);
    if (!spec->vocab || !spec->added)
        goto oom;
    for (int32_t i = 0; i < h.n; i++)
        if (!(spec->vocab[i] = strdup(h.pieces[i])))
            goto oom;
    for (int32_t i = 0; i < n_added; i++) {
        const sq_bl_added *a = &added[i];
        if (!(spec->added[i].content = strdup(h.pieces[a->id])))
            goto oom;
        spec->added[i].id = a->id;
        spec->added[i].lstrip = a->lstrip;
        spec->added[i].rstrip = a->rstrip;
        spec->added[i].normalized = a->normalized;
        spec->added[i].special = a->special;
        spec->n_added++;
    }
    spec->merges = h.merges;
    h.merges = NULL;
    spec->n_merges = h.n_merges;
    spec->bl_nfc = b.nfc;
    spec->bl_pattern = (int)b.pattern;
    spec->bl_add_prefix_space = b.add_prefix_space;
    spec->bl_ignore_merges = ignore_merges;
    /* HF's special tokens by their usual names (tokenizer_config.json may rename pad / mask) */
    static const char *const names[3] = {"[UNK]", "[PAD]", "[MASK]"};
    int32_t *dst[3] = {&spec->unk_id, &spec->pad_id, &spec->mask_id};
    for (int k = 0; k < 3; k++)
        for (int32_t i = 0; i < h.n; i++)
            if (strcmp(h.pieces[i], names[k]) == 0)
                *dst[k] = i;
    rc = 0;
    goto out;
oom:
    sq_err_set(err, "%s: out of memory", path);
out:
    free(h.pieces);
    free(h.merges);
    free(h.special);
    free(added);
    if (rc != 0)
        sq_wordpiece_spec_free(spec);
    return rc;
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

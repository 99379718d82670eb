#include "hf_tokenizer.h"

#include "use_vocab.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "tokenizer_hf_json.h"

#define VOCAB_TXT_MAX_FILE (256u << 20)

void sq_wordpiece_spec_free(sq_wordpiece_spec *spec)
{
    if (!spec)
        return;
    if (spec->vocab) {
        for (int32_t i = 0; i < spec->vocab_size; i++)
            free(spec->vocab[i]);
        free(spec->vocab);
    }
    if (spec->added) {
        for (int32_t i = 0; i < spec->n_added; i++)
            free(spec->added[i].content);
        free(spec->added);
    }
    free(spec->continuing_subword_prefix);
    free(spec->scores);
    free(spec->charsmap);
    free(spec->merges);
    memset(spec, 0, sizeof *spec);
}

int sq_unigram_spec_load_use_vocab(const char *path, sq_wordpiece_spec *spec, sq_err *err)
{
    memset(spec, 0, sizeof *spec);
    if (sq_use_vocab_load_f64(path, &spec->vocab, &spec->scores, &spec->vocab_size, err) != 0) {
        memset(spec, 0, sizeof *spec);
        return -1;
    }
    spec->type = SQ_TOK_UNIGRAM;
    spec->unk_id = 0;
    spec->cls_id = spec->sep_id = spec->pad_id = spec->mask_id = -1;
    return 0;
}

/* Settings BertTokenizer uses when nothing says otherwise. */
static int spec_init_defaults(sq_wordpiece_spec *spec, const char *path, sq_err *err)
{
    memset(spec, 0, sizeof *spec);
    spec->clean_text = true;
    spec->handle_chinese_chars = true;
    spec->lowercase = true;
    spec->strip_accents = -1;
    spec->max_input_chars_per_word = 100;
    spec->unk_id = spec->cls_id = spec->sep_id = spec->pad_id = spec->mask_id = -1;
    spec->continuing_subword_prefix = strdup("##");
    if (!spec->continuing_subword_prefix)
        return sq_err_set(err, "%s: out of memory", path);
    return 0;
}

static int32_t find_token(const sq_wordpiece_spec *spec, const char *tok)
{
    for (int32_t i = 0; i < spec->vocab_size; i++)
        if (strcmp(spec->vocab[i], tok) == 0)
            return i;
    return -1;
}

static int cmp_token_ptr(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* Refuse two ids with the same token string: one of them could never be produced. */
static int check_unique_tokens(const sq_wordpiece_spec *spec, const char *path, sq_err *err)
{
    /* sort pointers into the vocab array so ids can be recovered */
    char ***refs = malloc((size_t)spec->vocab_size * sizeof *refs);
    if (!refs)
        return sq_err_set(err, "%s: out of memory", path);
    for (int32_t i = 0; i < spec->vocab_size; i++)
        refs[i] = &spec->vocab[i];
    qsort(refs, (size_t)spec->vocab_size, sizeof *refs, cmp_token_ptr);
    int rc = 0;
    for (int32_t i = 1; i < spec->vocab_size; i++) {
        if (strcmp(*refs[i - 1], *refs[i]) == 0) {
            long a = (long)(refs[i - 1] - spec->vocab), b = (long)(refs[i] - spec->vocab);
            rc = sq_err_set(err, "%s: token \"%.64s\" appears twice (ids %ld and %ld)", path,
                            *refs[i], a < b ? a : b, a < b ? b : a);
            break;
        }
    }
    free(refs);
    return rc;
}

/* Token string limits shared by both vocab formats. */
static int check_token(const char *tok, size_t len, const char *path, const char *where, long at,
                       sq_err *err)
{
    if (len == 0)
        return sq_err_set(err, "%s: %s %ld: empty token", path, where, at);
    if (len > SQ_WORDPIECE_MAX_TOKEN_BYTES)
        return sq_err_set(err, "%s: %s %ld: token of %zu bytes exceeds the %d-byte limit", path,
                          where, at, len, SQ_WORDPIECE_MAX_TOKEN_BYTES);
    if (memchr(tok, '\0', len))
        return sq_err_set(err, "%s: %s %ld: token contains a NUL byte", path, where, at);
    return 0;
}

static int add_added_token(sq_wordpiece_spec *spec, int32_t id, const char *path, sq_err *err)
{
    for (int32_t i = 0; i < spec->n_added; i++)
        if (spec->added[i].id == id)
            return 0;
    sq_added_token *a = realloc(spec->added, ((size_t)spec->n_added + 1) * sizeof *a);
    if (!a)
        return sq_err_set(err, "%s: out of memory", path);
    spec->added = a;
    char *content = strdup(spec->vocab[id]);
    if (!content)
        return sq_err_set(err, "%s: out of memory", path);
    spec->added[spec->n_added++] = (sq_added_token){content, id, false, false, false, false};
    return 0;
}

/* ---- vocab.txt ---------------------------------------------------------- */

static int parse_vocab_lines(char *buf, size_t len, sq_wordpiece_spec *spec, const char *path,
                             sq_err *err)
{
    /* count lines: a terminator is \n, \r\n or a lone \r */
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n' || buf[i] == '\r') {
            if (buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n')
                i++;
            n++;
        }
    }
    if (len > 0 && buf[len - 1] != '\n' && buf[len - 1] != '\r')
        n++; /* last line without newline */
    if (n == 0)
        return sq_err_set(err, "%s: empty vocabulary", path);
    if (n > SQ_WORDPIECE_MAX_VOCAB)
        return sq_err_set(err, "%s: %zu tokens exceed the limit of %d", path, n,
                          SQ_WORDPIECE_MAX_VOCAB);
    spec->vocab = calloc(n, sizeof *spec->vocab);
    if (!spec->vocab)
        return sq_err_set(err, "%s: out of memory", path);
    size_t start = 0, id = 0;
    for (size_t i = 0; i <= len && id < n; i++) {
        if (i < len && buf[i] != '\n' && buf[i] != '\r')
            continue;
        size_t tl = i - start;
        if (check_token(buf + start, tl, path, "line", (long)id + 1, err) != 0)
            return -1;
        spec->vocab[id] = strndup(buf + start, tl);
        if (!spec->vocab[id])
            return sq_err_set(err, "%s: out of memory", path);
        spec->vocab_size = (int32_t)++id;
        if (i < len && buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n')
            i++;
        start = i + 1;
    }
    return 0;
}

/* Look up the special tokens by name; unk is required. */
static int resolve_specials(sq_wordpiece_spec *spec, const char *unk, const char *cls,
                            const char *sep, const char *pad, const char *mask, const char *path,
                            sq_err *err)
{
    spec->unk_id = find_token(spec, unk);
    if (spec->unk_id < 0)
        return sq_err_set(err, "%s: the unknown token \"%.64s\" is not in the vocabulary", path, unk);
    spec->cls_id = find_token(spec, cls);
    spec->sep_id = find_token(spec, sep);
    spec->pad_id = find_token(spec, pad);
    spec->mask_id = find_token(spec, mask);
    return 0;
}

/* BertTokenizer never splits its special tokens. */
static int specials_as_added(sq_wordpiece_spec *spec, const char *path, sq_err *err)
{
    for (int32_t i = 0; i < spec->n_added; i++)
        free(spec->added[i].content);
    spec->n_added = 0;
    int32_t ids[5] = {spec->unk_id, spec->cls_id, spec->sep_id, spec->pad_id, spec->mask_id};
    for (int k = 0; k < 5; k++)
        if (ids[k] >= 0 && add_added_token(spec, ids[k], path, err) != 0)
            return -1;
    return 0;
}

int sq_wordpiece_spec_load_vocab_txt(const char *path, sq_wordpiece_spec *spec, sq_err *err)
{
    if (spec_init_defaults(spec, path, err) != 0)
        return -1;
    char *buf = NULL;
    size_t len = 0;
    if (sq_read_regular_file(path, VOCAB_TXT_MAX_FILE, &buf, &len, err) != 0)
        goto fail;
    int rc = parse_vocab_lines(buf, len, spec, path, err);
    free(buf);
    if (rc != 0 || check_unique_tokens(spec, path, err) != 0 ||
        resolve_specials(spec, "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", path, err) != 0 ||
        specials_as_added(spec, path, err) != 0)
        goto fail;
    return 0;
fail:
    sq_wordpiece_spec_free(spec);
    return -1;
}

/* ---- tokenizer_config.json ---------------------------------------------- */

/* A special-token entry: "[CLS]" or {"content": "[CLS]", ...}. NULL if absent. */
static int config_token_name(const json_t *cfg, const char *key, const char *def, const char **out,
                             const char *path, sq_err *err)
{
    json_t *v = json_object_get(cfg, key);
    *out = def;
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return 0;
    }
    if (json_is_object(v)) {
        json_t *c = json_object_get(v, "content");
        if (json_is_string(c)) {
            *out = json_string_value(c);
            return 0;
        }
    }
    return sq_err_set(err, "%s: \"%s\" must be a string or an object with a string \"content\"",
                      path, key);
}

static int config_max_length(const json_t *cfg, int32_t *out)
{
    /* Unknown lengths are written as huge numbers (1e30, or transformers'
     * VERY_LARGE_INTEGER); anything outside (0, 2^24] is ignored. */
    json_t *v = json_object_get(cfg, "model_max_length");
    double x = json_is_number(v) ? json_number_value(v) : 0;
    if (x > 0 && x <= (1 << 24) && floor(x) == x)
        *out = (int32_t)x;
    return 0;
}

static int config_strip_accents(const json_t *cfg, int *out, const char *path, sq_err *err)
{
    json_t *v = json_object_get(cfg, "strip_accents");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return sq_err_set(err, "%s: \"strip_accents\" must be true, false or null", path);
    *out = json_is_true(v) ? 1 : 0;
    return 0;
}

int sq_wordpiece_spec_apply_config(const char *path, sq_wordpiece_spec *spec, sq_err *err)
{
    json_t *cfg = sq_json_load_object(path, err);
    if (!cfg)
        return -1;
    int rc = -1;
    bool basic = true;
    const char *unk, *cls, *sep, *pad, *mask;
    if (sq_json_bool(cfg, "do_lower_case", true, spec->lowercase, &spec->lowercase, path, err) ||
        sq_json_bool(cfg, "tokenize_chinese_chars", true, spec->handle_chinese_chars,
                     &spec->handle_chinese_chars, path, err) ||
        sq_json_bool(cfg, "do_basic_tokenize", true, true, &basic, path, err) ||
        config_strip_accents(cfg, &spec->strip_accents, path, err) ||
        config_max_length(cfg, &spec->model_max_length) ||
        config_token_name(cfg, "unk_token", "[UNK]", &unk, path, err) ||
        config_token_name(cfg, "cls_token", "[CLS]", &cls, path, err) ||
        config_token_name(cfg, "sep_token", "[SEP]", &sep, path, err) ||
        config_token_name(cfg, "pad_token", "[PAD]", &pad, path, err) ||
        config_token_name(cfg, "mask_token", "[MASK]", &mask, path, err))
        goto out;
    if (!basic) {
        sq_err_set(err, "%s: do_basic_tokenize false is not supported", path);
        goto out;
    }
    json_t *ns = json_object_get(cfg, "never_split");
    if (ns && !json_is_null(ns) && !(json_is_array(ns) && json_array_size(ns) == 0)) {
        sq_err_set(err, "%s: a non-empty never_split is not supported", path);
        goto out;
    }
    if (resolve_specials(spec, unk, cls, sep, pad, mask, path, err) != 0 ||
        specials_as_added(spec, path, err) != 0)
        goto out;
    rc = 0;
out:
    json_decref(cfg);
    return rc;
}

/* ---- tokenizer.json ------------------------------------------------------- */

static int load_wordpiece_model(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                                sq_err *err)
{
    json_t *model = json_object_get(root, "model");
    if (!json_is_object(model))
        return sq_err_set(err, "%s: \"model\" must be an object", path);
    const char *type;
    if (sq_json_str(model, "type", false, &type, path, err) != 0)
        return sq_err_prefix(err, "model");
    if (strcmp(type, "WordPiece") != 0)
        return sq_err_set(err, "%s: model.type \"%.64s\" is not supported (WordPiece or Unigram)",
                          path, type);
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab))
        return sq_err_set(err, "%s: model.vocab must be an object mapping tokens to ids", path);
    size_t n = json_object_size(vocab);
    if (n == 0)
        return sq_err_set(err, "%s: model.vocab is empty", path);
    if (n > SQ_WORDPIECE_MAX_VOCAB)
        return sq_err_set(err, "%s: model.vocab has %zu tokens, more than the limit of %d", path,
                          n, SQ_WORDPIECE_MAX_VOCAB);
    spec->vocab = calloc(n, sizeof *spec->vocab);
    if (!spec->vocab)
        return sq_err_set(err, "%s: out of memory", path);
    spec->vocab_size = (int32_t)n;
    const char *key;
    json_t *val;
    json_object_foreach(vocab, key, val) {
        if (!json_is_integer(val))
            return sq_err_set(err, "%s: model.vocab[\"%.64s\"] must be an integer id", path, key);
        json_int_t id = json_integer_value(val);
        if (id < 0 || id >= (json_int_t)n)
            return sq_err_set(err,
                              "%s: model.vocab[\"%.64s\"] = %lld is outside 0..%zu "
                              "(ids must be 0..N-1 without gaps)",
                              path, key, (long long)id, n - 1);
        if (spec->vocab[id])
            return sq_err_set(err, "%s: model.vocab id %lld is used by both \"%.64s\" and \"%.64s\"",
                              path, (long long)id, spec->vocab[id], key);
        if (check_token(key, strlen(key), path, "model.vocab id", (long)id, err) != 0)
            return -1;
        spec->vocab[id] = strdup(key);
        if (!spec->vocab[id])
            return sq_err_set(err, "%s: out of memory", path);
    }
    /* n distinct ids in 0..n-1 cover every id, so there are no gaps here */

    const char *unk, *prefix;
    int64_t maxc;
    if (sq_json_str(model, "unk_token", false, &unk, path, err) ||
        sq_json_str(model, "continuing_subword_prefix", true, &prefix, path, err) ||
        sq_json_int(model, "max_input_chars_per_word", 1, SQ_WORDPIECE_MAX_WORD_CHARS, true, 100,
                    &maxc, path, err))
        return sq_err_prefix(err, "model");
    spec->max_input_chars_per_word = (int32_t)maxc;
    if (prefix) {
        if (strlen(prefix) > SQ_WORDPIECE_MAX_PREFIX_BYTES)
            return sq_err_set(err, "%s: model.continuing_subword_prefix is longer than %d bytes",
                              path, SQ_WORDPIECE_MAX_PREFIX_BYTES);
        free(spec->continuing_subword_prefix);
        spec->continuing_subword_prefix = strdup(prefix);
        if (!spec->continuing_subword_prefix)
            return sq_err_set(err, "%s: out of memory", path);
    }
    spec->unk_id = find_token(spec, unk);
    if (spec->unk_id < 0)
        return sq_err_set(err, "%s: model.unk_token \"%.64s\" is not in model.vocab", path, unk);
    return 0;
}

/* One BertNormalizer / Lowercase step. saw_bert guards against two BertNormalizers. */
static int load_normalizer_step(const json_t *n, sq_wordpiece_spec *spec, bool *saw_bert,
                                int depth, const char *path, sq_err *err)
{
    if (!json_is_object(n))
        return sq_err_set(err, "%s: normalizer must be an object or null", path);
    const char *type;
    if (sq_json_str(n, "type", false, &type, path, err) != 0)
        return sq_err_prefix(err, "normalizer");
    if (strcmp(type, "Lowercase") == 0) {
        spec->lowercase = true;
        return 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list))
            return sq_err_set(err, "%s: Sequence normalizer needs a \"normalizers\" array", path);
        if (depth >= 4)
            return sq_err_set(err, "%s: normalizer Sequences nested too deeply", path);
        size_t i;
        json_t *item;
        json_array_foreach(list, i, item) {
            if (load_normalizer_step(item, spec, saw_bert, depth + 1, path, err) != 0)
                return -1;
        }
        return 0;
    }
    if (strcmp(type, "BertNormalizer") != 0)
        return sq_err_set(err,
                          "%s: normalizer type \"%.64s\" is not supported "
                          "(BertNormalizer, Lowercase or a Sequence of them)",
                          path, type);
    if (*saw_bert)
        return sq_err_set(err, "%s: more than one BertNormalizer is not supported", path);
    *saw_bert = true;
    bool lower;
    if (sq_json_bool(n, "clean_text", true, true, &spec->clean_text, path, err) ||
        sq_json_bool(n, "handle_chinese_chars", true, true, &spec->handle_chinese_chars, path,
                     err) ||
        sq_json_bool(n, "lowercase", true, true, &lower, path, err))
        return sq_err_prefix(err, "BertNormalizer");
    json_t *sa = json_object_get(n, "strip_accents");
    if (sa && !json_is_null(sa) && !json_is_boolean(sa))
        return sq_err_set(err, "%s: BertNormalizer.strip_accents must be true, false or null", path);
    /* null follows this normalizer's own lowercase flag */
    bool strip = (sa && json_is_boolean(sa)) ? json_is_true(sa) : lower;
    spec->lowercase = spec->lowercase || lower;
    spec->strip_accents = strip ? 1 : 0;
    return 0;
}

static int load_normalizer(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                           sq_err *err)
{
    json_t *n = json_object_get(root, "normalizer");
    /* no normalizer at all: the text goes to the pre-tokenizer unchanged */
    spec->clean_text = spec->handle_chinese_chars = spec->lowercase = false;
    spec->strip_accents = 0;
    if (!n || json_is_null(n))
        return 0;
    bool saw_bert = false;
    /* Lowercase and BertNormalizer's steps commute for our purposes: case
     * mapping neither creates nor removes controls, whitespace, CJK or Mn
     * marks (U+0130's extra U+0307 is one that accent stripping removes). */
    return load_normalizer_step(n, spec, &saw_bert, 0, path, err);
}

static int load_pre_tokenizer(const json_t *root, const char *path, sq_err *err)
{
    json_t *p = json_object_get(root, "pre_tokenizer");
    const char *type = NULL;
    if (json_is_object(p))
        type = json_string_value(json_object_get(p, "type"));
    if (!type || strcmp(type, "BertPreTokenizer") != 0)
        return sq_err_set(err, "%s: pre_tokenizer %s%.64s%s is not supported (only BertPreTokenizer)",
                          path, type ? "\"" : "", type ? type : "(missing or not an object)",
                          type ? "\"" : "");
    return 0;
}

/* The id of a TemplateProcessing SpecialToken piece, via the special_tokens map. */
static int template_special_id(const json_t *post, const json_t *piece, const sq_wordpiece_spec *spec,
                               int32_t *out)
{
    json_t *st = json_object_get(piece, "SpecialToken");
    const char *name = json_string_value(json_object_get(st, "id"));
    if (!name)
        return -1;
    json_t *entry = json_object_get(json_object_get(post, "special_tokens"), name);
    json_t *ids = json_object_get(entry, "ids");
    if (!json_is_array(ids) || json_array_size(ids) != 1 || !json_is_integer(json_array_get(ids, 0)))
        return -1;
    json_int_t id = json_integer_value(json_array_get(ids, 0));
    if (id < 0 || id >= spec->vocab_size)
        return -1;
    *out = (int32_t)id;
    return 0;
}

static int load_post_processor(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                               sq_err *err)
{
    json_t *post = json_object_get(root, "post_processor");
    spec->cls_id = find_token(spec, "[CLS]");
    spec->sep_id = find_token(spec, "[SEP]");
    if (!post || json_is_null(post))
        return 0;
    const char *type = json_is_object(post) ? json_string_value(json_object_get(post, "type")) : NULL;
    if (type && strcmp(type, "TemplateProcessing") == 0) {
        json_t *single = json_object_get(post, "single");
        if (!json_is_array(single) || json_array_size(single) != 3 ||
            !json_object_get(json_array_get(single, 1), "Sequence") ||
            template_special_id(post, json_array_get(single, 0), spec, &spec->cls_id) != 0 ||
            template_special_id(post, json_array_get(single, 2), spec, &spec->sep_id) != 0)
            return sq_err_set(err,
                              "%s: post_processor.single must be [SpecialToken, Sequence A, "
                              "SpecialToken] with one id each (BERT's [CLS] $A [SEP])",
                              path);
        return 0;
    }
    /* RobertaProcessing (MPNet, XLM-RoBERTa): <s> A </s> as BERT's single
     * sequence; a pair is <s> A </s></s> B </s> (pair_double_sep). */
    const bool roberta = type && strcmp(type, "RobertaProcessing") == 0;
    if (type && (strcmp(type, "BertProcessing") == 0 || roberta)) {
        spec->pair_double_sep = roberta;
        const char *keys[2] = {"cls", "sep"};
        int32_t *dst[2] = {&spec->cls_id, &spec->sep_id};
        for (int k = 0; k < 2; k++) {
            json_t *pair = json_object_get(post, keys[k]);
            json_t *idv = json_array_get(pair, 1);
            if (!json_is_integer(idv) || json_integer_value(idv) < 0 ||
                json_integer_value(idv) >= spec->vocab_size)
                return sq_err_set(err, "%s: post_processor.%s must be [token, id] with a vocab id",
                                  path, keys[k]);
            *dst[k] = (int32_t)json_integer_value(idv);
        }
        return 0;
    }
    return sq_err_set(err, "%s: post_processor type %.64s is not supported", path,
                      type ? type : "(missing)");
}

static int load_added_tokens(const json_t *root, sq_wordpiece_spec *spec, const char *path,
                             sq_err *err)
{
    json_t *list = json_object_get(root, "added_tokens");
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_array(list))
        return sq_err_set(err, "%s: added_tokens must be an array", path);
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) {
        int64_t id;
        const char *content;
        bool single_word, normalized;
        if (!json_is_object(t))
            return sq_err_set(err, "%s: added_tokens[%zu] must be an object", path, i);
        if (sq_json_int(t, "id", 0, INT32_MAX, false, 0, &id, path, err) ||
            sq_json_str(t, "content", false, &content, path, err) ||
            sq_json_bool(t, "single_word", true, false, &single_word, path, err) ||
            sq_json_bool(t, "normalized", true, false, &normalized, path, err))
            return sq_err_prefix(err, "added_tokens[%zu]", i);
        if (id >= spec->vocab_size || strcmp(spec->vocab[id], content) != 0)
            return sq_err_set(err,
                              "%s: added_tokens[%zu] \"%.64s\" (id %lld) is not the vocab entry "
                              "with that id; tokens outside the WordPiece vocab are not supported",
                              path, i, content, (long long)id);
        if (single_word)
            return sq_err_set(err, "%s: added_tokens[%zu] \"%.64s\": single_word is not supported",
                              path, i, content);
        /* normalized tokens are matched in the raw text too, as transformers.js
         * does; for BERT's special tokens normalized is false anyway */
        (void)normalized;
        if (add_added_token(spec, (int32_t)id, path, err) != 0)
            return -1;
    }
    return 0;
}

int sq_wordpiece_spec_load_tokenizer_json(const char *path, sq_wordpiece_spec *spec, sq_err *err)
{
    if (spec_init_defaults(spec, path, err) != 0)
        return -1;
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        goto fail;
    /* model.type Unigram (XLM-RoBERTa): its own reader (hf_unigram_json.c) */
    const char *mtype = json_string_value(json_object_get(json_object_get(root, "model"), "type"));
    if (mtype && strcmp(mtype, "Unigram") == 0) {
        sq_wordpiece_spec_free(spec);
        int urc = sq_hf_unigram_spec_from_json(root, path, spec, err);
        json_decref(root);
        return urc;
    }
    /* model.type BPE with a ByteLevel pre-tokenizer or decoder (ModernBERT) */
    if (mtype && strcmp(mtype, "BPE") == 0 && sq_bl_json_is_bytelevel(root)) {
        sq_wordpiece_spec_free(spec);
        int brc = sq_hf_bytelevel_spec_from_json(root, path, spec, err);
        json_decref(root);
        return brc;
    }
    int rc = load_wordpiece_model(root, spec, path, err);
    if (rc == 0)
        rc = load_normalizer(root, spec, path, err);
    if (rc == 0)
        rc = load_pre_tokenizer(root, path, err);
    if (rc == 0)
        rc = load_post_processor(root, spec, path, err);
    if (rc == 0)
        rc = load_added_tokens(root, spec, path, err);
    json_decref(root);
    if (rc != 0)
        goto fail;
    spec->pad_id = find_token(spec, "[PAD]");
    spec->mask_id = find_token(spec, "[MASK]");
    return 0;
fail:
    sq_wordpiece_spec_free(spec);
    return -1;
}

/* ---- checkpoint directory ------------------------------------------------ */

/* With tokenizer.json, tokenizer_config.json only contributes the length
 * limit and the pad/mask names (what transformers.js reads from it). */
static int apply_config_light(const char *path, sq_wordpiece_spec *spec, sq_err *err)
{
    json_t *cfg = sq_json_load_object(path, err);
    if (!cfg)
        return -1;
    const char *pad, *mask;
    int rc = config_token_name(cfg, "pad_token", NULL, &pad, path, err);
    if (rc == 0)
        rc = config_token_name(cfg, "mask_token", NULL, &mask, path, err);
    if (rc == 0) {
        config_max_length(cfg, &spec->model_max_length);
        if (pad)
            spec->pad_id = find_token(spec, pad);
        if (mask)
            spec->mask_id = find_token(spec, mask);
    }
    json_decref(cfg);
    return rc;
}

int sq_wordpiece_spec_load_dir(const char *dir, sq_wordpiece_spec *spec, sq_err *err)
{
    memset(spec, 0, sizeof *spec);
    char *tj = sq_path_join(dir, "tokenizer.json");
    char *vt = sq_path_join(dir, "vocab.txt");
    char *tc = sq_path_join(dir, "tokenizer_config.json");
    int rc = -1;
    if (!tj || !vt || !tc) {
        sq_err_set(err, "%s: out of memory", dir);
        goto out;
    }
    bool has_cfg = sq_file_exists(tc);
    if (sq_file_exists(tj)) {
        rc = sq_wordpiece_spec_load_tokenizer_json(tj, spec, err);
        if (rc == 0 && has_cfg)
            rc = apply_config_light(tc, spec, err);
    } else if (sq_file_exists(vt)) {
        rc = sq_wordpiece_spec_load_vocab_txt(vt, spec, err);
        if (rc == 0 && has_cfg)
            rc = sq_wordpiece_spec_apply_config(tc, spec, err);
    } else {
        /* A TensorFlow.js USE Lite export: SentencePiece vocab.json. */
        char *vj = sq_path_join(dir, "vocab.json");
        if (vj && sq_file_exists(vj))
            rc = sq_unigram_spec_load_use_vocab(vj, spec, err);
        else
            sq_err_set(err, "%s: no tokenizer.json, vocab.txt or vocab.json in this directory", dir);
        free(vj);
    }
    if (rc != 0)
        sq_wordpiece_spec_free(spec);
out:
    free(tj);
    free(vt);
    free(tc);
    return rc;
}

#include "hf_template.h"

#include <jansson.h>
#include <string.h>

#include "json_util.h"

static const char *type_of(const json_t *o)
{
    return json_is_object(o) ? json_string_value(json_object_get(o, "type")) : NULL;
}

int32_t sq_hf_template_special(const json_t *post, const json_t *piece, int32_t vocab,
                               int32_t *type_id, const char *path, const char *which, size_t k,
                               sq_err *err)
{
    json_t *st = json_object_get(piece, "SpecialToken");
    const char *name = json_string_value(json_object_get(st, "id"));
    json_t *tid = json_object_get(st, "type_id");
    if (!name || (tid && !json_is_integer(tid))) {
        sq_err_set(err, "%s: post_processor.%s[%zu] is not a SpecialToken {id, type_id}", path,
                   which, k);
        return -1;
    }
    *type_id = tid ? (int32_t)json_integer_value(tid) : 0;
    json_t *entry = json_object_get(json_object_get(post, "special_tokens"), name);
    json_t *ids = json_object_get(entry, "ids");
    if (!json_is_array(ids) || json_array_size(ids) != 1 ||
        !json_is_integer(json_array_get(ids, 0))) {
        sq_err_set(err, "%s: post_processor.%s names the token \"%.64s\", which "
                        "post_processor.special_tokens does not give exactly one id",
                   path, which, name);
        return -1;
    }
    json_int_t id = json_integer_value(json_array_get(ids, 0));
    if (id < 0 || id >= vocab) {
        sq_err_set(err, "%s: post_processor special token \"%.64s\" has id %lld, outside the "
                        "vocabulary of %d",
                   path, name, (long long)id, (int)vocab);
        return -1;
    }
    return (int32_t)id;
}

static int read_template(const json_t *post, int32_t vocab, sq_hf_single_template *t,
                         const char *path, sq_err *err)
{
    json_t *single = json_object_get(post, "single");
    if (!json_is_array(single))
        return sq_err_set(err, "%s: post_processor TemplateProcessing has no `single` list", path);
    bool seen_a = false;
    for (size_t i = 0; i < json_array_size(single); i++) {
        json_t *piece = json_array_get(single, i);
        json_t *seq = json_object_get(piece, "Sequence");
        if (seq) {
            const char *which = json_string_value(json_object_get(seq, "id"));
            if (seen_a || !which || strcmp(which, "A") != 0)
                return sq_err_set(err, "%s: post_processor.single must hold Sequence A once "
                                       "(found %s)",
                                  path, seen_a ? "it twice" : "another sequence");
            seen_a = true;
            continue;
        }
        if (!json_object_get(piece, "SpecialToken"))
            return sq_err_set(err, "%s: post_processor.single item %zu is neither a "
                                   "SpecialToken nor a Sequence",
                              path, i);
        int *n = seen_a ? &t->n_suffix : &t->n_prefix;
        int32_t *dst = seen_a ? t->suffix : t->prefix;
        if (*n == SQ_TEMPLATE_MAX)
            return sq_err_set(err, "%s: post_processor.single adds more than %d special tokens "
                                   "on one side of the text",
                              path, SQ_TEMPLATE_MAX);
        int32_t type_id;
        if ((dst[*n] = sq_hf_template_special(post, piece, vocab, &type_id, path, "single", i,
                                              err)) < 0)
            return -1;
        (*n)++;
    }
    if (!seen_a)
        return sq_err_set(err, "%s: post_processor.single has no Sequence A", path);
    return 0;
}

int sq_hf_single_template_load(const char *path, int32_t vocab, sq_hf_single_template *t,
                               sq_err *err)
{
    memset(t, 0, sizeof *t);
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return -1;
    json_t *post = json_object_get(root, "post_processor");
    int rc = 0;
    if (post && !json_is_null(post)) {
        const char *type = type_of(post);
        json_t *list = type && strcmp(type, "Sequence") == 0 ? json_object_get(post, "processors")
                                                             : NULL;
        size_t n = list ? json_array_size(list) : 1;
        if (type && strcmp(type, "Sequence") == 0 && !json_is_array(list))
            rc = sq_err_set(err, "%s: post_processor Sequence has no `processors` list", path);
        bool template_seen = false;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            const json_t *p = list ? json_array_get(list, i) : post;
            const char *pt = type_of(p);
            if (pt && strcmp(pt, "ByteLevel") == 0)
                continue; /* offsets only: no tokens */
            if (pt && strcmp(pt, "TemplateProcessing") == 0 && !template_seen) {
                template_seen = true;
                rc = read_template(p, vocab, t, path, err);
                continue;
            }
            rc = sq_err_set(err, "%s: post_processor %s%.64s%s is not supported here (null, "
                                 "ByteLevel or one TemplateProcessing)",
                            path, pt ? "type \"" : "", pt ? pt : "(no type)", pt ? "\"" : "");
        }
    }
    json_decref(root);
    return rc;
}

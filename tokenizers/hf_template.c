#include "hf_template.h"

#include <jansson.h>
#include <string.h>

#include "json_util.h"

static const char *type_of(const json_t *o)
{
    return json_is_object(o) ? json_string_value(json_object_get(o, "type")) : NULL;
}

/* The id a SpecialToken piece stands for, through special_tokens. */
static int special_id(const json_t *post, const json_t *piece, int32_t vocab, int32_t *out,
                      const char *path, sq_err *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(piece, "SpecialToken"), "id"));
    json_t *entry = name ? json_object_get(json_object_get(post, "special_tokens"), name) : NULL;
    json_t *ids = json_object_get(entry, "ids");
    json_t *id = json_array_get(ids, 0);
    if (!json_is_array(ids) || json_array_size(ids) != 1 || !json_is_integer(id) ||
        json_integer_value(id) < 0 || json_integer_value(id) >= vocab)
        return sq_err_set(err, "%s: post_processor: the special token %s%.64s%s needs a "
                               "special_tokens entry with exactly one id in [0, %d)",
                          path, name ? "\"" : "", name ? name : "(unnamed)", name ? "\"" : "",
                          (int)vocab);
    *out = (int32_t)json_integer_value(id);
    return 0;
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
        if (special_id(post, piece, vocab, &dst[*n], path, err) != 0)
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

/* Fuzz the YAML tree (formats/yaml_tree.h): parse, walk every node through
 * every accessor and typed conversion, and check that yt_quote output parses
 * back to the same scalar (its documented contract). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_tree.h"

static void check_quote(const char *s)
{
    char *q = yt_quote_alloc(s);
    if (!q)
        return; /* not valid UTF-8: refused by contract */
    size_t n = strlen(q);
    char *doc = malloc(n + 4);
    if (!doc)
        abort();
    memcpy(doc, "- ", 2);
    memcpy(doc + 2, q, n);
    doc[n + 2] = '\n';
    doc[n + 3] = 0;
    sq_err err;
    yt_doc *d = yt_parse_buffer(doc, n + 3, "quote", &err);
    const char *back = d ? yt_scalar(yt_at(yt_root(d), 0)) : NULL;
    if (!back || strcmp(back, s) != 0) {
        fprintf(stderr, "yt_quote round trip failed: %s\n", d ? "different scalar" : err.msg);
        abort();
    }
    yt_free(d);
    free(doc);
    free(q);
}

static void walk(const yt_node *n, int depth)
{
    sq_err err;
    if (depth > YT_MAX_DEPTH + 1)
        abort(); /* the parser promised to refuse deeper nesting */
    yt_line(n), yt_col(n), yt_file(n), yt_kind_name(yt_kind_of(n));
    switch (yt_kind_of(n)) {
    case YT_SCALAR: {
        double d;
        int64_t i;
        bool b;
        const char *s;
        yt_is_plain(n), yt_is_null(n);
        yt_as_double(n, "x", -1e308, 1e308, &d, &err);
        yt_as_int64(n, "x", INT64_MIN, INT64_MAX, &i, &err);
        yt_as_bool(n, "x", &b, &err);
        if (yt_as_string(n, "x", &s, &err) == 0 && strlen(s) < 4096)
            check_quote(s);
        break;
    }
    case YT_SEQUENCE:
        for (size_t i = 0; i < yt_len(n); i++)
            walk(yt_at(n, i), depth + 1);
        break;
    case YT_MAPPING: {
        static const char *const allowed[] = {"name", "version", NULL};
        double d;
        int64_t i;
        bool b;
        const char *s;
        for (size_t i = 0; i < yt_len(n); i++) {
            walk(yt_key_at(n, i), depth + 1);
            walk(yt_value_at(n, i), depth + 1);
        }
        yt_get(n, "name");
        yt_get_double(n, "alpha", 0, 1, &d, &err);
        yt_get_int64(n, "version", 0, 100, &i, &err);
        yt_get_bool(n, "enabled", &b, &err);
        yt_get_string(n, "type", &s, &err);
        yt_require(n, "version", &err);
        yt_check_keys(n, allowed, &err);
        yt_expect(n, YT_MAPPING, "x", &err);
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sq_err err;
    yt_doc *d = yt_parse_buffer((const char *)data, size, "fuzz.yaml", &err);
    if (d) {
        if (yt_root(d))
            walk(yt_root(d), 0);
        yt_free(d);
    }
    return 0;
}

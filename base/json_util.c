#include "json_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

json_t *sq_json_parse_object(const char *buf, size_t len, const char *what, sq_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(buf, len, SQ_JSON_FLAGS, &je);
    /* transformers writes unknown lengths as VERY_LARGE_INTEGER (1e30, as an
     * integer literal) in real tokenizer_config.json files, which jansson
     * cannot hold: read such a document with every number as a double
     * (sq_json_int takes integral doubles; out-of-range values stay out of
     * range and are refused or ignored as before). */
    if (!root && strstr(je.text, "too big integer"))
        root = json_loadb(buf, len, SQ_JSON_FLAGS | JSON_DECODE_INT_AS_REAL, &je);
    if (!root) {
        sq_err_set(err, "%s: invalid JSON at line %d, column %d: %s", what, je.line, je.column,
                   je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        sq_err_set(err, "%s: top-level JSON value is not an object", what);
        return NULL;
    }
    return root;
}

json_t *sq_json_load_object(const char *path, sq_err *err)
{
    char *buf;
    size_t len;
    if (sq_read_regular_file(path, SQ_JSON_MAX_FILE, &buf, &len, err) != 0)
        return NULL;
    json_t *root = sq_json_parse_object(buf, len, path, err);
    free(buf);
    return root;
}

int sq_json_int(const json_t *obj, const char *key, int64_t lo, int64_t hi, bool has_default,
                int64_t def, int64_t *out, const char *what, sq_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (has_default) {
            *out = def;
            return 0;
        }
        return sq_err_set(err, "%s: missing \"%s\"", what, key);
    }
    json_int_t x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
               fabs(json_real_value(v)) < 9.0e15) { /* integral, exact in a double */
        x = (json_int_t)json_real_value(v);
    } else {
        return sq_err_set(err, "%s: \"%s\" must be an integer", what, key);
    }
    if (x < lo || x > hi)
        return sq_err_set(err, "%s: \"%s\" = %lld is out of the supported range [%lld, %lld]", what,
                          key, (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

int sq_json_real(const json_t *obj, const char *key, bool has_default, double def, double *out,
                 const char *what, sq_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (has_default) {
            *out = def;
            return 0;
        }
        return sq_err_set(err, "%s: missing \"%s\"", what, key);
    }
    if (!json_is_number(v))
        return sq_err_set(err, "%s: \"%s\" must be a number", what, key);
    double x = json_number_value(v);
    if (!isfinite(x))
        return sq_err_set(err, "%s: \"%s\" is not finite", what, key);
    *out = x;
    return 0;
}

int sq_json_str(const json_t *obj, const char *key, bool optional, const char **out,
                const char *what, sq_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *out = NULL;
        if (optional)
            return 0;
        return sq_err_set(err, "%s: missing \"%s\"", what, key);
    }
    if (!json_is_string(v))
        return sq_err_set(err, "%s: \"%s\" must be a string", what, key);
    *out = json_string_value(v);
    return 0;
}

int sq_json_bool(const json_t *obj, const char *key, bool has_default, bool def, bool *out,
                 const char *what, sq_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (has_default) {
            *out = def;
            return 0;
        }
        return sq_err_set(err, "%s: missing \"%s\"", what, key);
    }
    if (!json_is_boolean(v))
        return sq_err_set(err, "%s: \"%s\" must be true or false", what, key);
    *out = json_is_true(v);
    return 0;
}

json_t *sq_json_get_path(json_t *obj, const char *path)
{
    const char *s = path;
    while (obj && *s) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        if (n == 0 || n >= 256)
            return NULL;
        obj = json_is_object(obj) ? json_object_getn(obj, s, n) : NULL;
        s += n + (dot ? 1 : 0);
    }
    return obj;
}

/* Small, strict accessors over jansson used by every JSON reader: each names
 * the file and key in its error message. */
#ifndef SQ_JSON_UTIL_H
#define SQ_JSON_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"

/* The one rule for every JSON squint reads (configs, request bodies, JSONL
 * lines, vocabularies, heads): a key given twice in one object is refused
 * (jansson: "duplicate object key"), never last-one-wins. */
#define SQ_JSON_FLAGS JSON_REJECT_DUPLICATES

/* Largest JSON file we parse (configs, tokenizer.json). */
#define SQ_JSON_MAX_FILE (64u << 20)

/* Parse a JSON file whose top level must be an object. */
json_t *sq_json_load_object(const char *path, sq_err *err);
/* Parse a JSON buffer (len bytes, no NUL needed); `what` names it in errors. */
json_t *sq_json_parse_object(const char *buf, size_t len, const char *what, sq_err *err);

/* Integer member in [lo, hi]. Missing -> error unless has_default, then *out = def. */
int sq_json_int(const json_t *obj, const char *key, int64_t lo, int64_t hi, bool has_default,
                int64_t def, int64_t *out, const char *what, sq_err *err);
/* Real (integer accepted) member, finite. */
int sq_json_real(const json_t *obj, const char *key, bool has_default, double def, double *out,
                 const char *what, sq_err *err);
/* String member; returns borrowed pointer or NULL when missing and optional. */
int sq_json_str(const json_t *obj, const char *key, bool optional, const char **out,
                const char *what, sq_err *err);
/* The member at a dotted path ("a.b.c") through nested objects, or NULL
 * when a step is missing, not an object, empty or 256 bytes or longer. */
json_t *sq_json_get_path(json_t *obj, const char *path);
/* Boolean member. */
int sq_json_bool(const json_t *obj, const char *key, bool has_default, bool def, bool *out,
                 const char *what, sq_err *err);

#endif

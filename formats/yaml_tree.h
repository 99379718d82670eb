/* A small read-only YAML tree built from libyaml's event parser, for recipes
 * and container metadata. Nodes are scalars, sequences or mappings and know
 * their 1-based line and column, so errors read "recipe.yaml:12:5: ...".
 *
 * Hostile input is refused: anchors and aliases (billion laughs), tags,
 * duplicate mapping keys, non-scalar keys, NUL characters in scalars, more
 * than one document, nesting deeper than YT_MAX_DEPTH, more than
 * YT_MAX_NODES nodes, inputs over YT_MAX_INPUT bytes. */
#ifndef SQ_YAML_TREE_H
#define SQ_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"
#include "strbuf.h"

#define YT_MAX_DEPTH 64
#define YT_MAX_NODES 4000000
#define YT_MAX_INPUT ((size_t)256 << 20) /* 256 MiB, the container metadata limit */

typedef enum yt_kind { YT_SCALAR, YT_SEQUENCE, YT_MAPPING } yt_kind;

typedef struct yt_node yt_node;
typedef struct yt_doc yt_doc;

/* Parse a buffer (UTF-8; `name` appears in messages) or a file. Returns NULL
 * with err set on failure. An empty stream parses to a document whose root
 * is NULL. */
yt_doc *yt_parse_buffer(const char *buf, size_t len, const char *name, sq_err *err);
yt_doc *yt_parse_file(const char *path, sq_err *err);
void yt_free(yt_doc *doc);

const yt_node *yt_root(const yt_doc *doc);

/* Node accessors. All accept NULL (returning NULL / 0). */
yt_kind yt_kind_of(const yt_node *n);
const char *yt_kind_name(yt_kind k); /* "scalar", "sequence", "mapping" */
int yt_line(const yt_node *n);
int yt_col(const yt_node *n);
const char *yt_file(const yt_node *n); /* the name given to the parser */
/* Scalar text (NUL-terminated; NULL when n is not a scalar). */
const char *yt_scalar(const yt_node *n);
/* True for a plain (unquoted) scalar: only plain scalars can be null,
 * numbers or booleans. */
bool yt_is_plain(const yt_node *n);
/* Plain "", "~", "null", "Null" or "NULL". */
bool yt_is_null(const yt_node *n);
/* Number of items (sequence) or key/value pairs (mapping); 0 for a scalar. */
size_t yt_len(const yt_node *n);
const yt_node *yt_at(const yt_node *seq, size_t i);
/* Mapping pairs in document order. */
const yt_node *yt_key_at(const yt_node *map, size_t i);
const yt_node *yt_value_at(const yt_node *map, size_t i);
/* Value of `key` in a mapping; NULL when absent or map is not a mapping. */
const yt_node *yt_get(const yt_node *map, const char *key);

/* Set err to "file:line:col: <message>" at node n; returns -1. */
int yt_error(const yt_node *n, sq_err *err, const char *fmt, ...) SQ_PRINTF(3, 4);

/* Typed conversions of a node; `what` names it in messages, e.g.
 * "recipe.yaml:12:5: 'alpha' must be a number in [0, 1]". Numbers and
 * booleans must be plain scalars. Integers are decimal; doubles are decimal
 * or exponent notation, finite. Booleans are true/True/TRUE/false/False/FALSE. */
int yt_as_double(const yt_node *n, const char *what, double lo, double hi, double *out,
                 sq_err *err);
int yt_as_int64(const yt_node *n, const char *what, int64_t lo, int64_t hi, int64_t *out,
                sq_err *err);
int yt_as_bool(const yt_node *n, const char *what, bool *out, sq_err *err);
int yt_as_string(const yt_node *n, const char *what, const char **out, sq_err *err);
int yt_expect(const yt_node *n, yt_kind kind, const char *what, sq_err *err);

/* Keyed getters on a mapping: 0 when found and valid, 1 when the key is
 * absent (out untouched, so callers can preset defaults), -1 on error. */
int yt_get_double(const yt_node *map, const char *key, double lo, double hi, double *out,
                  sq_err *err);
int yt_get_int64(const yt_node *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
                 sq_err *err);
int yt_get_bool(const yt_node *map, const char *key, bool *out, sq_err *err);
int yt_get_string(const yt_node *map, const char *key, const char **out, sq_err *err);
/* The value of a key that must be present (error at the mapping otherwise). */
const yt_node *yt_require(const yt_node *map, const char *key, sq_err *err);
/* Keyed getters for keys that must be present: 0 when found and valid, -1
 * with "missing required key" or the value's error otherwise. */
int yt_need_int64(const yt_node *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
                  sq_err *err);
int yt_need_double(const yt_node *map, const char *key, double lo, double hi, double *out,
                   sq_err *err);
int yt_need_bool(const yt_node *map, const char *key, bool *out, sq_err *err);
int yt_need_string(const yt_node *map, const char *key, const char **out, sq_err *err);
/* Refuse keys not in `allowed` (NULL-terminated): catches typos in recipes. */
int yt_check_keys(const yt_node *map, const char *const *allowed, sq_err *err);

/* Write s as a double-quoted YAML scalar that parses back to exactly s
 * (escapes quotes, backslashes, control and non-printable characters; other
 * UTF-8 is kept). Like snprintf: writes at most n bytes including the NUL and
 * returns the length needed (excluding the NUL). Returns SIZE_MAX (and
 * writes "" when n > 0) when s is not valid UTF-8. The result fits on one
 * line. As a mapping key it must stay under 1024 characters (YAML's limit on
 * implicit keys); write longer keys in the explicit "? key\n: value" form. */
size_t yt_quote(const char *s, char *buf, size_t n);
/* Same into a malloc'd string; NULL when s is not valid UTF-8 or on OOM. */
char *yt_quote_alloc(const char *s);

/* Append s as a double-quoted YAML scalar (yt_quote). */
void sq_sb_yaml_str(sq_strbuf *sb, const char *s);

#endif

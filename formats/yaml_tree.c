/* YAML tree over libyaml's event parser (the document loader would expand
 * aliases and has no depth or size bounds, so events are used instead). */
#include "yaml_tree.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "fileio.h"

/* Mappings with more pairs than this get a sorted index for lookups and the
 * duplicate check (a tokenizer vocabulary can have 250k keys). */
#define LINEAR_MAX 8

struct yt_node {
    yt_kind kind;
    int line, col;
    bool plain;
    const yt_doc *doc;
    char *text;       /* scalar */
    yt_node **items;  /* sequence: items; mapping: key0, value0, key1, ... */
    size_t n, cap;    /* entries used / allocated in items */
    uint32_t *sorted; /* mapping pairs ordered by key, when n / 2 > LINEAR_MAX */
};

struct yt_doc {
    char *name;
    yt_node *root;
    size_t n_nodes;
};

static void node_free(yt_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        node_free(n->items[i]); /* depth is bounded by YT_MAX_DEPTH */
    free(n->items);
    free(n->sorted);
    free(n->text);
    free(n);
}

void yt_free(yt_doc *doc)
{
    if (!doc)
        return;
    node_free(doc->root);
    free(doc->name);
    free(doc);
}

int yt_error(const yt_node *n, sq_err *err, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!n)
        return sq_err_set(err, "%s", msg);
    return sq_err_set(err, "%s:%d:%d: %s", n->doc->name, n->line, n->col, msg);
}

/* ---- building ---- */
typedef struct builder {
    yt_doc *doc;
    yt_node *stack[YT_MAX_DEPTH];
    int depth;
    int documents;
    sq_err *err;
} builder;

static int err_at(builder *b, yaml_mark_t m, const char *msg)
{
    return sq_err_set(b->err, "%s:%zu:%zu: %s", b->doc->name, m.line + 1, m.column + 1, msg);
}

static yt_node *node_new(builder *b, yt_kind kind, yaml_mark_t m)
{
    if (b->doc->n_nodes >= YT_MAX_NODES) {
        char msg[64];
        snprintf(msg, sizeof msg, "more than %d nodes", YT_MAX_NODES);
        err_at(b, m, msg);
        return NULL;
    }
    yt_node *n = calloc(1, sizeof *n);
    if (!n) {
        err_at(b, m, "out of memory");
        return NULL;
    }
    n->kind = kind;
    n->line = (int)m.line + 1;
    n->col = (int)m.column + 1;
    n->doc = b->doc;
    b->doc->n_nodes++;
    return n;
}

static int push_item(builder *b, yt_node *parent, yt_node *child)
{
    if (parent->n == parent->cap) {
        size_t ncap = parent->cap ? 2 * parent->cap : 4;
        yt_node **ni = realloc(parent->items, ncap * sizeof *ni);
        if (!ni)
            return yt_error(child, b->err, "out of memory");
        parent->items = ni;
        parent->cap = ncap;
    }
    parent->items[parent->n++] = child;
    return 0;
}

/* Attach a new node to the open collection (or make it the root). On
 * failure the node is freed. */
static int attach(builder *b, yt_node *n)
{
    if (b->depth == 0) {
        b->doc->root = n;
        return 0;
    }
    yt_node *top = b->stack[b->depth - 1];
    if (top->kind == YT_MAPPING && top->n % 2 == 0 && n->kind != YT_SCALAR) {
        yt_error(n, b->err, "mapping keys must be scalars");
        node_free(n);
        return -1;
    }
    if (push_item(b, top, n) != 0) {
        node_free(n);
        return -1;
    }
    return 0;
}

static const yt_node *key_node(const yt_node *map, size_t pair)
{
    return map->items[2 * pair];
}

static int cmp_pairs(const void *a, const void *b, void *map)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(key_node(map, x)->text, key_node(map, y)->text);
    return c ? c : (x > y) - (x < y);
}

static int dup_error(builder *b, const yt_node *first, const yt_node *again)
{
    return yt_error(again, b->err, "duplicate key '%s' (first at line %d, column %d)", again->text,
                    first->line, first->col);
}

static int finish_mapping(builder *b, yt_node *m)
{
    size_t pairs = m->n / 2;
    if (pairs <= LINEAR_MAX) {
        for (size_t i = 1; i < pairs; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(key_node(m, i)->text, key_node(m, j)->text) == 0)
                    return dup_error(b, key_node(m, j), key_node(m, i));
        return 0;
    }
    m->sorted = malloc(pairs * sizeof *m->sorted);
    if (!m->sorted)
        return yt_error(m, b->err, "out of memory");
    for (size_t i = 0; i < pairs; i++)
        m->sorted[i] = (uint32_t)i;
    qsort_r(m->sorted, pairs, sizeof *m->sorted, cmp_pairs, m);
    /* Equal keys are adjacent, earlier occurrence first. Report the earliest
     * repeated key in document order. */
    size_t worst = SIZE_MAX;
    for (size_t i = 1; i < pairs; i++) {
        const yt_node *a = key_node(m, m->sorted[i - 1]), *k = key_node(m, m->sorted[i]);
        if (strcmp(a->text, k->text) == 0 && (worst == SIZE_MAX || m->sorted[i] < m->sorted[worst]))
            worst = i;
    }
    if (worst != SIZE_MAX) {
        size_t f = worst;
        while (f > 0 && strcmp(key_node(m, m->sorted[f - 1])->text,
                               key_node(m, m->sorted[worst])->text) == 0)
            f--;
        return dup_error(b, key_node(m, m->sorted[f]), key_node(m, m->sorted[worst]));
    }
    return 0;
}

static int refuse_anchor_tag(builder *b, yaml_mark_t m, const yaml_char_t *anchor,
                             const yaml_char_t *tag)
{
    if (anchor)
        return err_at(b, m, "anchors and aliases are not supported");
    if (tag)
        return err_at(b, m, "tags are not supported");
    return 0;
}

static int on_event(builder *b, yaml_event_t *ev, bool *done)
{
    yaml_mark_t m = ev->start_mark;
    yt_node *n;
    switch (ev->type) {
    case YAML_STREAM_END_EVENT:
        *done = true;
        return 0;
    case YAML_DOCUMENT_START_EVENT:
        if (b->documents++ > 0)
            return err_at(b, m, "only one YAML document is allowed");
        return 0;
    case YAML_ALIAS_EVENT:
        return err_at(b, m, "anchors and aliases are not supported");
    case YAML_SCALAR_EVENT:
        if (refuse_anchor_tag(b, m, ev->data.scalar.anchor, ev->data.scalar.tag))
            return -1;
        if (memchr(ev->data.scalar.value, 0, ev->data.scalar.length))
            return err_at(b, m, "NUL characters are not supported");
        if (!(n = node_new(b, YT_SCALAR, m)))
            return -1;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->text = malloc(ev->data.scalar.length + 1);
        if (!n->text) {
            node_free(n);
            return err_at(b, m, "out of memory");
        }
        memcpy(n->text, ev->data.scalar.value, ev->data.scalar.length);
        n->text[ev->data.scalar.length] = '\0';
        return attach(b, n);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
        if (refuse_anchor_tag(b, m,
                              seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor,
                              seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag))
            return -1;
        if (b->depth >= YT_MAX_DEPTH) {
            char msg[64];
            snprintf(msg, sizeof msg, "nesting deeper than %d levels", YT_MAX_DEPTH);
            return err_at(b, m, msg);
        }
        if (!(n = node_new(b, seq ? YT_SEQUENCE : YT_MAPPING, m)) || attach(b, n) != 0)
            return -1;
        b->stack[b->depth++] = n;
        return 0;
    }
    case YAML_SEQUENCE_END_EVENT:
        b->depth--;
        return 0;
    case YAML_MAPPING_END_EVENT:
        n = b->stack[--b->depth];
        return finish_mapping(b, n);
    default: /* stream start, document end, no event */
        return 0;
    }
}

yt_doc *yt_parse_buffer(const char *buf, size_t len, const char *name, sq_err *err)
{
    if (len > YT_MAX_INPUT) {
        sq_err_set(err, "%s: %zu bytes of YAML (limit %zu)", name, len, YT_MAX_INPUT);
        return NULL;
    }
    builder b = {.err = err};
    b.doc = calloc(1, sizeof *b.doc);
    if (!b.doc || !(b.doc->name = strdup(name))) {
        free(b.doc);
        sq_err_set(err, "%s: out of memory", name);
        return NULL;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        yt_free(b.doc);
        sq_err_set(err, "%s: out of memory", name);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
    bool done = false;
    int rc = 0;
    while (!done && rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            yaml_mark_t m = parser.problem_mark;
            if (parser.context)
                sq_err_set(err, "%s:%zu:%zu: %s %s", name, m.line + 1, m.column + 1,
                           parser.problem ? parser.problem : "syntax error", parser.context);
            else
                sq_err_set(err, "%s:%zu:%zu: %s", name, m.line + 1, m.column + 1,
                           parser.problem ? parser.problem : "syntax error");
            rc = -1;
            break;
        }
        rc = on_event(&b, &ev, &done);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (rc != 0) {
        yt_free(b.doc);
        return NULL;
    }
    return b.doc;
}

yt_doc *yt_parse_file(const char *path, sq_err *err)
{
    char *buf;
    size_t len;
    if (sq_read_regular_file(path, YT_MAX_INPUT, &buf, &len, err) != 0)
        return NULL;
    yt_doc *d = yt_parse_buffer(buf, len, path, err);
    free(buf);
    return d;
}

/* ---- access ---- */
const yt_node *yt_root(const yt_doc *doc)
{
    return doc ? doc->root : NULL;
}

yt_kind yt_kind_of(const yt_node *n)
{
    return n ? n->kind : YT_SCALAR;
}

const char *yt_kind_name(yt_kind k)
{
    return k == YT_SCALAR ? "scalar" : k == YT_SEQUENCE ? "sequence" : "mapping";
}

int yt_line(const yt_node *n)
{
    return n ? n->line : 0;
}

int yt_col(const yt_node *n)
{
    return n ? n->col : 0;
}

const char *yt_file(const yt_node *n)
{
    return n ? n->doc->name : NULL;
}

const char *yt_scalar(const yt_node *n)
{
    return n && n->kind == YT_SCALAR ? n->text : NULL;
}

bool yt_is_plain(const yt_node *n)
{
    return n && n->kind == YT_SCALAR && n->plain;
}

bool yt_is_null(const yt_node *n)
{
    if (!yt_is_plain(n))
        return false;
    const char *s = n->text;
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

size_t yt_len(const yt_node *n)
{
    if (!n || n->kind == YT_SCALAR)
        return 0;
    return n->kind == YT_MAPPING ? n->n / 2 : n->n;
}

const yt_node *yt_at(const yt_node *seq, size_t i)
{
    return seq && seq->kind == YT_SEQUENCE && i < seq->n ? seq->items[i] : NULL;
}

const yt_node *yt_key_at(const yt_node *map, size_t i)
{
    return map && map->kind == YT_MAPPING && i < map->n / 2 ? map->items[2 * i] : NULL;
}

const yt_node *yt_value_at(const yt_node *map, size_t i)
{
    return map && map->kind == YT_MAPPING && i < map->n / 2 ? map->items[2 * i + 1] : NULL;
}

const yt_node *yt_get(const yt_node *map, const char *key)
{
    if (!map || map->kind != YT_MAPPING)
        return NULL;
    size_t pairs = map->n / 2;
    if (!map->sorted) {
        for (size_t i = 0; i < pairs; i++)
            if (strcmp(key_node(map, i)->text, key) == 0)
                return map->items[2 * i + 1];
        return NULL;
    }
    size_t lo = 0, hi = pairs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key_node(map, map->sorted[mid])->text, key);
        if (c == 0)
            return map->items[2 * map->sorted[mid] + 1];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- typed conversions ---- */

/* YAML 1.2 core schema float syntax, without .inf / .nan. */
static bool is_decimal_number(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t int_digits = strspn(s, "0123456789");
    s += int_digits;
    size_t frac_digits = 0;
    if (*s == '.') {
        s++;
        frac_digits = strspn(s, "0123456789");
        s += frac_digits;
    }
    if (int_digits == 0 && frac_digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        size_t exp_digits = strspn(s, "0123456789");
        if (exp_digits == 0)
            return false;
        s += exp_digits;
    }
    return *s == '\0';
}

int yt_as_double(const yt_node *n, const char *what, double lo, double hi, double *out, sq_err *err)
{
    double v = 0;
    bool ok = yt_is_plain(n) && is_decimal_number(n->text);
    if (ok) {
        /* strtod_l with the C locale: a program that set LC_NUMERIC to a
         * comma locale must still read "0.5". */
        locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        if (!c_loc)
            return yt_error(n, err, "out of memory");
        v = strtod_l(n->text, NULL, c_loc);
        freelocale(c_loc);
        ok = isfinite(v) && v >= lo && v <= hi;
    }
    if (!ok) {
        if (isinf(lo) && isinf(hi))
            return yt_error(n, err, "'%s' must be a finite number", what);
        return yt_error(n, err, "'%s' must be a number in [%g, %g]", what, lo, hi);
    }
    *out = v;
    return 0;
}

int yt_as_int64(const yt_node *n, const char *what, int64_t lo, int64_t hi, int64_t *out,
                sq_err *err)
{
    bool ok = yt_is_plain(n);
    long long v = 0;
    if (ok) {
        const char *s = n->text + (n->text[0] == '-' || n->text[0] == '+');
        ok = *s && strspn(s, "0123456789") == strlen(s);
        if (ok) {
            errno = 0;
            v = strtoll(n->text, NULL, 10);
            ok = errno == 0 && v >= lo && v <= hi;
        }
    }
    if (!ok)
        return yt_error(n, err, "'%s' must be an integer in [%lld, %lld]", what, (long long)lo,
                        (long long)hi);
    *out = v;
    return 0;
}

int yt_as_bool(const yt_node *n, const char *what, bool *out, sq_err *err)
{
    const char *s = yt_is_plain(n) ? n->text : "";
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        *out = true;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        *out = false;
    else
        return yt_error(n, err, "'%s' must be true or false", what);
    return 0;
}

int yt_as_string(const yt_node *n, const char *what, const char **out, sq_err *err)
{
    if (!n || n->kind != YT_SCALAR)
        return yt_error(n, err, "'%s' must be a string, not a %s", what,
                        yt_kind_name(yt_kind_of(n)));
    *out = n->text;
    return 0;
}

int yt_expect(const yt_node *n, yt_kind kind, const char *what, sq_err *err)
{
    if (!n)
        return sq_err_set(err, "'%s' is missing (empty document?)", what);
    if (n->kind != kind)
        return yt_error(n, err, "'%s' must be a %s, not a %s", what, yt_kind_name(kind),
                        yt_kind_name(n->kind));
    return 0;
}

int yt_get_double(const yt_node *map, const char *key, double lo, double hi, double *out,
                  sq_err *err)
{
    const yt_node *v = yt_get(map, key);
    return v ? yt_as_double(v, key, lo, hi, out, err) : 1;
}

int yt_get_int64(const yt_node *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
                 sq_err *err)
{
    const yt_node *v = yt_get(map, key);
    return v ? yt_as_int64(v, key, lo, hi, out, err) : 1;
}

int yt_get_bool(const yt_node *map, const char *key, bool *out, sq_err *err)
{
    const yt_node *v = yt_get(map, key);
    return v ? yt_as_bool(v, key, out, err) : 1;
}

int yt_get_string(const yt_node *map, const char *key, const char **out, sq_err *err)
{
    const yt_node *v = yt_get(map, key);
    return v ? yt_as_string(v, key, out, err) : 1;
}

const yt_node *yt_require(const yt_node *map, const char *key, sq_err *err)
{
    if (!map) {
        sq_err_set(err, "missing required key '%s' (empty document)", key);
        return NULL;
    }
    if (map->kind != YT_MAPPING) {
        yt_error(map, err, "expected a mapping with key '%s', found a %s", key,
                 yt_kind_name(map->kind));
        return NULL;
    }
    const yt_node *v = yt_get(map, key);
    if (!v)
        yt_error(map, err, "missing required key '%s'", key);
    return v;
}

int yt_need_int64(const yt_node *map, const char *key, int64_t lo, int64_t hi, int64_t *out,
                  sq_err *err)
{
    const yt_node *v = yt_require(map, key, err);
    return v ? yt_as_int64(v, key, lo, hi, out, err) : -1;
}

int yt_need_double(const yt_node *map, const char *key, double lo, double hi, double *out,
                   sq_err *err)
{
    const yt_node *v = yt_require(map, key, err);
    return v ? yt_as_double(v, key, lo, hi, out, err) : -1;
}

int yt_need_bool(const yt_node *map, const char *key, bool *out, sq_err *err)
{
    const yt_node *v = yt_require(map, key, err);
    return v ? yt_as_bool(v, key, out, err) : -1;
}

int yt_need_string(const yt_node *map, const char *key, const char **out, sq_err *err)
{
    const yt_node *v = yt_require(map, key, err);
    return v ? yt_as_string(v, key, out, err) : -1;
}

int yt_check_keys(const yt_node *map, const char *const *allowed, sq_err *err)
{
    if (!map || map->kind != YT_MAPPING)
        return 0;
    for (size_t i = 0; i < map->n / 2; i++) {
        const yt_node *k = key_node(map, i);
        bool known = false;
        for (size_t j = 0; allowed[j] && !known; j++)
            known = strcmp(allowed[j], k->text) == 0;
        if (!known) {
            char list[600];
            size_t len = 0;
            list[0] = '\0';
            for (size_t j = 0; allowed[j] && len < sizeof list; j++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                        allowed[j]);
            return yt_error(k, err, "unknown key '%s' (expected one of: %s)", k->text, list);
        }
    }
    return 0;
}

/* ---- quoting ---- */

/* Decode one UTF-8 sequence at s; returns its length, or 0 when invalid. */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        len = 2, v = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, v = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        v = v << 6 | (s[k] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

typedef struct qout {
    char *buf;
    size_t n, len;
} qout;

static void qput(qout *q, const char *s, size_t k)
{
    for (size_t i = 0; i < k; i++, q->len++)
        if (q->len + 1 < q->n)
            q->buf[q->len] = s[i];
}

size_t yt_quote(const char *s, char *buf, size_t n)
{
    qout q = {buf, n, 0};
    const unsigned char *p = (const unsigned char *)s;
    qput(&q, "\"", 1);
    while (*p) {
        uint32_t cp;
        size_t k = utf8_next(p, &cp);
        if (k == 0) {
            if (n > 0)
                buf[0] = '\0';
            return SIZE_MAX;
        }
        char esc[16];
        const char *e = NULL;
        switch (cp) {
        case '"':
            e = "\\\"";
            break;
        case '\\':
            e = "\\\\";
            break;
        case '\n':
            e = "\\n";
            break;
        case '\t':
            e = "\\t";
            break;
        case '\r':
            e = "\\r";
            break;
        case 0x85:
            e = "\\N";
            break;
        case 0x2028:
            e = "\\L";
            break;
        case 0x2029:
            e = "\\P";
            break;
        default:
            /* Outside YAML's printable set, or a BOM: escape. */
            if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
                snprintf(esc, sizeof esc, "\\x%02X", (unsigned)cp);
                e = esc;
            } else if (cp == 0xfeff || cp == 0xfffe || cp == 0xffff) {
                snprintf(esc, sizeof esc, "\\u%04X", (unsigned)cp);
                e = esc;
            }
        }
        if (e)
            qput(&q, e, strlen(e));
        else
            qput(&q, (const char *)p, k);
        p += k;
    }
    qput(&q, "\"", 1);
    if (n > 0)
        buf[q.len < n ? q.len : n - 1] = '\0';
    return q.len;
}

char *yt_quote_alloc(const char *s)
{
    size_t need = yt_quote(s, NULL, 0);
    if (need == SIZE_MAX)
        return NULL;
    char *buf = malloc(need + 1);
    if (buf)
        yt_quote(s, buf, need + 1);
    return buf;
}

void sq_sb_yaml_str(sq_strbuf *sb, const char *s)
{
    char *q = yt_quote_alloc(s);
    if (!q) {
        sq_sb_printf(sb, "\"(invalid UTF-8)\"");
        return;
    }
    sq_sb_printf(sb, "%s", q);
    free(q);
}

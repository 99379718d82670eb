#include "eval_data.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "utf8.h"

/* ---- task names ---- */

static const char *const task_names[] = {"plain", "stsb", "scifact", "sst2"};

const char *sq_eval_task_name(sq_eval_task t)
{
    if (t == SQ_TASK_AUTO)
        return "auto";
    return (unsigned)t < 4 ? task_names[t] : "?";
}

int sq_eval_task_parse(const char *name, sq_eval_task *out)
{
    if (strcmp(name, "auto") == 0) {
        *out = SQ_TASK_AUTO;
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (strcmp(name, task_names[i]) == 0) {
            *out = (sq_eval_task)i;
            return 0;
        }
    return -1;
}

/* ---- lines and fields ---- */

/* Iterates the lines of a NUL-terminated buffer in place (newlines and a
 * trailing '\r' become NULs). */
typedef struct line_iter {
    char *buf;
    size_t len, pos;
    int64_t lineno;
    const char *path;
} line_iter;

/* Next line, or NULL at the end; -1 in *bad (err set) for a NUL byte. */
static char *next_line(line_iter *it, int *bad, sq_err *err)
{
    *bad = 0;
    if (it->pos >= it->len)
        return NULL;
    char *s = it->buf + it->pos;
    char *nl = memchr(s, '\n', it->len - it->pos);
    size_t n = nl ? (size_t)(nl - s) : it->len - it->pos;
    it->pos += n + (nl != NULL);
    it->lineno++;
    if (memchr(s, '\0', n)) {
        *bad = -1;
        sq_err_set(err, "%s:%lld: NUL byte in a text file", it->path, (long long)it->lineno);
        return NULL;
    }
    s[n] = '\0';
    if (n && s[n - 1] == '\r')
        s[n - 1] = '\0';
    return s;
}

/* Split s at tabs into at most max fields (in place); returns the count, or
 * max + 1 when there are more. */
static int split_tabs(char *s, char **f, int max)
{
    int n = 0;
    for (;;) {
        if (n == max)
            return max + 1;
        f[n++] = s;
        char *t = strchr(s, '\t');
        if (!t)
            return n;
        *t = '\0';
        s = t + 1;
    }
}

#define MAX_FIELDS 64

static int find_col(char **f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(f[i], name) == 0)
            return i;
    return -1;
}

static bool parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    while (*end == ' ')
        end++;
    return end != s && *end == '\0' && errno == 0 && isfinite(*out);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The original STS-B layout: no header; genre, file, year, id, score,
 * sentence1, sentence2 (some rows carry two more source columns). */
static bool is_original_stsb_row(char **f, int n)
{
    double v;
    return n >= 7 && n <= 9 && parse_number(f[4], &v);
}

int sq_eval_task_detect(const char *input, sq_eval_task *out, sq_err *err)
{
    *out = SQ_TASK_PLAIN;
    if (strcmp(input, "-") == 0)
        return 0;
    if (sq_dir_exists(input)) {
        char *c = sq_path_join(input, "corpus.jsonl"), *q = sq_path_join(input, "queries.jsonl");
        if (c && q && sq_file_exists(c) && sq_file_exists(q))
            *out = SQ_TASK_SCIFACT;
        free(c);
        free(q);
        return 0;
    }
    if (!ends_with(input, ".tsv"))
        return 0;
    FILE *fp = fopen(input, "r");
    if (!fp)
        return sq_err_set(err, "%s: %s", input, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got = getline(&line, &cap, fp);
    fclose(fp);
    if (got > 0) {
        line[strcspn(line, "\r\n")] = '\0';
        char *f[MAX_FIELDS];
        int n = split_tabs(line, f, MAX_FIELDS);
        if (n > MAX_FIELDS)
            n = MAX_FIELDS;
        if (find_col(f, n, "sentence1") >= 0 && find_col(f, n, "sentence2") >= 0)
            *out = SQ_TASK_STSB;
        else if (find_col(f, n, "sentence") >= 0 && find_col(f, n, "label") >= 0)
            *out = SQ_TASK_SST2;
        else if (is_original_stsb_row(f, n))
            *out = SQ_TASK_STSB;
    }
    free(line);
    return 0;
}

static int read_text(const char *path, char **buf, size_t *len, sq_err *err)
{
    if (sq_read_regular_file(path, SQ_EVAL_MAX_FILE, buf, len, err) != 0)
        return -1;
    return 0;
}

/* Grow an array by doubling to hold `need` elements. Parallel arrays of one
 * length pass a copy of the shared capacity for all but the last, so every
 * array is resized by the same rule. */
static int grow(void **p, size_t elem, int64_t need, int64_t *cap)
{
    if (need <= *cap)
        return 0;
    int64_t nc = *cap ? *cap * 2 : 256;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static void free_strs(char **v, int64_t n)
{
    if (!v)
        return;
    for (int64_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ---- STS-B ---- */

void sq_stsb_free(sq_stsb *s)
{
    free_strs(s->s1, s->n);
    free_strs(s->s2, s->n);
    free(s->score);
    memset(s, 0, sizeof *s);
}

int sq_stsb_read(const char *path, int64_t limit, sq_stsb *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    if (read_text(path, &buf, &len, err) != 0)
        return -1;
    line_iter it = {buf, len, 0, 0, path};
    int c1 = 5, c2 = 6, cs = 4, bad;
    bool header = false;
    int64_t cap = 0;
    char *line;
    while ((line = next_line(&it, &bad, err)) != NULL) {
        if (limit > 0 && out->n >= limit)
            break;
        if (it.lineno > 1 && line[0] == '\0')
            continue;
        char *f[MAX_FIELDS];
        int n = split_tabs(line, f, MAX_FIELDS);
        if (it.lineno == 1 && !is_original_stsb_row(f, n > MAX_FIELDS ? MAX_FIELDS : n)) {
            c1 = find_col(f, n, "sentence1");
            c2 = find_col(f, n, "sentence2");
            cs = find_col(f, n, "score");
            if (c1 < 0 || c2 < 0) {
                sq_err_set(err, "%s:1: not an STS-B file: the header has no sentence1/sentence2 columns",
                           path);
                goto fail;
            }
            if (cs < 0) {
                sq_err_set(err,
                           "%s:1: no 'score' column: these pairs have no gold scores (GLUE "
                           "test.tsv does not; use original/sts-test.tsv)",
                           path);
                goto fail;
            }
            header = true;
            continue;
        }
        int need = (c1 > c2 ? c1 : c2);
        need = (need > cs ? need : cs) + 1;
        if (n > MAX_FIELDS || n < need) {
            sq_err_set(err, "%s:%lld: expected %s%d tab-separated fields, found %d", path,
                       (long long)it.lineno, header ? "" : "7 to 9 ", need,
                       n > MAX_FIELDS ? MAX_FIELDS + 1 : n);
            goto fail;
        }
        double score;
        if (!parse_number(f[cs], &score)) {
            sq_err_set(err, "%s:%lld: score '%.40s' is not a number", path, (long long)it.lineno,
                       f[cs]);
            goto fail;
        }
        if (grow((void **)&out->s1, sizeof *out->s1, out->n + 1, &(int64_t){cap}) != 0 ||
            grow((void **)&out->s2, sizeof *out->s2, out->n + 1, &(int64_t){cap}) != 0 ||
            grow((void **)&out->score, sizeof *out->score, out->n + 1, &cap) != 0)
            goto oom;
        out->s1[out->n] = strdup(f[c1]);
        out->s2[out->n] = strdup(f[c2]);
        out->score[out->n] = score;
        out->n++;
        if (!out->s1[out->n - 1] || !out->s2[out->n - 1])
            goto oom;
    }
    if (bad)
        goto fail;
    if (out->n == 0) {
        sq_err_set(err, "%s: no sentence pairs", path);
        goto fail;
    }
    free(buf);
    return 0;
oom:
    sq_err_set(err, "%s: out of memory", path);
fail:
    free(buf);
    sq_stsb_free(out);
    return -1;
}

/* ---- SST-2 ---- */

void sq_sst2_free(sq_sst2 *s)
{
    free_strs(s->text, s->n);
    free(s->label);
    memset(s, 0, sizeof *s);
}

int sq_sst2_read(const char *path, int64_t limit, sq_sst2 *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    if (read_text(path, &buf, &len, err) != 0)
        return -1;
    line_iter it = {buf, len, 0, 0, path};
    int cs = -1, cl = -1, bad;
    int64_t cap = 0;
    char *line;
    while ((line = next_line(&it, &bad, err)) != NULL) {
        if (limit > 0 && out->n >= limit)
            break;
        char *f[MAX_FIELDS];
        int n = split_tabs(line, f, MAX_FIELDS);
        if (it.lineno == 1) {
            cs = find_col(f, n, "sentence");
            cl = find_col(f, n, "label");
            if (cs < 0 || cl < 0) {
                sq_err_set(err, "%s:1: not an SST-2 file: the header needs 'sentence' and 'label' columns",
                           path);
                goto fail;
            }
            continue;
        }
        if (line[0] == '\0')
            continue;
        int need = (cs > cl ? cs : cl) + 1;
        if (n > MAX_FIELDS || n < need) {
            sq_err_set(err, "%s:%lld: expected %d tab-separated fields, found %d", path,
                       (long long)it.lineno, need, n > MAX_FIELDS ? MAX_FIELDS + 1 : n);
            goto fail;
        }
        const char *l = f[cl];
        /* one digit, then nothing but whitespace (a CRLF line's \r): "1 junk" is not a label */
        bool label_ok = l[0] == '0' || l[0] == '1';
        for (const char *q = l + 1; label_ok && *q; q++)
            label_ok = isspace((unsigned char)*q);
        if (!label_ok) {
            sq_err_set(err, "%s:%lld: label '%.40s' is not 0 or 1", path, (long long)it.lineno, l);
            goto fail;
        }
        if (grow((void **)&out->text, sizeof *out->text, out->n + 1, &(int64_t){cap}) != 0 ||
            grow((void **)&out->label, sizeof *out->label, out->n + 1, &cap) != 0)
            goto oom;
        out->text[out->n] = strdup(f[cs]);
        out->label[out->n] = l[0] - '0';
        out->n++;
        if (!out->text[out->n - 1])
            goto oom;
    }
    if (bad)
        goto fail;
    if (out->n == 0) {
        sq_err_set(err, "%s: no labelled sentences", path);
        goto fail;
    }
    free(buf);
    return 0;
oom:
    sq_err_set(err, "%s: out of memory", path);
fail:
    free(buf);
    sq_sst2_free(out);
    return -1;
}

/* ---- labelled training sets ---- */

void sq_labelled_free(sq_labelled *s)
{
    free_strs(s->text, s->n);
    free(s->label);
    free(s->line);
    free_strs(s->class_name, s->n_classes);
    memset(s, 0, sizeof *s);
}

/* An integer label as the rule reads it: optional '-', then "0" or a digit
 * 1-9 followed by at most 17 digits (so it fits a long long). */
static bool integer_label(const char *s, long long *v)
{
    const char *p = s + (*s == '-');
    size_t n = strlen(p);
    if (n == 0 || n > 18 || (p[0] == '0' && n > 1) || (p == s + 1 && strcmp(p, "0") == 0))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)p[i]))
            return false;
    *v = strtoll(s, NULL, 10);
    return true;
}

typedef struct label_key {
    const char *name;
    long long v; /* its number (integer labels), later its class */
} label_key;

static int cmp_label_bytes(const void *pa, const void *pb)
{
    return strcmp(((const label_key *)pa)->name, ((const label_key *)pb)->name);
}

static int cmp_label_numeric(const void *pa, const void *pb)
{
    const label_key *a = pa, *b = pb;
    return (a->v > b->v) - (a->v < b->v);
}

/* Check a label (NUL-terminated, len bytes) read at path:line. */
static int check_label(const char *path, int64_t line, const char *l, size_t len, sq_err *err)
{
    if (len == 0)
        return sq_err_set(err, "%s:%lld: empty label", path, (long long)line);
    if (len > SQ_LABEL_MAX)
        return sq_err_set(err, "%s:%lld: label longer than %d bytes", path, (long long)line,
                          SQ_LABEL_MAX);
    if (sq_utf8_valid_prefix(l, len) != len || memchr(l, '\0', len))
        return sq_err_set(err, "%s:%lld: label is not valid UTF-8 text", path, (long long)line);
    return 0;
}

/* Number the distinct labels (raw[i], one per row) into out->label /
 * out->class_name by the rule of eval_data.h. raw is consumed. */
static int number_classes(const char *path, char **raw, sq_labelled *out, sq_err *err)
{
    int64_t n = out->n;
    label_key *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k)
        return sq_err_set(err, "%s: out of memory", path);
    bool numeric = true;
    for (int64_t i = 0; i < n; i++) {
        k[i] = (label_key){raw[i], 0};
        if (numeric && !integer_label(raw[i], &k[i].v))
            numeric = false;
    }
    /* Distinct names first (byte order), then the class order. */
    qsort(k, (size_t)n, sizeof *k, cmp_label_bytes);
    int64_t distinct = 0;
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || strcmp(k[i].name, k[distinct - 1].name) != 0) {
            if (distinct == SQ_CLASSES_MAX) {
                free(k);
                return sq_err_set(err, "%s: more than %d distinct labels (is the label field "
                                       "the label column?)",
                                  path, SQ_CLASSES_MAX);
            }
            k[distinct++] = k[i];
        }
    if (numeric) /* distinct integer labels are distinct numbers */
        qsort(k, (size_t)distinct, sizeof *k, cmp_label_numeric);
    out->class_name = calloc((size_t)(distinct ? distinct : 1), sizeof *out->class_name);
    out->label = malloc((size_t)(n ? n : 1) * sizeof *out->label);
    if (!out->class_name || !out->label) {
        free(k);
        return sq_err_set(err, "%s: out of memory", path);
    }
    out->n_classes = (int)distinct;
    for (int64_t c = 0; c < distinct; c++)
        if (!(out->class_name[c] = strdup(k[c].name))) {
            free(k);
            return sq_err_set(err, "%s: out of memory", path);
        }
    /* Each row's class: binary search among the names in byte order. */
    for (int64_t c = 0; c < distinct; c++)
        k[c].v = c; /* v now holds the class index */
    qsort(k, (size_t)distinct, sizeof *k, cmp_label_bytes);
    for (int64_t i = 0; i < n; i++) {
        label_key key = {raw[i], 0};
        label_key *e = bsearch(&key, k, (size_t)distinct, sizeof *k, cmp_label_bytes);
        out->label[i] = (int)e->v;
    }
    free(k);
    return 0;
}

int sq_labelled_read(const char *path, const char *text_field, const char *label_field,
                     sq_labelled *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    bool jsonl = ends_with(path, ".jsonl");
    if (!jsonl && !ends_with(path, ".tsv"))
        return sq_err_set(err, "%s: unknown training file layout (use .tsv with a header row, "
                               "or .jsonl)",
                          path);
    if (!text_field)
        text_field = jsonl ? "text" : "sentence";
    if (!label_field)
        label_field = "label";
    char *buf;
    size_t len;
    if (read_text(path, &buf, &len, err) != 0)
        return -1;
    line_iter it = {buf, len, 0, 0, path};
    int ct = -1, cl = -1, bad;
    int64_t cap = 0;
    char **raw = NULL;
    char *line;
    while ((line = next_line(&it, &bad, err)) != NULL) {
        long long no = (long long)it.lineno;
        const char *text, *label;
        char num[32];
        json_t *obj = NULL;
        if (!jsonl && it.lineno == 1) {
            char *f[MAX_FIELDS];
            int n = split_tabs(line, f, MAX_FIELDS);
            if (n > MAX_FIELDS) {
                sq_err_set(err, "%s:1: more than %d columns", path, MAX_FIELDS);
                goto fail;
            }
            ct = find_col(f, n, text_field);
            cl = find_col(f, n, label_field);
            if (ct < 0 || cl < 0) {
                sq_err_set(err, "%s:1: the header row has no '%s' column (the %s; "
                                "--text-field / --label-field name the columns)",
                           path, ct < 0 ? text_field : label_field, ct < 0 ? "text" : "label");
                goto fail;
            }
            continue;
        }
        if (line[0] == '\0')
            continue;
        if (jsonl) {
            json_error_t je;
            obj = json_loads(line, SQ_JSON_FLAGS, &je);
            if (!json_is_object(obj)) {
                sq_err_set(err, "%s:%lld: not a JSON object%s%s", path, no, obj ? "" : ": ",
                           obj ? "" : je.text);
                json_decref(obj);
                goto fail;
            }
            json_t *t = sq_json_get_path(obj, text_field), *l = sq_json_get_path(obj, label_field);
            if (!json_is_string(t)) {
                sq_err_set(err, "%s:%lld: field \"%s\" (the text) is missing or not a string",
                           path, no, text_field);
                json_decref(obj);
                goto fail;
            }
            if (json_is_integer(l)) {
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(l));
                label = num;
            } else if (json_is_string(l)) {
                label = json_string_value(l);
            } else {
                sq_err_set(err, "%s:%lld: field \"%s\" (the label) is missing or not a string or "
                                "integer",
                           path, no, label_field);
                json_decref(obj);
                goto fail;
            }
            text = json_string_value(t);
            if (strlen(text) != json_string_length(t) ||
                (json_is_string(l) && strlen(label) != json_string_length(l))) {
                sq_err_set(err, "%s:%lld: a NUL character in the text or label", path, no);
                json_decref(obj);
                goto fail;
            }
        } else {
            char *f[MAX_FIELDS];
            int n = split_tabs(line, f, MAX_FIELDS);
            int need = (ct > cl ? ct : cl) + 1;
            if (n > MAX_FIELDS || n < need) {
                sq_err_set(err, "%s:%lld: expected at least %d tab-separated fields, found %d",
                           path, no, need, n > MAX_FIELDS ? MAX_FIELDS + 1 : n);
                goto fail;
            }
            text = f[ct];
            label = f[cl];
        }
        size_t tl = strlen(text);
        if (check_label(path, no, label, strlen(label), err) != 0 ||
            (sq_utf8_valid_prefix(text, tl) != tl &&
             sq_err_set(err, "%s:%lld: the text is not valid UTF-8", path, no) != 0)) {
            json_decref(obj);
            goto fail;
        }
        if (grow((void **)&out->text, sizeof *out->text, out->n + 1, &(int64_t){cap}) != 0 ||
            grow((void **)&out->line, sizeof *out->line, out->n + 1, &(int64_t){cap}) != 0 ||
            grow((void **)&raw, sizeof *raw, out->n + 1, &cap) != 0) {
            json_decref(obj);
            goto oom;
        }
        out->text[out->n] = strdup(text);
        raw[out->n] = strdup(label);
        out->line[out->n] = no;
        out->n++;
        json_decref(obj);
        if (!out->text[out->n - 1] || !raw[out->n - 1])
            goto oom;
    }
    if (bad)
        goto fail;
    if (!jsonl && it.lineno == 0) {
        sq_err_set(err, "%s: empty file (a header row and labelled rows expected)", path);
        goto fail;
    }
    if (out->n == 0) {
        sq_err_set(err, "%s: no labelled texts", path);
        goto fail;
    }
    if (number_classes(path, raw, out, err) != 0)
        goto fail;
    free_strs(raw, out->n);
    free(buf);
    return 0;
oom:
    sq_err_set(err, "%s: out of memory", path);
fail:
    if (raw) {
        for (int64_t i = 0; i < out->n; i++)
            free(raw[i]);
        free(raw);
    }
    free(buf);
    sq_labelled_free(out);
    return -1;
}

/* ---- BEIR ---- */

typedef struct id_entry {
    const char *id;
    int64_t index;
} id_entry;

static int cmp_id(const void *pa, const void *pb)
{
    return strcmp(((const id_entry *)pa)->id, ((const id_entry *)pb)->id);
}

/* A sorted id -> index table; the first duplicate found is reported. */
static id_entry *id_table(char **ids, int64_t n, const char **dup)
{
    id_entry *t = malloc((size_t)(n ? n : 1) * sizeof *t);
    *dup = NULL;
    if (!t)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        t[i] = (id_entry){ids[i], i};
    qsort(t, (size_t)n, sizeof *t, cmp_id);
    for (int64_t i = 1; i < n; i++)
        if (strcmp(t[i].id, t[i - 1].id) == 0)
            *dup = t[i].id;
    return t;
}

static int64_t id_find(const id_entry *t, int64_t n, const char *id)
{
    id_entry key = {id, 0};
    const id_entry *e = bsearch(&key, t, (size_t)n, sizeof *t, cmp_id);
    return e ? e->index : -1;
}

/* "_id" as a string (integers accepted, as some exports write them). */
static char *json_id(json_t *o)
{
    json_t *v = json_object_get(o, "_id");
    if (json_is_string(v))
        return strdup(json_string_value(v));
    if (json_is_integer(v)) {
        char b[32];
        snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
        return strdup(b);
    }
    return NULL;
}

static char *trim_dup(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (!s)
        return NULL;
    memcpy(s, a, la);
    s[la] = ' ';
    memcpy(s + la + 1, b, lb + 1);
    char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    size_t n = strlen(p);
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    memmove(s, p, n);
    s[n] = '\0';
    return s;
}

/* Read a BEIR JSONL file: ids and texts (title + " " + text when with_title). */
static int read_beir_jsonl(const char *path, bool with_title, char ***ids_out, char ***texts_out,
                           int64_t *n_out, sq_err *err)
{
    char *buf;
    size_t len;
    if (read_text(path, &buf, &len, err) != 0)
        return -1;
    line_iter it = {buf, len, 0, 0, path};
    char **ids = NULL, **texts = NULL, *line;
    int64_t n = 0, cap = 0;
    int bad;
    while ((line = next_line(&it, &bad, err)) != NULL) {
        if (line[0] == '\0')
            continue;
        json_error_t je;
        json_t *o = json_loads(line, SQ_JSON_FLAGS, &je);
        if (!o || !json_is_object(o)) {
            sq_err_set(err, "%s:%lld: not a JSON object%s%s", path, (long long)it.lineno,
                       o ? "" : ": ", o ? "" : je.text);
            json_decref(o);
            goto fail;
        }
        json_t *text = json_object_get(o, "text"), *title = json_object_get(o, "title");
        char *id = json_id(o);
        const char *why = !id                                 ? "no \"_id\" string"
                          : !json_is_string(text)             ? "no \"text\" string"
                          : title && !json_is_null(title) && !json_is_string(title)
                              ? "\"title\" is not a string"
                              : NULL;
        if (why) {
            sq_err_set(err, "%s:%lld: %s", path, (long long)it.lineno, why);
            free(id);
            json_decref(o);
            goto fail;
        }
        if (grow((void **)&ids, sizeof *ids, n + 1, &(int64_t){cap}) != 0 ||
            grow((void **)&texts, sizeof *texts, n + 1, &cap) != 0) {
            free(id);
            json_decref(o);
            sq_err_set(err, "%s: out of memory", path);
            goto fail;
        }
        const char *tt = with_title && json_is_string(title) ? json_string_value(title) : "";
        ids[n] = id;
        texts[n] = with_title ? trim_dup(tt, json_string_value(text))
                              : strdup(json_string_value(text));
        n++;
        json_decref(o);
        if (!texts[n - 1]) {
            sq_err_set(err, "%s: out of memory", path);
            goto fail;
        }
    }
    if (bad)
        goto fail;
    if (n == 0) {
        sq_err_set(err, "%s: no records", path);
        goto fail;
    }
    free(buf);
    *ids_out = ids;
    *texts_out = texts;
    *n_out = n;
    return 0;
fail:
    free(buf);
    free_strs(ids, n);
    free_strs(texts, n);
    return -1;
}

typedef struct qrel_row {
    int64_t q, d;
    double grade;
    int64_t line;
} qrel_row;

static int cmp_qrel(const void *pa, const void *pb)
{
    const qrel_row *a = pa, *b = pb;
    if (a->q != b->q)
        return a->q < b->q ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

/* Read qrels rows "query-id corpus-id score" (header first) against the
 * query and document tables. */
static int read_qrels(const char *path, const id_entry *qt, int64_t nq, const id_entry *dt,
                      int64_t nd, qrel_row **rows_out, int64_t *n_out, sq_err *err)
{
    char *buf;
    size_t len;
    if (read_text(path, &buf, &len, err) != 0)
        return -1;
    line_iter it = {buf, len, 0, 0, path};
    qrel_row *rows = NULL;
    int64_t n = 0, cap = 0;
    int bad;
    char *line;
    while ((line = next_line(&it, &bad, err)) != NULL) {
        if (line[0] == '\0')
            continue;
        char *f[4];
        int nf = split_tabs(line, f, 3);
        if (it.lineno == 1 && nf == 3 && strcmp(f[0], "query-id") == 0)
            continue;
        if (nf != 3) {
            sq_err_set(err, "%s:%lld: expected 3 tab-separated fields (query-id corpus-id score)",
                       path, (long long)it.lineno);
            goto fail;
        }
        double g;
        if (!parse_number(f[2], &g)) {
            sq_err_set(err, "%s:%lld: score '%.40s' is not a number", path, (long long)it.lineno,
                       f[2]);
            goto fail;
        }
        int64_t q = id_find(qt, nq, f[0]), d = id_find(dt, nd, f[1]);
        if (q < 0 || d < 0) {
            sq_err_set(err, "%s:%lld: %s id '%.60s' is not in %s", path, (long long)it.lineno,
                       q < 0 ? "query" : "corpus", q < 0 ? f[0] : f[1],
                       q < 0 ? "queries.jsonl" : "corpus.jsonl");
            goto fail;
        }
        if (grow((void **)&rows, sizeof *rows, n + 1, &cap) != 0) {
            sq_err_set(err, "%s: out of memory", path);
            goto fail;
        }
        rows[n++] = (qrel_row){q, d, g, it.lineno};
    }
    if (bad)
        goto fail;
    if (n == 0) {
        sq_err_set(err, "%s: no judgements", path);
        goto fail;
    }
    free(buf);
    qsort(rows, (size_t)n, sizeof *rows, cmp_qrel);
    *rows_out = rows;
    *n_out = n;
    return 0;
fail:
    free(buf);
    free(rows);
    return -1;
}

void sq_beir_free(sq_beir *b)
{
    free_strs(b->doc_id, b->n_docs);
    free_strs(b->doc_text, b->n_docs);
    free_strs(b->query_id, b->n_queries);
    free_strs(b->query_text, b->n_queries);
    free(b->qrel_off);
    free(b->qrel_doc);
    free(b->qrel_grade);
    memset(b, 0, sizeof *b);
}

/* Move the kept entries of v (keep[i] >= 0 gives the new index) to their new
 * places and free the others. */
static void compact(char **v, int64_t n, const int64_t *newidx)
{
    for (int64_t i = 0; i < n; i++) {
        if (newidx[i] < 0)
            free(v[i]);
        else
            v[newidx[i]] = v[i];
    }
}

int sq_beir_read(const char *dir, const char *split, int64_t limit_docs, sq_beir *out,
                 sq_err *err)
{
    memset(out, 0, sizeof *out);
    char *cpath = sq_path_join(dir, "corpus.jsonl"), *qpath = sq_path_join(dir, "queries.jsonl");
    char name[128];
    snprintf(name, sizeof name, "qrels/%s.tsv", split);
    char *rpath = sq_path_join(dir, name);
    char **qids = NULL, **qtexts = NULL;
    int64_t nq = 0, nrows = 0;
    id_entry *qt = NULL, *dt = NULL;
    qrel_row *rows = NULL;
    int64_t *qnew = NULL, *dnew = NULL;
    int rc = -1;
    const char *dup;
    if (!cpath || !qpath || !rpath) {
        sq_err_set(err, "out of memory");
        goto done;
    }
    if (read_beir_jsonl(cpath, true, &out->doc_id, &out->doc_text, &out->n_docs, err) != 0 ||
        read_beir_jsonl(qpath, false, &qids, &qtexts, &nq, err) != 0)
        goto done;
    dt = id_table(out->doc_id, out->n_docs, &dup);
    if (dt && dup) {
        sq_err_set(err, "%s: duplicate _id '%.60s'", cpath, dup);
        goto done;
    }
    qt = id_table(qids, nq, &dup);
    if (qt && dup) {
        sq_err_set(err, "%s: duplicate _id '%.60s'", qpath, dup);
        goto done;
    }
    if (!dt || !qt) {
        sq_err_set(err, "out of memory");
        goto done;
    }
    if (read_qrels(rpath, qt, nq, dt, out->n_docs, &rows, &nrows, err) != 0)
        goto done;

    /* Choose the queries (judged ones, file order) and documents to keep. */
    qnew = malloc((size_t)nq * sizeof *qnew);
    dnew = malloc((size_t)out->n_docs * sizeof *dnew);
    if (!qnew || !dnew) {
        sq_err_set(err, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < out->n_docs; i++)
        dnew[i] = limit_docs > 0 ? -1 : 0;
    for (int64_t q = 0; q < nq; q++)
        qnew[q] = -1;
    int64_t kept_docs = 0, kept_q = 0;
    for (int64_t q = 0, r = 0; q < nq; q++) {
        while (r < nrows && rows[r].q < q)
            r++;
        int64_t r0 = r, r1 = r;
        while (r1 < nrows && rows[r1].q == q)
            r1++;
        if (r0 == r1)
            continue;
        if (limit_docs > 0) {
            int64_t add = 0;
            for (int64_t t = r0; t < r1; t++)
                add += dnew[rows[t].d] < 0 && rows[t].grade > 0;
            if (kept_q > 0 && kept_docs + add > limit_docs / 2)
                break; /* keep queries as a prefix */
            for (int64_t t = r0; t < r1; t++)
                if (dnew[rows[t].d] < 0 && rows[t].grade > 0) {
                    dnew[rows[t].d] = 0;
                    kept_docs++;
                }
        }
        qnew[q] = kept_q++;
    }
    if (limit_docs > 0) {
        for (int64_t i = 0; i < out->n_docs && kept_docs < limit_docs; i++)
            if (dnew[i] < 0) {
                dnew[i] = 0;
                kept_docs++;
            }
        int64_t k = 0;
        for (int64_t i = 0; i < out->n_docs; i++)
            if (dnew[i] == 0)
                dnew[i] = k++;
    } else {
        for (int64_t i = 0; i < out->n_docs; i++)
            dnew[i] = i;
        kept_docs = out->n_docs;
    }
    /* The qrels of the kept queries, re-indexed; judged documents that fell
     * outside a capped corpus are non-relevant ones and are dropped. */
    out->qrel_off = calloc((size_t)kept_q + 1, sizeof *out->qrel_off);
    out->qrel_doc = malloc((size_t)nrows * sizeof *out->qrel_doc);
    out->qrel_grade = malloc((size_t)nrows * sizeof *out->qrel_grade);
    if (!out->qrel_off || !out->qrel_doc || !out->qrel_grade) {
        sq_err_set(err, "out of memory");
        goto done;
    }
    int64_t m = 0;
    for (int64_t r = 0; r < nrows; r++) {
        int64_t q = qnew[rows[r].q];
        if (q < 0 || dnew[rows[r].d] < 0)
            continue;
        out->qrel_doc[m] = dnew[rows[r].d];
        out->qrel_grade[m] = rows[r].grade;
        out->qrel_off[q + 1] = ++m;
    }
    for (int64_t q = 1; q <= kept_q; q++)
        if (out->qrel_off[q] < out->qrel_off[q - 1])
            out->qrel_off[q] = out->qrel_off[q - 1];
    compact(out->doc_id, out->n_docs, dnew);
    compact(out->doc_text, out->n_docs, dnew);
    out->n_docs = kept_docs;
    compact(qids, nq, qnew);
    compact(qtexts, nq, qnew);
    out->query_id = qids;
    out->query_text = qtexts;
    out->n_queries = kept_q;
    qids = qtexts = NULL;
    nq = 0;
    rc = 0;
done:
    if (rc != 0)
        sq_beir_free(out);
    free_strs(qids, nq);
    free_strs(qtexts, nq);
    free(qt);
    free(dt);
    free(rows);
    free(qnew);
    free(dnew);
    free(cpath);
    free(qpath);
    free(rpath);
    return rc;
}

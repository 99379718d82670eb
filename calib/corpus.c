/* The corpus iterator: chains files, walks each file's members (corpus_input)
 * and hands each member's lines (line_source) to the reader of its format. */
#include "corpus.h"
#include "json_util.h"
#include "file_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <xxhash.h>

#include "corpus_input.h"
#include "corpus_reader.h"
#include "line_source.h"

struct sq_corpus {
    sq_corpus_format format;
    char *field;       /* NULL: "text", and QASPER JSONL may be auto-detected */
    char *pair_field;  /* NULL: single texts; else pairs (JSONL only) */
    unsigned parts;
    size_t max_line;
    size_t n_files;
    sq_corpus_file_info *files;
    size_t file_idx;   /* the file being read */
    sq_corpus_input *in;
    sq_line_source ls;
    int ls_open;
    sq_corpus_reader *rd;
    int failed;
};

static const char *const format_names[] = {"auto", "text", "jsonl", "qasper"};

const char *sq_corpus_format_name(sq_corpus_format f)
{
    return (unsigned)f < 4 ? format_names[f] : "?";
}

int sq_corpus_parse_format(const char *name, sq_corpus_format *out, sq_err *err)
{
    for (unsigned i = 0; i < 4; i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (sq_corpus_format)i;
            return 0;
        }
    return sq_err_set(err, "unknown corpus format \"%s\" (expected auto, text, jsonl or qasper)",
                      name);
}

bool sq_corpus_split_pair(const char *s, size_t n, size_t *na, const char **b, size_t *nb)
{
    const char *z = memchr(s, 0, n);
    if (!z)
        return false;
    *na = (size_t)(z - s);
    *b = z + 1;
    *nb = n - *na - 1;
    return true;
}

int sq_qasper_parts_parse(const char *list, unsigned *mask, sq_err *err)
{
    static const char *const names[] = {"title", "abstract", "paragraphs", "questions",
                                        "evidence"};
    unsigned m = 0;
    const char *s = list;
    for (;;) {
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        const char *a = s, *b = end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        size_t n = (size_t)(b - a);
        unsigned bit = 0;
        for (unsigned i = 0; i < 5; i++)
            if (strlen(names[i]) == n && strncmp(a, names[i], n) == 0)
                bit = 1u << i;
        if (n == 3 && strncmp(a, "all", 3) == 0)
            bit = SQ_QASPER_ALL;
        if (!bit)
            return sq_err_set(err, "QASPER parts \"%s\": %s \"%.*s\" (expected a comma list of "
                              "title, abstract, paragraphs, questions, evidence, or all)",
                              list, n ? "unknown part" : "empty entry", (int)n, a);
        m |= bit;
        if (!*end)
            break;
        s = end + 1;
    }
    *mask = m;
    return 0;
}

static int valid_field_path(const char *f)
{
    if (!*f || f[0] == '.' || f[strlen(f) - 1] == '.' || strstr(f, ".."))
        return 0;
    return 1;
}

sq_corpus *sq_corpus_open_many(const char *const *paths, size_t n_paths, const sq_corpus_opts *o,
                               sq_err *err)
{
    sq_corpus_opts defaults = {0};
    if (!o)
        o = &defaults;
    if (n_paths == 0) {
        sq_err_set(err, "no corpus files given");
        return NULL;
    }
    if ((unsigned)o->format > SQ_CORPUS_QASPER) {
        sq_err_set(err, "invalid corpus format %d", (int)o->format);
        return NULL;
    }
    if (o->field && !valid_field_path(o->field)) {
        sq_err_set(err, "invalid JSON field path \"%s\" (expected names joined by dots, "
                   "e.g. \"text\" or \"doc.body\")", o->field);
        return NULL;
    }
    if (o->pair_field && !valid_field_path(o->pair_field)) {
        sq_err_set(err, "invalid JSON pair field path \"%s\"", o->pair_field);
        return NULL;
    }
    if (o->pair_field && o->format != SQ_CORPUS_AUTO && o->format != SQ_CORPUS_JSONL) {
        sq_err_set(err, "text pairs (a pair field) are read from JSONL corpora only");
        return NULL;
    }
    unsigned parts;
    if (sq_qasper_parts_parse(o->qasper_parts ? o->qasper_parts : SQ_QASPER_DEFAULT_PARTS, &parts,
                              err) != 0)
        return NULL;
    sq_corpus *c = calloc(1, sizeof *c);
    if (!c || !(c->files = calloc(n_paths, sizeof *c->files)) ||
        (o->field && !(c->field = strdup(o->field))) ||
        (o->pair_field && !(c->pair_field = strdup(o->pair_field)))) {
        sq_err_set(err, "out of memory");
        sq_corpus_close(c);
        return NULL;
    }
    c->format = o->format;
    c->parts = parts;
    c->max_line = o->max_line ? o->max_line : SQ_LINE_MAX_DEFAULT;
    c->n_files = n_paths;
    for (size_t i = 0; i < n_paths; i++) {
        if (!(c->files[i].path = strdup(paths[i]))) {
            sq_err_set(err, "out of memory");
            sq_corpus_close(c);
            return NULL;
        }
        if (sq_hash_file(paths[i], &c->files[i].size, &c->files[i].xxh64, err) != 0) {
            sq_corpus_close(c);
            return NULL;
        }
    }
    return c;
}

sq_corpus *sq_corpus_open(const char *path, const sq_corpus_opts *o, sq_err *err)
{
    return sq_corpus_open_many(&path, 1, o, err);
}

static const char *extension(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? dot : "";
}

/* Format auto on a .jsonl member: QASPER when the first object has one of
 * its layouts and no field was asked for. The sniffed line is pushed back. */
static int sniff_jsonl(sq_corpus *c, sq_corpus_format *fmt, sq_err *err)
{
    *fmt = SQ_CORPUS_JSONL;
    if (c->field || c->pair_field)
        return 0;
    const char *line;
    size_t n;
    int rc;
    while ((rc = sq_line_next(&c->ls, &line, &n, err)) == 1 && sq_corpus_blank(line, n)) {
    }
    if (rc <= 0)
        return rc; /* empty member, or an error */
    json_t *o = json_loadb(line, n, SQ_JSON_FLAGS, NULL);
    if (o && sq_corpus_qasper_jsonl_layout(o))
        *fmt = SQ_CORPUS_QASPER;
    json_decref(o);
    sq_line_push_back(&c->ls);
    return 0;
}

static int open_member(sq_corpus *c, const char *member, const char *display, sq_err *err)
{
    if (sq_line_source_init(&c->ls, sq_corpus_input_read, c->in, display, c->max_line, err) != 0)
        return -1;
    c->ls_open = 1;
    const char *ext = extension(member);
    int is_json = strcasecmp(ext, ".json") == 0;
    sq_corpus_format fmt = c->format;
    if (fmt == SQ_CORPUS_AUTO) {
        if (strcasecmp(ext, ".jsonl") == 0 || strcasecmp(ext, ".ndjson") == 0) {
            if (sniff_jsonl(c, &fmt, err) != 0)
                return -1;
        } else {
            fmt = is_json ? SQ_CORPUS_QASPER : SQ_CORPUS_TEXT;
        }
    }
    if (c->pair_field && fmt != SQ_CORPUS_JSONL)
        return sq_err_set(err, "%s: text pairs (a pair field) are read from JSONL only, and this "
                               "member is not .jsonl",
                          display);
    switch (fmt) {
    case SQ_CORPUS_TEXT:
        c->rd = sq_corpus_text_reader(&c->ls, err);
        break;
    case SQ_CORPUS_JSONL:
        c->rd = sq_corpus_jsonl_reader(&c->ls, c->field, c->pair_field, err);
        break;
    default:
        c->rd = sq_corpus_qasper_reader(&c->ls, c->parts, is_json, err);
        break;
    }
    return c->rd ? 0 : -1;
}

static void close_member(sq_corpus *c)
{
    if (c->rd)
        c->rd->free(c->rd);
    c->rd = NULL;
    if (c->ls_open)
        sq_line_source_free(&c->ls);
    c->ls_open = 0;
}

int sq_corpus_next(sq_corpus *c, const char **text, size_t *len, sq_err *err)
{
    if (c->failed)
        return sq_err_set(err, "corpus: read after an error");
    for (;;) {
        int r;
        if (c->rd) {
            r = c->rd->next(c->rd, text, len, err);
            if (r == 1)
                return 1;
            if (r < 0)
                break;
            close_member(c);
            continue;
        }
        if (c->in) {
            const char *member, *display;
            r = sq_corpus_input_next_member(c->in, &member, &display, err);
            if (r < 0)
                break;
            if (r == 1) {
                if (open_member(c, member, display, err) != 0)
                    break;
                continue;
            }
            sq_corpus_input_close(c->in);
            c->in = NULL;
            c->file_idx++;
            continue;
        }
        if (c->file_idx == c->n_files)
            return 0;
        c->in = sq_corpus_input_open(c->files[c->file_idx].path, err);
        if (!c->in)
            break;
    }
    c->failed = 1;
    return -1;
}

const char *sq_corpus_where(sq_corpus *c)
{
    if (c->rd)
        return c->rd->where(c->rd);
    return c->file_idx < c->n_files ? c->files[c->file_idx].path : "";
}

size_t sq_corpus_n_files(const sq_corpus *c) { return c->n_files; }

const sq_corpus_file_info *sq_corpus_files(const sq_corpus *c) { return c->files; }

void sq_corpus_close(sq_corpus *c)
{
    if (!c)
        return;
    close_member(c);
    sq_corpus_input_close(c->in);
    for (size_t i = 0; i < c->n_files && c->files; i++)
        free(c->files[i].path);
    free(c->files);
    free(c->field);
    free(c->pair_field);
    free(c);
}

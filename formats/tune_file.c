/* The tune file: JSON <-> sq_tune_file (tune_file.h). */
#include "tune_file.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"

const char *sq_tune_objective_name(sq_tune_objective o)
{
    return o == SQ_TUNE_LATENCY ? "latency" : "throughput";
}

int sq_tune_objective_parse(const char *s, sq_tune_objective *out)
{
    if (!strcmp(s, "throughput"))
        *out = SQ_TUNE_THROUGHPUT;
    else if (!strcmp(s, "latency"))
        *out = SQ_TUNE_LATENCY;
    else
        return -1;
    return 0;
}

int sq_tune_file_write(const char *path, const sq_tune_file *t, sq_err *err)
{
    char hash[17];
    snprintf(hash, sizeof hash, "%016" PRIx64, t->model_xxh64);
    json_t *root = json_pack(
        "{s:s, s:i, s:s, s:{s:s, s:I, s:s}, s:{s:s, s:i}, s:s, s:i, s:i, s:i, s:i,"
        " s:{s:f, s:f, s:f}, s:{s:s, s:i, s:i, s:f}}",
        "format", SQ_TUNE_FORMAT, "version", SQ_TUNE_VERSION, "squint_version",
        t->squint_version, "model", "path", t->model_path, "size", (json_int_t)t->model_size,
        "xxh64", hash, "cpu", "name", t->cpu_name, "usable_cores", t->usable_cores, "objective",
        sq_tune_objective_name(t->objective), "seq", t->seq, "instances", t->instances,
        "threads", t->threads, "batch", t->batch, "measured", "seq_per_s", t->seq_per_s,
        "p50_ms", t->p50_ms, "p95_ms", t->p95_ms, "search", "method", t->method,
        "points_measured", t->points_measured, "grid_points", t->grid_points, "budget_s",
        t->budget_s);
    if (!root)
        return sq_err_set(err, "%s: cannot build the tune JSON (a string is not UTF-8?)", path);
    sq_atomic_file af;
    int rc = -1;
    if (sq_atomic_open(&af, path, err) == 0) {
        if (json_dumpf(root, af.fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                        JSON_REAL_PRECISION(6)) != 0 ||
            fputc('\n', af.fp) == EOF || ferror(af.fp)) {
            sq_err_write_failed(err, path);
            sq_atomic_abort(&af);
        } else {
            rc = sq_atomic_commit(&af, err);
        }
    }
    json_decref(root);
    return rc;
}

/* A string member of at most cap - 1 bytes, no NUL, copied. */
static int get_str(const json_t *obj, const char *key, char *out, size_t cap, const char *what,
                   sq_err *err)
{
    const char *s;
    if (sq_json_str(obj, key, false, &s, what, err) != 0)
        return -1;
    size_t n = json_string_length(json_object_get(obj, key));
    if (n == 0 || n >= cap || strlen(s) != n)
        return sq_err_set(err, "%s: \"%s\" must be a string of 1 to %zu bytes without NUL", what,
                          key, cap - 1);
    memcpy(out, s, n + 1);
    return 0;
}

static int get_int(const json_t *obj, const char *key, int64_t lo, int64_t hi, int *out,
                   const char *what, sq_err *err)
{
    int64_t v;
    if (sq_json_int(obj, key, lo, hi, false, 0, &v, what, err) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A finite figure >= 0 (a time or a rate). */
static int get_figure(const json_t *obj, const char *key, double *out, const char *what,
                      sq_err *err)
{
    if (sq_json_real(obj, key, false, 0, out, what, err) != 0)
        return -1;
    if (*out < 0 || *out > 1e12)
        return sq_err_set(err, "%s: \"%s\" = %g is not a figure in [0, 1e12]", what, key, *out);
    return 0;
}

static const json_t *get_obj(const json_t *root, const char *key, const char *what, sq_err *err)
{
    const json_t *o = json_object_get(root, key);
    if (!json_is_object(o)) {
        sq_err_set(err, "%s: \"%s\" must be an object", what, key);
        return NULL;
    }
    return o;
}

static int parse_root(const json_t *root, const char *what, sq_tune_file *t, sq_err *err)
{
    char fmt[32], obj[16], hash[17];
    int version;
    if (get_str(root, "format", fmt, sizeof fmt, what, err) != 0)
        return -1;
    if (strcmp(fmt, SQ_TUNE_FORMAT) != 0)
        return sq_err_set(err, "%s: \"format\" is \"%s\", not \"%s\" (not a squint tune file)",
                          what, fmt, SQ_TUNE_FORMAT);
    if (get_int(root, "version", 1, 1000000, &version, what, err) != 0)
        return -1;
    if (version != SQ_TUNE_VERSION)
        return sq_err_set(err, "%s: tune file version %d; this squint reads version %d", what,
                          version, SQ_TUNE_VERSION);
    const json_t *m, *cpu, *meas, *search;
    if (get_str(root, "squint_version", t->squint_version, sizeof t->squint_version, what,
                err) != 0 ||
        !(m = get_obj(root, "model", what, err)) || !(cpu = get_obj(root, "cpu", what, err)) ||
        !(meas = get_obj(root, "measured", what, err)) ||
        !(search = get_obj(root, "search", what, err)))
        return -1;
    int64_t size;
    if (get_str(m, "path", t->model_path, sizeof t->model_path, what, err) != 0 ||
        sq_json_int(m, "size", 0, INT64_MAX, false, 0, &size, what, err) != 0 ||
        get_str(m, "xxh64", hash, sizeof hash, what, err) != 0)
        return -1;
    t->model_size = (uint64_t)size;
    if (strlen(hash) != 16 || strspn(hash, "0123456789abcdef") != 16)
        return sq_err_set(err, "%s: \"xxh64\" must be 16 lower-case hex digits", what);
    t->model_xxh64 = strtoull(hash, NULL, 16);
    if (get_str(cpu, "name", t->cpu_name, sizeof t->cpu_name, what, err) != 0 ||
        get_int(cpu, "usable_cores", 1, SQ_TUNE_MAX_CORES, &t->usable_cores, what, err) != 0 ||
        get_str(root, "objective", obj, sizeof obj, what, err) != 0)
        return -1;
    if (sq_tune_objective_parse(obj, &t->objective) != 0)
        return sq_err_set(err, "%s: \"objective\" must be \"throughput\" or \"latency\"", what);
    if (get_int(root, "seq", 2, 65536, &t->seq, what, err) != 0 ||
        get_int(root, "instances", 1, SQ_TUNE_MAX_CORES, &t->instances, what, err) != 0 ||
        get_int(root, "threads", 1, SQ_TUNE_MAX_CORES, &t->threads, what, err) != 0 ||
        get_int(root, "batch", 1, 4096, &t->batch, what, err) != 0)
        return -1;
    if ((int64_t)t->instances * t->threads > t->usable_cores)
        return sq_err_set(err, "%s: %d instances x %d threads exceed its %d usable cores", what,
                          t->instances, t->threads, t->usable_cores);
    if (get_figure(meas, "seq_per_s", &t->seq_per_s, what, err) != 0 ||
        get_figure(meas, "p50_ms", &t->p50_ms, what, err) != 0 ||
        get_figure(meas, "p95_ms", &t->p95_ms, what, err) != 0 ||
        get_str(search, "method", t->method, sizeof t->method, what, err) != 0 ||
        get_int(search, "points_measured", 0, 100000000, &t->points_measured, what, err) != 0 ||
        get_int(search, "grid_points", 0, 100000000, &t->grid_points, what, err) != 0 ||
        get_figure(search, "budget_s", &t->budget_s, what, err) != 0)
        return -1;
    if (strcmp(t->method, "search") != 0 && strcmp(t->method, "exhaustive") != 0)
        return sq_err_set(err, "%s: \"method\" must be \"search\" or \"exhaustive\"", what);
    return 0;
}

int sq_tune_file_parse(const char *buf, size_t len, const char *what, sq_tune_file *t, sq_err *err)
{
    memset(t, 0, sizeof *t);
    if (len > SQ_TUNE_MAX_FILE)
        return sq_err_set(err, "%s: %zu bytes; a tune file is at most %u", what, len,
                          SQ_TUNE_MAX_FILE);
    json_t *root = sq_json_parse_object(buf, len, what, err);
    if (!root)
        return -1;
    int rc = parse_root(root, what, t, err);
    json_decref(root);
    return rc;
}

int sq_tune_file_read(const char *path, sq_tune_file *t, sq_err *err)
{
    char *buf;
    size_t len;
    memset(t, 0, sizeof *t);
    if (sq_read_regular_file(path, SQ_TUNE_MAX_FILE, &buf, &len, err) != 0)
        return -1;
    int rc = sq_tune_file_parse(buf, len, path, t, err);
    free(buf);
    return rc;
}

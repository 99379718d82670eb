/* squint diff: what changed between two squint files (two builds of a model,
 * an int8 and an int4 build, two calibration runs). Exit 0 when they hold
 * the same model, 1 when they differ, 2 on error.
 *
 * The comparison is collected into one JSON document, which is printed as is
 * (--json) or rendered as text, so both outputs always agree. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "container.h"
#include "dequant.h"
#include "yaml_tree.h"

static const char *const help =
    "usage: squint diff A B [--json] [--tolerance X] [--ignore-metadata]\n"
    "\n"
    "Compare two squint files (.sqm models or .sqc statistics, plain or zstd).\n"
    "Reports metadata differences (by key path), tensors only in A or only in B,\n"
    "dtype and shape changes, and for every pair of numeric tensors the largest and\n"
    "mean absolute difference and the SQNR of B relative to A,\n"
    "10 log10(sum a^2 / sum (a-b)^2) dB ('inf' when equal). Packed int8 / int4\n"
    "weights are compared after dequantization with their scales, so an int8 build\n"
    "and an int4 build (or an fp32 one) of the same model can be compared.\n"
    "\n"
    "Exits 0 when the files hold the same model (identical content, or every tensor\n"
    "equal within the tolerance and the same metadata), 1 when they differ, 2 on\n"
    "error, a damaged file included (every checksum is checked first).\n"
    "\n"
    "options:\n"
    "  --tolerance X       largest absolute difference counted as equal (default 0)\n"
    "  --ignore-metadata   compare tensors only\n"
    "  --json              machine-readable output\n"
    "\n"
    "example:\n"
    "  squint diff old.sqm new.sqm\n";

#define MAX_META_DIFFS 10000 /* recorded; the text output shows the first 20 */
#define TEXT_META_DIFFS 20

/* ---- metadata: differences by key path ---- */

static json_t *node_value(const yt_node *n)
{
    if (!n)
        return json_null();
    if (yt_kind_of(n) == YT_SCALAR)
        return json_string(yt_scalar(n));
    return json_string(yt_kind_of(n) == YT_MAPPING ? "<mapping>" : "<sequence>");
}

static void add_meta_diff(json_t *out, const char *path, const yt_node *a, const yt_node *b)
{
    if (json_array_size(out) < MAX_META_DIFFS)
        json_array_append_new(out, json_pack("{s:s,s:o,s:o}", "path", path[0] ? path : "(root)",
                                             "a", node_value(a), "b", node_value(b)));
}

static void meta_diff(const yt_node *a, const yt_node *b, char *path, size_t len, size_t cap,
                      json_t *out)
{
    if (!a || !b || yt_kind_of(a) != yt_kind_of(b)) {
        if (a || b)
            add_meta_diff(out, path, a, b);
        return;
    }
    switch (yt_kind_of(a)) {
    case YT_SCALAR:
        if (strcmp(yt_scalar(a), yt_scalar(b)) != 0)
            add_meta_diff(out, path, a, b);
        return;
    case YT_SEQUENCE: {
        size_t n = yt_len(a) > yt_len(b) ? yt_len(a) : yt_len(b);
        for (size_t i = 0; i < n; i++) {
            /* Items with a name (the linears) are labelled by it. */
            const char *name = yt_scalar(yt_get(yt_at(a, i) ? yt_at(a, i) : yt_at(b, i), "name"));
            if (name)
                snprintf(path + len, cap - len, "[%s]", name);
            else
                snprintf(path + len, cap - len, "[%zu]", i);
            meta_diff(yt_at(a, i), yt_at(b, i), path, strlen(path), cap, out);
        }
        break;
    }
    case YT_MAPPING:
        /* A's keys in A's order, then the keys only B has. */
        for (int side = 0; side < 2; side++) {
            const yt_node *m = side ? b : a, *other = side ? a : b;
            for (size_t i = 0; i < yt_len(m); i++) {
                const char *key = yt_scalar(yt_key_at(m, i));
                if (side && yt_get(other, key))
                    continue;
                snprintf(path + len, cap - len, "%s%s", len ? "." : "", key);
                const yt_node *va = side ? NULL : yt_value_at(m, i);
                const yt_node *vb = side ? yt_value_at(m, i) : yt_get(other, key);
                meta_diff(va, vb, path, strlen(path), cap, out);
            }
        }
        break;
    }
    path[len] = '\0';
}

/* Differences between the two metadata texts; a text that does not parse is
 * compared as a whole. */
static json_t *metadata_diff(const sq_container *a, const sq_container *b)
{
    json_t *out = json_array();
    if (a->metadata_len == b->metadata_len &&
        memcmp(a->metadata, b->metadata, a->metadata_len) == 0)
        return out;
    sq_err err;
    yt_doc *da = yt_parse_buffer(a->metadata, a->metadata_len, "A", &err);
    yt_doc *db = da ? yt_parse_buffer(b->metadata, b->metadata_len, "B", &err) : NULL;
    if (da && db) {
        char path[4096] = "";
        meta_diff(yt_root(da), yt_root(db), path, 0, sizeof path, out);
    }
    if (json_array_size(out) == 0) /* unparsable, or equal as YAML but not as text */
        json_array_append_new(out, json_pack("{s:s,s:s,s:s}", "path", "(text)", "a",
                                             a->metadata, "b", b->metadata));
    yt_free(da);
    yt_free(db);
    return out;
}

/* ---- tensors ---- */

static json_t *shape_json(int ndim, const uint64_t *dims)
{
    json_t *s = json_array();
    for (int i = 0; i < ndim; i++)
        json_array_append_new(s, json_integer((json_int_t)dims[i]));
    return s;
}

static bool same_bytes(const sq_container_tensor *x, const sq_container_tensor *y)
{
    return x->dtype == y->dtype && x->ndim == y->ndim &&
           memcmp(x->dims, y->dims, sizeof x->dims) == 0 && x->size == y->size &&
           x->xxh64 == y->xxh64 && memcmp(x->data, y->data, (size_t)x->size) == 0;
}

/* Identical stored bytes, and identical scale companions (which change the
 * values of a packed or int8 tensor without changing its bytes). */
static bool same_values(const sq_container *a, const sq_container_tensor *x,
                        const sq_container *b, const sq_container_tensor *y)
{
    if (!same_bytes(x, y))
        return false;
    const sq_container_tensor *sx = sq_dequant_scale_of(a, x), *sy = sq_dequant_scale_of(b, y);
    return (!sx && !sy) || (sx && sy && same_bytes(sx, sy));
}

typedef struct diff_stats {
    double max_abs, mean_abs, sqnr_db;
} diff_stats;

static diff_stats compare_values(const float *a, const float *b, size_t n)
{
    double max = 0, sum = 0, sig = 0, noise = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)b[i] - (double)a[i];
        double ad = fabs(d);
        if (ad > max || isnan(ad))
            max = ad;
        sum += ad;
        sig += (double)a[i] * a[i];
        noise += d * d;
    }
    diff_stats s = {max, n ? sum / (double)n : 0, INFINITY};
    if (noise > 0)
        s.sqnr_db = sig > 0 ? 10 * log10(sig / noise) : -INFINITY;
    else if (isnan(noise))
        s.sqnr_db = NAN;
    return s;
}

static json_t *db_json(double db)
{
    if (isinf(db))
        return json_string(db > 0 ? "inf" : "-inf");
    return isnan(db) ? json_string("nan") : json_real(db);
}

/* Compare one tensor present in both files: fills o with the dtypes, shapes,
 * "status" (equal, differs, not comparable) and the difference statistics. */
static bool compare_tensor(const sq_container *a, const sq_container_tensor *x,
                           const sq_container *b, const sq_container_tensor *y, double tol,
                           json_t *o)
{
    json_object_set_new(o, "name", json_string(x->name));
    json_object_set_new(o, "dtype_a", json_string(sq_cdtype_name(x->dtype)));
    json_object_set_new(o, "dtype_b", json_string(sq_cdtype_name(y->dtype)));
    json_object_set_new(o, "shape_a", shape_json(x->ndim, x->dims));
    json_object_set_new(o, "shape_b", shape_json(y->ndim, y->dims));
    if (same_values(a, x, b, y)) {
        json_object_set_new(o, "status", json_string("equal"));
        json_object_set_new(o, "max_abs", json_real(0));
        json_object_set_new(o, "mean_abs", json_real(0));
        json_object_set_new(o, "sqnr_db", db_json(INFINITY));
        return true;
    }
    sq_dequant da, db;
    sq_err err;
    const char *why = NULL;
    if (sq_dequant_tensor(a, x->name, &da, &err) != 0) {
        why = err.msg;
    } else if (sq_dequant_tensor(b, y->name, &db, &err) != 0) {
        why = err.msg;
        sq_dequant_free(&da);
    } else if (da.ndim != db.ndim || memcmp(da.dims, db.dims, sizeof da.dims) != 0) {
        why = "different shapes";
        sq_dequant_free(&da);
        sq_dequant_free(&db);
    }
    if (why) {
        json_object_set_new(o, "status", json_string("not comparable"));
        json_object_set_new(o, "reason", json_string(why));
        return false;
    }
    diff_stats s = compare_values(da.data, db.data, da.count);
    sq_dequant_free(&da);
    sq_dequant_free(&db);
    bool equal = s.max_abs <= tol; /* false for NaN */
    json_object_set_new(o, "status", json_string(equal ? "equal" : "differs"));
    json_object_set_new(o, "max_abs", isnan(s.max_abs) ? json_string("nan") : json_real(s.max_abs));
    json_object_set_new(o, "mean_abs",
                        isnan(s.mean_abs) ? json_string("nan") : json_real(s.mean_abs));
    json_object_set_new(o, "sqnr_db", db_json(s.sqnr_db));
    return equal;
}

static json_t *tensor_brief(const sq_container_tensor *t)
{
    return json_pack("{s:s,s:s,s:o}", "name", t->name, "dtype", sq_cdtype_name(t->dtype), "shape",
                     shape_json(t->ndim, t->dims));
}

/* Collect the whole comparison; *same says whether A and B hold the same model. */
static json_t *diff_files(const char *pa, const sq_container *a, const char *pb,
                          const sq_container *b, double tol, bool ignore_meta, bool *same)
{
    char ka[8], kb[8];
    json_t *root = json_object(), *only_a = json_array(), *only_b = json_array();
    json_t *tensors = json_array();
    json_object_set_new(root, "a", json_pack("{s:s,s:s,s:I}", "file", pa, "kind",
                                             sq_kind_describe(a->kind, ka), "tensors",
                                             (json_int_t)a->n_tensors));
    json_object_set_new(root, "b", json_pack("{s:s,s:s,s:I}", "file", pb, "kind",
                                             sq_kind_describe(b->kind, kb), "tensors",
                                             (json_int_t)b->n_tensors));
    json_t *meta = metadata_diff(a, b);
    bool identical = a->kind == b->kind && json_array_size(meta) == 0 &&
                     a->n_tensors == b->n_tensors;
    *same = a->kind == b->kind && (ignore_meta || json_array_size(meta) == 0);
    size_t n_equal = 0, n_differ = 0;
    for (size_t i = 0; i < a->n_tensors; i++) {
        const sq_container_tensor *x = &a->tensors[i], *y = sq_container_find(b, x->name);
        if (!y) {
            json_array_append_new(only_a, tensor_brief(x));
            continue;
        }
        json_t *o = json_object();
        bool eq = compare_tensor(a, x, b, y, tol, o);
        identical = identical && y == &b->tensors[i] && same_bytes(x, y);
        n_equal += eq;
        n_differ += !eq;
        json_array_append_new(tensors, o);
    }
    for (size_t i = 0; i < b->n_tensors; i++)
        if (!sq_container_find(a, b->tensors[i].name))
            json_array_append_new(only_b, tensor_brief(&b->tensors[i]));
    identical = identical && json_array_size(only_a) == 0 && json_array_size(only_b) == 0;
    *same = identical || (*same && n_differ == 0 && json_array_size(only_a) == 0 &&
                          json_array_size(only_b) == 0);
    json_object_set_new(root, "tolerance", json_real(tol));
    json_object_set_new(root, "identical", json_boolean(identical));
    json_object_set_new(root, "same", json_boolean(*same));
    json_object_set_new(root, "kind_differs", json_boolean(a->kind != b->kind));
    json_object_set_new(root, "metadata", meta);
    json_object_set_new(root, "only_in_a", only_a);
    json_object_set_new(root, "only_in_b", only_b);
    json_object_set_new(root, "tensors_equal", json_integer((json_int_t)n_equal));
    json_object_set_new(root, "tensors_differ", json_integer((json_int_t)n_differ));
    json_object_set_new(root, "tensors", tensors);
    return root;
}

/* ---- text rendering ---- */

static void print_shape(const json_t *s, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (size_t i = 0; i < json_array_size(s) && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "",
                                (long long)json_integer_value(json_array_get(s, i)));
    if (len < n)
        snprintf(buf + len, n - len, "]");
}

/* One line of a metadata value: scalars as is (multi-line ones by their
 * first line that differs from the other side's), cut to 60 characters. */
static void meta_value_text(const json_t *v, const json_t *other, char *buf, size_t n)
{
    if (json_is_null(v)) {
        snprintf(buf, n, "(absent)");
        return;
    }
    const char *s = json_string_value(v);
    const char *o = json_is_string(other) ? json_string_value(other) : "";
    int line = 1;
    if (strchr(s, '\n')) { /* skip the common leading lines */
        while (*s && *o) {
            const char *es = strchrnul(s, '\n'), *eo = strchrnul(o, '\n');
            if (es - s != eo - o || memcmp(s, o, (size_t)(es - s)) != 0 || !*es || !*eo)
                break;
            s = es + 1;
            o = eo + 1;
            line++;
        }
    }
    int len = (int)(strchrnul(s, '\n') - s);
    bool more = len > 60 || s[len] == '\n';
    if (line > 1 || s[len] == '\n')
        snprintf(buf, n, "line %d: \"%.*s\"%s", line, len > 60 ? 60 : len, s, more ? "..." : "");
    else
        snprintf(buf, n, "\"%.*s\"%s", len > 60 ? 60 : len, s, more ? "..." : "");
}

static void fmt_num(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else
        snprintf(buf, n, "%.4g", json_real_value(v));
}

static void print_text(const json_t *r)
{
    const json_t *a = json_object_get(r, "a"), *b = json_object_get(r, "b");
    printf("A: %s (%s, %lld tensors)\nB: %s (%s, %lld tensors)\n",
           json_string_value(json_object_get(a, "file")),
           json_string_value(json_object_get(a, "kind")),
           (long long)json_integer_value(json_object_get(a, "tensors")),
           json_string_value(json_object_get(b, "file")),
           json_string_value(json_object_get(b, "kind")),
           (long long)json_integer_value(json_object_get(b, "tensors")));
    if (json_is_true(json_object_get(r, "identical"))) {
        printf("identical\n");
        return;
    }
    const json_t *meta = json_object_get(r, "metadata");
    if (json_array_size(meta))
        printf("\nmetadata: %zu difference(s)\n", json_array_size(meta));
    else
        printf("\nmetadata: same\n");
    for (size_t i = 0; i < json_array_size(meta) && i < TEXT_META_DIFFS; i++) {
        const json_t *d = json_array_get(meta, i);
        const json_t *va = json_object_get(d, "a"), *vb = json_object_get(d, "b");
        char ta[128], tb[128];
        meta_value_text(va, vb, ta, sizeof ta);
        meta_value_text(vb, va, tb, sizeof tb);
        printf("  %s: %s -> %s\n", json_string_value(json_object_get(d, "path")), ta, tb);
    }
    if (json_array_size(meta) > TEXT_META_DIFFS)
        printf("  ... and %zu more (see --json)\n", json_array_size(meta) - TEXT_META_DIFFS);

    static const char *const only[2] = {"only_in_a", "only_in_b"};
    for (int s = 0; s < 2; s++) {
        const json_t *l = json_object_get(r, only[s]);
        for (size_t i = 0; i < json_array_size(l); i++) {
            const json_t *t = json_array_get(l, i);
            char sh[96];
            print_shape(json_object_get(t, "shape"), sh, sizeof sh);
            printf("%s %s (%s %s)\n", s ? "only in B:" : "only in A:",
                   json_string_value(json_object_get(t, "name")),
                   json_string_value(json_object_get(t, "dtype")), sh);
        }
    }

    const json_t *ts = json_object_get(r, "tensors");
    printf("\ntensors: %lld equal, %lld differ (tolerance %g)\n",
           (long long)json_integer_value(json_object_get(r, "tensors_equal")),
           (long long)json_integer_value(json_object_get(r, "tensors_differ")),
           json_real_value(json_object_get(r, "tolerance")));
    bool header = false;
    for (size_t i = 0; i < json_array_size(ts); i++) {
        const json_t *t = json_array_get(ts, i);
        const char *st = json_string_value(json_object_get(t, "status"));
        const char *da = json_string_value(json_object_get(t, "dtype_a"));
        const char *db = json_string_value(json_object_get(t, "dtype_b"));
        char sa[96], sb[96], dt[48], sh[200];
        print_shape(json_object_get(t, "shape_a"), sa, sizeof sa);
        print_shape(json_object_get(t, "shape_b"), sb, sizeof sb);
        bool changed = strcmp(da, db) != 0 || strcmp(sa, sb) != 0;
        if (!strcmp(st, "equal") && !changed)
            continue;
        if (!header) {
            printf("%-32s %-26s %-22s %10s %10s %9s\n", "tensor", "dtype", "shape", "max|a-b|",
                   "mean|a-b|", "SQNR dB");
            header = true;
        }
        snprintf(dt, sizeof dt, strcmp(da, db) ? "%s -> %s" : "%s", da, db);
        snprintf(sh, sizeof sh, strcmp(sa, sb) ? "%s -> %s" : "%s", sa, sb);
        if (!strcmp(st, "not comparable")) {
            printf("%-32s %-26s %-22s  not comparable: %s\n",
                   json_string_value(json_object_get(t, "name")), dt, sh,
                   json_string_value(json_object_get(t, "reason")));
            continue;
        }
        char mx[32], mn[32], q[32];
        fmt_num(json_object_get(t, "max_abs"), mx, sizeof mx);
        fmt_num(json_object_get(t, "mean_abs"), mn, sizeof mn);
        fmt_num(json_object_get(t, "sqnr_db"), q, sizeof q);
        printf("%-32s %-26s %-22s %10s %10s %9s\n", json_string_value(json_object_get(t, "name")),
               dt, sh, mx, mn, q);
    }
    printf("\n%s\n", json_is_true(json_object_get(r, "same")) ? "same model" : "differ");
}

int cmd_diff(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, 0, 'j'},
                                         {"tolerance", required_argument, 0, 't'},
                                         {"ignore-metadata", no_argument, 0, 'm'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool json = false, ignore_meta = false;
    double tol = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'm': ignore_meta = true; break;
        case 't': {
            char *end;
            tol = strtod(optarg, &end);
            if (end == optarg || *end || !(tol >= 0) || isinf(tol))
                return cli_usage_error("diff", "--tolerance must be a finite number >= 0");
            break;
        }
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("diff", "invalid option");
        }
    }
    if (optind != argc - 2)
        return cli_usage_error("diff", "expected two files A B");
    const char *pa = argv[optind], *pb = argv[optind + 1];
    sq_container a, b;
    sq_err err;
    if (sq_container_open(pa, 0, &a, &err) != 0)
        return cli_fail("diff", &err);
    if (sq_container_open(pb, 0, &b, &err) != 0) {
        sq_container_close(&a);
        return cli_fail("diff", &err);
    }
    /* A damaged file is not compared: a corrupt tensor would read as a
     * difference, a bad trailer or padding as nothing (`squint verify` names
     * the part). */
    if (sq_container_verify(&a, &err) != 0 || sq_container_verify(&b, &err) != 0) {
        sq_container_close(&a);
        sq_container_close(&b);
        sq_err_prefix(&err, "damaged file (run squint verify)");
        return cli_fail("diff", &err);
    }
    bool same = false;
    json_t *r = diff_files(pa, &a, pb, &b, tol, ignore_meta, &same);
    if (json) {
        json_dumpf(r, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        print_text(r);
    }
    json_decref(r);
    sq_container_close(&a);
    sq_container_close(&b);
    return same ? SQ_EXIT_OK : SQ_EXIT_FAIL;
}

/* squint inspect on a model file (.sqm): what it holds, how big each part
 * is, the per-linear quantization choices, and whether it is intact. The
 * report is built as one JSON document and printed as is (--json) or as text. */
#include "inspect_sqm.h"
#include "sqm_verify.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "qtype.h"
#include "sqm_class_head.h"
#include "sqm_schema.h"
#include "yaml_tree.h"

/* ---- metadata ---- */

/* A YAML node as JSON: plain scalars that read as integers, numbers or
 * booleans become those; other scalars stay strings. */
static json_t *yaml_to_json(const yt_node *n)
{
    if (!n || yt_is_null(n))
        return json_null();
    if (yt_kind_of(n) == YT_SCALAR) {
        sq_err err;
        int64_t i;
        double d;
        bool b;
        if (yt_is_plain(n) && yt_as_int64(n, "", INT64_MIN, INT64_MAX, &i, &err) == 0)
            return json_integer((json_int_t)i);
        if (yt_is_plain(n) && yt_as_double(n, "", -1e308, 1e308, &d, &err) == 0)
            return json_real(d);
        if (yt_is_plain(n) && yt_as_bool(n, "", &b, &err) == 0)
            return json_boolean(b);
        return json_string(yt_scalar(n));
    }
    json_t *o = yt_kind_of(n) == YT_MAPPING ? json_object() : json_array();
    for (size_t i = 0; i < yt_len(n); i++) {
        if (yt_kind_of(n) == YT_MAPPING)
            json_object_set_new(o, yt_scalar(yt_key_at(n, i)), yaml_to_json(yt_value_at(n, i)));
        else
            json_array_append_new(o, yaml_to_json(yt_at(n, i)));
    }
    return o;
}

/* The metadata minus the long parts (recipe: first 3 lines; linears: per
 * layer below). */
static json_t *metadata_summary(const yt_node *root)
{
    static const char *const keys[] = {"format", "format_version", "tool", "architecture",
                                       "config", "labels", "pooling", "normalize", "max_seq",
                                       "embeddings_type", "activation_guard", "attention", "classifier_type", "tokenizer",
                                       "source", "calibration"};
    json_t *m = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (yt_get(root, keys[i]))
            json_object_set_new(m, keys[i], yaml_to_json(yt_get(root, keys[i])));
    const char *recipe = yt_scalar(yt_get(root, "recipe"));
    if (recipe) {
        const char *end = recipe;
        for (int l = 0; l < 3 && *end; l++)
            end = *strchrnul(end, '\n') ? strchrnul(end, '\n') + 1 : strchrnul(end, '\n');
        json_object_set_new(m, "recipe_head", json_stringn(recipe, (size_t)(end - recipe)));
    }
    return m;
}

/* ---- tensors ---- */

static const char *qtype_class(unsigned dtype)
{
    int qt = sq_qtype_from_cdtype(dtype);
    if (qt >= 0)
        return sq_qtype_get((sq_qtype)qt)->label;
    return dtype == SQ_CDT_F32 ? "fp32" : dtype == SQ_CDT_I8 ? "int8" : "other";
}

static json_t *shape_json(const sq_container_tensor *t)
{
    json_t *s = json_array();
    for (int i = 0; i < t->ndim; i++)
        json_array_append_new(s, json_integer((json_int_t)t->dims[i]));
    return s;
}

static json_t *bytes_by_qtype(const sq_container *c)
{
    static const char *const classes[] = {"fp32", "int8", "int4", "other"};
    json_int_t sum[4] = {0}, total = 0;
    for (size_t i = 0; i < c->n_tensors; i++) {
        const char *q = qtype_class(c->tensors[i].dtype);
        for (int k = 0; k < 4; k++)
            if (!strcmp(q, classes[k]))
                sum[k] += (json_int_t)c->tensors[i].size;
        total += (json_int_t)c->tensors[i].size;
    }
    json_t *o = json_object();
    for (int k = 0; k < 4; k++)
        json_object_set_new(o, classes[k], json_integer(sum[k]));
    json_object_set_new(o, "total", json_integer(total));
    return o;
}

static json_t *tensor_list(const sq_container *c)
{
    json_t *l = json_array();
    for (size_t i = 0; i < c->n_tensors; i++) {
        const sq_container_tensor *t = &c->tensors[i];
        char h[17];
        snprintf(h, sizeof h, "%016" PRIx64, t->xxh64);
        json_array_append_new(l, json_pack("{s:s,s:s,s:o,s:I,s:I,s:s}", "name", t->name, "dtype",
                                           sq_cdtype_name(t->dtype), "shape", shape_json(t),
                                           "bytes", (json_int_t)t->size, "offset",
                                           (json_int_t)t->offset, "xxh64", h));
    }
    return l;
}

/* The metadata entry of linear `name` in the `linears` list, or NULL. */
static const yt_node *linear_entry(const yt_node *linears, const char *name)
{
    for (size_t i = 0; i < yt_len(linears); i++) {
        const char *n = yt_scalar(yt_get(yt_at(linears, i), "name"));
        if (n && !strcmp(n, name))
            return yt_at(linears, i);
    }
    return NULL;
}

/* The 4-byte value of tensor `name`, when it holds exactly one of that dtype. */
static bool scalar_of(const sq_container *c, const char *name, unsigned dtype, void *out)
{
    const sq_container_tensor *t = sq_container_find(c, name);
    if (!t || t->dtype != dtype || t->size != 4)
        return false;
    memcpy(out, t->data, 4);
    return true;
}

/* One row per linear (a tensor the schema names a linear's weight, of an
 * f32 or packed dtype), in file order, with the activation scale from its
 * tensor and the choices from the metadata. */
static json_t *linears_table(const sq_container *c, const yt_node *linears)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < c->n_tensors; i++) {
        const sq_container_tensor *t = &c->tensors[i];
        int l;
        sq_linear_kind k;
        int qt = sq_sqm_linear_qtype(t->dtype);
        if (sq_sqm_rule_of(t->name, NULL, &l, &k) != &sq_sqm_tensor_rules[SQ_ROW_LIN_WEIGHT] ||
            t->ndim != 2 || qt < 0)
            continue;
        if (l == SQ_SQM_CLASSIFIER && qt == SQ_QT_F32)
            continue; /* an untied fp32 classifier is not a linear of the table */
        char name[SQ_CONTAINER_MAX_NAME + 16];
        sq_sqm_linear_prefix(name, sizeof name, l, k);
        json_t *row = json_pack("{s:s,s:s,s:o}", "name", name, "type",
                                sq_qtype_get((sq_qtype)qt)->name, "shape", shape_json(t));
        char tn[SQ_CONTAINER_MAX_NAME + 16];
        int32_t z = 0;
        float a;
        sq_sqm_tensor_name(tn, sizeof tn, SQ_ROW_LIN_ACT_ZERO, l, k);
        scalar_of(c, tn, SQ_CDT_I32, &z);
        sq_sqm_tensor_name(tn, sizeof tn, SQ_ROW_LIN_ACT_SCALE, l, k);
        if (scalar_of(c, tn, SQ_CDT_F32, &a)) {
            /* codes -127..127 stand for a * (q + z): the range [a (z - 127), a (z + 127)] */
            json_object_set_new(row, "act_scale", json_real(a));
            json_object_set_new(row, "act_zero", json_integer(z));
            /* in double: a forged act_zero near INT32_MIN / MAX must not overflow */
            json_object_set_new(row, "act_min", json_real((double)a * ((double)z - 127)));
            json_object_set_new(row, "act_amax", json_real((double)a * (127 + (double)z)));
        }
        sq_sqm_tensor_name(tn, sizeof tn, SQ_ROW_LIN_SMOOTH, l, k);
        json_object_set_new(row, "smooth_tensor", json_boolean(sq_container_find(c, tn)));
        /* Outlier channels computed in fp32 (SQM.md 6.4): the count and which. */
        sq_sqm_tensor_name(tn, sizeof tn, SQ_ROW_LIN_OUTLIER_INDEX, l, k);
        const sq_container_tensor *oi = sq_container_find(c, tn);
        json_t *outl = json_array();
        if (oi && oi->dtype == SQ_CDT_I32 && oi->ndim == 1 && oi->size == oi->dims[0] * 4)
            for (uint64_t o = 0; o < oi->dims[0]; o++) {
                int32_t v;
                memcpy(&v, (const char *)oi->data + o * 4, 4);
                json_array_append_new(outl, json_integer(v));
            }
        json_object_set_new(row, "outlier_channels", outl);
        const yt_node *e = linear_entry(linears, name);
        /* Metadata key -> report key ("err" is what quantize wrote before
         * SQM.md named it err_fp). */
        static const char *const keys[][2] = {{"smooth", "smooth"},
                                              {"alpha", "alpha"},
                                              {"act_amax", "meta_act_amax"},
                                              {"err", "err_fp"},
                                              {"err_fp", "err_fp"},
                                              {"err_nosmooth", "err_nosmooth"}};
        for (size_t k = 0; e && k < sizeof keys / sizeof *keys; k++)
            if (yt_get(e, keys[k][0]))
                json_object_set_new(row, keys[k][1], yaml_to_json(yt_get(e, keys[k][0])));
        json_array_append_new(rows, row);
    }
    return rows;
}

static json_t *verify_json(const sq_container *c)
{
    sq_verify_report r;
    sq_verify_container(c, &r);
    if (r.status == SQ_EXIT_OK)
        return json_pack("{s:s}", "status", "ok");
    json_t *o = json_pack("{s:s,s:s,s:s}", "status", "damaged", "damaged", r.part, "message",
                          r.err.msg);
    if (r.tensor[0])
        json_object_set_new(o, "tensor", json_string(r.tensor));
    return o;
}

/* The stored classification head (SQM.md section 9): labels, C x D,
 * provenance; {"error"} when it does not read; NULL when there is none. */
static json_t *class_head_json(const sq_container *c)
{
    if (!sq_sqm_has_class_head(c))
        return NULL;
    sq_sqm_class_head ch;
    sq_err err;
    if (sq_sqm_class_head_read(c, &ch, &err) < 0)
        return json_pack("{s:s}", "error", err.msg);
    json_t *labels = json_array();
    for (int k = 0; k < ch.classes; k++)
        json_array_append_new(labels, json_string(ch.labels[k]));
    json_t *o = json_pack("{s:s, s:i, s:i, s:o, s:b}", "kind", "softmax-linear", "classes",
                          ch.classes, "dim", ch.dim, "labels", labels, "normalized",
                          ch.normalized);
    if (ch.source)
        json_object_set_new(o, "source", json_string(ch.source));
    if (ch.has_xxh64) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, ch.xxh64);
        json_object_set_new(o, "xxh64", json_string(hex));
    }
    sq_sqm_class_head_free(&ch);
    return o;
}

static json_t *build_report(const char *path, const sq_container *c, bool list_tensors)
{
    char kb[8];
    struct stat st;
    json_t *r = json_object();
    json_object_set_new(r, "file", json_string(path));
    json_object_set_new(r, "kind", json_string(sq_kind_describe(c->kind, kb)));
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", c->version_major, c->version_minor);
    json_object_set_new(r, "container_version", json_string(ver));
    json_object_set_new(r, "size", json_integer(stat(path, &st) == 0 ? st.st_size : -1));
    json_object_set_new(r, "compressed", json_boolean(c->compressed));
    json_object_set_new(r, "tensor_count", json_integer((json_int_t)c->n_tensors));
    sq_err err;
    yt_doc *doc = yt_parse_buffer(c->metadata, c->metadata_len, "metadata", &err);
    const yt_node *root = doc ? yt_root(doc) : NULL;
    if (doc)
        json_object_set_new(r, "metadata", metadata_summary(root));
    else
        json_object_set_new(r, "metadata_error", json_string(err.msg));
    json_t *ch = class_head_json(c);
    if (ch)
        json_object_set_new(r, "class_head", ch);
    json_object_set_new(r, "bytes", bytes_by_qtype(c));
    json_object_set_new(r, "linears", linears_table(c, yt_get(root, "linears")));
    json_object_set_new(r, "verify", verify_json(c));
    if (list_tensors)
        json_object_set_new(r, "tensors", tensor_list(c));
    yt_free(doc);
    return r;
}

/* ---- text ---- */

/* Text of a JSON scalar (in a rotating static buffer: several per printf). */
static const char *text_of(const json_t *v)
{
    static char bufs[8][64];
    static int next;
    char *b = bufs[next++ % 8];
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v))
        snprintf(b, 64, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(b, 64, "%.6g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(b, 64, "%s", json_is_true(v) ? "true" : "false");
    else
        snprintf(b, 64, "%s", json_is_null(v) ? "null" : "?");
    return b;
}

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v ? text_of(v) : "?";
}

/* "k v, k v, ..." of a flat mapping (nested values are skipped). */
static void print_flat(const char *label, const json_t *m)
{
    const char *k;
    json_t *v;
    int first = 1;
    printf("%-13s", label);
    json_object_foreach((json_t *)m, k, v)
    {
        if (!json_is_object(v) && !json_is_array(v)) {
            printf("%s%s %s", first ? "" : ", ", k, text_of(v));
            first = 0;
        }
    }
    printf("\n");
}

static void print_metadata(const json_t *m)
{
    printf("format:      %s %s, written by %s\n", str(m, "format"), str(m, "format_version"),
           str(m, "tool"));
    printf("model:       %s\n", str(m, "architecture"));
    if (json_object_get(m, "config"))
        print_flat("config:", json_object_get(m, "config"));
    if (json_object_get(m, "tokenizer"))
        print_flat("tokenizer:", json_object_get(m, "tokenizer"));
    const json_t *cfg = json_object_get(m, "config"), *labels = json_object_get(m, "labels");
    const bool llama = json_object_get(m, "architecture") && !strcmp(str(m, "architecture"), "llama");
    const json_t *nl = cfg ? json_object_get(cfg, "num_labels") : NULL;
    if (nl && json_integer_value(nl) > 0) { /* a sequence classifier (SQM.md 6.11) */
        printf("classifier:  %lld label%s, scores %s:", (long long)json_integer_value(nl),
               json_integer_value(nl) == 1 ? "" : "s", str(cfg, "score_activation"));
        size_t n = json_array_size(labels), shown = n > 16 ? 16 : n;
        for (size_t i = 0; i < shown; i++)
            printf("%s %s", i ? "," : "", json_string_value(json_array_get(labels, i)));
        if (shown < n)
            printf(", ... (%zu more)", n - shown);
        printf("  ([CLS] pooler, max_seq %s; pairs: [CLS] query [SEP] document [SEP])\n",
               str(m, "max_seq"));
    } else if (!llama || json_object_get(m, "pooling")) { /* llama: a causal embedding model (10.8) */
        printf("embedding:   pooling %s, normalize %s, max_seq %s%s\n", str(m, "pooling"),
               str(m, "normalize"), str(m, "max_seq"),
               llama ? " (a causal embedding model: the last token's final hidden state)" : "");
    }
    /* Files written before the guard existed clip (the loader's default). */
    printf("activations: %s\n",
           json_object_get(m, "activation_guard") && !strcmp(str(m, "activation_guard"), "row")
               ? "guard row (an input row beyond a linear's static range gets its own step)"
               : "clip (values beyond a linear's static range are clipped)");
    if (json_object_get(m, "attention") && !strcmp(str(m, "attention"), "bf16"))
        printf("attention:   bf16 matmuls (Q.K^T and P.V with bf16 operands, f32 sums; "
               "softmax f32)\n");
    else if (json_object_get(m, "attention") && !strcmp(str(m, "attention"), "int8"))
        printf("attention:   int8 matmuls (Q, K, V quantized per head dynamically, %s; 8-bit "
               "probabilities; SQM.md 6.5)\n",
               llama ? "V per token (causal)" : "V per channel");
    if (llama && json_object_get(m, "embeddings_type") && !strcmp(str(m, "embeddings_type"), "int8"))
        printf("lm head:     none (a causal embedding model: int8 token rows, one scale per "
               "row; SQM.md 10.8)\n");
    else if (llama)
        printf("lm head:     %s\n",
               json_object_get(m, "classifier_type") && !strcmp(str(m, "classifier_type"), "int8")
                   ? "int8 (packed \"classifier\": per-channel weights, per-token int8 "
                     "activations; SQM.md 10.6)"
                   : "fp32");
    const json_t *src = json_object_get(m, "source");
    if (src)
        printf("source:      %s (digest %s)\n", str(src, "path"), str(src, "digest"));
    const json_t *cal = json_object_get(m, "calibration");
    if (cal) {
        const json_t *obs = json_object_get(cal, "observer");
        printf("calibration: digest %s, observer %s, %s samples, seed %s, max_seq %s, corpus",
               str(cal, "digest"), obs ? str(obs, "method") : "?", str(cal, "samples"),
               str(cal, "seed"), str(cal, "max_seq"));
        const json_t *corpus = json_object_get(cal, "corpus");
        for (size_t i = 0; i < json_array_size(corpus); i++)
            printf("%s %s", i ? "," : "", str(json_array_get(corpus, i), "name"));
        printf("\n");
    }
    const char *recipe = json_string_value(json_object_get(m, "recipe_head"));
    if (recipe) {
        printf("recipe:      ");
        for (const char *p = recipe; *p; p = *strchrnul(p, '\n') ? strchrnul(p, '\n') + 1 : "")
            printf("%.*s%s", (int)(strchrnul(p, '\n') - p), p,
                   *strchrnul(p, '\n') && strchrnul(p, '\n')[1] ? " | " : "");
        printf(" ...\n");
    }
}

/* "class head:  2 labels x 384 (normalized), from head.json (xxh64 ...): neg, pos" */
static void print_class_head(const json_t *ch)
{
    if (!ch)
        return;
    if (json_object_get(ch, "error")) {
        printf("class head:  does not read: %s\n", str(ch, "error"));
        return;
    }
    printf("class head:  %s labels x %s (softmax-linear, %s)", str(ch, "classes"), str(ch, "dim"),
           json_is_true(json_object_get(ch, "normalized")) ? "normalized embeddings"
                                                           : "unnormalized embeddings");
    if (json_object_get(ch, "source"))
        printf(", from %s", str(ch, "source"));
    if (json_object_get(ch, "xxh64"))
        printf(" (xxh64 %s)", str(ch, "xxh64"));
    const json_t *labels = json_object_get(ch, "labels");
    size_t n = json_array_size(labels), shown = n > 16 ? 16 : n;
    printf(":");
    for (size_t i = 0; i < shown; i++)
        printf("%s %s", i ? "," : "", json_string_value(json_array_get(labels, i)));
    if (shown < n)
        printf(", ... (%zu more)", n - shown);
    printf("\n");
}

static void print_num(const json_t *v, const char *fmt, int width)
{
    char buf[48];
    if (json_is_number(v))
        snprintf(buf, sizeof buf, fmt, json_number_value(v));
    else if (json_is_string(v))
        snprintf(buf, sizeof buf, "%s", json_string_value(v));
    else
        snprintf(buf, sizeof buf, "-");
    printf(" %*s", width, buf);
}

static void print_text(const json_t *r)
{
    printf("%s: squint %s file, container %s, %lld bytes%s, %lld tensors\n", str(r, "file"),
           str(r, "kind"), str(r, "container_version"),
           (long long)json_integer_value(json_object_get(r, "size")),
           json_is_true(json_object_get(r, "compressed")) ? " (zstd)" : "",
           (long long)json_integer_value(json_object_get(r, "tensor_count")));
    if (json_object_get(r, "metadata"))
        print_metadata(json_object_get(r, "metadata"));
    else
        printf("metadata:    does not parse: %s\n", str(r, "metadata_error"));
    print_class_head(json_object_get(r, "class_head"));

    const json_t *b = json_object_get(r, "bytes");
    printf("\ntensor bytes: fp32 %lld, int8 %lld, int4 %lld, other %lld, total %lld\n",
           (long long)json_integer_value(json_object_get(b, "fp32")),
           (long long)json_integer_value(json_object_get(b, "int8")),
           (long long)json_integer_value(json_object_get(b, "int4")),
           (long long)json_integer_value(json_object_get(b, "other")),
           (long long)json_integer_value(json_object_get(b, "total")));

    const json_t *lin = json_object_get(r, "linears");
    if (json_array_size(lin)) {
        printf("\n%-22s %-9s %-12s %10s %4s %9s %6s %5s %8s %8s %5s\n", "linear", "type",
               "shape", "act_scale", "zero", "act_amax", "smooth", "alpha", "err", "err_nosm",
               "fp32ch");
        for (size_t i = 0; i < json_array_size(lin); i++) {
            const json_t *l = json_array_get(lin, i), *s = json_object_get(l, "shape");
            char shape[48];
            snprintf(shape, sizeof shape, "[%lld, %lld]",
                     (long long)json_integer_value(json_array_get(s, 0)),
                     (long long)json_integer_value(json_array_get(s, 1)));
            printf("%-22s %-9s %-12s", str(l, "name"), str(l, "type"), shape);
            print_num(json_object_get(l, "act_scale"), "%.4g", 10);
            const json_t *zj = json_object_get(l, "act_zero");
            if (zj)
                printf(" %4lld", (long long)json_integer_value(zj));
            else
                printf(" %4s", "-");
            print_num(json_object_get(l, "act_amax"), "%.4g", 9);
            const json_t *sm = json_object_get(l, "smooth");
            printf(" %6s", sm ? str(l, "smooth")
                              : json_is_true(json_object_get(l, "smooth_tensor")) ? "true" : "-");
            print_num(json_object_get(l, "alpha"), "%.3g", 5);
            print_num(json_object_get(l, "err_fp"), "%.3g", 8);
            print_num(json_object_get(l, "err_nosmooth"), "%.3g", 8);
            size_t no = json_array_size(json_object_get(l, "outlier_channels"));
            if (no)
                printf(" %5zu", no);
            else
                printf(" %5s", "-");
            printf("\n");
        }
    }

    const json_t *ts = json_object_get(r, "tensors");
    if (ts) {
        printf("\n%-36s %-13s %-16s %10s %10s  %s\n", "tensor", "dtype", "shape", "bytes",
               "offset", "xxh64");
        for (size_t i = 0; i < json_array_size(ts); i++) {
            const json_t *t = json_array_get(ts, i), *s = json_object_get(t, "shape");
            char shape[128];
            size_t len = (size_t)snprintf(shape, sizeof shape, "[");
            for (size_t d = 0; d < json_array_size(s) && len < sizeof shape; d++)
                len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? ", " : "",
                                        (long long)json_integer_value(json_array_get(s, d)));
            if (len < sizeof shape)
                snprintf(shape + len, sizeof shape - len, "]");
            printf("%-36s %-13s %-16s %10lld %10lld  %s\n", str(t, "name"), str(t, "dtype"),
                   shape, (long long)json_integer_value(json_object_get(t, "bytes")),
                   (long long)json_integer_value(json_object_get(t, "offset")), str(t, "xxh64"));
        }
    }

    const json_t *v = json_object_get(r, "verify");
    if (!strcmp(str(v, "status"), "ok"))
        printf("\nchecksums: OK\n");
    else if (json_object_get(v, "tensor"))
        printf("\nchecksums: DAMAGED tensor \"%s\": %s\n", str(v, "tensor"), str(v, "message"));
    else
        printf("\nchecksums: DAMAGED %s: %s\n", str(v, "damaged"), str(v, "message"));
}

int inspect_sqm(const char *path, bool json, bool list_tensors)
{
    sq_container c;
    sq_err err;
    if (sq_container_open(path, SQ_KIND_SQM, &c, &err) != 0)
        return cli_fail("inspect", &err);
    json_t *r = build_report(path, &c, list_tensors);
    sq_container_close(&c);
    if (json) {
        json_dumpf(r, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        print_text(r);
    }
    int rc = strcmp(str(json_object_get(r, "verify"), "status"), "ok") ? SQ_EXIT_FAIL : SQ_EXIT_OK;
    json_decref(r);
    return rc;
}

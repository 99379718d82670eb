#include "head.h"
#include "json_util.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softmax.h"
#include "fileio.h"
#include "head_io.h"
#include "sqm_class_head.h"
#include "par_threads.h"

int sq_head_alloc(sq_head *h, int classes, int dim, sq_err *err)
{
    memset(h, 0, sizeof *h);
    h->labels = calloc((size_t)classes, sizeof *h->labels);
    h->W = calloc((size_t)classes * (size_t)dim, sizeof *h->W);
    h->b = calloc((size_t)classes, sizeof *h->b);
    h->classes = classes;
    h->dim = dim;
    if (!h->labels || !h->W || !h->b) {
        sq_head_free(h);
        return sq_err_set(err, "out of memory");
    }
    return 0;
}

void sq_head_free(sq_head *h)
{
    if (h->labels)
        for (int c = 0; c < h->classes; c++)
            free(h->labels[c]);
    free(h->labels);
    free(h->W);
    free(h->b);
    memset(h, 0, sizeof *h);
}

/* ---- writing ---- */

/* s as a JSON string (escaped by jansson). */
static int put_str(FILE *fp, const char *s)
{
    json_t *j = json_string(s);
    char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!d)
        return -1;
    fputs(d, fp);
    free(d);
    return 0;
}

static void put_num(FILE *fp, double v)
{
    /* %.17g reads back to the same double; integers keep a ".0" so every
     * number reads as a real. */
    char b[40];
    snprintf(b, sizeof b, "%.17g", v);
    fputs(b, fp);
    if (!strpbrk(b, ".eEn"))
        fputs(".0", fp);
}

static int write_body(FILE *fp, const sq_head *h, const sq_head_provenance *p)
{
    int bad = 0;
    fprintf(fp, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n", SQ_HEAD_FORMAT, SQ_HEAD_VERSION);
    fprintf(fp, "  \"kind\": \"softmax-linear\",\n  \"dim\": %d,\n  \"normalized\": %s,\n", h->dim,
            h->normalized ? "true" : "false");
    fputs("  \"labels\": [", fp);
    for (int c = 0; c < h->classes; c++) {
        fputs(c ? ", " : "", fp);
        bad |= put_str(fp, h->labels[c]);
    }
    fputs("],\n  \"bias\": [", fp);
    for (int c = 0; c < h->classes; c++) {
        fputs(c ? ", " : "", fp);
        put_num(fp, h->b[c]);
    }
    fputs("],\n  \"weights\": [\n", fp);
    for (int c = 0; c < h->classes; c++) {
        fputs("    [", fp);
        for (int j = 0; j < h->dim; j++) {
            fputs(j ? ", " : "", fp);
            put_num(fp, h->W[(size_t)c * h->dim + j]);
        }
        fputs(c + 1 < h->classes ? "],\n" : "]\n", fp);
    }
    fputs("  ],\n  \"training\": {\n    \"model\": ", fp);
    bad |= put_str(fp, p->model ? p->model : "");
    if (p->has_model_hash)
        fprintf(fp, ",\n    \"model_xxh64\": \"%016" PRIx64 "\"", p->model_xxh64);
    fputs(",\n    \"train_file\": ", fp);
    bad |= put_str(fp, p->train_file ? p->train_file : "");
    if (p->has_train_hash)
        fprintf(fp, ",\n    \"train_xxh64\": \"%016" PRIx64 "\"", p->train_xxh64);
    fputs(",\n    \"text_field\": ", fp);
    bad |= put_str(fp, p->text_field ? p->text_field : "");
    fputs(",\n    \"label_field\": ", fp);
    bad |= put_str(fp, p->label_field ? p->label_field : "");
    fprintf(fp, ",\n    \"rows_in_file\": %lld,\n    \"rows_used\": %lld", (long long)p->rows_in_file,
            (long long)p->rows_used);
    if (p->per_class > 0)
        fprintf(fp, ",\n    \"per_class\": %lld,\n    \"seed\": %" PRIu64, (long long)p->per_class,
                p->seed);
    fputs(",\n    \"l2\": ", fp);
    put_num(fp, p->l2);
    fprintf(fp, ",\n    \"optimizer\": \"%s\",\n    \"steps\": %d,\n    \"train_accuracy\": ",
            h->classes == 2 ? "newton" : "lbfgs", p->steps);
    put_num(fp, p->train_accuracy);
    if (p->squint_version) {
        fputs(",\n    \"squint_version\": ", fp);
        bad |= put_str(fp, p->squint_version);
    }
    fputs("\n  }\n}\n", fp);
    return bad;
}

int sq_head_write(const char *path, const sq_head *h, const sq_head_provenance *p, sq_err *err)
{
    for (size_t k = 0; k < (size_t)h->classes * h->dim; k++)
        if (!isfinite(h->W[k]))
            return sq_err_set(err, "%s: the trained weights are not finite", path);
    for (int c = 0; c < h->classes; c++)
        if (!isfinite(h->b[c]))
            return sq_err_set(err, "%s: the trained biases are not finite", path);
    if (sq_head_ends_with(path, ".safetensors"))
        return sq_head_write_safetensors(path, h, p, err);
    sq_atomic_file af;
    if (sq_atomic_open(&af, path, err) != 0)
        return -1;
    if (write_body(af.fp, h, p) != 0 || ferror(af.fp)) {
        sq_err_write_failed(err, path);
        sq_atomic_abort(&af);
        return -1;
    }
    return sq_atomic_commit(&af, err);
}

/* ---- reading ---- */

bool sq_head_ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int sq_head_labels_from_json(const char *path, const json_t *labels, sq_head *h, sq_err *err)
{
    if (!json_is_array(labels) || json_array_size(labels) != (size_t)h->classes)
        return sq_err_set(err, "%s: \"labels\" must be an array of %d strings", path, h->classes);
    for (int c = 0; c < h->classes; c++) {
        json_t *l = json_array_get(labels, c);
        if (!json_is_string(l) ||
            !sq_class_label_valid(json_string_value(l), json_string_length(l)))
            return sq_err_set(err, "%s: \"labels\"[%d] must be a string of 1 to 256 bytes "
                                   "(no NUL)",
                              path, c);
        for (int k = 0; k < c; k++)
            if (strcmp(h->labels[k], json_string_value(l)) == 0)
                return sq_err_set(err, "%s: label '%s' appears twice", path, h->labels[k]);
        if (!(h->labels[c] = strdup(json_string_value(l))))
            return sq_err_set(err, "out of memory");
    }
    return 0;
}

static int refuse_pickle(const char *path, sq_err *err)
{
    return sq_err_set(err, "%s: a Python pickle (such as SetFit's model_head.pkl): pickles can "
                           "run arbitrary code and are never loaded; export the head as JSON "
                           "with the snippet in formats/HEAD.md, or train one with `squint "
                           "train-head`",
                      path);
}

/* A finite number array of exactly n entries into out. */
static int read_reals(const json_t *a, size_t n, double *out, const char *path, const char *what,
                      sq_err *err)
{
    if (!json_is_array(a) || json_array_size(a) != n)
        return sq_err_set(err, "%s: \"%s\" must be an array of %zu numbers", path, what, n);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return sq_err_set(err, "%s: \"%s\"[%zu] is not a finite number", path, what, i);
        out[i] = json_number_value(v);
    }
    return 0;
}

static int parse_head(const char *path, json_t *o, sq_head *h, sq_err *err)
{
    json_t *f = json_object_get(o, "format"), *v = json_object_get(o, "version");
    if (!json_is_string(f) || strcmp(json_string_value(f), SQ_HEAD_FORMAT) != 0)
        return sq_err_set(err, "%s: not a squint head (\"format\" is not \"%s\")", path,
                          SQ_HEAD_FORMAT);
    if (!json_is_integer(v) || json_integer_value(v) != SQ_HEAD_VERSION)
        return sq_err_set(err, "%s: head version is not %d (written by a newer squint?)", path,
                          SQ_HEAD_VERSION);
    json_t *kind = json_object_get(o, "kind");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "softmax-linear") != 0)
        return sq_err_set(err, "%s: \"kind\" must be \"softmax-linear\"", path);
    json_t *dim = json_object_get(o, "dim"), *norm = json_object_get(o, "normalized");
    json_t *labels = json_object_get(o, "labels");
    if (!json_is_integer(dim) || json_integer_value(dim) < 1 ||
        json_integer_value(dim) > SQ_HEAD_MAX_DIM)
        return sq_err_set(err, "%s: \"dim\" must be an integer in [1, %d]", path,
                          SQ_HEAD_MAX_DIM);
    if (!json_is_boolean(norm))
        return sq_err_set(err, "%s: \"normalized\" must be true or false", path);
    if (!json_is_array(labels) || json_array_size(labels) < 2 ||
        json_array_size(labels) > 1024)
        return sq_err_set(err, "%s: \"labels\" must be an array of 2 to 1024 strings", path);
    int C = (int)json_array_size(labels), D = (int)json_integer_value(dim);
    if (sq_head_alloc(h, C, D, err) != 0)
        return -1;
    h->normalized = json_is_true(norm);
    if (sq_head_labels_from_json(path, labels, h, err) != 0)
        return -1;
    json_t *w = json_object_get(o, "weights");
    if (!json_is_array(w) || json_array_size(w) != (size_t)C)
        return sq_err_set(err, "%s: \"weights\" must hold %d rows (one per label)", path, C);
    for (int c = 0; c < C; c++) {
        char what[32];
        snprintf(what, sizeof what, "weights[%d]", c);
        if (read_reals(json_array_get(w, c), (size_t)D, h->W + (size_t)c * D, path, what, err) !=
            0)
            return -1;
    }
    return read_reals(json_object_get(o, "bias"), (size_t)C, h->b, path, "bias", err);
}

int sq_head_read(const char *path, sq_head *h, sq_err *err)
{
    memset(h, 0, sizeof *h);
    if (sq_head_ends_with(path, ".pkl") || sq_head_ends_with(path, ".pickle"))
        return refuse_pickle(path, err);
    char *buf;
    size_t len;
    if (sq_read_regular_file(path, SQ_HEAD_MAX_FILE, &buf, &len, err) != 0)
        return -1;
    const unsigned char *u = (const unsigned char *)buf;
    if (len >= 2 && u[0] == 0x80 && u[1] >= 2 && u[1] <= 5) {
        free(buf);
        return refuse_pickle(path, err);
    }
    /* safetensors: by the name, or by the first bytes (a u64 header length,
     * then '{'; JSON starts with '{' or white space). */
    if (sq_head_ends_with(path, ".safetensors") ||
        (len >= 9 && u[8] == '{' && u[0] != '{' && u[0] != ' ' && u[0] != '\t' &&
         u[0] != '\n' && u[0] != '\r')) {
        free(buf);
        return sq_head_read_safetensors(path, h, err);
    }
    json_error_t je;
    json_t *o = json_loadb(buf, len, SQ_JSON_FLAGS, &je);
    free(buf);
    if (!o)
        return sq_err_set(err, "%s:%d: not valid JSON: %s", path, je.line, je.text);
    int rc = json_is_object(o) ? parse_head(path, o, h, err)
                               : sq_err_set(err, "%s: not a squint head (not a JSON object)", path);
    json_decref(o);
    if (rc != 0)
        sq_head_free(h);
    return rc;
}

void sq_head_apply(const sq_head *h, const float *emb, int64_t n, double *probs)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)n * h->classes * h->dim, n))
    for (int64_t i = 0; i < n; i++)
        sq_softmax_probs(h->W, h->b, h->classes, h->dim, emb + (size_t)i * h->dim,
                         probs + (size_t)i * h->classes);
}

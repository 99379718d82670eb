/* A classification head as safetensors (formats/HEAD.md, "safetensors"):
 * tensors `weight` [C, D] and `bias` [C] (F64 or F32), `__metadata__`
 * strings format, version, kind, labels (a JSON array), normalized and
 * training (JSON, provenance: written, not read). The file is hostile
 * input: every dtype, shape, value and key is checked. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "head_io.h"
#include "json_util.h"
#include "safetensors.h"
#include "safetensors_write.h"

/* ---- reading ---- */

static const char *need_meta(const sq_safetensors *st, const char *path, const char *key,
                             sq_err *err)
{
    const char *v = sq_safetensors_meta(st, key);
    if (!v)
        sq_err_set(err, "%s: not a squint head: __metadata__ has no string \"%s\" "
                        "(formats/HEAD.md)",
                   path, key);
    return v;
}

/* Tensor `name`: F64 or F32, of ndim dims equal to want[] (want[i] < 0:
 * any value in [1, SQ_HEAD_MAX_DIM], written back). */
static const sq_st_tensor *need_tensor(const sq_safetensors *st, const char *path,
                                       const char *name, int ndim, int64_t *want, sq_err *err)
{
    const sq_st_tensor *t = sq_safetensors_find(st, name);
    if (!t) {
        sq_err_set(err, "%s: no tensor \"%s\"", path, name);
        return NULL;
    }
    if (t->dtype != SQ_DT_F64 && t->dtype != SQ_DT_F32) {
        sq_err_set(err, "%s: tensor \"%s\" is %s, expected F64 or F32", path, name,
                   sq_st_dtype_name(t->dtype));
        return NULL;
    }
    bool ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) {
        if (want[i] < 0 && t->shape[i] >= 1 && t->shape[i] <= SQ_HEAD_MAX_DIM)
            want[i] = t->shape[i];
        ok = t->shape[i] == want[i];
    }
    if (!ok) {
        char got[160];
        size_t n = (size_t)snprintf(got, sizeof got, "[");
        for (int i = 0; i < t->ndim && n < sizeof got; i++)
            n += (size_t)snprintf(got + n, sizeof got - n, "%s%lld", i ? ", " : "",
                                  (long long)t->shape[i]);
        if (n < sizeof got)
            snprintf(got + n, sizeof got - n, "]");
        if (ndim == 2)
            sq_err_set(err, "%s: tensor \"%s\" has shape %s, expected [%lld, D] (a row per "
                            "label, D in 1..%d)",
                       path, name, got, (long long)want[0], SQ_HEAD_MAX_DIM);
        else
            sq_err_set(err, "%s: tensor \"%s\" has shape %s, expected [%lld] (one per label)",
                       path, name, got, (long long)want[0]);
        return NULL;
    }
    return t;
}

/* n values of t as doubles into out, each finite. */
static int copy_values(const sq_safetensors *st, const char *path, const sq_st_tensor *t,
                       size_t n, double *out, sq_err *err)
{
    const unsigned char *p = (const unsigned char *)st->mf.data + t->offset;
    for (size_t i = 0; i < n; i++) {
        if (t->dtype == SQ_DT_F64) {
            memcpy(&out[i], p + 8 * i, 8);
        } else {
            float f;
            memcpy(&f, p + 4 * i, 4);
            out[i] = f;
        }
        if (!isfinite(out[i]))
            return sq_err_set(err, "%s: tensor \"%s\": entry %zu is not a finite number", path,
                              t->name, i);
    }
    return 0;
}

static int read_st(const char *path, const sq_safetensors *st, sq_head *h, sq_err *err)
{
    const char *fmt, *ver, *kind, *norm, *labels_s;
    if (!(fmt = need_meta(st, path, "format", err)))
        return -1;
    if (strcmp(fmt, SQ_HEAD_FORMAT) != 0)
        return sq_err_set(err, "%s: not a squint head (__metadata__ \"format\" is not \"%s\")",
                          path, SQ_HEAD_FORMAT);
    if (!(ver = need_meta(st, path, "version", err)))
        return -1;
    if (strcmp(ver, "1") != 0)
        return sq_err_set(err, "%s: head version is not %d (written by a newer squint?)", path,
                          SQ_HEAD_VERSION);
    if (!(kind = need_meta(st, path, "kind", err)))
        return -1;
    if (strcmp(kind, "softmax-linear") != 0)
        return sq_err_set(err, "%s: __metadata__ \"kind\" must be \"softmax-linear\"", path);
    if (!(norm = need_meta(st, path, "normalized", err)))
        return -1;
    if (strcmp(norm, "true") != 0 && strcmp(norm, "false") != 0)
        return sq_err_set(err, "%s: __metadata__ \"normalized\" must be \"true\" or \"false\"",
                          path);
    if (!(labels_s = need_meta(st, path, "labels", err)))
        return -1;
    json_error_t je;
    json_t *labels = json_loads(labels_s, SQ_JSON_FLAGS, &je);
    if (!json_is_array(labels) || json_array_size(labels) < 2 ||
        json_array_size(labels) > 1024) {
        json_decref(labels);
        return sq_err_set(err, "%s: __metadata__ \"labels\" must be a JSON array of 2 to 1024 "
                               "strings",
                          path);
    }
    int64_t wshape[2] = {(int64_t)json_array_size(labels), -1}, bshape[1] = {wshape[0]};
    const sq_st_tensor *w = need_tensor(st, path, "weight", 2, wshape, err), *b = NULL;
    if (w)
        b = need_tensor(st, path, "bias", 1, bshape, err);
    int rc = -1;
    if (b && sq_head_alloc(h, (int)wshape[0], (int)wshape[1], err) == 0) {
        h->normalized = strcmp(norm, "true") == 0;
        rc = sq_head_labels_from_json(path, labels, h, err) != 0 ||
                     copy_values(st, path, w, (size_t)h->classes * (size_t)h->dim, h->W, err) !=
                         0 ||
                     copy_values(st, path, b, (size_t)h->classes, h->b, err) != 0
                 ? -1
                 : 0;
    }
    json_decref(labels);
    return rc;
}

int sq_head_read_safetensors(const char *path, sq_head *h, sq_err *err)
{
    memset(h, 0, sizeof *h);
    sq_safetensors st;
    if (sq_safetensors_open(path, &st, err) != 0)
        return -1;
    int rc = read_st(path, &st, h, err);
    sq_safetensors_close(&st);
    if (rc != 0)
        sq_head_free(h);
    return rc;
}

/* ---- writing ---- */

static json_t *training_json(const sq_head *h, const sq_head_provenance *p)
{
    char hex[17];
    json_t *t = json_object();
    json_object_set_new(t, "model", json_string(p->model ? p->model : ""));
    if (p->has_model_hash) {
        snprintf(hex, sizeof hex, "%016" PRIx64, p->model_xxh64);
        json_object_set_new(t, "model_xxh64", json_string(hex));
    }
    json_object_set_new(t, "train_file", json_string(p->train_file ? p->train_file : ""));
    if (p->has_train_hash) {
        snprintf(hex, sizeof hex, "%016" PRIx64, p->train_xxh64);
        json_object_set_new(t, "train_xxh64", json_string(hex));
    }
    json_object_set_new(t, "text_field", json_string(p->text_field ? p->text_field : ""));
    json_object_set_new(t, "label_field", json_string(p->label_field ? p->label_field : ""));
    json_object_set_new(t, "rows_in_file", json_integer(p->rows_in_file));
    json_object_set_new(t, "rows_used", json_integer(p->rows_used));
    if (p->per_class > 0) {
        json_object_set_new(t, "per_class", json_integer(p->per_class));
        json_object_set_new(t, "seed", json_integer((json_int_t)p->seed));
    }
    json_object_set_new(t, "l2", json_real(p->l2));
    json_object_set_new(t, "optimizer", json_string(h->classes == 2 ? "newton" : "lbfgs"));
    json_object_set_new(t, "steps", json_integer(p->steps));
    json_object_set_new(t, "train_accuracy", json_real(p->train_accuracy));
    if (p->squint_version)
        json_object_set_new(t, "squint_version", json_string(p->squint_version));
    return t;
}

int sq_head_write_safetensors(const char *path, const sq_head *h, const sq_head_provenance *p,
                              sq_err *err)
{
    json_t *labels = json_array(), *train = training_json(h, p);
    for (int c = 0; c < h->classes; c++)
        json_array_append_new(labels, json_string(h->labels[c]));
    char *labels_s = json_dumps(labels, JSON_COMPACT | JSON_ENSURE_ASCII);
    char *train_s = json_dumps(train, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    json_decref(labels);
    json_decref(train);
    int rc;
    if (!labels_s || !train_s) {
        rc = sq_err_set(err, "%s: out of memory", path);
    } else {
        const char *meta[] = {"format", SQ_HEAD_FORMAT, "version", "1", "kind", "softmax-linear",
                              "labels", labels_s, "normalized", h->normalized ? "true" : "false",
                              "training", train_s, NULL};
        sq_stw_tensor t[2] = {
            {.name = "bias", .dtype = SQ_DT_F64, .ndim = 1, .shape = {h->classes}, .data = h->b},
            {.name = "weight", .dtype = SQ_DT_F64, .ndim = 2, .shape = {h->classes, h->dim},
             .data = h->W},
        };
        rc = sq_safetensors_write(path, t, 2, meta, err);
    }
    free(labels_s);
    free(train_s);
    return rc;
}

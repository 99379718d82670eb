#include "hf_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "layer_name.h"

const sq_st_tensor *sq_hf_weights_find(const sq_hf_weights *w, const char *name,
                                       const sq_safetensors **in)
{
    for (int i = 0; i < w->n_shards; i++) {
        const sq_st_tensor *t = sq_safetensors_find(&w->shards[i], name);
        if (t) {
            *in = &w->shards[i];
            return t;
        }
    }
    return NULL;
}

float *sq_hf_weights_load(const sq_hf_weights *w, const char *name, int64_t d0, int64_t d1,
                          sq_err *err)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", w->prefix ? w->prefix : "", name);
    const sq_safetensors *st = NULL;
    const sq_st_tensor *t = sq_hf_weights_find(w, full, &st);
    if (!t) {
        sq_err_set(err, "%s: missing tensor \"%s\"", w->shards[0].mf.path, full);
        return NULL;
    }
    int want_nd = d1 > 0 ? 2 : 1;
    if (t->ndim != want_nd || t->shape[0] != d0 || (want_nd == 2 && t->shape[1] != d1)) {
        char got[128] = "";
        int n = 0;
        for (int i = 0; i < t->ndim && n < 100; i++)
            n += snprintf(got + n, sizeof got - (size_t)n, "%s%lld", i ? ", " : "",
                          (long long)t->shape[i]);
        if (want_nd == 2)
            sq_err_set(err, "%s: tensor \"%s\" has shape [%s], expected [%lld, %lld]", st->mf.path,
                       full, got, (long long)d0, (long long)d1);
        else
            sq_err_set(err, "%s: tensor \"%s\" has shape [%s], expected [%lld]", st->mf.path, full,
                       got, (long long)d0);
        return NULL;
    }
    float *dst = NULL;
    if (posix_memalign((void **)&dst, 64, (size_t)t->numel * sizeof(float) + 64) != 0) {
        sq_err_set(err, "out of memory loading \"%s\"", full);
        return NULL;
    }
    if (sq_safetensors_read_f32(st, t, dst, err) != 0) {
        free(dst);
        return NULL;
    }
    return dst;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Shard list from model.safetensors.index.json ("weight_map": name -> file). */
static int open_index(const char *dir, const char *index_path, sq_hf_weights *w, sq_err *err)
{
    json_t *root = sq_json_load_object(index_path, err);
    if (!root)
        return -1;
    json_t *map = json_object_get(root, "weight_map");
    int rc = -1;
    if (!json_is_object(map) || json_object_size(map) == 0) {
        sq_err_set(err, "%s: missing or empty \"weight_map\"", index_path);
        goto out;
    }
    /* Distinct shard names, in sorted order so loading is deterministic:
     * sort, then drop repeats (O(n log n): an index may name 10^5 tensors). */
    size_t n = json_object_size(map), nf = 0;
    const char **files = calloc(n, sizeof *files);
    if (!files) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    const char *key;
    json_t *val;
    json_object_foreach(map, key, val)
    {
        if (!json_is_string(val)) {
            sq_err_set(err, "%s: weight_map entry \"%s\" is not a file name", index_path, key);
            free(files);
            goto out;
        }
        const char *f = json_string_value(val);
        if (strchr(f, '/') || strcmp(f, "..") == 0 || !*f) {
            sq_err_set(err, "%s: shard name \"%s\" must be a plain file name", index_path, f);
            free(files);
            goto out;
        }
        files[nf++] = f;
    }
    qsort(files, nf, sizeof *files, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < nf; i++)
        if (u == 0 || strcmp(files[u - 1], files[i]) != 0)
            files[u++] = files[i];
    nf = u;
    if (nf > SQ_HF_MAX_SHARDS) {
        sq_err_set(err, "%s: %zu shard files; at most %d are opened", index_path, nf,
                   SQ_HF_MAX_SHARDS);
        free(files);
        goto out;
    }
    w->shards = calloc(nf, sizeof *w->shards);
    if (!w->shards) {
        free(files);
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nf; i++) {
        char *p = sq_path_join(dir, files[i]);
        int ok = p && sq_safetensors_open(p, &w->shards[w->n_shards], err) == 0;
        free(p);
        if (!ok) {
            free(files);
            goto out;
        }
        w->n_shards++;
    }
    free(files);
    rc = 0;
out:
    json_decref(root);
    return rc;
}

int sq_hf_weights_open(const char *dir, sq_hf_weights *w, sq_err *err)
{
    memset(w, 0, sizeof *w);
    w->prefix = "";
    char *single = sq_path_join(dir, "model.safetensors");
    char *index = sq_path_join(dir, "model.safetensors.index.json");
    int rc = -1;
    if (!single || !index) {
        sq_err_set(err, "out of memory");
    } else if (sq_file_exists(single)) {
        w->shards = calloc(1, sizeof *w->shards);
        if (w->shards && sq_safetensors_open(single, &w->shards[0], err) == 0) {
            w->n_shards = 1;
            rc = 0;
        } else if (!w->shards) {
            sq_err_set(err, "out of memory");
        }
    } else if (sq_file_exists(index)) {
        rc = open_index(dir, index, w, err);
    } else {
        char *bin = sq_path_join(dir, "pytorch_model.bin");
        if (bin && sq_file_exists(bin))
            sq_err_set(err, "%s: only pytorch_model.bin (pickle) is present; squint reads "
                            "safetensors (convert with safetensors' convert script)",
                       dir);
        else
            sq_err_set(err, "%s: no model.safetensors or model.safetensors.index.json", dir);
        free(bin);
    }
    free(single);
    free(index);
    if (rc != 0)
        sq_hf_weights_close(w);
    return rc;
}

void sq_hf_weights_close(sq_hf_weights *w)
{
    for (int i = 0; i < w->n_shards; i++)
        sq_safetensors_close(&w->shards[i]);
    free(w->shards);
    memset(w, 0, sizeof *w);
}

int sq_hf_weights_check_layers(const sq_hf_weights *w, const char *layers, int n_layers,
                               const char *what, sq_err *err)
{
    const size_t np = strlen(w->prefix);
    for (int s = 0; s < w->n_shards; s++)
        for (int i = 0; i < w->shards[s].n_tensors; i++) {
            const char *name = w->shards[s].tensors[i].name;
            if (strncmp(name, w->prefix, np) != 0)
                continue;
            long l = sq_layer_index(name + np, layers, NULL);
            if (l >= n_layers)
                return sq_err_set(err, "%s: tensor \"%s\" belongs to layer %ld, but %s is %d: the "
                                  "config describes fewer layers than the weights hold",
                                  w->shards[s].mf.path, name, l, what, n_layers);
        }
    return 0;
}

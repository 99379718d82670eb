#include "file_hash.h"

#include "json_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fileio.h"

int sq_hash_file(const char *path, uint64_t *size, uint64_t *xxh64, sq_err *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return sq_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    sq_note_input_fd(fileno(fp));
    XXH64_state_t *st = XXH64_createState();
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!st || !buf) {
        fclose(fp);
        free(buf);
        XXH64_freeState(st);
        return sq_err_set(err, "%s: out of memory", path);
    }
    XXH64_reset(st, 0);
    uint64_t total = 0;
    size_t n;
    while ((n = fread(buf, 1, CHUNK, fp)) > 0) {
        XXH64_update(st, buf, n);
        total += n;
    }
    int rc = 0;
    if (ferror(fp))
        rc = sq_err_set(err, "%s: read error", path);
    fclose(fp);
    free(buf);
    *size = total;
    *xxh64 = XXH64_digest(st);
    XXH64_freeState(st);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Shard files named like model-00001-of-00002.safetensors, sorted. */
static int list_shards(const char *dir, char ***out, int *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 13 || strcmp(e->d_name + l - 12, ".safetensors") != 0 ||
            strcmp(e->d_name, "model.safetensors") == 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            char **a = realloc(*out, (size_t)cap * sizeof *a);
            if (!a)
                break;
            *out = a;
        }
        (*out)[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*out, (size_t)*n, sizeof **out, cmp_str);
    return 0;
}

static int add_file(const char *dir, const char *name, sq_model_digest *d, sq_err *err)
{
    char *path = sq_path_join(dir, name);
    if (!path)
        return sq_err_set(err, "out of memory");
    if (!sq_file_exists(path)) {
        free(path);
        return 0;
    }
    sq_file_digest *f = realloc(d->files, ((size_t)d->n_files + 1) * sizeof *f);
    if (!f) {
        free(path);
        return sq_err_set(err, "out of memory");
    }
    d->files = f;
    sq_file_digest *fd = &d->files[d->n_files];
    int rc = sq_hash_file(path, &fd->size, &fd->xxh64, err);
    free(path);
    if (rc != 0)
        return -1;
    fd->name = strdup(name);
    d->n_files++;
    return 0;
}

/* A TensorFlow.js graph model: model.json, its weight shards in manifest
 * order, and the SentencePiece vocab.json next to it. */
static int add_tfjs_files(const char *dir, sq_model_digest *d, sq_err *err)
{
    char *path = sq_path_join(dir, "model.json");
    if (!path)
        return sq_err_set(err, "out of memory");
    int rc = 0;
    if (sq_file_exists(path)) {
        json_t *root = sq_json_load_object(path, err);
        json_t *man = root ? json_object_get(root, "weightsManifest") : NULL;
        rc = root && add_file(dir, "model.json", d, err) == 0 ? 0 : -1;
        size_t gi, pi;
        json_t *g, *p;
        if (rc == 0 && json_is_array(man))
            json_array_foreach(man, gi, g) {
                json_array_foreach(json_object_get(g, "paths"), pi, p) {
                    const char *f = json_string_value(p);
                    if (!f || !*f || strchr(f, '/') || strcmp(f, "..") == 0) {
                        rc = sq_err_set(err, "%s: weight shard path is not a plain file name",
                                        path);
                        break;
                    }
                    if ((rc = add_file(dir, f, d, err)) != 0)
                        break;
                }
                if (rc != 0)
                    break;
            }
        if (rc == 0)
            rc = add_file(dir, "vocab.json", d, err);
        json_decref(root);
    }
    free(path);
    return rc;
}

/* d->combined from d->files, in order. */
static int combine(sq_model_digest *d, sq_err *err)
{
    XXH64_state_t *st = XXH64_createState();
    if (!st)
        return sq_err_set(err, "out of memory");
    XXH64_reset(st, 0);
    for (int i = 0; i < d->n_files; i++) {
        uint8_t rec[16];
        for (int b = 0; b < 8; b++) {
            rec[b] = (uint8_t)(d->files[i].size >> (8 * b));
            rec[8 + b] = (uint8_t)(d->files[i].xxh64 >> (8 * b));
        }
        XXH64_update(st, d->files[i].name, strlen(d->files[i].name) + 1);
        XXH64_update(st, rec, sizeof rec);
    }
    d->combined = XXH64_digest(st);
    XXH64_freeState(st);
    return 0;
}

int sq_model_digest_files(const char *const *paths, int n, sq_model_digest *d, sq_err *err)
{
    memset(d, 0, sizeof *d);
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(paths[i], '/');
        char *dir = slash ? strndup(paths[i], (size_t)(slash - paths[i]) + 1) : strdup(".");
        int before = d->n_files;
        int rc = dir ? add_file(dir, slash ? slash + 1 : paths[i], d, err)
                     : sq_err_set(err, "out of memory");
        free(dir);
        if (rc == 0 && d->n_files == before)
            rc = sq_err_set(err, "%s: no such file", paths[i]);
        if (rc != 0) {
            sq_model_digest_free(d);
            return -1;
        }
    }
    if (combine(d, err) != 0) {
        sq_model_digest_free(d);
        return -1;
    }
    return 0;
}

int sq_model_digest_dir(const char *dir, sq_model_digest *d, sq_err *err)
{
    memset(d, 0, sizeof *d);
    static const char *const before[] = {"config.json", "model.safetensors",
                                         "model.safetensors.index.json"};
    static const char *const after[] = {"tokenizer.json", "vocab.txt", "tokenizer_config.json",
                                        "modules.json", "1_Pooling/config.json"};
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
        if (add_file(dir, before[i], d, err) != 0)
            goto fail;
    char *idx = sq_path_join(dir, "model.safetensors.index.json");
    int sharded = idx && sq_file_exists(idx);
    free(idx);
    if (sharded) {
        char **shards;
        int n;
        list_shards(dir, &shards, &n);
        int rc = 0;
        for (int i = 0; i < n; i++) {
            if (rc == 0)
                rc = add_file(dir, shards[i], d, err);
            free(shards[i]);
        }
        free(shards);
        if (rc != 0)
            goto fail;
    }
    for (size_t i = 0; i < sizeof after / sizeof after[0]; i++)
        if (add_file(dir, after[i], d, err) != 0)
            goto fail;
    if (add_tfjs_files(dir, d, err) != 0)
        goto fail;
    if (combine(d, err) != 0)
        goto fail;
    return 0;
fail:
    sq_model_digest_free(d);
    return -1;
}

void sq_model_digest_free(sq_model_digest *d)
{
    for (int i = 0; i < d->n_files; i++)
        free(d->files[i].name);
    free(d->files);
    memset(d, 0, sizeof *d);
}

#include "embed_output.h"

#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "npy.h"

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int emit_jsonl(FILE *fp, const sq_embed_result *r)
{
    for (int64_t i = 0; i < r->n; i++) {
        fprintf(fp, "{\"index\":%lld,\"embedding\":[", (long long)i);
        const float *e = r->emb + (size_t)i * r->dim;
        for (int c = 0; c < r->dim; c++)
            fprintf(fp, c ? ",%.9g" : "%.9g", (double)e[c]);
        fputs("]}\n", fp);
    }
    return ferror(fp) ? -1 : 0;
}

/* Open `path` atomically, let `body` write, commit or abort. */
static int write_atomic(const char *path, int (*body)(FILE *, const sq_embed_result *),
                        const sq_embed_result *r, sq_err *err)
{
    sq_atomic_file af;
    if (sq_atomic_open(&af, path, err) != 0)
        return -1;
    if (body(af.fp, r) != 0) {
        sq_atomic_abort(&af);
        return sq_err_set(err, "%s: write failed", path);
    }
    return sq_atomic_commit(&af, err);
}

static int emit_f32(FILE *fp, const sq_embed_result *r)
{
    size_t n = (size_t)r->n * r->dim;
    return fwrite(r->emb, sizeof(float), n, fp) == n ? 0 : -1;
}

static int emit_npy(FILE *fp, const sq_embed_result *r)
{
    int64_t shape[2] = {r->n, r->dim};
    if (sq_npy_write_header_f32(fp, shape, 2) != 0)
        return -1;
    return emit_f32(fp, r);
}

int write_embeddings(const char *path, const char *format, const sq_embed_result *r, sq_err *err)
{
    if (format) {
        if (strcmp(format, "npy") == 0)
            return write_atomic(path, emit_npy, r, err);
        if (strcmp(format, "f32") == 0)
            return write_atomic(path, emit_f32, r, err);
        if (strcmp(format, "jsonl") == 0 && strcmp(path, "-") != 0)
            return write_atomic(path, emit_jsonl, r, err);
        if (strcmp(format, "jsonl") != 0)
            return sq_err_set(err, "unknown --format '%s' (jsonl, npy or f32)", format);
    }
    if (!*path)
        return sq_err_set(err, "the output path is empty");
    if (strcmp(path, "-") == 0) {
        if (emit_jsonl(stdout, r) != 0 || fflush(stdout) != 0)
            return sq_err_set(err, "standard output: write failed");
        return 0;
    }
    if (ends_with(path, ".npy"))
        return write_atomic(path, emit_npy, r, err);
    if (ends_with(path, ".f32"))
        return write_atomic(path, emit_f32, r, err);
    if (ends_with(path, ".jsonl") || ends_with(path, ".json"))
        return write_atomic(path, emit_jsonl, r, err);
    return sq_err_set(err, "%s: unknown output format (use .jsonl, .npy or .f32)", path);
}

static int emit_tokens(FILE *fp, const sq_embed_result *r)
{
    for (int64_t i = 0; i < r->n; i++) {
        fputs("{\"ids\":[", fp);
        for (int64_t t = r->offsets[i]; t < r->offsets[i + 1]; t++)
            fprintf(fp, t > r->offsets[i] ? ",%d" : "%d", r->ids[t]);
        fputs("]}\n", fp);
    }
    return ferror(fp) ? -1 : 0;
}

int write_tokens_jsonl(const char *path, const sq_embed_result *r, sq_err *err)
{
    return write_atomic(path, emit_tokens, r, err);
}

static int emit_hidden(FILE *fp, const sq_embed_result *r)
{
    int64_t shape[2] = {r->offsets[r->n], r->dim};
    if (sq_npy_write_header_f32(fp, shape, 2) != 0)
        return -1;
    size_t n = (size_t)shape[0] * r->dim;
    return fwrite(r->hidden, sizeof(float), n, fp) == n ? 0 : -1;
}

int write_hidden_npy(const char *path, const sq_embed_result *r, sq_err *err)
{
    return write_atomic(path, emit_hidden, r, err);
}

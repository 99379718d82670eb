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

/* ---- streaming ---- */

static int resolve_format(const char *path, const char *format, embed_format *f, sq_err *err)
{
    if (format) {
        if (strcmp(format, "jsonl") == 0)
            *f = EMBED_JSONL;
        else if (strcmp(format, "npy") == 0)
            *f = EMBED_NPY;
        else if (strcmp(format, "f32") == 0)
            *f = EMBED_F32;
        else
            return sq_err_set(err, "unknown --format '%s' (jsonl, npy or f32)", format);
        return 0;
    }
    if (strcmp(path, "-") == 0 || ends_with(path, ".jsonl") || ends_with(path, ".json"))
        *f = EMBED_JSONL;
    else if (ends_with(path, ".npy"))
        *f = EMBED_NPY;
    else if (ends_with(path, ".f32"))
        *f = EMBED_F32;
    else
        return sq_err_set(err, "%s: unknown output format (use .jsonl, .npy or .f32)", path);
    return 0;
}

static int npy_header(embed_writer *w)
{
    int64_t shape[2] = {w->rows, w->dim};
    const char *descr = w->prec == SQ_PREC_FLOAT32          ? "<f4"
                        : sq_emb_precision_signed(w->prec) ? "|i1"
                                                           : "|u1";
    return sq_npy_write_header(w->fp, descr, shape, 2);
}

static int open_writer(embed_writer *w, const char *path, const char *format, int dim,
                       sq_emb_precision prec, sq_err *err);

int embed_writer_open(embed_writer *w, const char *path, const char *format, int dim, sq_err *err)
{
    return open_writer(w, path, format, dim, SQ_PREC_FLOAT32, err);
}

int embed_writer_open_codes(embed_writer *w, const char *path, const char *format,
                            sq_emb_precision prec, int width, sq_err *err)
{
    embed_format f;
    if (resolve_format(path ? path : "", format, &f, err) != 0)
        return -1;
    if (f == EMBED_F32)
        return sq_err_set(err, "%s: .f32 holds float32 rows; %s embeddings go to .npy or .jsonl",
                          path, sq_emb_precision_name(prec));
    return open_writer(w, path, format, width, prec, err);
}

static int open_writer(embed_writer *w, const char *path, const char *format, int dim,
                       sq_emb_precision prec, sq_err *err)
{
    memset(w, 0, sizeof *w);
    w->dim = dim;
    w->prec = prec;
    if (!path || !*path)
        return sq_err_set(err, "the output path is empty");
    if (resolve_format(path, format, &w->fmt, err) != 0)
        return -1;
    if (strcmp(path, "-") == 0) {
        if (w->fmt == EMBED_NPY)
            return sq_err_set(err, "standard output: .npy output needs a regular file (its header "
                                   "holds the row count); use --format jsonl or f32 on a pipe");
        w->to_stdout = true;
        w->fp = stdout;
        return 0;
    }
    if (sq_atomic_open(&w->af, path, err) != 0)
        return -1;
    w->fp = w->af.fp;
    if (w->fmt == EMBED_NPY && !w->af.tmp_path) {
        sq_atomic_abort(&w->af);
        return sq_err_set(err, "%s: .npy output needs a regular file (its header holds the row "
                               "count); use --format jsonl or f32 on a pipe or device",
                          path);
    }
    if (w->fmt == EMBED_NPY && npy_header(w) != 0) {
        sq_err_write_failed(err, path);
        sq_atomic_abort(&w->af);
        return -1;
    }
    return 0;
}

/* What the writer writes to, for messages. */
static const char *where(const embed_writer *w)
{
    return w->to_stdout ? "standard output" : w->af.path;
}

/* A JSONL line's start: {"index":I, and "id":ID when there is one. */
static void line_head(FILE *fp, int64_t index, const char *id_json)
{
    fprintf(fp, "{\"index\":%lld,", (long long)index);
    if (id_json)
        fprintf(fp, "\"id\":%s,", id_json);
}

/* n rows written: counted, and a pipe gets the chunk as soon as it is done. */
static int chunk_done(embed_writer *w, int64_t n, sq_err *err)
{
    w->rows += n;
    if ((w->to_stdout && fflush(w->fp) != 0) || ferror(w->fp))
        return sq_err_write_failed(err, where(w));
    return 0;
}

int embed_writer_rows(embed_writer *w, const float *rows, int64_t n, int64_t first,
                      char *const *id_json, sq_err *err)
{
    FILE *fp = w->fp;
    if (w->fmt == EMBED_JSONL) {
        for (int64_t i = 0; i < n; i++) {
            line_head(fp, first + i, id_json ? id_json[i] : NULL);
            fputs("\"embedding\":[", fp);
            const float *e = rows + (size_t)i * w->dim;
            for (int c = 0; c < w->dim; c++)
                fprintf(fp, c ? ",%.9g" : "%.9g", (double)e[c]);
            fputs("]}\n", fp);
        }
    } else {
        size_t k = (size_t)n * (size_t)w->dim;
        if (fwrite(rows, sizeof(float), k, fp) != k)
            return sq_err_write_failed(err, where(w));
    }
    return chunk_done(w, n, err);
}

int embed_writer_codes(embed_writer *w, const uint8_t *codes, int64_t n, int64_t first,
                       char *const *id_json, sq_err *err)
{
    FILE *fp = w->fp;
    const bool sgn = sq_emb_precision_signed(w->prec);
    if (w->fmt == EMBED_JSONL) {
        for (int64_t i = 0; i < n; i++) {
            line_head(fp, first + i, id_json ? id_json[i] : NULL);
            fputs("\"embedding\":[", fp);
            const uint8_t *e = codes + (size_t)i * w->dim;
            for (int c = 0; c < w->dim; c++)
                fprintf(fp, c ? ",%d" : "%d", sgn ? (int)(int8_t)e[c] : (int)e[c]);
            fputs("]}\n", fp);
        }
    } else if (fwrite(codes, 1, (size_t)n * (size_t)w->dim, fp) != (size_t)n * (size_t)w->dim) {
        return sq_err_write_failed(err, where(w));
    }
    return chunk_done(w, n, err);
}

int embed_writer_tokens(embed_writer *w, const int64_t *offsets, const int32_t *ids, int64_t n,
                        int64_t first, char *const *id_json, sq_err *err)
{
    FILE *fp = w->fp;
    for (int64_t i = 0; i < n; i++) {
        line_head(fp, first + i, id_json ? id_json[i] : NULL);
        fputs("\"ids\":[", fp);
        for (int64_t t = offsets[i]; t < offsets[i + 1]; t++)
            fprintf(fp, t > offsets[i] ? ",%d" : "%d", ids[t]);
        fputs("]}\n", fp);
    }
    return chunk_done(w, n, err);
}

int embed_writer_classes(embed_writer *w, const double *probs, int classes,
                         char *const *labels_json, int64_t n, int64_t first, char *const *id_json,
                         sq_err *err)
{
    FILE *fp = w->fp;
    for (int64_t i = 0; i < n; i++) {
        const double *p = probs + (size_t)i * classes;
        int best = 0;
        for (int c = 1; c < classes; c++)
            if (p[c] > p[best])
                best = c;
        line_head(fp, first + i, id_json ? id_json[i] : NULL);
        fprintf(fp, "\"label\":%s,\"probs\":{", labels_json[best]);
        for (int c = 0; c < classes; c++)
            fprintf(fp, "%s%s:%.9g", c ? "," : "", labels_json[c], p[c]);
        fputs("}}\n", fp);
    }
    return chunk_done(w, n, err);
}

int embed_writer_finish(embed_writer *w, sq_err *err)
{
    if (w->to_stdout) {
        int rc = fflush(stdout) != 0 || ferror(stdout)
                     ? sq_err_write_failed(err, "standard output")
                     : 0;
        memset(w, 0, sizeof *w);
        return rc;
    }
    if (w->fmt == EMBED_NPY) {
        /* The header of the real row count has the length of the first
         * one (128 bytes for any count below 10^50). */
        long end = ftell(w->fp);
        if (fseek(w->fp, 0, SEEK_SET) != 0 || npy_header(w) != 0 || ftell(w->fp) != 128 ||
            fseek(w->fp, end, SEEK_SET) != 0) {
            sq_err_set(err, "%s: cannot write the .npy header", w->af.path);
            sq_atomic_abort(&w->af);
            return -1;
        }
    }
    int rc = sq_atomic_commit(&w->af, err);
    memset(w, 0, sizeof *w);
    return rc;
}

void embed_writer_abort(embed_writer *w)
{
    if (!w->to_stdout && w->af.fp)
        sq_atomic_abort(&w->af);
    memset(w, 0, sizeof *w);
}

int write_embeddings(const char *path, const char *format, const sq_embed_result *r, sq_err *err)
{
    embed_writer w;
    if (embed_writer_open(&w, path, format, r->dim, err) != 0)
        return -1;
    if (embed_writer_rows(&w, r->emb, r->n, 0, NULL, err) != 0) {
        embed_writer_abort(&w);
        return -1;
    }
    return embed_writer_finish(&w, err);
}

/* Writing embeddings: .jsonl, raw .f32 or .npy (chosen by the file
 * extension or a format), token ids as JSONL, hidden states as .npy. Files
 * are written atomically; "-" is standard output (JSONL or f32). */
#ifndef SQ_EMBED_OUTPUT_H
#define SQ_EMBED_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "emb_precision.h"
#include "embedder.h"
#include "fileio.h"


/* ---- streaming (squint embed): rows are written as chunks finish ----
 * JSONL and .f32 stream; .npy is written with a row count of 0 and its
 * header patched at the end (the header is 128 bytes either way), so it
 * needs a regular file: on standard output or a pipe it is refused. The
 * file is atomic as ever: nothing at the path until embed_writer_finish. */
typedef enum { EMBED_JSONL, EMBED_NPY, EMBED_F32 } embed_format;

typedef struct embed_writer {
    embed_format fmt;
    bool to_stdout;
    sq_atomic_file af;
    FILE *fp;
    int dim;        /* row width (npy: columns) */
    int64_t rows;   /* rows written */
    sq_emb_precision prec; /* float32 rows, or byte codes (emb_precision.h) */
} embed_writer;

/* Choose the format (format, else the extension; "-": JSONL) and open. */
int embed_writer_open(embed_writer *w, const char *path, const char *format, int dim, sq_err *err);
/* The same for rows of byte codes of precision prec, width bytes each:
 * .npy of int8 ('|i1': int8, binary) or uint8 ('|u1'), or JSONL of
 * integers; .f32 refused. */
int embed_writer_open_codes(embed_writer *w, const char *path, const char *format,
                            sq_emb_precision prec, int width, sq_err *err);
/* Write n rows of codes (a writer opened with embed_writer_open_codes). */
int embed_writer_codes(embed_writer *w, const uint8_t *codes, int64_t n, int64_t first,
                       char *const *id_json, sq_err *err);
/* Write n rows of w->dim floats, indices first.., each with id_json[i] when
 * id_json is not NULL (JSONL only; the other formats carry no ids). */
int embed_writer_rows(embed_writer *w, const float *rows, int64_t n, int64_t first,
                      char *const *id_json, sq_err *err);
/* Token ids of n texts as JSONL ({"ids":[...]}, plus "index" and "id"). */
int embed_writer_tokens(embed_writer *w, const int64_t *offsets, const int32_t *ids, int64_t n,
                        int64_t first, char *const *id_json, sq_err *err);
/* Classifications of n texts as JSONL (squint classify; a writer opened as
 * jsonl): {"index":i,"id":..,"label":L,"probs":{L0:p0,L1:p1,..}}, the label
 * the most probable class (ties: the first), probs [n][classes] printed
 * with 9 significant digits; labels_json are the labels as JSON strings. */
int embed_writer_classes(embed_writer *w, const double *probs, int classes,
                         char *const *labels_json, int64_t n, int64_t first, char *const *id_json,
                         sq_err *err);
int embed_writer_finish(embed_writer *w, sq_err *err);
void embed_writer_abort(embed_writer *w);

/* A whole result at once (embed-run --output): the writer above, one
 * chunk. format: "jsonl", "npy", "f32", or NULL to choose by extension. */
int write_embeddings(const char *path, const char *format, const sq_embed_result *r, sq_err *err);

#endif

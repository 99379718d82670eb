/* The classification head a .sqm may carry (formats/SQM.md section 9,
 * `squint quantize --head`): metadata `class_head` (labels, normalized,
 * provenance) and the f64 tensors `class_head.weight` [C, H] and
 * `class_head.bias` [C]. Writing it (the quantizer) and reading it back
 * (classify, serve, embed-run through heads/head.h, verify) use this one
 * description; the tensors' presence, dtypes and shapes are the schema's
 * (sqm_schema.c). */
#ifndef SQ_SQM_CLASS_HEAD_H
#define SQ_SQM_CLASS_HEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "container.h"
#include "sq_error.h"
#include "strbuf.h"

#define SQ_CLASS_HEAD_MIN_LABELS 2
#define SQ_CLASS_HEAD_MAX_LABELS 1024
#define SQ_CLASS_HEAD_MAX_LABEL_BYTES 256

typedef struct sq_sqm_class_head {
    int classes, dim;
    char **labels;       /* [classes] */
    const double *W, *b; /* [classes][dim], [classes] */
    bool normalized;     /* the head expects L2-normalized embeddings */
    /* provenance (metadata only; the reader fills what the file has) */
    char *source;        /* the head file given to quantize */
    bool has_xxh64;
    uint64_t xxh64;      /* of that file */
} sq_sqm_class_head;

/* Is label (n bytes) a valid class name: 1..256 bytes of UTF-8, no NUL?
 * The head file readers and the .sqm reader apply the same rule. */
bool sq_class_label_valid(const char *label, size_t n);

/* The class head of an open .sqm: 1 with *h filled (labels and source
 * owned by h, W and b pointing into c), 0 when the file has none, -1 with
 * err naming c->path and the problem (metadata malformed, a tensor missing
 * or of the wrong dtype / shape, a value not finite). */
int sq_sqm_class_head_read(const sq_container *c, sq_sqm_class_head *h, sq_err *err);
void sq_sqm_class_head_free(sq_sqm_class_head *h);

/* Does c's metadata name a class head (a `class_head` key)? Whether it is
 * valid is sq_sqm_class_head_read's. */
bool sq_sqm_has_class_head(const sq_container *c);

/* Append the metadata block `class_head:` for h (the writer's text). */
void sq_sqm_class_head_yaml(sq_strbuf *sb, const sq_sqm_class_head *h);

#endif

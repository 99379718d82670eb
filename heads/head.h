/* A classification head over sentence embeddings (squint train-head,
 * squint classify): softmax(W e + b) over labelled classes, e the model's
 * embedding. Its file is JSON or safetensors (formats/HEAD.md); written
 * atomically, read with every field checked. A Python pickle is refused
 * unread. A .sqm may carry one (formats/SQM.md section 9). */
#ifndef SQ_HEAD_H
#define SQ_HEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "container.h"
#include "sq_error.h"

#define SQ_HEAD_FORMAT "squint-head"
#define SQ_HEAD_VERSION 1
#define SQ_HEAD_MAX_FILE ((size_t)256 << 20)
#define SQ_HEAD_MAX_DIM 65536

typedef struct sq_head {
    int classes, dim;
    char **labels;   /* [classes], class order */
    double *W;       /* [classes][dim] */
    double *b;       /* [classes] */
    bool normalized; /* the embeddings it was trained on were L2-normalized */
} sq_head;

/* How a head was trained (written into the file, not read back). */
typedef struct sq_head_provenance {
    const char *model;      /* the MODEL argument */
    bool has_model_hash;
    uint64_t model_xxh64;   /* the .sqm file, or the checkpoint's combined digest */
    const char *train_file;
    bool has_train_hash;
    uint64_t train_xxh64;
    const char *text_field, *label_field;
    int64_t rows_in_file, rows_used;
    int64_t per_class;      /* 0: all rows */
    uint64_t seed;
    double l2;
    int steps;              /* optimizer steps */
    double train_accuracy;
    const char *squint_version;
} sq_head_provenance;

/* Allocate labels / W / b for classes x dim (zeroed). */
int sq_head_alloc(sq_head *h, int classes, int dim, sq_err *err);
void sq_head_free(sq_head *h);

/* Write h atomically at path: safetensors when path ends in .safetensors
 * (F64 tensors), else JSON (weights and biases printed with 17 significant
 * digits, so they read back to the same doubles). */
int sq_head_write(const char *path, const sq_head *h, const sq_head_provenance *p, sq_err *err);

/* Read and check a head file: JSON, or safetensors (a name ending in
 * .safetensors, or content starting as one). A pickle (a name ending in
 * .pkl / .pickle, or content starting with the protocol 2-5 bytes 0x80
 * 0x02..0x05) is refused before any parsing. */
int sq_head_read(const char *path, sq_head *h, sq_err *err);

/* The head of a model: the file head_path when given (it overrides a
 * stored one), else the head stored in the .sqm model_path (sqm: that file
 * already open and verified, or NULL to open it here). dim > 0: the
 * model's embedding width, which the head's must equal (the message names
 * both files). Fails naming the model when it has no head and none is
 * given. */
int sq_head_for_model(const char *model_path, const sq_container *sqm, const char *head_path,
                      int dim, sq_head *h, sq_err *err);

/* Has the .sqm model_path a stored head (a `class_head` metadata key)? False
 * for anything else (a checkpoint, an unreadable file). */
bool sq_head_stored_in(const char *model_path);

/* Accuracy of h on n embeddings [n][dim] against gold SST-2 labels 0 / 1
 * (class "0" / "1" of the head). Fails naming head_name when the head lacks
 * one of the labels. */
int sq_head_accuracy(const sq_head *h, const char *head_name, const float *emb, int64_t n,
                     const int *gold, double *acc, sq_err *err);

/* Class probabilities of n embeddings [n][dim] into probs [n][classes]. */
void sq_head_apply(const sq_head *h, const float *emb, int64_t n, double *probs);

#endif

/* Is a squint file intact and, for a model, self-consistent? The checks of
 * `squint verify`, which `squint inspect` reports too: checksums, then the
 * schema and values every loader proves (formats/SQM.md). */
#ifndef SQ_SQM_VERIFY_H
#define SQ_SQM_VERIFY_H

#include "container.h"
#include "sq_error.h"

/* Outcome of checking a file. status is an exit code: SQ_EXIT_OK, SQ_EXIT_FAIL
 * (damaged or inconsistent: `part` says where) or SQ_EXIT_BADINPUT (unreadable,
 * not a squint file, or a version this build does not read). */
typedef struct sq_verify_report {
    int status;
    /* What is damaged: "tensor", "metadata", "directory", "header", "trailer",
     * "padding", "file size" or "zstd stream"; "" when OK. */
    const char *part;
    char tensor[SQ_CONTAINER_MAX_NAME + 1]; /* the tensor, when part is "tensor" */
    sq_err err;                             /* the problem, when status != OK */
} sq_verify_report;

/* Full check of an open container: every tensor's xxh64 (the first damaged
 * tensor is named), padding and the whole-file checksum; then, for a model,
 * that the metadata parses as a squint-model document and that every linear
 * has its companion tensors with consistent dtypes and shapes (formats/SQM.md).
 * Fills r and returns r->status. */
int sq_verify_container(const sq_container *c, sq_verify_report *r);

/* Open and check the file at path (sq_verify_container). When it cannot be
 * opened, says whether that is damage to a squint file (the part whose
 * checksum fails, a truncation) or not a squint file at all. */
int sq_verify_file(const char *path, sq_verify_report *r);

#endif

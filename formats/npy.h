/* NumPy .npy files of little-endian float32: the writer (format version
 * 1.0) and a strict reader of 2-D arrays (e.g. embeddings a reference model
 * made earlier), which treats the file as hostile. */
#ifndef SQ_NPY_H
#define SQ_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "sq_error.h"

/* Write the header of a C-order '<f4' array of the given shape to fp. The
 * caller then writes prod(shape) floats. */
int sq_npy_write_header_f32(FILE *fp, const int64_t *shape, int ndim);
/* The same for another element type: descr "|i1" (int8) or "|u1" (uint8),
 * 4 characters as "<f4" is, so a header's length never depends on it. */
int sq_npy_write_header(FILE *fp, const char *descr, const int64_t *shape, int ndim);

/* Read a C-order '<f4' array of shape (rows, cols) from path: versions 1.0,
 * 2.0 and 3.0, the header dictionary parsed strictly (the keys descr,
 * fortran_order and shape, each once; descr '<f4', fortran_order False, a
 * 2-tuple of non-negative integers), the data exactly rows x cols x 4 bytes
 * to the end of the file, every value finite. On success *data is a
 * malloc'ed copy. Errors name the file and the problem. */
int sq_npy_read_f32_2d(const char *path, float **data, int64_t *rows, int64_t *cols, sq_err *err);

/* The same on a buffer already in memory; name is used in messages. */
int sq_npy_parse_f32_2d(const unsigned char *buf, size_t len, const char *name, float **data,
                        int64_t *rows, int64_t *cols, sq_err *err);

#endif

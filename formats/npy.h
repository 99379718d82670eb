/* Writer for NumPy .npy files (format version 1.0, little-endian float32). */
#ifndef SQ_NPY_H
#define SQ_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "sq_error.h"

/* Write the header of a C-order '<f4' array of the given shape to fp. The
 * caller then writes prod(shape) floats. */
int sq_npy_write_header_f32(FILE *fp, const int64_t *shape, int ndim);

#endif

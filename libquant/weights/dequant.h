/* Dequantization of any tensor of a squint container (.sqm or .sqc) back to
 * float values, for tools that compare or summarize models (squint diff,
 * inspect) and for tests. Not a runtime path: it is scalar and allocates.
 *
 * Logical values by dtype:
 *   f32, f64, f16, bf16, i32, u32, i64, u64, u8   the stored values as float
 *   i8                                            the stored values, times the
 *                                                 per-row `.scale` companion when
 *                                                 there is one (int8 embeddings)
 *   s8-panel, s4g128-panel                        W[n][k] = q[n][k] * scale, read
 *                                                 from the VNNI panels (pack.h)
 *                                                 with the `.scale` companion
 *                                                 (per channel / per group of
 *                                                 128); padding dropped
 * The companion of tensor "X.weight" is "X.scale" (formats/SQM.md); of any
 * other tensor "X", "X.scale". */
#ifndef SQ_DEQUANT_H
#define SQ_DEQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container.h"
#include "qtype.h"
#include "sq_error.h"

/* A dequantized tensor: count floats in row-major order of its logical shape. */
typedef struct sq_dequant {
    float *data; /* malloc'd; NULL when count is 0 */
    size_t count;
    int ndim;
    uint64_t dims[SQ_CONTAINER_MAX_DIMS]; /* logical shape ([N, K] for packed weights) */
} sq_dequant;

/* True when tensors of this dtype can be dequantized (every plain numeric
 * dtype and the packed weights). */
bool sq_dequant_supported(unsigned code);

/* The scale companion of t in c (see above), or NULL when absent. */
const sq_container_tensor *sq_dequant_scale_of(const sq_container *c,
                                               const sq_container_tensor *t);

/* Logical shape of t: its dims, except [N, K] for a packed weight. Fails for
 * an unsupported dtype or a packed tensor that is not 2-D. */
int sq_dequant_shape(const sq_container_tensor *t, int *ndim, uint64_t *dims, sq_err *err);

/* Dequantize tensor `name` of c into out (see above). Fails, with out zeroed
 * and a message naming the tensor, when it is absent, of an unsupported
 * dtype, a packed weight or i8 tensor whose `.scale` companion is missing
 * (packed) or of the wrong dtype or size, or memory runs out. */
int sq_dequant_tensor(const sq_container *c, const char *name, sq_dequant *out, sq_err *err);

/* Free out->data and zero *out. NULL is a no-op. */
void sq_dequant_free(sq_dequant *out);

#endif

/* Embeddings for vector stores in fewer bytes, as sentence-transformers'
 * quantize_embeddings makes them (its `precision`):
 *   float32  as computed;
 *   int8     per dimension d, with ranges lo[d], hi[d] (calibration
 *            embeddings' min and max): step_d = (hi - lo) / 255,
 *            code = trunc((x - lo) / step_d - 128), clamped to [-128, 127];
 *   uint8    the same without the -128, clamped to [0, 255];
 *   ubinary  one bit per dimension, x > 0, packed 8 to a byte with the first
 *            dimension in the highest bit (numpy.packbits), zeros past dim;
 *   binary   ubinary's bytes minus 128, as int8.
 * sentence-transformers casts with numpy, which wraps a value beyond the
 * ranges; here it is clamped (a text beyond the calibration's range keeps
 * the nearest code instead of jumping to the other end). A dimension whose
 * range is empty (hi == lo) gets code -128 (int8) / 0 (uint8). */
#ifndef SQ_EMB_PRECISION_H
#define SQ_EMB_PRECISION_H

#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"

typedef enum sq_emb_precision {
    SQ_PREC_FLOAT32 = 0,
    SQ_PREC_INT8,
    SQ_PREC_UINT8,
    SQ_PREC_BINARY,
    SQ_PREC_UBINARY,
} sq_emb_precision;

/* "float32", "int8", "uint8", "binary", "ubinary" -> p; -1 otherwise. */
int sq_emb_precision_parse(const char *s, sq_emb_precision *p);
const char *sq_emb_precision_name(sq_emb_precision p);
/* "float32, int8, uint8, binary, ubinary", for messages. */
const char *sq_emb_precision_names(void);
/* Bytes (values) per row of a dim-wide embedding: dim, or ceil(dim / 8). */
int sq_emb_precision_width(sq_emb_precision p, int dim);
/* True for the precisions whose values are signed bytes (int8, binary). */
bool sq_emb_precision_signed(sq_emb_precision p);
/* True for int8 and uint8, which need ranges. */
bool sq_emb_precision_needs_ranges(sq_emb_precision p);

/* Ranges [2][dim] (lo, then hi) grown by n rows of x [n][dim]; start them
 * with sq_emb_ranges_init. */
void sq_emb_ranges_init(float *ranges, int dim);
void sq_emb_ranges_add(float *ranges, const float *x, int64_t n, int dim);

/* Ranges from a [2, dim] float32 .npy (min row, then max row; squint embed
 * --ranges-out writes one): the shape and lo <= hi in every column
 * checked, the file named in errors. 0, or -1 with err. */
int sq_emb_ranges_load(const char *path, int dim, float *ranges, sq_err *err);

/* n rows of x [n][dim] -> out [n][sq_emb_precision_width] bytes (int8 values
 * stored as their two's-complement bytes). ranges: [2][dim] for int8 /
 * uint8, else unused. */
void sq_emb_quantize(sq_emb_precision p, const float *x, int64_t n, int dim,
                     const float *ranges, uint8_t *out);

#endif

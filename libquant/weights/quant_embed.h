/* Quantization of embedding tables (gathered by row, never multiplied as a
 * matrix, so they keep a plain row-major layout): int8 with one scale per row,
 * or int4 with one scale per 128 values of a row (two values per byte, the
 * even column in the low nibble). Symmetric, round half away from zero. The
 * runtime side: dequantizing a row; quantize/embed_quant.h writes the tables. */
#ifndef SQ_QUANT_EMBED_H
#define SQ_QUANT_EMBED_H

#include <stdint.h>

/* int8: q [rows][cols], scale [rows]. */
void sq_embed_dequant_s8_row(const int8_t *q, float scale, int cols, float *out);

/* int4: cols must be even; q [rows][cols / 2]; scale [rows][groups], groups =
 * ceil(cols / 128). */
int sq_embed_s4_groups(int cols);
void sq_embed_dequant_s4_row(const uint8_t *q, const float *scale, int cols, float *out);

#endif

/* Quantizing embedding tables into the layouts of libquant/weights/quant_embed.h:
 * int8 with one scale per row, int4 with one scale per 128 values of a row.
 * Symmetric, round half away from zero. */
#ifndef SQ_EMBED_QUANT_H
#define SQ_EMBED_QUANT_H

#include <stdint.h>

/* int8: q [rows][cols], scale [rows]. */
void sq_embed_quant_s8(const float *x, int rows, int cols, int8_t *q, float *scale);

/* int4: cols even; q [rows][cols / 2]; scale [rows][sq_embed_s4_groups(cols)]. */
void sq_embed_quant_s4(const float *x, int rows, int cols, uint8_t *q, float *scale);

#endif

/* Packing quantized weights into VNNI-4 panels, and reading them back.
 *
 * int8 (SQ_QT_S8): exactly the layout of qweight.h. Byte offset of W[n][k]:
 *     ((n/16) * (k_pad/4) + k/4) * 64 + (n%16) * 4 + k%4
 * i.e. panel p = n/16, panel row r = p * (k_pad/4) + k/4 (a 64-byte row:
 * 16 channels x 4 consecutive k), byte b = 4 * (n%16) + k%4 in the row.
 * n_pad = round_up(n, 16), k_pad = round_up(k, 4); data_size = n_pad * k_pad.
 *
 * int4 (SQ_QT_S4G128): the same panel rows, each stored in 32 bytes instead
 * of 64. With b the byte index in the int8 row (above), the value sits in
 *     byte  r * 32 + (b & 31),
 *     the low nibble (bits 0..3) when b < 32 (lanes n%16 = 0..7),
 *     the high nibble (bits 4..7) when b >= 32 (lanes n%16 = 8..15).
 * So one 256-bit load of a row gives, with one AND 0x0F, bytes 0..31 of the
 * int8 row and, with a 16-bit shift right by 4 and the same AND, bytes
 * 32..63. Nibbles are two's complement (-7 = 0x9 ... 7 = 0x7; 0x8 never
 * occurs), so a zero weight is a zero nibble and padding bytes are 0x00; a
 * nibble n becomes the s8 value (n ^ 8) - 8, or one vpshufb with the table
 * {0,1,..,7,-8,-7,..,-1}. n_pad = round_up(n, 16), k_pad = round_up(k, 128);
 * data_size = n_pad * k_pad / 2. Group g (k in [128g, 128g + 128)) of panel
 * p is the 32 consecutive rows r = p * (k_pad/4) + 32g .. + 31, 1024 bytes.
 *
 * Padding (channels >= n, inputs >= k) is zero in both layouts. The packers
 * also compute q->wsum (qweight.h): per channel (int8) or per channel and
 * group (int4, [n_pad][k_pad/128]), padding channels 0. Scales are the
 * quantizer's business (quant_weights.h). */
#ifndef SQ_PACK_H
#define SQ_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "qweight.h"

/* Bytes of the packed panels of an [n][k] matrix (n, k >= 1). */
uint64_t sq_packed_size_s8(int n, int k);
uint64_t sq_packed_size_s4(int n, int k);
/* The same for a quantized qtype; 0 for f32 or an unknown type. */
uint64_t sq_packed_size(sq_qtype qt, int n, int k);

/* Pack panel p (output channels 16p .. 16p+15) of q, allocated with
 * sq_qweight_alloc, from unpacked quantized values: rows[i * ld + kk] is
 * W[16p + i][kk] for i < min(16, n - 16p) and kk < q->k (ld >= q->k). Values
 * must be in [-127, 127] (int8) or [-7, 7] (int4); out-of-range values are
 * clamped. Writes the whole panel (padding zero) and its wsum entries.
 * Different panels touch disjoint bytes, so panels may be packed in
 * parallel. */
void sq_pack_panel_s8(sq_qweight *q, int p, const int8_t *rows, size_t ld);
void sq_pack_panel_s4(sq_qweight *q, int p, const int8_t *rows, size_t ld);

/* Pack a whole unpacked [n][k] matrix of quantized values (row-major) into
 * q (allocated with sq_qweight_alloc for qtype, n, k; scales untouched).
 * Parallel over panels with OpenMP; the bytes do not depend on the thread
 * count. */
void sq_pack(sq_qweight *q, const int8_t *values);

/* One quantized value W[n][k] read back from the panels; 0 <= n < n_pad and
 * 0 <= k < k_pad (padding reads 0). The scalar reference for kernels and
 * tests: no range checks beyond an assert. */
int sq_panel_get_s8(const sq_qweight *q, int n, int k);
int sq_panel_get_s4(const sq_qweight *q, int n, int k);

#endif

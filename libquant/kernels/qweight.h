/* A quantized linear layer's weights as stored in a .sqm and run by the
 * int8 runtime. Shapes: N output channels, K inputs; W is [N][K] row-major
 * (Hugging Face layout) before packing.
 *
 * Packed layout (DESIGN.md "Packed layout"): VNNI-4 panels of 16 output
 * channels, [N_pad/16][K_pad/4][16][4] int8, i.e. for panel p, k-group g,
 * lane i, byte j: W[16p + i][4g + j]. N_pad = N rounded up to 16, K_pad = K
 * rounded up to 4 (int8) or to 128 (int4); padding is zero. One 64-byte row
 * of a panel is one k-group of 16 channels: the same bytes feed AVX2
 * (vpmaddubsw with the sign trick), AVX-VNNI / AVX512-VNNI (vpdpbusd, u8 + 128
 * with the stored compensation) and AMX B tiles. */
#ifndef SQ_QWEIGHT_H
#define SQ_QWEIGHT_H

#include <stdint.h>

#include "qtype.h"
#include "sq_error.h"

#define SQ_PANEL_N 16 /* output channels per panel */
#define SQ_PANEL_K 4  /* consecutive k bytes per channel (VNNI-4) */
#define SQ_INT4_GROUP 128

/* Largest N or K accepted (padding must not overflow an int). */
#define SQ_QWEIGHT_MAX_DIM (1 << 28)

typedef struct sq_qweight {
    sq_qtype qtype;   /* a packed type (qtype.h: one with packed_size) */
    int n, k;         /* logical shape */
    int n_pad, k_pad; /* padded shape of the panels */
    /* int8: panels [n_pad/16][k_pad/4][16][4], values in [-127, 127].
     * int4: nibbles, n_pad * k_pad / 2 bytes, in an order that unpacks to the
     * same panel layout (see pack.h); values in [-7, 7] (symmetric RTN). */
    void *data;
    uint64_t data_size;
    /* int8: scale[n] per output channel. int4: scale[n][k_pad/128].
     * Allocated for n_pad rows; the padding rows are 0, so a kernel that runs
     * whole panels writes 0 for the padded channels. */
    float *scale;
    /* sum over k of the quantized W[n][k], per output channel (n_pad entries;
     * int4: sum over each group, [n_pad][k_pad/128]): the u8 compensation of
     * vpdpbusd, 128 * wsum. */
    int32_t *wsum;
    /* 1 when data, scale and wsum point into memory owned elsewhere (a mapped
     * .sqm): sq_qweight_free then leaves them alone. 0 for sq_qweight_alloc. */
    int borrowed;
} sq_qweight;

/* Scale (and wsum) columns per output channel: k_pad / block of the qtype
 * (1 for a per-channel type: int8 1, int4-g128 k_pad/128). */
int sq_qweight_groups(const sq_qweight *q);

/* Set qtype and the logical and padded shapes of q (zeroing the rest) after
 * checking them: qt must be a packed type (qtype.h), 1 <= n, k <=
 * SQ_QWEIGHT_MAX_DIM. Allocates nothing. */
int sq_qweight_shape(sq_qweight *q, sq_qtype qt, int n, int k, sq_err *err);

/* sq_qweight_shape, then allocate data, scale and wsum zero-filled and 64-byte
 * aligned. On failure q is left empty (safe to free). */
int sq_qweight_alloc(sq_qweight *q, sq_qtype qt, int n, int k, sq_err *err);

/* A borrowed view over packed bytes, scales and sums that live elsewhere
 * (e.g. the tensors of a mapped .sqm). data_size must equal
 * sq_packed_size(qt, n, k); data must be 64-byte aligned; scale and wsum hold
 * n_pad * groups entries. Nothing is copied; q->borrowed is set. */
int sq_qweight_view(sq_qweight *q, sq_qtype qt, int n, int k, const void *data,
                    uint64_t data_size, const float *scale, const int32_t *wsum, sq_err *err);

/* Free what q owns (nothing when borrowed) and zero it. NULL is a no-op. */
void sq_qweight_free(sq_qweight *q);

#endif

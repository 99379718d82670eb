/* The kernel side of the integer GEMM (gemm_s8.h is the caller side): the
 * row every ISA file exports, the shared tile driver and the epilogue.
 *
 * Calls go one way only: gemm_s8_dispatch.c picks a row and calls through
 * it; the ISA files call the tile driver (gemm_tiles.c); the tile driver
 * calls the micro-kernel it is handed and nothing else. No ISA file calls
 * the dispatcher. */
#ifndef SQ_GEMM_KERNEL_H
#define SQ_GEMM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "cpu_features.h"
#include "qlinear_ref.h"
#include "qweight.h"
#include "par_threads.h"

/* ---- the epilogue (the quantized linear's last step) ----
 * int8:  y[m][n] = (float)C[m][n] * out_scale[n] + bias[n]
 * int4:  y[m][n] = C[m][n] * act_scale + bias[n]
 * with C the sq_gemm_s8 / sq_gemm_s4 result, for n < W->n only (y's
 * columns W->n .. ldy-1 are never written). The product is rounded to
 * float before the add (never an FMA), so y has the bits of running
 * sq_gemm_s8 / sq_gemm_s4 and then that loop in plain C. */
typedef struct sq_gemm_epilogue {
    const float *out_scale; /* int8: [W->n]; unused for int4 */
    const int32_t *acc_off; /* int8: [W->n] added to acc first (z * wsum[n] of an
                               activation zero point), or NULL; unused for int4 */
    float act_scale;        /* int4; unused for int8 */
    const float *bias;      /* [W->n] */
    float *y;               /* [M][ldy] */
    size_t ldy;             /* >= W->n */
    /* [M] or NULL (all 0). Row r with row_scale[r] = f > 0 was quantized
     * with its own step (sq_gemm_quantize_acts_guard: symmetric, no zero
     * point) and its acc is first scaled by f, product rounded:
     *   int8:  y = ((float)acc * f) * out_scale[n] + bias[n]   (no acc_off)
     *   int4:  y = (acc * f) * act_scale + bias[n]
     * Rows with 0 take the formulas above unchanged (same bits). */
    const float *row_scale;
    /* Outlier channels (outlier_side.h) added to each finished row after
     * the formulas above, or NULL: none. */
    const struct sq_outlier_side *side;
} sq_gemm_epilogue;

/* ---- one row of the kernel table ----
 * s8 / s4 compute the full M x W->n result (gemm_s8.h), shapes and CPU
 * already checked. ep is NULL (write C), or, only for a row with fuses,
 * the epilogue each finished tile goes through into ep->y instead (C is
 * then not touched and may be NULL). */
typedef void (*sq_gemm_s8_fn)(const int8_t *A, int M, size_t lda, const sq_qweight *W,
                              int32_t *C, size_t ldc, const sq_gemm_epilogue *ep);
typedef void (*sq_gemm_s4_fn)(const int8_t *A, int M, size_t lda, const sq_qweight *W,
                              float *C, size_t ldc, const sq_gemm_epilogue *ep);
/* The activation quantize step (gemm_s8.h) with zero point z; range: NULL,
 * or [rows][2] receiving min and max of x_j * m_j over each row (NaN
 * ignored; +inf / -inf for a row of NaNs). */
typedef void (*sq_quantize_fn)(const float *x, int rows, int k, size_t ldx, const float *m,
                               int z, int8_t *qa, int k_pad, size_t lda, float *range);

/* The end of one row of a quantize loop, shared by the rows: columns
 * j0 .. k-1 in scalar code (a vector loop's tail; the whole row for the
 * scalar row) carrying the running min / max lo, hi of x_j * m_j, the K
 * padding zeroed, and the row's range stored at range_r (NULL: none). */
static inline void sq_quantize_row_finish(const float *xr, const float *m, int j0, int k, int z,
                                          int8_t *qr, int k_pad, float lo, float hi,
                                          float *range_r)
{
    for (int j = j0; j < k; j++) {
        float v = xr[j] * m[j];
        qr[j] = sq_ref_round_s8_zp(v, z);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    memset(qr + k, 0, (size_t)(k_pad - k));
    if (range_r) {
        range_r[0] = lo;
        range_r[1] = hi;
    }
}

typedef struct sq_gemm_kernels {
    sq_isa isa;
    sq_gemm_s8_fn s8;
    sq_gemm_s4_fn s4;
    sq_quantize_fn quantize; /* NULL: the ISA has none of its own */
    bool fuses;              /* s8 / s4 take an epilogue (the tile driver) */
} sq_gemm_kernels;

/* The rows, one per ISA file. */
extern const sq_gemm_kernels sq_gemm_kernels_scalar;     /* gemm_s8_scalar.c */
extern const sq_gemm_kernels sq_gemm_kernels_avx2;       /* gemm_s8_avx2.c */
extern const sq_gemm_kernels sq_gemm_kernels_avxvnni;    /* gemm_s8_avxvnni.c */
extern const sq_gemm_kernels sq_gemm_kernels_avx512vnni; /* gemm_s8_avx512vnni.c */
extern const sq_gemm_kernels sq_gemm_kernels_amx;        /* gemm_s8_amx.c */

/* ---- the shared tile driver (gemm_tiles.c) ----
 * A micro-kernel computes an nr x (np * 16) block: rows r0 .. r0+nr-1 of A
 * (A points at row r0) against panels p0 .. p0+np-1 of W, over all of
 * k_pad, into out[nr][np * 16] (padding channels included). */
typedef void (*sq_ukr_s8)(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,
                          int np, int32_t *out);
typedef void (*sq_ukr_s4)(const int8_t *A, size_t lda, int nr, const sq_qweight *W, int p0,
                          int np, float *out);

/* Largest nr * np * 16 a micro-kernel may use (AVX2 widened: 32 rows x 2
 * panels; the AMX kernel has its own driver, gemm_s8_amx.inc). */
#define SQ_UKR_MAX_OUT (16 * 4 * SQ_PANEL_N)

/* Run ukr over the fixed grid of (nr_max rows, np_max panels) tiles,
 * panel-block-major, OpenMP-parallel over tiles. The grid depends only on
 * the shapes, never on the thread count. ep NULL: the live columns
 * (n < W->n) are copied into C. Else they go through the epilogue into
 * ep->y and C is not touched. */
void sq_gemm_tiles_s8(sq_ukr_s8 ukr, int nr_max, int np_max, sq_work work, const int8_t *A,
                      int M, size_t lda, const sq_qweight *W, int32_t *C, size_t ldc,
                      const sq_gemm_epilogue *ep);
void sq_gemm_tiles_s4(sq_ukr_s4 ukr, int nr_max, int np_max, sq_work work, const int8_t *A,
                      int M, size_t lda, const sq_qweight *W, float *C, size_t ldc,
                      const sq_gemm_epilogue *ep);

/* The grid those drivers (and the AMX row's own, gemm_s8_amx.inc) run:
 * tiles of nr_max rows x np_max panels, chunk-major (a chunk of A rows of
 * about 128 KiB stays in L2 while every panel block reads it), then panel
 * block, then row block. It depends on the shapes only, never on the
 * thread count, so every output comes from one tile in one fixed order. */
typedef struct sq_gemm_tile {
    int r0, nr, p0, np, live; /* rows [r0, r0+nr), panels [p0, p0+np), live real columns */
} sq_gemm_tile;
typedef struct sq_gemm_grid {
    int M, n, panels, nr_max, np_max;
    long row_blocks, pblocks, rb_chunk, tiles;
} sq_gemm_grid;
sq_gemm_grid sq_gemm_grid_of(int M, const sq_qweight *W, int nr_max, int np_max);
sq_gemm_tile sq_gemm_grid_tile(const sq_gemm_grid *g, long t);
/* The threads an M-row GEMM over W in `tiles` tiles is worth (par_threads.h),
 * work the kind of the kernel's multiply-adds. */
int sq_gemm_threads(int M, const sq_qweight *W, long tiles, sq_work work);
/* Around one tile's micro-kernel: begin prefetches its output lines (y
 * with ep, else C; elem the size of C's elements); end takes out
 * [nr][np * 16] (the finished tile) through the epilogue into ep->y, or
 * copies its live columns into C when ep is NULL. */
void sq_gemm_tile_begin(const sq_gemm_tile *tl, const sq_gemm_epilogue *ep, const void *C,
                        size_t ldc, size_t elem);
void sq_gemm_tile_end_s8(const sq_gemm_tile *tl, const int32_t *out, const sq_gemm_epilogue *ep,
                         int32_t *C, size_t ldc);
void sq_gemm_tile_end_s4(const sq_gemm_tile *tl, const float *out, const sq_gemm_epilogue *ep,
                         float *C, size_t ldc);

/* The epilogue over a finished C ([M][N], N = W->n), for the rows that do
 * not fuse it. Same bits as the fused path. */
void sq_gemm_epilogue_s8(const int32_t *C, int M, int N, const sq_gemm_epilogue *ep);
void sq_gemm_epilogue_s4(const float *C, int M, int N, const sq_gemm_epilogue *ep);

/* Adds p to acc as two roundings (p already rounded to float), never
 * contracted into an FMA by the compiler: the int4 epilogue must give the
 * same bits on every ISA. */
static inline float sq_gemm_add_scaled(float acc, int32_t v, float scale)
{
    float p = (float)v * scale;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__("" : "+x"(p)); /* opaque to the optimizer: no fma(v, scale, acc) */
#endif
    return acc + p;
}

#endif

/* The shared tile driver and the epilogue of the integer GEMM
 * (gemm_kernel.h): what the per-ISA files and the dispatcher both use.
 * Calls nothing but the micro-kernel it is handed. */
#include <string.h>

#include "gemm_kernel.h"
#include "outlier_side.h"
#include "par_threads.h"

/* ---- the epilogue ----
 * One row segment: y[j] = (float)acc[j] * scale[j] + bias[j] (int8) or
 * acc[j] * act_scale + bias[j] (int4), 4 lanes at a time with GCC vector
 * extensions (SSE2 on the x86-64 baseline this file is built for). The
 * empty asm makes the rounded product opaque, so no -march / -mfma /
 * -ffp-contract setting can fuse the multiply and the add: the bits stay
 * those of the plain C loop the quantized linear ran before the fusion
 * (built without FMA). cvtdq2ps / cvtsi2ss, mulps / mulss and addps /
 * addss round alike, so lanes and the scalar tail agree. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define NO_FMA(v) __asm__("" : "+x"(v))
#else
#define NO_FMA(v) ((void)0)
#endif

/* A guarded row (rs > 0, gemm_s8.h): ((float)acc * rs) * scale + bias, each
 * product rounded, no zero-point offset. */
static void epi_s8_row_guarded(const int32_t *acc, float rs, const float *scale,
                               const float *bias, float *y, int cols)
{
    int j = 0;
    v4f r = {rs, rs, rs, rs};
    for (; j + 4 <= cols; j += 4) {
        v4i a;
        v4f s, b;
        memcpy(&a, acc + j, sizeof a);
        memcpy(&s, scale + j, sizeof s);
        memcpy(&b, bias + j, sizeof b);
        v4f p = __builtin_convertvector(a, v4f) * r;
        NO_FMA(p);
        p = p * s;
        NO_FMA(p);
        v4f o = p + b;
        memcpy(y + j, &o, sizeof o);
    }
    for (; j < cols; j++) {
        float p = (float)acc[j] * rs;
        NO_FMA(p);
        p = p * scale[j];
        NO_FMA(p);
        y[j] = p + bias[j];
    }
}

static void epi_s4_row_guarded(const float *acc, float rs, float act_scale, const float *bias,
                               float *y, int cols)
{
    int j = 0;
    v4f r = {rs, rs, rs, rs}, sc = {act_scale, act_scale, act_scale, act_scale};
    for (; j + 4 <= cols; j += 4) {
        v4f a, b;
        memcpy(&a, acc + j, sizeof a);
        memcpy(&b, bias + j, sizeof b);
        v4f p = a * r;
        NO_FMA(p);
        p = p * sc;
        NO_FMA(p);
        v4f o = p + b;
        memcpy(y + j, &o, sizeof o);
    }
    for (; j < cols; j++) {
        float p = acc[j] * rs;
        NO_FMA(p);
        p = p * act_scale;
        NO_FMA(p);
        y[j] = p + bias[j];
    }
}

static inline void epi_s8_row(const int32_t *restrict acc, const int32_t *restrict off,
                              const float *restrict scale, const float *restrict bias,
                              float *restrict y, int cols, float rs)
{
    if (rs > 0) {
        epi_s8_row_guarded(acc, rs, scale, bias, y, cols);
        return;
    }
    int j = 0;
    for (; j + 4 <= cols; j += 4) {
        v4i a;
        v4f s, b;
        memcpy(&a, acc + j, sizeof a);
        if (off) {
            v4i o;
            memcpy(&o, off + j, sizeof o);
            a += o;
        }
        memcpy(&s, scale + j, sizeof s);
        memcpy(&b, bias + j, sizeof b);
        v4f p = __builtin_convertvector(a, v4f) * s;
        NO_FMA(p);
        v4f o = p + b;
        memcpy(y + j, &o, sizeof o);
    }
    for (; j < cols; j++) {
        float p = (float)(acc[j] + (off ? off[j] : 0)) * scale[j];
        NO_FMA(p);
        y[j] = p + bias[j];
    }
}

static inline void epi_s4_row(const float *restrict acc, float act_scale,
                              const float *restrict bias, float *restrict y, int cols, float rs)
{
    if (rs > 0) {
        epi_s4_row_guarded(acc, rs, act_scale, bias, y, cols);
        return;
    }
    int j = 0;
    v4f s = {act_scale, act_scale, act_scale, act_scale};
    for (; j + 4 <= cols; j += 4) {
        v4f a, b;
        memcpy(&a, acc + j, sizeof a);
        memcpy(&b, bias + j, sizeof b);
        v4f p = a * s;
        NO_FMA(p);
        v4f o = p + b;
        memcpy(y + j, &o, sizeof o);
    }
    for (; j < cols; j++) {
        float p = acc[j] * act_scale;
        NO_FMA(p);
        y[j] = p + bias[j];
    }
}

void sq_gemm_epilogue_s8(const int32_t *C, int M, int N, const sq_gemm_epilogue *ep)
{
#pragma omp parallel for schedule(static) num_threads(sq_par_threads(SQ_WORK_ELEM, (double)M * N, M))
    for (int r = 0; r < M; r++) {
        float *yr = ep->y + (size_t)r * ep->ldy;
        epi_s8_row(C + (size_t)r * N, ep->acc_off, ep->out_scale, ep->bias, yr, N,
                   ep->row_scale ? ep->row_scale[r] : 0);
        if (ep->side)
            sq_outlier_side_row(ep->side, r, 0, N, yr);
    }
}

void sq_gemm_epilogue_s4(const float *C, int M, int N, const sq_gemm_epilogue *ep)
{
#pragma omp parallel for schedule(static) num_threads(sq_par_threads(SQ_WORK_ELEM, (double)M * N, M))
    for (int r = 0; r < M; r++) {
        float *yr = ep->y + (size_t)r * ep->ldy;
        epi_s4_row(C + (size_t)r * N, ep->act_scale, ep->bias, yr, N,
                   ep->row_scale ? ep->row_scale[r] : 0);
        if (ep->side)
            sq_outlier_side_row(ep->side, r, 0, N, yr);
    }
}

/* Rows of A per chunk: the tiles of one chunk of rows run panel block by
 * panel block, so the chunk's A rows (about CHUNK_BYTES) stay in L2 while
 * every panel block reads them, instead of all of A streaming from L3 once
 * per panel block. Depends on the shapes only. */
#define CHUNK_BYTES (128 * 1024)

static int chunk_rows(int M, int k_pad, int nr_max)
{
    long rows = CHUNK_BYTES / (k_pad > 0 ? k_pad : 1);
    rows -= rows % nr_max;
    if (rows < nr_max)
        rows = nr_max;
    return rows > M ? M : (int)rows;
}

sq_gemm_grid sq_gemm_grid_of(int M, const sq_qweight *W, int nr_max, int np_max)
{
    sq_gemm_grid g = {.M = M, .n = W->n, .panels = W->n_pad / SQ_PANEL_N, .nr_max = nr_max,
                      .np_max = np_max};
    g.row_blocks = (M + nr_max - 1) / nr_max;
    g.pblocks = (g.panels + np_max - 1) / np_max;
    g.rb_chunk = (chunk_rows(M, W->k_pad, nr_max) + nr_max - 1) / nr_max;
    g.tiles = g.row_blocks * g.pblocks;
    return g;
}

sq_gemm_tile sq_gemm_grid_tile(const sq_gemm_grid *g, long t)
{
    long per_chunk = g->rb_chunk * g->pblocks;
    long c = t / per_chunk, in = t % per_chunk;
    long left = g->row_blocks - c * g->rb_chunk;
    long rb_here = left < g->rb_chunk ? left : g->rb_chunk;
    sq_gemm_tile tl;
    tl.r0 = (int)((c * g->rb_chunk + in % rb_here) * g->nr_max);
    tl.p0 = (int)(in / rb_here) * g->np_max;
    tl.nr = g->M - tl.r0 < g->nr_max ? g->M - tl.r0 : g->nr_max;
    tl.np = g->panels - tl.p0 < g->np_max ? g->panels - tl.p0 : g->np_max;
    int cols = g->n - tl.p0 * SQ_PANEL_N;
    tl.live = cols < tl.np * SQ_PANEL_N ? cols : tl.np * SQ_PANEL_N;
    return tl;
}

/* Results are the same whatever the count: each tile is one thread's. */
int sq_gemm_threads(int M, const sq_qweight *W, long tiles, sq_work work)
{
    return sq_par_threads(work, (double)M * W->n_pad * W->k_pad, tiles);
}

/* The tile's output lines (y, or C without an epilogue), requested before
 * its micro-kernel runs: they are one or two lines per row, a row stride
 * apart, and would otherwise be store misses the epilogue (or the copy
 * into C) waits on: most of its time in a 1-thread profile, and 10-15% of
 * the raw GEMM's at M = 8192. The kernel's compute hides the fetch;
 * prefetcht1 (L2) keeps them out of the kernel's L1 working set. */
static inline void prefetch_rows(const void *base, size_t ld_bytes, int r0, int nr,
                                 size_t off_bytes, size_t live_bytes)
{
    for (int i = 0; i < nr; i++) {
        const char *yr = (const char *)base + (size_t)(r0 + i) * ld_bytes + off_bytes;
        for (size_t c = 0; c < live_bytes; c += 64)
            __builtin_prefetch(yr + c, 1, 2);
        __builtin_prefetch(yr + live_bytes - 1, 1, 2); /* the last line when yr is not 64-aligned */
    }
}

static inline void prefetch_y(const sq_gemm_epilogue *ep, int r0, int nr, int n0, int live)
{
    prefetch_rows(ep->y, ep->ldy * sizeof(float), r0, nr, (size_t)n0 * sizeof(float),
                  (size_t)live * sizeof(float));
}

void sq_gemm_tile_begin(const sq_gemm_tile *tl, const sq_gemm_epilogue *ep, const void *C,
                        size_t ldc, size_t elem)
{
    const int n0 = tl->p0 * SQ_PANEL_N;
    if (ep)
        prefetch_y(ep, tl->r0, tl->nr, n0, tl->live);
    else
        prefetch_rows(C, ldc * elem, tl->r0, tl->nr, (size_t)n0 * elem, (size_t)tl->live * elem);
}

void sq_gemm_tile_end_s8(const sq_gemm_tile *tl, const int32_t *out, const sq_gemm_epilogue *ep,
                         int32_t *C, size_t ldc)
{
    const int ld = tl->np * SQ_PANEL_N, n0 = tl->p0 * SQ_PANEL_N;
    if (ep)
        for (int i = 0; i < tl->nr; i++) {
            float *yr = ep->y + (size_t)(tl->r0 + i) * ep->ldy;
            epi_s8_row(out + i * ld, ep->acc_off ? ep->acc_off + n0 : NULL, ep->out_scale + n0,
                       ep->bias + n0, yr + n0, tl->live,
                       ep->row_scale ? ep->row_scale[tl->r0 + i] : 0);
            if (ep->side)
                sq_outlier_side_row(ep->side, tl->r0 + i, n0, n0 + tl->live, yr);
        }
    else
        for (int i = 0; i < tl->nr; i++)
            memcpy(C + (size_t)(tl->r0 + i) * ldc + n0, out + i * ld,
                   sizeof *out * (size_t)tl->live);
}

void sq_gemm_tile_end_s4(const sq_gemm_tile *tl, const float *out, const sq_gemm_epilogue *ep,
                         float *C, size_t ldc)
{
    const int ld = tl->np * SQ_PANEL_N, n0 = tl->p0 * SQ_PANEL_N;
    if (ep)
        for (int i = 0; i < tl->nr; i++) {
            float *yr = ep->y + (size_t)(tl->r0 + i) * ep->ldy;
            epi_s4_row(out + i * ld, ep->act_scale, ep->bias + n0, yr + n0, tl->live,
                       ep->row_scale ? ep->row_scale[tl->r0 + i] : 0);
            if (ep->side)
                sq_outlier_side_row(ep->side, tl->r0 + i, n0, n0 + tl->live, yr);
        }
    else
        for (int i = 0; i < tl->nr; i++)
            memcpy(C + (size_t)(tl->r0 + i) * ldc + n0, out + i * ld,
                   sizeof *out * (size_t)tl->live);
}

void sq_gemm_tiles_s8(sq_ukr_s8 ukr, int nr_max, int np_max, sq_work work, const int8_t *A,
                      int M, size_t lda, const sq_qweight *W, int32_t *C, size_t ldc,
                      const sq_gemm_epilogue *ep)
{
    const sq_gemm_grid g = sq_gemm_grid_of(M, W, nr_max, np_max);
#pragma omp parallel for schedule(static) num_threads(sq_gemm_threads(M, W, g.tiles, work))
    for (long t = 0; t < g.tiles; t++) {
        sq_gemm_tile tl = sq_gemm_grid_tile(&g, t);
        int32_t out[SQ_UKR_MAX_OUT] __attribute__((aligned(64)));
        sq_gemm_tile_begin(&tl, ep, C, ldc, sizeof *C);
        ukr(A + (size_t)tl.r0 * lda, lda, tl.nr, W, tl.p0, tl.np, out);
        sq_gemm_tile_end_s8(&tl, out, ep, C, ldc);
    }
}

void sq_gemm_tiles_s4(sq_ukr_s4 ukr, int nr_max, int np_max, sq_work work, const int8_t *A,
                      int M, size_t lda, const sq_qweight *W, float *C, size_t ldc,
                      const sq_gemm_epilogue *ep)
{
    const sq_gemm_grid g = sq_gemm_grid_of(M, W, nr_max, np_max);
#pragma omp parallel for schedule(static) num_threads(sq_gemm_threads(M, W, g.tiles, work))
    for (long t = 0; t < g.tiles; t++) {
        sq_gemm_tile tl = sq_gemm_grid_tile(&g, t);
        float out[SQ_UKR_MAX_OUT] __attribute__((aligned(64)));
        sq_gemm_tile_begin(&tl, ep, C, ldc, sizeof *C);
        ukr(A + (size_t)tl.r0 * lda, lda, tl.nr, W, tl.p0, tl.np, out);
        sq_gemm_tile_end_s4(&tl, out, ep, C, ldc);
    }
}

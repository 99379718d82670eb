/* Argument checks, ISA dispatch, the shared OpenMP tile driver, the fused
 * epilogue and the activation quantize step of the int8 GEMM (gemm_s8.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_s8.h"
#include "qlinear_ref.h"

/* Below this many multiply-adds a GEMM runs on the calling thread: the
 * OpenMP fork costs more than it saves. Results are the same either way. */
#define PARALLEL_MIN_MACS (1 << 18)

static int valid(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                 const void *C, size_t ldc, sq_qtype qt)
{
    if (!W || W->qtype != qt || !W->data || M < 0 || lda < (size_t)W->k_pad ||
        ldc < (size_t)W->n)
        return 0;
    if (M > 0 && (!A || !C))
        return 0;
    return sq_isa_supported(isa, NULL);
}

static void run_s8(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                   int32_t *C, size_t ldc)
{
    switch (isa) {
    case SQ_ISA_AVX2: sq_gemm_s8_avx2(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVXVNNI: sq_gemm_s8_avxvnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVX512VNNI: sq_gemm_s8_avx512vnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AMX: sq_gemm_s8_amx(A, M, lda, W, C, ldc); break;
    default: sq_gemm_s8_scalar(A, M, lda, W, C, ldc); break;
    }
}

static void run_s4(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                   float *C, size_t ldc)
{
    switch (isa) {
    case SQ_ISA_AVX2: sq_gemm_s4_avx2(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVXVNNI: sq_gemm_s4_avxvnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVX512VNNI: sq_gemm_s4_avx512vnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AMX: sq_gemm_s4_amx(A, M, lda, W, C, ldc); break;
    default: sq_gemm_s4_scalar(A, M, lda, W, C, ldc); break;
    }
}

int sq_gemm_s8(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
               size_t ldc)
{
    if (!valid(isa, A, M, lda, W, C, ldc, SQ_QT_S8))
        return -1;
    if (M > 0)
        run_s8(isa, A, M, lda, W, C, ldc);
    return 0;
}

int sq_gemm_s4(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
               size_t ldc)
{
    if (!valid(isa, A, M, lda, W, C, ldc, SQ_QT_S4G128) || !W->scale)
        return -1;
    if (M > 0)
        run_s4(isa, A, M, lda, W, C, ldc);
    return 0;
}

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

/* The epilogue a sq_gemm_*_fused call hands to the tile driver of the
 * per-ISA kernel it runs (whose signature has no room for it). Set and
 * taken on the calling thread, before the driver forks. */
static __thread const sq_gemm_epilogue *pending_ep;

int sq_gemm_fuses(sq_isa isa)
{
    return isa == SQ_ISA_AVX2 || isa == SQ_ISA_AVXVNNI || isa == SQ_ISA_AVX512VNNI;
}

static int valid_ep(const sq_qweight *W, const sq_gemm_epilogue *ep, int s8)
{
    return W && ep && ep->bias && ep->y && ep->ldy >= (size_t)W->n && (!s8 || ep->out_scale);
}

int sq_gemm_s8_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, int32_t *scratch)
{
    int fuse = sq_gemm_fuses(isa);
    if (!valid_ep(W, ep, 1) ||
        !valid(isa, A, M, lda, W, fuse ? (const void *)ep->y : scratch, (size_t)W->n, SQ_QT_S8))
        return -1;
    if (M == 0)
        return 0;
    if (fuse) {
        pending_ep = ep;
        run_s8(isa, A, M, lda, W, scratch, (size_t)W->n);
        if (!pending_ep)
            return 0; /* the driver took it: y is done */
        pending_ep = NULL; /* the kernel wrote scratch instead */
    } else {
        run_s8(isa, A, M, lda, W, scratch, (size_t)W->n);
    }
    const int N = W->n;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < M; r++)
        epi_s8_row(scratch + (size_t)r * N, ep->acc_off, ep->out_scale, ep->bias,
                   ep->y + (size_t)r * ep->ldy, N, ep->row_scale ? ep->row_scale[r] : 0);
    return 0;
}

int sq_gemm_s4_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, float *scratch)
{
    int fuse = sq_gemm_fuses(isa);
    if (!valid_ep(W, ep, 0) ||
        !valid(isa, A, M, lda, W, fuse ? (const void *)ep->y : scratch, (size_t)W->n,
               SQ_QT_S4G128) ||
        !W->scale)
        return -1;
    if (M == 0)
        return 0;
    if (fuse) {
        pending_ep = ep;
        run_s4(isa, A, M, lda, W, scratch, (size_t)W->n);
        if (!pending_ep)
            return 0;
        pending_ep = NULL;
    } else {
        run_s4(isa, A, M, lda, W, scratch, (size_t)W->n);
    }
    const int N = W->n;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < M; r++)
        epi_s4_row(scratch + (size_t)r * N, ep->act_scale, ep->bias, ep->y + (size_t)r * ep->ldy,
                   N, ep->row_scale ? ep->row_scale[r] : 0);
    return 0;
}

/* One tile's geometry: rows [r0, r0 + nr), panels [p0, p0 + np), and how
 * many of its np * 16 columns are real channels. */
typedef struct tile {
    int r0, nr, p0, np, live;
} tile;

static tile tile_at(long t, int M, int panels, int n, int nr_max, int np_max)
{
    long row_blocks = (M + nr_max - 1) / nr_max;
    tile tl;
    tl.r0 = (int)(t % row_blocks) * nr_max;
    tl.p0 = (int)(t / row_blocks) * np_max;
    tl.nr = M - tl.r0 < nr_max ? M - tl.r0 : nr_max;
    tl.np = panels - tl.p0 < np_max ? panels - tl.p0 : np_max;
    int cols = n - tl.p0 * SQ_PANEL_N;
    tl.live = cols < tl.np * SQ_PANEL_N ? cols : tl.np * SQ_PANEL_N;
    return tl;
}

static long tile_count(int M, int panels, int nr_max, int np_max)
{
    return (long)((M + nr_max - 1) / nr_max) * ((panels + np_max - 1) / np_max);
}

static int worth_threads(int M, const sq_qweight *W)
{
    return (double)M * W->n_pad * W->k_pad >= PARALLEL_MIN_MACS;
}

/* The tile's y lines, requested before its micro-kernel runs: they are
 * one or two lines per row, a row stride apart, and would otherwise be
 * store misses the epilogue waits on (most of its time in a 1-thread
 * profile). The kernel's compute hides the fetch; prefetcht1 (L2) keeps
 * them out of the kernel's L1 working set. */
static inline void prefetch_y(const sq_gemm_epilogue *ep, int r0, int nr, int n0, int live)
{
    for (int i = 0; i < nr; i++) {
        const float *yr = ep->y + (size_t)(r0 + i) * ep->ldy + n0;
        for (int c = 0; c < live; c += 16)
            __builtin_prefetch(yr + c, 1, 2);
        __builtin_prefetch(yr + live - 1, 1, 2); /* the last line when yr is not 64-aligned */
    }
}

void sq_gemm_tiles_s8(sq_ukr_s8 ukr, int nr_max, int np_max, const int8_t *A, int M,
                      size_t lda, const sq_qweight *W, int32_t *C, size_t ldc)
{
    const sq_gemm_epilogue *ep = pending_ep;
    pending_ep = NULL;
    int panels = W->n_pad / SQ_PANEL_N;
    long tiles = tile_count(M, panels, nr_max, np_max);
#pragma omp parallel for schedule(static) if (worth_threads(M, W))
    for (long t = 0; t < tiles; t++) {
        tile tl = tile_at(t, M, panels, W->n, nr_max, np_max);
        int32_t out[SQ_UKR_MAX_OUT] __attribute__((aligned(64)));
        int ld = tl.np * SQ_PANEL_N, n0 = tl.p0 * SQ_PANEL_N;
        if (ep)
            prefetch_y(ep, tl.r0, tl.nr, n0, tl.live);
        ukr(A + (size_t)tl.r0 * lda, lda, tl.nr, W, tl.p0, tl.np, out);
        if (ep)
            for (int i = 0; i < tl.nr; i++)
                epi_s8_row(out + i * ld, ep->acc_off ? ep->acc_off + n0 : NULL,
                           ep->out_scale + n0, ep->bias + n0,
                           ep->y + (size_t)(tl.r0 + i) * ep->ldy + n0, tl.live,
                           ep->row_scale ? ep->row_scale[tl.r0 + i] : 0);
        else
            for (int i = 0; i < tl.nr; i++)
                memcpy(C + (size_t)(tl.r0 + i) * ldc + n0, out + i * ld,
                       sizeof *out * (size_t)tl.live);
    }
}

void sq_gemm_tiles_s4(sq_ukr_s4 ukr, int nr_max, int np_max, const int8_t *A, int M,
                      size_t lda, const sq_qweight *W, float *C, size_t ldc)
{
    const sq_gemm_epilogue *ep = pending_ep;
    pending_ep = NULL;
    int panels = W->n_pad / SQ_PANEL_N;
    long tiles = tile_count(M, panels, nr_max, np_max);
#pragma omp parallel for schedule(static) if (worth_threads(M, W))
    for (long t = 0; t < tiles; t++) {
        tile tl = tile_at(t, M, panels, W->n, nr_max, np_max);
        float out[SQ_UKR_MAX_OUT] __attribute__((aligned(64)));
        int ld = tl.np * SQ_PANEL_N, n0 = tl.p0 * SQ_PANEL_N;
        if (ep)
            prefetch_y(ep, tl.r0, tl.nr, n0, tl.live);
        ukr(A + (size_t)tl.r0 * lda, lda, tl.nr, W, tl.p0, tl.np, out);
        if (ep)
            for (int i = 0; i < tl.nr; i++)
                epi_s4_row(out + i * ld, ep->act_scale, ep->bias + n0,
                           ep->y + (size_t)(tl.r0 + i) * ep->ldy + n0, tl.live,
                           ep->row_scale ? ep->row_scale[tl.r0 + i] : 0);
        else
            for (int i = 0; i < tl.nr; i++)
                memcpy(C + (size_t)(tl.r0 + i) * ldc + n0, out + i * ld,
                       sizeof *out * (size_t)tl.live);
    }
}

void sq_gemm_quantize_acts(const float *x, int rows, int k, size_t ldx, const float *m,
                           int8_t *qa, int k_pad, size_t lda)
{
    sq_gemm_quantize_acts_zp(x, rows, k, ldx, m, 0, qa, k_pad, lda);
}

/* The quantize step, and with range != NULL the min and max of x_j * m_j
 * per row (NaN ignored). */
static void quantize_rows(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                          int8_t *qa, int k_pad, size_t lda, float *range)
{
    if (sq_isa_supported(SQ_ISA_AVX2, NULL)) {
        sq_quantize_acts_avx2(x, rows, k, ldx, m, z, qa, k_pad, lda, range);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        int8_t *qr = qa + (size_t)r * lda;
        float lo = INFINITY, hi = -INFINITY;
        for (int j = 0; j < k; j++) {
            float v = xr[j] * m[j];
            qr[j] = sq_ref_round_s8_zp(v, z);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        memset(qr + k, 0, (size_t)(k_pad - k));
        if (range) {
            range[2 * r] = lo;
            range[2 * r + 1] = hi;
        }
    }
}

void sq_gemm_quantize_acts_zp(const float *x, int rows, int k, size_t ldx, const float *m, int z,
                              int8_t *qa, int k_pad, size_t lda)
{
    quantize_rows(x, rows, k, ldx, m, z, qa, k_pad, lda, NULL);
}

int sq_gemm_quantize_acts_guard(const float *x, int rows, int k, size_t ldx, const float *m,
                                int z, int8_t *qa, int k_pad, size_t lda, float *row_scale)
{
    /* Per-row ranges go through a small stack buffer, a chunk of rows at a time. */
    enum { CHUNK = 64 };
    float range[2 * CHUNK];
    float *mrow = NULL; /* a guarded row's multipliers, allocated on the first one */
    int guarded = 0;
    for (int r0 = 0; r0 < rows; r0 += CHUNK) {
        int n = rows - r0 < CHUNK ? rows - r0 : CHUNK;
        quantize_rows(x + (size_t)r0 * ldx, n, k, ldx, m, z, qa + (size_t)r0 * lda, k_pad, lda,
                      range);
        for (int i = 0; i < n; i++) {
            float lo = range[2 * i], hi = range[2 * i + 1];
            float a = fmaxf(fabsf(lo), fabsf(hi));
            row_scale[r0 + i] = 0;
            /* round is monotonic: the extremes decide whether any code clips */
            if (!(roundf(hi) - (float)z > 127.0f || roundf(lo) - (float)z < -127.0f) ||
                !isfinite(a))
                continue;
            if (!mrow && !(mrow = malloc((size_t)k * sizeof *mrow)))
                continue; /* out of memory: this row stays clipped */
            /* The row's own multipliers m_j * (127 / a), rounded to float,
             * then the ordinary (vectorized) quantize step without zero
             * point: |x_j m'_j| <= 127 up to rounding, which the clamp takes. */
            const float inv = 127.0f / a;
            for (int j = 0; j < k; j++)
                mrow[j] = m[j] * inv;
            quantize_rows(x + (size_t)(r0 + i) * ldx, 1, k, ldx, mrow, 0,
                          qa + (size_t)(r0 + i) * lda, k_pad, lda, NULL);
            row_scale[r0 + i] = a / 127.0f;
            guarded++;
        }
    }
    free(mrow);
    return guarded;
}

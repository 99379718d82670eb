/* Argument checks, ISA dispatch, the shared OpenMP tile driver and the
 * activation quantize step of the int8 GEMM (gemm_s8.h). */
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

int sq_gemm_s8(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
               size_t ldc)
{
    if (!valid(isa, A, M, lda, W, C, ldc, SQ_QT_S8))
        return -1;
    if (M == 0)
        return 0;
    switch (isa) {
    case SQ_ISA_AVX2: sq_gemm_s8_avx2(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVXVNNI: sq_gemm_s8_avxvnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVX512VNNI: sq_gemm_s8_avx512vnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AMX: sq_gemm_s8_amx(A, M, lda, W, C, ldc); break;
    default: sq_gemm_s8_scalar(A, M, lda, W, C, ldc); break;
    }
    return 0;
}

int sq_gemm_s4(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
               size_t ldc)
{
    if (!valid(isa, A, M, lda, W, C, ldc, SQ_QT_S4G128) || !W->scale)
        return -1;
    if (M == 0)
        return 0;
    switch (isa) {
    case SQ_ISA_AVX2: sq_gemm_s4_avx2(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVXVNNI: sq_gemm_s4_avxvnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AVX512VNNI: sq_gemm_s4_avx512vnni(A, M, lda, W, C, ldc); break;
    case SQ_ISA_AMX: sq_gemm_s4_amx(A, M, lda, W, C, ldc); break;
    default: sq_gemm_s4_scalar(A, M, lda, W, C, ldc); break;
    }
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

void sq_gemm_tiles_s8(sq_ukr_s8 ukr, int nr_max, int np_max, const int8_t *A, int M,
                      size_t lda, const sq_qweight *W, int32_t *C, size_t ldc)
{
    int panels = W->n_pad / SQ_PANEL_N;
    long tiles = tile_count(M, panels, nr_max, np_max);
#pragma omp parallel for schedule(static) if (worth_threads(M, W))
    for (long t = 0; t < tiles; t++) {
        tile tl = tile_at(t, M, panels, W->n, nr_max, np_max);
        int32_t out[SQ_UKR_MAX_OUT] __attribute__((aligned(64)));
        int ld = tl.np * SQ_PANEL_N;
        ukr(A + (size_t)tl.r0 * lda, lda, tl.nr, W, tl.p0, tl.np, out);
        for (int i = 0; i < tl.nr; i++)
            memcpy(C + (size_t)(tl.r0 + i) * ldc + (size_t)tl.p0 * SQ_PANEL_N, out + i * ld,
                   sizeof *out * (size_t)tl.live);
    }
}

void sq_gemm_tiles_s4(sq_ukr_s4 ukr, int nr_max, int np_max, const int8_t *A, int M,
                      size_t lda, const sq_qweight *W, float *C, size_t ldc)
{
    int panels = W->n_pad / SQ_PANEL_N;
    long tiles = tile_count(M, panels, nr_max, np_max);
#pragma omp parallel for schedule(static) if (worth_threads(M, W))
    for (long t = 0; t < tiles; t++) {
        tile tl = tile_at(t, M, panels, W->n, nr_max, np_max);
        float out[SQ_UKR_MAX_OUT] __attribute__((aligned(64)));
        int ld = tl.np * SQ_PANEL_N;
        ukr(A + (size_t)tl.r0 * lda, lda, tl.nr, W, tl.p0, tl.np, out);
        for (int i = 0; i < tl.nr; i++)
            memcpy(C + (size_t)(tl.r0 + i) * ldc + (size_t)tl.p0 * SQ_PANEL_N, out + i * ld,
                   sizeof *out * (size_t)tl.live);
    }
}

void sq_gemm_quantize_acts(const float *x, int rows, int k, size_t ldx, const float *m,
                           int8_t *qa, int k_pad, size_t lda)
{
    if (sq_isa_supported(SQ_ISA_AVX2, NULL)) {
        sq_quantize_acts_avx2(x, rows, k, ldx, m, qa, k_pad, lda);
        return;
    }
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        int8_t *qr = qa + (size_t)r * lda;
        for (int j = 0; j < k; j++)
            qr[j] = sq_ref_round_s8(xr[j] * m[j]);
        memset(qr + k, 0, (size_t)(k_pad - k));
    }
}

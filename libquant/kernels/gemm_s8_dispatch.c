/* Argument checks and ISA dispatch of the integer GEMM (gemm_s8.h): picks
 * the kernel table row of an ISA (gemm_kernel.h) and calls through it. */
#include "gemm_s8.h"

/* Indexed by sq_isa, slowest to fastest. */
static const sq_gemm_kernels *const rows[SQ_ISA_COUNT] = {
    [SQ_ISA_SCALAR] = &sq_gemm_kernels_scalar,
    [SQ_ISA_AVX2] = &sq_gemm_kernels_avx2,
    [SQ_ISA_AVXVNNI] = &sq_gemm_kernels_avxvnni,
    [SQ_ISA_AVX512VNNI] = &sq_gemm_kernels_avx512vnni,
    [SQ_ISA_AMX] = &sq_gemm_kernels_amx,
};

const sq_gemm_kernels *sq_gemm_kernels_for(sq_isa isa)
{
    if ((unsigned)isa >= SQ_ISA_COUNT || !sq_isa_supported(isa, NULL))
        return NULL;
    return rows[isa];
}

sq_quantize_fn sq_gemm_quantizer(void)
{
    /* The scalar row always has one, so the loop ends there at the latest. */
    for (int i = SQ_ISA_COUNT - 1;; i--)
        if (rows[i]->quantize && sq_isa_supported((sq_isa)i, NULL))
            return rows[i]->quantize;
}

int sq_gemm_fuses(sq_isa isa)
{
    return (unsigned)isa < SQ_ISA_COUNT && rows[isa]->fuses;
}

/* The row for isa when the arguments are valid (C: the output the kernel
 * writes, y or scratch), else NULL. */
static const sq_gemm_kernels *checked(sq_isa isa, const int8_t *A, int M, size_t lda,
                                      const sq_qweight *W, const void *C, size_t ldc,
                                      sq_qtype qt)
{
    if (!W || W->qtype != qt || !W->data || M < 0 || lda < (size_t)W->k_pad ||
        ldc < (size_t)W->n || (sq_qtype_get(qt)->block && !W->scale))
        return NULL;
    if (M > 0 && (!A || !C))
        return NULL;
    return sq_gemm_kernels_for(isa);
}

int sq_gemm_s8(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
               size_t ldc)
{
    const sq_gemm_kernels *k = checked(isa, A, M, lda, W, C, ldc, SQ_QT_S8);
    if (!k)
        return -1;
    if (M > 0)
        k->s8(A, M, lda, W, C, ldc, NULL);
    return 0;
}

int sq_gemm_s4(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
               size_t ldc)
{
    const sq_gemm_kernels *k = checked(isa, A, M, lda, W, C, ldc, SQ_QT_S4G128);
    if (!k)
        return -1;
    if (M > 0)
        k->s4(A, M, lda, W, C, ldc, NULL);
    return 0;
}

static int valid_ep(const sq_qweight *W, const sq_gemm_epilogue *ep, int s8)
{
    return W && ep && ep->bias && ep->y && ep->ldy >= (size_t)W->n && (!s8 || ep->out_scale);
}

int sq_gemm_s8_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, void *scratch)
{
    int fuse = sq_gemm_fuses(isa);
    const sq_gemm_kernels *k =
        valid_ep(W, ep, 1) ? checked(isa, A, M, lda, W, fuse ? (const void *)ep->y : scratch,
                                     (size_t)W->n, SQ_QT_S8)
                           : NULL;
    if (!k)
        return -1;
    if (M == 0)
        return 0;
    if (fuse) {
        k->s8(A, M, lda, W, NULL, 0, ep); /* each tile goes straight to y */
        return 0;
    }
    k->s8(A, M, lda, W, scratch, (size_t)W->n, NULL);
    sq_gemm_epilogue_s8(scratch, M, W->n, ep);
    return 0;
}

int sq_gemm_s4_fused(sq_isa isa, const int8_t *A, int M, size_t lda, const sq_qweight *W,
                     const sq_gemm_epilogue *ep, void *scratch)
{
    int fuse = sq_gemm_fuses(isa);
    const sq_gemm_kernels *k =
        valid_ep(W, ep, 0) ? checked(isa, A, M, lda, W, fuse ? (const void *)ep->y : scratch,
                                     (size_t)W->n, SQ_QT_S4G128)
                           : NULL;
    if (!k)
        return -1;
    if (M == 0)
        return 0;
    if (fuse) {
        k->s4(A, M, lda, W, NULL, 0, ep);
        return 0;
    }
    k->s4(A, M, lda, W, scratch, (size_t)W->n, NULL);
    sq_gemm_epilogue_s4(scratch, M, W->n, ep);
    return 0;
}

/* AMX entry points. NOT YET AN AMX KERNEL: both run the AVX512-VNNI
 * kernels, which every AMX CPU has (sq_isa_supported(SQ_ISA_AMX) requires
 * avx512_vnni as well as amx_tile/amx_int8 with the OS permission), so
 * SQUINT_ISA=amx is correct, only not faster than avx512vnni.
 *
 * The planned kernel (tdpbssd, s8 x s8, no compensation): a panel's 16
 * consecutive 64-byte rows are a B tile as stored (16 k-groups x 16
 * channels x 4 bytes, stride 64); an A tile is 16 rows x 64 bytes of A;
 * C tiles are 16 x 16 s32. Ragged M and a k_pad that is not a multiple of
 * 64 are staged through zero-filled 16 x 64 buffers; each OpenMP thread
 * loads the tile config (palette 1) before its first tile. */
#include "gemm_s8.h"

void sq_gemm_s8_amx(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc)
{
    sq_gemm_s8_avx512vnni(A, M, lda, W, C, ldc);
}

void sq_gemm_s4_amx(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc)
{
    sq_gemm_s4_avx512vnni(A, M, lda, W, C, ldc);
}

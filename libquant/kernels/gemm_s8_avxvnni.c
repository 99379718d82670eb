/* The AVX-VNNI row of the kernel table (gemm_kernel.h): VEX vpdpbusd on
 * ymm with u8 = a + 128 and the stored compensation (128 * wsum), 4 rows x
 * 1 panel per micro-kernel (gemm_s8_ymm.h), on the shared tile driver
 * (fused epilogue). No quantize step of its own: every AVX-VNNI CPU has
 * AVX2, whose loop the dispatcher picks. */
#include "gemm_s8_ymm.h"

#define T_AVXVNNI __attribute__((target("avx2,avxvnni")))

/* acc[r] += (A row r + 128) . panel row as u8 x s8 (vpdpbusd). */
T_AVXVNNI INLINE void step_vnni(__m256i acc[][2], const int8_t *A, size_t lda, const int nr,
                                int g, __m256i w0, __m256i w1)
{
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int r = 0; r < nr; r++) {
        __m256i au = _mm256_xor_si256(bcast4(A + (size_t)r * lda, g), bias); /* a + 128 */
        acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], au, w0);
        acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], au, w1);
    }
}

DEF_S8(ukr_s8_avxvnni, T_AVXVNNI, step_vnni, 1)
DEF_S4(ukr_s4_avxvnni, T_AVXVNNI, step_vnni, 1)

static void gemm_s8(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    sq_gemm_tiles_s8(ukr_s8_avxvnni, NR, 1, SQ_WORK_MAC_S8_AVXVNNI, A, M, lda, W, C, ldc, ep);
}

static void gemm_s4(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    sq_gemm_tiles_s4(ukr_s4_avxvnni, NR, 1, SQ_WORK_MAC_S4, A, M, lda, W, C, ldc, ep);
}

const sq_gemm_kernels sq_gemm_kernels_avxvnni = {
    .isa = SQ_ISA_AVXVNNI, .s8 = gemm_s8, .s4 = gemm_s4, .quantize = NULL, .fuses = true};

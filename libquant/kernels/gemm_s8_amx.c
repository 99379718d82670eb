/* The AMX row of the kernel table (gemm_kernel.h): tdpbssd on tiles
 * (s8 x s8 -> s32, no +128 compensation), B tiles loaded straight from
 * the packed panels. The kernel body is gemm_s8_amx.inc (design notes
 * there), shared with the emulation test tests/unit/test_gemm_s8_amx_emul.c, which runs it on an
 * emulated tile register file on any x86-64 CPU.
 *
 * Only called when sq_isa_supported(SQ_ISA_AMX): CPUID amx_tile and
 * amx_int8, the XCR0 tile states, and the Linux arch_prctl tile-data
 * permission granted (cpu_features.c). The int4 unpack and the f32
 * epilogue are plain C compiled for AVX2, which every AMX CPU has. */
#include <immintrin.h>

#include "gemm_kernel.h"

#define T_AMX __attribute__((target("amx-tile,amx-int8,avx2")))
#include "gemm_s8_amx.inc"

/* The tile config is per thread, so AMX keeps its own grid driver (the
 * shared grid and tile epilogue of gemm_kernel.h): each finished tile goes
 * through the epilogue into y while it is in L1. */
static void gemm_s8(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    sq_amx_gemm_s8(A, M, lda, W, C, ldc, ep);
}

static void gemm_s4(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C,
                    size_t ldc, const sq_gemm_epilogue *ep)
{
    sq_amx_gemm_s4(A, M, lda, W, C, ldc, ep);
}

const sq_gemm_kernels sq_gemm_kernels_amx = {
    .isa = SQ_ISA_AMX, .s8 = gemm_s8, .s4 = gemm_s4, .quantize = NULL, .fuses = true};

/* TEMPORARY: placeholder until gemm_s8_amx.c lands (never selected: the
 * dispatcher only runs AMX on CPUs that have it, and none has it here). */
#include "gemm_s8.h"

#include <stdlib.h>

void sq_gemm_s8_amx(const int8_t *A, int M, size_t lda, const sq_qweight *W, int32_t *C, size_t ldc)
{
    sq_gemm_s8_scalar(A, M, lda, W, C, ldc);
}

void sq_gemm_s4_amx(const int8_t *A, int M, size_t lda, const sq_qweight *W, float *C, size_t ldc)
{
    sq_gemm_s4_scalar(A, M, lda, W, C, ldc);
}

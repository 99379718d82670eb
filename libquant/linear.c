#include "linear.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Rows per block: large enough for sgemm efficiency, small enough to balance. */
#define ROW_BLOCK 64

static void f32_rows(const sq_linear *l, const float *x, int r0, int r1, float *y)
{
    for (int r = r0; r < r1; r++)
        memcpy(y + (size_t)r * l->out, l->b, (size_t)l->out * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, l->out, l->in, 1.0f,
                x + (size_t)r0 * l->in, l->in, l->w, l->in, 1.0f, y + (size_t)r0 * l->out, l->out);
}

void sq_linear_forward(const sq_linear *l, const float *x, int rows, float *y)
{
    int nblocks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
#pragma omp parallel for schedule(dynamic, 1)
    for (int bi = 0; bi < nblocks; bi++) {
        int r0 = bi * ROW_BLOCK, r1 = r0 + ROW_BLOCK < rows ? r0 + ROW_BLOCK : rows;
        f32_rows(l, x, r0, r1, y);
    }
}

void sq_linear_free(sq_linear *l)
{
    free(l->w);
    free(l->b);
    l->w = l->b = NULL;
}

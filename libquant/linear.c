#include "linear.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The output is cut into fixed tiles of ROW_BLOCK x COL_BLOCK, one sgemm
 * each, shared among threads. Tile sizes never depend on the thread count, so
 * every output element is computed by the same call sequence: results are
 * bitwise identical at any thread count. The tiles are big enough that
 * sgemm's packing of A and B stays a small fraction of the work, and small
 * enough that a single 128-token sequence still splits across threads. */
#define ROW_BLOCK 128
#define COL_BLOCK 192

static void f32_tile(const sq_linear *l, const float *x, int r0, int r1, int c0, int c1, float *y)
{
    for (int r = r0; r < r1; r++)
        memcpy(y + (size_t)r * l->out + c0, l->b + c0, (size_t)(c1 - c0) * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, c1 - c0, l->in, 1.0f,
                x + (size_t)r0 * l->in, l->in, l->w + (size_t)c0 * l->in, l->in, 1.0f,
                y + (size_t)r0 * l->out + c0, l->out);
}

void sq_linear_forward(const sq_linear *l, const float *x, int rows, float *y)
{
    int nr = (rows + ROW_BLOCK - 1) / ROW_BLOCK, nc = (l->out + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < nr * nc; t++) {
        int r0 = (t / nc) * ROW_BLOCK, c0 = (t % nc) * COL_BLOCK;
        int r1 = r0 + ROW_BLOCK < rows ? r0 + ROW_BLOCK : rows;
        int c1 = c0 + COL_BLOCK < l->out ? c0 + COL_BLOCK : l->out;
        f32_tile(l, x, r0, r1, c0, c1, y);
    }
}

void sq_linear_free(sq_linear *l)
{
    free(l->w);
    free(l->b);
    l->w = l->b = NULL;
}

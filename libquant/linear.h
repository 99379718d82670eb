/* A linear layer y = x W^T + b with a qtype. The f32 path runs OpenBLAS
 * sgemm per thread over disjoint row blocks. */
#ifndef SQ_LINEAR_H
#define SQ_LINEAR_H

#include "qtype.h"

typedef struct sq_linear {
    int in, out;
    sq_qtype qtype;
    float *w; /* f32: [out][in], row-major as Hugging Face stores it; owned */
    float *b; /* [out]; owned */
} sq_linear;

/* y[rows][out] = x[rows][in] W^T + b. Call from outside a parallel region. */
void sq_linear_forward(const sq_linear *l, const float *x, int rows, float *y);
void sq_linear_free(sq_linear *l);

#endif

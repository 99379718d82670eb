#include "softmax.h"

#include <math.h>
#include <stddef.h>

void sq_softmax_probs(const double *W, const double *b, int classes, int dim, const float *x,
                      double *p)
{
    double mx = -INFINITY;
    for (int c = 0; c < classes; c++) {
        const double *w = W + (size_t)c * dim;
        double t = b[c];
        for (int j = 0; j < dim; j++)
            t += w[j] * x[j];
        p[c] = t;
        mx = fmax(mx, t);
    }
    double se = 0;
    for (int c = 0; c < classes; c++)
        se += (p[c] = exp(p[c] - mx));
    for (int c = 0; c < classes; c++)
        p[c] /= se;
}

int sq_argmax(const double *p, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[best])
            best = i;
    return best;
}

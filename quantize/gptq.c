/* The factor GPTQ rounds with (gptq.h). H^-1 = U^T U is obtained without
 * forming H^-1: the Cholesky factorization H = R R^T with R upper
 * triangular (run from the last column back to the first) gives
 * H^-1 = R^-T R^-1, so U = R^-1. Every entry is one dot product or one
 * running sum in a fixed order; OpenMP only splits independent entries. */
#include "gptq.h"
#include "par_threads.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* R upper with H = R R^T, in place of the (symmetrized) h; 0 or the column
 * at which H stopped being positive definite, plus one. */
static int chol_upper_reverse(double *r, int k)
{
    for (int j = k - 1; j >= 0; j--) {
        double *rj = r + (size_t)j * k;
        double d = rj[j];
        for (int c = j + 1; c < k; c++)
            d -= rj[c] * rj[c];
        if (!(d > 0.0) || !isfinite(d))
            return j + 1;
        const double rjj = sqrt(d);
        rj[j] = rjj;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)j * (k - j), j))
        for (int i = 0; i < j; i++) {
            double *ri = r + (size_t)i * k;
            double s = ri[j];
            for (int c = j + 1; c < k; c++)
                s -= ri[c] * rj[c];
            ri[j] = s / rjj;
        }
    }
    for (int i = 0; i < k; i++) /* the lower part held H: clear it */
        memset(r + (size_t)i * k, 0, (size_t)i * sizeof *r);
    return 0;
}

/* U = R^-1 (both upper), row by row from the bottom:
 * U[i][j] = -(sum_{i<c<=j} R[i][c] U[c][j]) / R[i][i], as a sum of rows. */
static void upper_inverse(const double *r, double *u, int k)
{
    memset(u, 0, (size_t)k * k * sizeof *u);
    for (int i = k - 1; i >= 0; i--) {
        const double *ri = r + (size_t)i * k;
        double *ui = u + (size_t)i * k;
        const double inv = 1.0 / ri[i];
        ui[i] = inv;
        for (int c = i + 1; c < k; c++) {
            const double a = ri[c];
            const double *uc = u + (size_t)c * k;
            for (int j = c; j < k; j++)
                ui[j] += a * uc[j];
        }
        for (int j = i + 1; j < k; j++)
            ui[j] *= -inv;
    }
}

int sq_gptq_factor(const double *h, int k, double damp, double *u, sq_err *err)
{
    if (k <= 0)
        return sq_err_set(err, "GPTQ: %d inputs", k);
    double *r = malloc((size_t)k * k * sizeof *r);
    if (!r)
        return sq_err_set(err, "out of memory factoring a %d x %d GPTQ matrix", k, k);
    double mean = 0.0;
    int live = 0;
    for (int i = 0; i < k; i++) {
        const double d = h[(size_t)i * k + i];
        if (!isfinite(d) || d < 0.0) {
            free(r);
            return sq_err_set(err, "GPTQ: input %d has %g as its sum of squares", i, d);
        }
        if (d > 0.0)
            mean += d, live++;
    }
    mean = live ? mean / live : 1.0;
    for (int attempt = 0; attempt < 4; attempt++, damp *= 10.0) {
        for (int i = 0; i < k; i++) {
            const bool dead = h[(size_t)i * k + i] == 0.0;
            for (int j = i; j < k; j++) {
                const bool dj = h[(size_t)j * k + j] == 0.0;
                double v = dead || dj ? 0.0 : h[(size_t)i * k + j];
                if (j == i)
                    v = dead ? 1.0 : v + damp * mean;
                r[(size_t)i * k + j] = v;
                r[(size_t)j * k + i] = v;
            }
        }
        const int bad = chol_upper_reverse(r, k);
        if (bad == 0) {
            upper_inverse(r, u, k);
            free(r);
            return 0;
        }
    }
    free(r);
    return sq_err_set(err, "GPTQ: the inputs' Gram matrix is not positive definite even "
                           "with %g%% damping", damp / 10.0 * 100.0);
}

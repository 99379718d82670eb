/* Training a head: binary logistic regression (Newton) and multinomial
 * softmax regression (L-BFGS) on standardized features (head_train.h). */
#include "head_train.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "par_threads.h"

static const sq_logreg_opts default_opts = {.l2 = 1.0, .max_iter = 50, .tol = 1e-8, .lbfgs_iter = 1000};

static double sigmoid(double t)
{
    return t >= 0 ? 1.0 / (1.0 + exp(-t)) : exp(t) / (1.0 + exp(t));
}

/* log(1 + exp(t)) without overflow. */
static double softplus(double t)
{
    return t > 0 ? t + log1p(exp(-t)) : log1p(exp(t));
}

/* Penalized loss of theta over the m rows of Z [m][d1] (last column 1). */
static double objective(const double *Z, const double *yv, int64_t m, int d1, const double *theta,
                        double l2)
{
    double f = 0;
    for (int64_t i = 0; i < m; i++) {
        const double *z = Z + (size_t)i * d1;
        double t = 0;
        for (int j = 0; j < d1; j++)
            t += z[j] * theta[j];
        f += softplus(t) - yv[i] * t;
    }
    for (int j = 0; j < d1 - 1; j++)
        f += 0.5 * l2 * theta[j] * theta[j];
    return f;
}

/* Solve H x = g in place (g -> x) by Cholesky; H [d][d] is overwritten.
 * Returns -1 when H is not positive definite. */
static int cholesky_solve(double *H, double *g, int d)
{
    for (int j = 0; j < d; j++) {
        double s = H[(size_t)j * d + j];
        for (int k = 0; k < j; k++)
            s -= H[(size_t)j * d + k] * H[(size_t)j * d + k];
        if (!(s > 0))
            return -1;
        double ljj = sqrt(s);
        H[(size_t)j * d + j] = ljj;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)(d - j - 1) * j, d - j - 1))
        for (int i = j + 1; i < d; i++) {
            double t = H[(size_t)i * d + j];
            for (int k = 0; k < j; k++)
                t -= H[(size_t)i * d + k] * H[(size_t)j * d + k];
            H[(size_t)i * d + j] = t / ljj;
        }
    }
    for (int i = 0; i < d; i++) { /* L y = g */
        double t = g[i];
        for (int k = 0; k < i; k++)
            t -= H[(size_t)i * d + k] * g[k];
        g[i] = t / H[(size_t)i * d + i];
    }
    for (int i = d - 1; i >= 0; i--) { /* L^T x = y */
        double t = g[i];
        for (int k = i + 1; k < d; k++)
            t -= H[(size_t)k * d + i] * g[k];
        g[i] = t / H[(size_t)i * d + i];
    }
    return 0;
}

/* Rows of the Hessian and gradient are accumulated over blocks of this many
 * rows: each block's rows stay in cache while every (j, k) entry is updated,
 * and each entry is still summed over the rows in order (the same bits as a
 * plain loop over all rows, at any thread count). */
#define NEWTON_BLOCK 64

/* Newton's method with backtracking on standardized rows Z. */
static int newton(const double *Z, const double *yv, int64_t m, int d1, double l2, int max_iter,
                  double tol, double *theta)
{
    size_t dd = (size_t)d1 * d1;
    double *H = malloc(dd * sizeof *H), *g = malloc((size_t)d1 * sizeof *g);
    double *c = malloc((size_t)m * sizeof *c), *r = malloc((size_t)m * sizeof *r);
    double *trial = malloc((size_t)d1 * sizeof *trial);
    int it = -1;
    if (!H || !g || !c || !r || !trial)
        goto done;
    memset(theta, 0, (size_t)d1 * sizeof *theta);
    double f = objective(Z, yv, m, d1, theta, l2);
    for (it = 0; it < max_iter;) {
        for (int64_t i = 0; i < m; i++) {
            const double *z = Z + (size_t)i * d1;
            double t = 0;
            for (int j = 0; j < d1; j++)
                t += z[j] * theta[j];
            double p = sigmoid(t);
            r[i] = p - yv[i];
            c[i] = p * (1 - p);
        }
        memset(H, 0, dd * sizeof *H);
        memset(g, 0, (size_t)d1 * sizeof *g);
        /* Row j of the lower triangle belongs to one thread; within it the
         * innermost loop runs over k (vectorizable), the rows in order. */
        for (int64_t i0 = 0; i0 < m; i0 += NEWTON_BLOCK) {
            int64_t i1 = i0 + NEWTON_BLOCK < m ? i0 + NEWTON_BLOCK : m;
#pragma omp parallel for schedule(dynamic, 8) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, 0.5 * d1 * d1 * (double)(i1 - i0), d1))
            for (int j = 0; j < d1; j++) {
                double *hj = H + (size_t)j * d1;
                for (int64_t i = i0; i < i1; i++) {
                    const double *z = Z + (size_t)i * d1;
                    double a = c[i] * z[j];
                    for (int k = 0; k <= j; k++)
                        hj[k] += a * z[k];
                    g[j] += r[i] * z[j];
                }
            }
        }
        for (int j = 0; j < d1 - 1; j++) {
            H[(size_t)j * d1 + j] += l2;
            g[j] += l2 * theta[j];
        }
        H[dd - 1] += 1e-12; /* the bias is unpenalized; keep the system definite */
        if (cholesky_solve(H, g, d1) != 0) {
            it = -1;
            goto done;
        }
        it++;
        double step = 1, maxstep = 0;
        for (int j = 0; j < d1; j++)
            maxstep = fmax(maxstep, fabs(g[j]));
        for (int tries = 0; tries < 30; tries++, step *= 0.5) {
            for (int j = 0; j < d1; j++)
                trial[j] = theta[j] - step * g[j];
            double ft = objective(Z, yv, m, d1, trial, l2);
            if (ft <= f) {
                f = ft;
                break;
            }
        }
        memcpy(theta, trial, (size_t)d1 * sizeof *theta);
        if (maxstep * step < tol)
            break;
    }
done:
    free(H);
    free(g);
    free(c);
    free(r);
    free(trial);
    return it;
}

/* Count the used rows (use NULL: all). */
static int64_t used_rows(int64_t n, const unsigned char *use)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        m += !use || use[i];
    return m;
}

/* Standardize the m used rows of X into Z [m][dim + 1] (last column 1) with
 * their column mean mu and deviation sd (a constant column gets sd 1, so it
 * stays 0 after centring). */
static void standardize(const float *X, int64_t n, int dim, const unsigned char *use, int64_t m,
                        double *mu, double *sd, double *Z)
{
    int d1 = dim + 1;
    memset(mu, 0, (size_t)dim * sizeof *mu);
    memset(sd, 0, (size_t)dim * sizeof *sd);
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            for (int j = 0; j < dim; j++)
                mu[j] += X[(size_t)i * dim + j];
    for (int j = 0; j < dim; j++)
        mu[j] /= (double)m;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            for (int j = 0; j < dim; j++) {
                double d = X[(size_t)i * dim + j] - mu[j];
                sd[j] += d * d;
            }
    for (int j = 0; j < dim; j++) {
        sd[j] = sqrt(sd[j] / (double)m);
        if (!(sd[j] > 1e-12))
            sd[j] = 1; /* a constant feature: leave it at 0 after centring */
    }
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++) {
        if (use && !use[i])
            continue;
        double *z = Z + (size_t)row++ * d1;
        for (int j = 0; j < dim; j++)
            z[j] = (X[(size_t)i * dim + j] - mu[j]) / sd[j];
        z[dim] = 1;
    }
}

/* Weights theta [dim + 1] over standardized features -> raw features. */
static void unstandardize(const double *theta, const double *mu, const double *sd, int dim,
                          double *w, double *b)
{
    double bias = theta[dim];
    for (int j = 0; j < dim; j++) {
        w[j] = theta[j] / sd[j];
        bias -= theta[j] * mu[j] / sd[j];
    }
    *b = bias;
}

int sq_logreg_train(const float *X, const int *y, int64_t n, int dim, const unsigned char *use,
                    const sq_logreg_opts *opts, double *w, double *b)
{
    if (!opts)
        opts = &default_opts;
    int64_t m = used_rows(n, use), pos = 0;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            pos += y[i] == 1;
    if (m < 2 || pos == 0 || pos == m || dim < 1)
        return -1;
    int d1 = dim + 1;
    double *mu = malloc((size_t)dim * sizeof *mu), *sd = malloc((size_t)dim * sizeof *sd);
    double *Z = malloc((size_t)m * d1 * sizeof *Z), *yv = malloc((size_t)m * sizeof *yv);
    double *theta = malloc((size_t)d1 * sizeof *theta);
    int it = -1;
    if (!mu || !sd || !Z || !yv || !theta)
        goto done;
    standardize(X, n, dim, use, m, mu, sd, Z);
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            yv[row++] = y[i] == 1;
    it = newton(Z, yv, m, d1, opts->l2, opts->max_iter, opts->tol, theta);
    if (it >= 0)
        unstandardize(theta, mu, sd, dim, w, b);
done:
    free(mu);
    free(sd);
    free(Z);
    free(yv);
    free(theta);
    return it;
}

/* ---- multinomial (softmax) logistic regression ---- */

/* Why two optimizers: with two classes the model is the binary one above
 * (one weight vector, class 0's logit fixed at 0), whose Newton system is
 * (dim + 1)^2 and converges to machine precision in a handful of steps; it is
 * also scikit-learn's binary LogisticRegression (what SetFit's head is) and
 * the probe's model, so the probe and a two-class head are one code path.
 * With C >= 3 classes the symmetric softmax has C (dim + 1) parameters, and a
 * Newton system of (C (dim + 1))^2 grows too fast; L-BFGS needs only the
 * gradient, O(m dim C) a step. */

#define LBFGS_MEM 10
#define SOFTMAX_BLOCK 64

/* The penalized softmax loss at theta [C][d1] over the rows of Z [m][d1]
 * with classes yc; with G, also its gradient. Rows are independent
 * (parallel); sums run over the rows in order, so the result has the same
 * bits at any thread count. R [m][C] and loss [m] are scratch. */
static double softmax_objective(const double *Z, const int *yc, int64_t m, int d1, int C,
                                double l2, const double *theta, double *G, double *R,
                                double *loss)
{
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)m * C * (d1 + 20), m))
    for (int64_t i = 0; i < m; i++) {
        const double *z = Z + (size_t)i * d1;
        double *r = R + (size_t)i * C, mx = -INFINITY;
        for (int c = 0; c < C; c++) {
            const double *th = theta + (size_t)c * d1;
            double t = 0;
            for (int j = 0; j < d1; j++)
                t += z[j] * th[j];
            r[c] = t;
            mx = fmax(mx, t);
        }
        double se = 0;
        for (int c = 0; c < C; c++)
            se += exp(r[c] - mx);
        double lse = mx + log(se);
        loss[i] = lse - r[yc[i]];
        for (int c = 0; c < C; c++)
            r[c] = exp(r[c] - lse) - (c == yc[i]);
    }
    double f = 0;
    for (int64_t i = 0; i < m; i++)
        f += loss[i];
    for (int c = 0; c < C; c++)
        for (int j = 0; j < d1 - 1; j++) {
            double t = theta[(size_t)c * d1 + j];
            f += 0.5 * l2 * t * t;
        }
    if (!G)
        return f;
    size_t K = (size_t)C * d1;
    memset(G, 0, K * sizeof *G);
    for (int64_t i0 = 0; i0 < m; i0 += SOFTMAX_BLOCK) {
        int64_t i1 = i0 + SOFTMAX_BLOCK < m ? i0 + SOFTMAX_BLOCK : m;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)d1 * C * (i1 - i0), d1))
        for (int j = 0; j < d1; j++)
            for (int64_t i = i0; i < i1; i++) {
                double zij = Z[(size_t)i * d1 + j];
                for (int c = 0; c < C; c++)
                    G[(size_t)c * d1 + j] += R[(size_t)i * C + c] * zij;
            }
    }
    for (int c = 0; c < C; c++)
        for (int j = 0; j < d1 - 1; j++)
            G[(size_t)c * d1 + j] += l2 * theta[(size_t)c * d1 + j];
    return f;
}

static double dotk(const double *a, const double *b, size_t k)
{
    double s = 0;
    for (size_t i = 0; i < k; i++)
        s += a[i] * b[i];
    return s;
}

static double maxabs(const double *a, size_t k)
{
    double s = 0;
    for (size_t i = 0; i < k; i++)
        s = fmax(s, fabs(a[i]));
    return s;
}

/* L-BFGS (memory LBFGS_MEM, backtracking Armijo line search) from theta = 0.
 * Stops when the largest gradient entry falls below 1e-7 of its start, the
 * loss stops decreasing (relative change < 1e-13, or no step decreases it),
 * or after max_iter steps. Returns the steps taken, or -1 out of memory. */
static int lbfgs(const double *Z, const int *yc, int64_t m, int d1, int C, double l2,
                 int max_iter, double *theta)
{
    size_t K = (size_t)C * d1;
    double *g = malloc(K * sizeof *g), *gn = malloc(K * sizeof *gn), *d = malloc(K * sizeof *d);
    double *tn = malloc(K * sizeof *tn), *S = malloc(LBFGS_MEM * K * sizeof *S);
    double *Y = malloc(LBFGS_MEM * K * sizeof *Y), *R = malloc((size_t)m * C * sizeof *R);
    double *loss = malloc((size_t)m * sizeof *loss);
    double rho[LBFGS_MEM], alpha[LBFGS_MEM];
    int it = -1;
    if (!g || !gn || !d || !tn || !S || !Y || !R || !loss)
        goto done;
    memset(theta, 0, K * sizeof *theta);
    double f = softmax_objective(Z, yc, m, d1, C, l2, theta, g, R, loss);
    double g0 = maxabs(g, K);
    int stored = 0, head = 0; /* pairs kept; the next slot to write */
    for (it = 0; it < max_iter && maxabs(g, K) > 1e-7 * g0;) {
        /* d = -H g by the two-loop recursion, newest pair first. */
        for (size_t k = 0; k < K; k++)
            d[k] = -g[k];
        for (int q = 0; q < stored; q++) {
            int s = (head - 1 - q + LBFGS_MEM) % LBFGS_MEM;
            alpha[s] = rho[s] * dotk(S + s * K, d, K);
            for (size_t k = 0; k < K; k++)
                d[k] -= alpha[s] * Y[s * K + k];
        }
        double step = 1;
        if (stored > 0) {
            int s = (head - 1 + LBFGS_MEM) % LBFGS_MEM;
            double gamma = 1 / (rho[s] * dotk(Y + s * K, Y + s * K, K));
            for (size_t k = 0; k < K; k++)
                d[k] *= gamma;
        } else {
            step = 1 / sqrt(dotk(g, g, K)); /* first step: unit length */
        }
        for (int q = stored - 1; q >= 0; q--) {
            int s = (head - 1 - q + LBFGS_MEM) % LBFGS_MEM;
            double beta = rho[s] * dotk(Y + s * K, d, K);
            for (size_t k = 0; k < K; k++)
                d[k] += (alpha[s] - beta) * S[s * K + k];
        }
        double slope = dotk(g, d, K);
        if (!(slope < 0)) { /* not a descent direction: restart from -g */
            for (size_t k = 0; k < K; k++)
                d[k] = -g[k];
            slope = dotk(g, d, K);
            step = 1 / sqrt(-slope);
            stored = 0;
        }
        double fn = f;
        int tries;
        for (tries = 0; tries < 40; tries++, step *= 0.5) {
            for (size_t k = 0; k < K; k++)
                tn[k] = theta[k] + step * d[k];
            fn = softmax_objective(Z, yc, m, d1, C, l2, tn, NULL, R, loss);
            if (fn <= f + 1e-4 * step * slope)
                break;
        }
        if (tries == 40)
            break; /* no step lowers the loss: as low as it gets */
        it++;
        softmax_objective(Z, yc, m, d1, C, l2, tn, gn, R, loss);
        double *s = S + (size_t)head * K, *y = Y + (size_t)head * K;
        for (size_t k = 0; k < K; k++) {
            s[k] = tn[k] - theta[k];
            y[k] = gn[k] - g[k];
        }
        double sy = dotk(s, y, K);
        if (sy > 1e-12 * sqrt(dotk(s, s, K) * dotk(y, y, K))) {
            rho[head] = 1 / sy;
            head = (head + 1) % LBFGS_MEM;
            stored += stored < LBFGS_MEM;
        }
        memcpy(theta, tn, K * sizeof *theta);
        memcpy(g, gn, K * sizeof *g);
        double df = f - fn;
        f = fn;
        if (df <= 1e-13 * fmax(1, fabs(f)))
            break;
    }
done:
    free(g);
    free(gn);
    free(d);
    free(tn);
    free(S);
    free(Y);
    free(R);
    free(loss);
    return it;
}

int sq_softmax_train(const float *X, const int *y, int64_t n, int dim, int classes,
                     const unsigned char *use, const sq_logreg_opts *opts, double *W, double *b)
{
    if (!opts)
        opts = &default_opts;
    if (classes < 2 || dim < 1 || !(opts->l2 > 0))
        return -1;
    int64_t m = used_rows(n, use);
    int64_t *count = calloc((size_t)classes, sizeof *count);
    if (!count)
        return -1;
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) {
        if (use && !use[i])
            continue;
        if (y[i] < 0 || y[i] >= classes) {
            bad = 1;
            break;
        }
        count[y[i]]++;
        for (int j = 0; j < dim; j++)
            if (!isfinite(X[(size_t)i * dim + j]))
                bad = 1;
    }
    for (int c = 0; c < classes && !bad; c++)
        bad = count[c] == 0; /* a class without rows has no optimum */
    free(count);
    if (bad)
        return -1;
    if (classes == 2) {
        /* Binary form: class 0's logit 0, class 1's w.x + b. */
        memset(W, 0, (size_t)dim * sizeof *W);
        b[0] = 0;
        return sq_logreg_train(X, y, n, dim, use, opts, W + dim, b + 1);
    }
    int d1 = dim + 1;
    size_t K = (size_t)classes * d1;
    double *mu = malloc((size_t)dim * sizeof *mu), *sd = malloc((size_t)dim * sizeof *sd);
    double *Z = malloc((size_t)m * d1 * sizeof *Z), *theta = malloc(K * sizeof *theta);
    int *yc = malloc((size_t)m * sizeof *yc);
    int it = -1;
    if (!mu || !sd || !Z || !theta || !yc)
        goto done;
    standardize(X, n, dim, use, m, mu, sd, Z);
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++)
        if (!use || use[i])
            yc[row++] = y[i];
    it = lbfgs(Z, yc, m, d1, classes, opts->l2, opts->lbfgs_iter > 0 ? opts->lbfgs_iter : 1000,
               theta);
    if (it >= 0)
        for (int c = 0; c < classes; c++)
            unstandardize(theta + (size_t)c * d1, mu, sd, dim, W + (size_t)c * dim, b + c);
done:
    free(mu);
    free(sd);
    free(Z);
    free(theta);
    free(yc);
    return it;
}

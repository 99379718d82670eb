/* Training a classification head on embeddings (squint train-head; and the
 * probe of squint embed-run, eval_metrics.h). Pure functions over plain
 * arrays: deterministic, the same bits at any thread count. */
#ifndef SQ_HEAD_TRAIN_H
#define SQ_HEAD_TRAIN_H

#include <stdint.h>

/* L2-regularized binary logistic regression, trained by Newton's method on
 * features standardized with the training rows' mean and deviation:
 * minimize sum_i logloss(y_i, w.x_i + b) + (l2 / 2) |w|^2 (b unpenalized;
 * l2 = 1 is scikit-learn's default C = 1). */
typedef struct sq_logreg_opts {
    double l2;     /* > 0; default 1 */
    int max_iter;  /* Newton steps; default 50 */
    double tol;    /* stop when the largest |step| < tol; default 1e-8 */
    int lbfgs_iter; /* L-BFGS steps of sq_softmax_train with 3+ classes; 0: 1000 */
} sq_logreg_opts;

/* Train on the rows where use[i] != 0 (all rows when use is NULL) and write
 * the weights for raw (unstandardized) features into w[0..dim) and the bias
 * into *b. Returns the number of Newton steps, or -1 (a class missing, a
 * singular system, out of memory). */
int sq_logreg_train(const float *X, const int *y, int64_t n, int dim, const unsigned char *use,
                    const sq_logreg_opts *opts, double *w, double *b);

/* Multinomial (softmax) logistic regression: C = classes >= 2 classes, labels
 * y in [0, C) on the rows where use[i] != 0 (all when use is NULL); every
 * class needs a row and X must be finite. Features are standardized as
 * above; the weights W [C][dim] and biases b [C] written are for raw
 * features, p(c | x) = softmax(W x + b)_c. With C = 2 this is the binary
 * model above (sq_logreg_train: Newton, l2 on the one weight vector):
 * W[0] = 0, b[0] = 0 and W[1], b[1] its w, b. With C >= 3: minimize
 * sum_i -log p(y_i | x_i) + (l2 / 2) sum_c |W_c|^2 (biases unpenalized) by
 * L-BFGS from zero (scikit-learn's multinomial LogisticRegression, with
 * standardized features). Deterministic: the same bits at any thread count.
 * Returns the optimizer's steps, or -1 (C < 2, dim < 1, l2 <= 0, a label out
 * of range, a class without rows, a non-finite feature, a singular system,
 * out of memory). */
int sq_softmax_train(const float *X, const int *y, int64_t n, int dim, int classes,
                     const unsigned char *use, const sq_logreg_opts *opts, double *W, double *b);

#endif

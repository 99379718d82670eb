/* A linear softmax head's prediction over one embedding: the class
 * probabilities and the most probable class. Used by the heads at run time
 * (classify, serve /predict) and by embed-run's probe. */
#ifndef SQ_SOFTMAX_H
#define SQ_SOFTMAX_H

/* softmax(W x + b) of one row into p [classes], in double (max subtracted). */
void sq_softmax_probs(const double *W, const double *b, int classes, int dim, const float *x,
                      double *p);
/* Index of the largest of p[0..n) (ties: the lower index). */
int sq_argmax(const double *p, int n);

#endif

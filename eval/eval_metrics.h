/* Accuracy metrics of `squint embed-run`: how far a quantized model's
 * embeddings are from a reference model's (cosine per text, nearest-neighbour
 * overlap), and the task metrics of labelled sets (STS-B Spearman, BEIR
 * nDCG@10 / recall@100, a logistic-regression probe with k-fold CV). Pure
 * functions over plain arrays: no I/O, deterministic (ties always broken by
 * the lower index), and the same result at any thread count. */
#ifndef SQ_EVAL_METRICS_H
#define SQ_EVAL_METRICS_H

#include <stdint.h>

/* sq_cosine, sq_rank_scores and sq_rank_by_cosine: base/rank_order.h. */
#include "rank_order.h"

/* Statistics of cos(a[i], b[i]) over the rows of two [n][dim] matrices,
 * a the model and b the reference. Worst cases, not only the mean: the
 * percentiles, counts below fixed thresholds and the worst rows themselves.
 * The centred cosine removes the reference's mean embedding mu (over the n
 * rows, in double) from both sides, cos(a[i] - mu, b[i] - mu): what tells
 * inputs apart, which a large common component hides from the raw cosine. */
#define SQ_COS_WORST 10
typedef struct sq_cos_stats {
    double mean;
    double min;
    double p01;     /* 1st percentile (linear interpolation between order statistics) */
    double p001;    /* 0.1st percentile */
    int64_t argmin; /* row of the minimum */
    int64_t n_nan;  /* rows with a zero vector: counted as cosine 0 */
    int64_t below_099, below_098, below_095; /* rows with cosine < 0.99 / 0.98 / 0.95 */
    int n_worst;                             /* min(n, SQ_COS_WORST) */
    int64_t worst[SQ_COS_WORST];             /* rows, lowest cosine first (ties: lower row) */
    double worst_cos[SQ_COS_WORST];
    double centred_mean, centred_min; /* NaN when n < 2 */
    int64_t centred_argmin;
} sq_cos_stats;

/* Returns 0, or -1 when n < 1 or out of memory. */
int sq_cos_pair_stats(const float *a, const float *b, int64_t n, int dim, sq_cos_stats *out);

/* The p-th percentile (p in [0, 100]) of n values already sorted ascending,
 * interpolating linearly between neighbours (numpy's default). */
double sq_percentile_sorted(const double *sorted, int64_t n, double p);

/* Top-k nearest-neighbour overlap between two embeddings of the same n texts:
 * for each text i, the k texts j != i with the largest cosine under a and
 * under b; the mean over i of |both sets| / k. k is clipped to n - 1. NaN
 * when n < 2; 1 when a and b are equal. O(n^2 dim). *k_used gets the k. */
double sq_topk_overlap(const float *a, const float *b, int64_t n, int dim, int k, int *k_used);

/* Indices of the k largest scores (descending; ties: lower index first) into
 * out[0..k); k is clipped to n. Returns the number written. */
int64_t sq_top_indices(const double *scores, int64_t n, int64_t k, int64_t *out);

/* Average ranks (1-based; tied values share the mean of their ranks). */
void sq_average_ranks(const double *x, int64_t n, double *ranks);
/* Pearson correlation; NaN when n < 2 or a side is constant. */
double sq_pearson(const double *x, const double *y, int64_t n);
/* Spearman correlation: Pearson of the average ranks (so ties are handled
 * as scipy.stats.spearmanr does). NaN as for Pearson, or on allocation
 * failure. */
double sq_spearman(const double *x, const double *y, int64_t n);

/* One query's judged documents: doc[i] has grade[i] (> 0 relevant). */
typedef struct sq_qrels_view {
    const int64_t *doc;
    const double *grade;
    int64_t n;
} sq_qrels_view;

/* nDCG@k as trec_eval / BEIR compute it: DCG = sum over the first k ranked
 * documents of grade / log2(rank + 1) (rank from 1, linear gain), divided by
 * the DCG of the ideal ordering of the judged grades cut at k. 0 when no
 * document is relevant. ranked holds n_ranked document ids, best first. */
double sq_ndcg_at_k(const int64_t *ranked, int64_t n_ranked, const sq_qrels_view *q, int k);
/* recall@k: relevant (grade > 0) documents among the first k ranked / all
 * relevant ones. 0 when none is relevant. */
double sq_recall_at_k(const int64_t *ranked, int64_t n_ranked, const sq_qrels_view *q, int k);

/* Retrieval by cosine: for each of nq queries Q [nq][dim], rank the nd
 * documents D [nd][dim] (ties: lower index first), and average nDCG@10 and
 * recall@100 over the queries. Query q's judgements are qrel_doc/qrel_grade
 * [qrel_off[q] .. qrel_off[q+1]). per_query_ndcg10 (NULL or nq values)
 * receives each query's nDCG@10, for paired comparisons. Returns 0, or -1
 * when nq < 1, nd < 1 or out of memory (per_query_ndcg10 is then not filled). */
int sq_retrieval_eval(const float *Q, int64_t nq, const float *D, int64_t nd, int dim,
                      const int64_t *qrel_off, const int64_t *qrel_doc, const double *qrel_grade,
                      double *ndcg10, double *recall100, double *per_query_ndcg10);

/* Standard error of the mean of the paired differences a[i] - b[i] (sample
 * deviation / sqrt(n)): how far a change in a per-query metric's mean is from
 * noise. NaN when n < 2. */
double sq_paired_se(const double *a, const double *b, int64_t n);

/* sq_logreg_opts, sq_logreg_train, sq_softmax_train: heads/head_train.h. */
#include "head_train.h"

/* Cross-validated probe accuracy: n rows of X [n][dim] with labels y in
 * {0, 1}; `folds` stratified deterministic folds (the rows of each class, in
 * order, dealt round-robin to the folds); each fold is predicted by a model
 * trained on the others. Returns correct / n, or NaN when a training split
 * lacks a class, folds < 2, n < folds, or memory runs out. opts may be NULL. */
double sq_logreg_cv_accuracy(const float *X, const int *y, int64_t n, int dim, int folds,
                             const sq_logreg_opts *opts);

/* sq_softmax_probs and sq_argmax (a head's prediction): heads/softmax.h. */
#include "softmax.h"

#endif

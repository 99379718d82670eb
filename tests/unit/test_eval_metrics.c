/* embed-run's metrics (eval/eval_metrics.h) on hand-computed cases, and its
 * evaluation-set readers (eval/eval_data.h) on small and hostile files. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval_data.h"
#include "eval_metrics.h"
#include "test_util.h"

#define EPS 1e-9

START_TEST(test_cosine_stats)
{
    /* Row 0 identical (cos 1), row 1 orthogonal (cos 0). */
    const float a[] = {1, 0, 1, 0}, b[] = {1, 0, 0, 1};
    sq_cos_stats st;
    ck_assert_int_eq(sq_cos_pair_stats(a, b, 2, 2, &st), 0);
    ck_assert_double_eq_tol(st.mean, 0.5, EPS);
    ck_assert_double_eq_tol(st.min, 0.0, EPS);
    ck_assert_int_eq(st.argmin, 1);
    /* p1 of {0, 1}: 0 + 0.01 * (1 - 0) */
    ck_assert_double_eq_tol(st.p01, 0.01, EPS);
    const float z[] = {0, 0};
    ck_assert(isnan(sq_cosine(z, a, 2)));
}
END_TEST

/* A large shared component hides a swap of what tells rows apart: raw
 * cosine 100/101 on both rows, centred cosine -1. Worst rows come lowest
 * first, ties by the lower row; thresholds count strictly below. */
START_TEST(test_cosine_stats_centred_and_worst)
{
    const float b[] = {10, 1, 0, 10, 0, 1}, a[] = {10, 0, 1, 10, 1, 0};
    sq_cos_stats st;
    ck_assert_int_eq(sq_cos_pair_stats(a, b, 2, 3, &st), 0);
    ck_assert_double_eq_tol(st.mean, 100.0 / 101.0, EPS);
    ck_assert_double_eq_tol(st.centred_mean, -1.0, EPS);
    ck_assert_double_eq_tol(st.centred_min, -1.0, EPS);
    ck_assert_int_eq(st.below_099, 0);
    ck_assert_int_eq(st.n_worst, 2);
    ck_assert_int_eq(st.worst[0], 0); /* a tie: the lower row first */
    ck_assert_int_eq(st.worst[1], 1);
    /* 12 rows: cosines 1, 1, ..., and rows 3 (0.97), 7 (0.5), 9 (0.985). */
    float x[12 * 2], y[12 * 2];
    for (int i = 0; i < 12; i++) {
        double c = i == 3 ? 0.97 : i == 7 ? 0.5 : i == 9 ? 0.985 : 1.0;
        y[2 * i] = 1, y[2 * i + 1] = 0;
        x[2 * i] = (float)c, x[2 * i + 1] = (float)sqrt(1 - c * c);
    }
    ck_assert_int_eq(sq_cos_pair_stats(x, y, 12, 2, &st), 0);
    ck_assert_int_eq(st.n_worst, 10);
    ck_assert_int_eq(st.worst[0], 7);
    ck_assert_int_eq(st.worst[1], 3);
    ck_assert_int_eq(st.worst[2], 9);
    ck_assert_double_eq_tol(st.worst_cos[0], 0.5, 1e-6);
    ck_assert_int_eq(st.below_099, 3);
    ck_assert_int_eq(st.below_098, 2);
    ck_assert_int_eq(st.below_095, 1);
    /* p0.1 of 12 sorted values: v0 + 0.011 * (v1 - v0), v0 ~ 0.5, v1 ~ 0.97 */
    ck_assert_double_eq_tol(st.p001, st.worst_cos[0] + 0.011 * (st.worst_cos[1] - st.worst_cos[0]),
                            1e-12);
    ck_assert_int_eq(sq_cos_pair_stats(x, y, 1, 2, &st), 0);
    ck_assert(isnan(st.centred_mean)); /* one row: no spread to centre */
}
END_TEST

START_TEST(test_percentile)
{
    const double v[] = {1, 2, 3, 4, 5};
    ck_assert_double_eq_tol(sq_percentile_sorted(v, 5, 25), 2.0, EPS);
    ck_assert_double_eq_tol(sq_percentile_sorted(v, 5, 1), 1.04, EPS);
    ck_assert_double_eq_tol(sq_percentile_sorted(v, 5, 100), 5.0, EPS);
}
END_TEST

START_TEST(test_ranks_and_spearman_ties)
{
    const double x[] = {10, 20, 20, 20, 5};
    double r[5];
    sq_average_ranks(x, 5, r);
    const double want[] = {2, 4, 4, 4, 1};
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq_tol(r[i], want[i], EPS);
    /* ranks x: 1 2.5 2.5 4 5, y: 1 3 2 4 5; sxy = 9.5, sxx = 9.5, syy = 10:
     * 9.5 / sqrt(95) (scipy.stats.spearmanr gives 0.9746794344808963). */
    const double a[] = {1, 2, 2, 3, 4}, b[] = {1, 3, 2, 4, 5};
    ck_assert_double_eq_tol(sq_spearman(a, b, 5), 9.5 / sqrt(95.0), EPS);
    ck_assert_double_eq_tol(sq_spearman(a, b, 5), 0.9746794344808963, 1e-12);
    /* monotone but nonlinear -> exactly 1; reversed -> -1 */
    const double c[] = {1, 8, 27, 64, 125}, d[] = {5, 4, 3, 2, 1}, e[] = {1, 2, 3, 4, 5};
    ck_assert_double_eq_tol(sq_spearman(e, c, 5), 1.0, EPS);
    ck_assert_double_eq_tol(sq_spearman(e, d, 5), -1.0, EPS);
    const double k[] = {3, 3, 3, 3, 3};
    ck_assert(isnan(sq_spearman(e, k, 5)));
}
END_TEST

START_TEST(test_ndcg_recall)
{
    /* Ranking 3, 1, 7, 2; judged: doc 1 grade 1, doc 2 grade 2, doc 9 grade 1.
     * DCG@10 = 1/log2(3) + 2/log2(5); ideal grades 2, 1, 1: 2/1 + 1/log2(3) + 1/log2(4). */
    const int64_t ranked[] = {3, 1, 7, 2};
    const int64_t doc[] = {1, 2, 9};
    const double grade[] = {1, 2, 1};
    sq_qrels_view q = {doc, grade, 3};
    double dcg = 1 / log2(3.0) + 2 / log2(5.0), idcg = 2 + 1 / log2(3.0) + 0.5;
    ck_assert_double_eq_tol(sq_ndcg_at_k(ranked, 4, &q, 10), dcg / idcg, EPS);
    ck_assert_double_eq_tol(sq_ndcg_at_k(ranked, 4, &q, 10), 0.4766265, 1e-6);
    /* @2: DCG 1/log2(3); ideal 2 + 1/log2(3) */
    ck_assert_double_eq_tol(sq_ndcg_at_k(ranked, 4, &q, 2), (1 / log2(3.0)) / (2 + 1 / log2(3.0)),
                            EPS);
    /* perfect ranking -> 1 */
    const int64_t ideal[] = {2, 1, 9, 5};
    ck_assert_double_eq_tol(sq_ndcg_at_k(ideal, 4, &q, 10), 1.0, EPS);
    ck_assert_double_eq_tol(sq_recall_at_k(ranked, 4, &q, 1), 0.0, EPS);
    ck_assert_double_eq_tol(sq_recall_at_k(ranked, 4, &q, 2), 1.0 / 3, EPS);
    ck_assert_double_eq_tol(sq_recall_at_k(ranked, 4, &q, 100), 2.0 / 3, EPS);
    /* no relevant document: 0, not NaN */
    const double zero[] = {0, 0, 0};
    sq_qrels_view none = {doc, zero, 3};
    ck_assert_double_eq(sq_ndcg_at_k(ranked, 4, &none, 10), 0.0);
    ck_assert_double_eq(sq_recall_at_k(ranked, 4, &none, 10), 0.0);
}
END_TEST

START_TEST(test_top_indices_ties)
{
    const double s[] = {0.5, 0.9, 0.5, 0.9};
    int64_t out[4];
    ck_assert_int_eq(sq_top_indices(s, 4, 3, out), 3);
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 3);
    ck_assert_int_eq(out[2], 0);
    ck_assert_int_eq(sq_top_indices(s, 4, 9, out), 4);
}
END_TEST

START_TEST(test_retrieval_eval)
{
    /* Query 0 points at doc 1, query 1 at doc 0. */
    const float Q[] = {0, 1, 1, 0}, D[] = {1, 0.1f, 0.1f, 1, -1, 0};
    const int64_t off[] = {0, 1, 2}, doc[] = {1, 2};
    const double grade[] = {1, 1};
    double ndcg, recall, per_query[2];
    ck_assert_int_eq(sq_retrieval_eval(Q, 2, D, 3, 2, off, doc, grade, &ndcg, &recall, per_query), 0);
    /* q0: doc 1 first (1.0); q1: doc 2 is last of 3: 1/log2(4) = 0.5 */
    ck_assert_double_eq_tol(ndcg, (1.0 + 0.5) / 2, EPS);
    ck_assert_double_eq_tol(recall, 1.0, EPS);
    ck_assert_double_eq_tol(per_query[0], 1.0, EPS);
    ck_assert_double_eq_tol(per_query[1], 0.5, EPS);
}
END_TEST

START_TEST(test_paired_se)
{
    /* differences 1, 2, 3: mean 2, sample deviation 1, s.e. 1 / sqrt(3) */
    const double a[] = {2, 4, 6}, b[] = {1, 2, 3};
    ck_assert_double_eq_tol(sq_paired_se(a, b, 3), 1.0 / sqrt(3.0), EPS);
    /* a constant shift has no spread: s.e. 0 */
    const double c[] = {1.5, 2.5, 3.5};
    ck_assert_double_eq_tol(sq_paired_se(c, b, 3), 0.0, EPS);
    ck_assert(isnan(sq_paired_se(a, b, 1)));
}
END_TEST

START_TEST(test_topk_overlap)
{
    const float a[] = {1, 0, 1, 0.1f, 0, 1};
    const float b[] = {1, 0, 0.1f, 1, 0, 1};
    int k;
    ck_assert_double_eq_tol(sq_topk_overlap(a, a, 3, 2, 10, &k), 1.0, EPS);
    ck_assert_int_eq(k, 2); /* clipped to n - 1 */
    /* k = 1: under a the neighbours are 1, 0, 1; under b 1, 2, 1 -> 2/3 */
    ck_assert_double_eq_tol(sq_topk_overlap(a, b, 3, 2, 1, &k), 2.0 / 3, EPS);
    ck_assert(isnan(sq_topk_overlap(a, b, 1, 2, 1, &k)));
}
END_TEST

/* Two Gaussian-free blobs on either side of x0 + x1 = 0, deterministic. */
static void separable(float *X, int *y, int n)
{
    for (int i = 0; i < n; i++) {
        float t = (float)((i * 37) % 101) / 101.0f; /* spread along the boundary */
        int cls = i % 2;
        float off = cls ? 0.3f + 0.5f * t : -0.3f - 0.5f * t;
        X[i * 3 + 0] = off + (t - 0.5f);
        X[i * 3 + 1] = off - (t - 0.5f);
        X[i * 3 + 2] = (float)((i * 13) % 7) - 3.0f; /* noise feature */
        y[i] = cls;
    }
}

START_TEST(test_logreg_separable)
{
    enum { N = 60 };
    float X[N * 3];
    int y[N];
    separable(X, y, N);
    double w[3], b;
    ck_assert_int_ge(sq_logreg_train(X, y, N, 3, NULL, NULL, w, &b), 1);
    for (int i = 0; i < N; i++) {
        double t = b + w[0] * X[i * 3] + w[1] * X[i * 3 + 1] + w[2] * X[i * 3 + 2];
        ck_assert_int_eq(t > 0, y[i]);
    }
    ck_assert_double_eq_tol(sq_logreg_cv_accuracy(X, y, N, 3, 5, NULL), 1.0, EPS);
    /* deterministic: the same figure again */
    ck_assert_double_eq(sq_logreg_cv_accuracy(X, y, N, 3, 5, NULL),
                        sq_logreg_cv_accuracy(X, y, N, 3, 5, NULL));
    /* one class only: no probe */
    int ones[N];
    for (int i = 0; i < N; i++)
        ones[i] = 1;
    ck_assert(isnan(sq_logreg_cv_accuracy(X, ones, N, 3, 5, NULL)));
    ck_assert_int_eq(sq_logreg_train(X, ones, N, 3, NULL, NULL, w, &b), -1);
}
END_TEST

/* K classes in dim dimensions: class c's rows around 2 e_c (plus a
 * deterministic spread on every feature), so the classes are separable. */
static void blobs(float *X, int *y, int n, int dim, int K)
{
    for (int i = 0; i < n; i++) {
        y[i] = i % K;
        for (int j = 0; j < dim; j++)
            X[(size_t)i * dim + j] = (float)(((i * 31 + j * 17) % 23) / 23.0 - 0.5) * 0.8f;
        X[(size_t)i * dim + y[i]] += 2.0f;
    }
}

static double sq_norm(const double *W, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += W[i] * W[i];
    return s;
}

START_TEST(test_softmax_train)
{
    enum { N = 240, D = 80, K = 4 }; /* D + 1 > 64: the parallel loops run */
    float *X = malloc(sizeof(float) * N * D);
    int y[N];
    blobs(X, y, N, D, K);
    double W[K * D], b[K], W2[K * D], b2[K], p[K];
    omp_set_num_threads(1);
    int steps = sq_softmax_train(X, y, N, D, K, NULL, NULL, W, b);
    ck_assert_int_ge(steps, 1);
    int correct = 0;
    for (int i = 0; i < N; i++) {
        sq_softmax_probs(W, b, K, D, X + (size_t)i * D, p);
        double sum = 0;
        for (int c = 0; c < K; c++)
            sum += p[c];
        ck_assert_double_eq_tol(sum, 1.0, 1e-12);
        correct += sq_argmax(p, K) == y[i];
    }
    ck_assert_int_eq(correct, N);
    /* The same bits at another thread count. */
    omp_set_num_threads(3);
    ck_assert_int_eq(sq_softmax_train(X, y, N, D, K, NULL, NULL, W2, b2), steps);
    ck_assert_int_eq(memcmp(W, W2, sizeof W), 0);
    ck_assert_int_eq(memcmp(b, b2, sizeof b), 0);
    /* A stronger penalty gives smaller weights. */
    sq_logreg_opts weak = {.l2 = 0.01, .max_iter = 50, .tol = 1e-8};
    sq_logreg_opts strong = {.l2 = 100, .max_iter = 50, .tol = 1e-8};
    ck_assert_int_ge(sq_softmax_train(X, y, N, D, K, NULL, &weak, W, b), 1);
    ck_assert_int_ge(sq_softmax_train(X, y, N, D, K, NULL, &strong, W2, b2), 1);
    ck_assert(sq_norm(W2, K * D) < 0.1 * sq_norm(W, K * D));
    /* The optimum: the gradient of the penalized loss vanishes, so with
     * weights for raw features sum_i (p_ic - [y_i = c]) = 0 (the bias). */
    double gb[K] = {0};
    for (int i = 0; i < N; i++) {
        sq_softmax_probs(W2, b2, K, D, X + (size_t)i * D, p);
        for (int c = 0; c < K; c++)
            gb[c] += p[c] - (y[i] == c);
    }
    for (int c = 0; c < K; c++)
        ck_assert_double_eq_tol(gb[c], 0.0, 1e-4);
    /* use[] restricts the rows: training on half the rows (every class
     * kept) equals training on a copy of them. */
    unsigned char use[N];
    float *Xe = malloc(sizeof(float) * N / 2 * D);
    int ye[N / 2], ne = 0;
    for (int i = 0; i < N; i++) {
        use[i] = i % 8 < 4;
        if (use[i]) {
            memcpy(Xe + (size_t)ne * D, X + (size_t)i * D, sizeof(float) * D);
            ye[ne++] = y[i];
        }
    }
    ck_assert_int_ge(sq_softmax_train(X, y, N, D, K, use, NULL, W, b), 1);
    ck_assert_int_ge(sq_softmax_train(Xe, ye, N / 2, D, K, NULL, NULL, W2, b2), 1);
    ck_assert_int_eq(memcmp(W, W2, sizeof W), 0);
    free(Xe);
    /* Two classes: the binary probe's model, W[0] = 0. */
    int y2[N];
    double w[D], bb;
    for (int i = 0; i < N; i++)
        y2[i] = y[i] == 1;
    ck_assert_int_ge(sq_softmax_train(X, y2, N, D, 2, NULL, NULL, W, b), 1);
    ck_assert_int_ge(sq_logreg_train(X, y2, N, D, NULL, NULL, w, &bb), 1);
    ck_assert_int_eq(memcmp(W + D, w, sizeof w), 0);
    ck_assert(b[1] == bb && b[0] == 0 && sq_norm(W, D) == 0);
    /* Bad input: a class without rows, a label out of range, fewer than two
     * classes, a non-finite feature, no penalty. */
    ck_assert_int_eq(sq_softmax_train(X, y, N, D, K + 1, NULL, NULL, W, b), -1);
    int ybad[N];
    memcpy(ybad, y, sizeof ybad);
    ybad[7] = K;
    ck_assert_int_eq(sq_softmax_train(X, ybad, N, D, K, NULL, NULL, W, b), -1);
    ybad[7] = -1;
    ck_assert_int_eq(sq_softmax_train(X, ybad, N, D, K, NULL, NULL, W, b), -1);
    ck_assert_int_eq(sq_softmax_train(X, y, N, D, 1, NULL, NULL, W, b), -1);
    sq_logreg_opts zero = {.l2 = 0, .max_iter = 50, .tol = 1e-8};
    ck_assert_int_eq(sq_softmax_train(X, y, N, D, K, NULL, &zero, W, b), -1);
    X[5 * D + 3] = NAN;
    ck_assert_int_eq(sq_softmax_train(X, y, N, D, K, NULL, NULL, W, b), -1);
    free(X);
    omp_set_num_threads(1);
}
END_TEST

/* ---- readers ---- */

static char *dir;

static void setup(void)
{
    dir = tu_mkdtemp();
}

static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

START_TEST(test_stsb_layouts)
{
    char *glue = tu_write_str(dir, "dev.tsv",
                              "index\tgenre\tsentence1\tsentence2\tscore\n"
                              "0\tx\tA man.\tA person.\t4.5\n"
                              "1\tx\tA cat.\tA dog.\t1.0\n");
    sq_stsb s;
    sq_err err = {0};
    ck_assert_int_eq(sq_stsb_read(glue, 0, &s, &err), 0);
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.s2[1], "A dog.");
    ck_assert_double_eq(s.score[0], 4.5);
    sq_stsb_free(&s);
    sq_eval_task t;
    ck_assert_int_eq(sq_eval_task_detect(glue, &t, &err), 0);
    ck_assert_int_eq(t, SQ_TASK_STSB);
    char *orig = tu_write_str(dir, "sts-test.tsv",
                              "g\tf\t2012\t0001\t2.500\tOne.\tTwo.\n"
                              "g\tf\t2012\t0002\t3.000\tThree.\tFour.\tsrc1\tsrc2\n");
    ck_assert_int_eq(sq_eval_task_detect(orig, &t, &err), 0);
    ck_assert_int_eq(t, SQ_TASK_STSB);
    ck_assert_int_eq(sq_stsb_read(orig, 1, &s, &err), 0); /* limit 1 */
    ck_assert_int_eq(s.n, 1);
    ck_assert_str_eq(s.s1[0], "One.");
    ck_assert_double_eq(s.score[0], 2.5);
    sq_stsb_free(&s);
    free(glue);
    free(orig);
}
END_TEST

START_TEST(test_stsb_hostile)
{
    sq_stsb s;
    sq_err err = {0};
    char *p = tu_write_str(dir, "test.tsv", "index\tsentence1\tsentence2\n0\ta\tb\n");
    ck_assert_int_eq(sq_stsb_read(p, 0, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "test.tsv:1: no 'score' column"));
    free(p);
    p = tu_write_str(dir, "bad.tsv", "sentence1\tsentence2\tscore\na\tb\t4\nc\td\tfour\n");
    ck_assert_int_eq(sq_stsb_read(p, 0, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.tsv:3: score 'four' is not a number"));
    free(p);
    p = tu_write_str(dir, "short.tsv", "sentence1\tsentence2\tscore\na\tb\n");
    ck_assert_int_eq(sq_stsb_read(p, 0, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "short.tsv:2:"));
    free(p);
    static const char nul[] = "sentence1\tsentence2\tscore\na\0\tb\t1\n";
    p = tu_write(dir, "nul.tsv", nul, sizeof nul - 1);
    ck_assert_int_eq(sq_stsb_read(p, 0, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "nul.tsv:2: NUL byte"));
    free(p);
}
END_TEST

START_TEST(test_sst2)
{
    sq_sst2 s;
    sq_err err = {0};
    char *p = tu_write_str(dir, "dev.tsv", "sentence\tlabel\ngood . \t1\r\nbad .\t0\n\n");
    sq_eval_task t;
    ck_assert_int_eq(sq_eval_task_detect(p, &t, &err), 0);
    ck_assert_int_eq(t, SQ_TASK_SST2);
    ck_assert_int_eq(sq_sst2_read(p, 0, &s, &err), 0);
    ck_assert_int_eq(s.n, 2);
    ck_assert_int_eq(s.label[0], 1);
    ck_assert_int_eq(s.label[1], 0);
    sq_sst2_free(&s);
    free(p);
    p = tu_write_str(dir, "bad.tsv", "sentence\tlabel\nok\t1\nmeh\t2\n");
    ck_assert_int_eq(sq_sst2_read(p, 0, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.tsv:3: label '2' is not 0 or 1"));
    free(p);
    p = tu_write_str(dir, "junk.tsv", "sentence\tlabel\nok\t1\nmeh\t1 junk\n");
    ck_assert_int_eq(sq_sst2_read(p, 0, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "junk.tsv:3: label '1 junk' is not 0 or 1"));
    free(p);
}
END_TEST

START_TEST(test_labelled)
{
    sq_labelled s;
    sq_err err = {0};
    /* TSV, named columns, integer labels in numeric order (10 after 9). */
    char *p = tu_write_str(dir, "t.tsv", "id\tlabel\ttext\n1\t10\tten\r\n2\t9\tnine\n\n3\t-1\tminus\n");
    ck_assert_int_eq(sq_labelled_read(p, "text", NULL, &s, &err), 0);
    ck_assert_int_eq(s.n, 3);
    ck_assert_int_eq(s.n_classes, 3);
    ck_assert_str_eq(s.class_name[0], "-1");
    ck_assert_str_eq(s.class_name[1], "9");
    ck_assert_str_eq(s.class_name[2], "10");
    ck_assert_int_eq(s.label[0], 2);
    ck_assert_int_eq(s.label[2], 0);
    ck_assert_str_eq(s.text[1], "nine");
    ck_assert_int_eq(s.line[2], 5);
    sq_labelled_free(&s);
    free(p);
    /* JSONL, string and integer labels mixed: byte order ("01" is no integer). */
    p = tu_write_str(dir, "t.jsonl", "{\"text\": \"a\", \"y\": {\"l\": \"pos\"}}\n\n"
                                     "{\"text\": \"b\", \"y\": {\"l\": 2}}\n"
                                     "{\"text\": \"c\", \"y\": {\"l\": \"01\"}}\n"
                                     "{\"text\": \"d\", \"y\": {\"l\": \"pos\"}}\n");
    ck_assert_int_eq(sq_labelled_read(p, NULL, "y.l", &s, &err), 0);
    ck_assert_int_eq(s.n, 4);
    ck_assert_int_eq(s.n_classes, 3);
    ck_assert_str_eq(s.class_name[0], "01");
    ck_assert_str_eq(s.class_name[1], "2");
    ck_assert_str_eq(s.class_name[2], "pos");
    ck_assert_int_eq(s.label[0], 2);
    ck_assert_int_eq(s.label[3], 2);
    sq_labelled_free(&s);
    free(p);
    /* Hostile: each names file:line. */
    struct { const char *name, *body, *msg; } bad[] = {
        {"h1.tsv", "sentence\tlabel\nok\t1\nno label here\n", "h1.tsv:3: expected at least 2"},
        {"h2.tsv", "sentence\tlabel\nok\t\n", "h2.tsv:2: empty label"},
        {"h3.tsv", "text\tlabel\nok\t1\n", "h3.tsv:1: the header row has no 'sentence' column"},
        {"h4.jsonl", "{\"text\": \"a\", \"label\": true}\n", "h4.jsonl:1: field \"label\""},
        {"h5.jsonl", "[1, 2]\n", "h5.jsonl:1: not a JSON object"},
        {"h6.jsonl", "{\"label\": \"x\"}\n", "h6.jsonl:1: field \"text\""},
        {"h7.tsv", "sentence\tlabel\n\xc3\x28\t1\n", "h7.tsv:2: the text is not valid UTF-8"},
        {"h8.tsv", "sentence\tlabel\n", "h8.tsv: no labelled texts"},
        {"h9.txt", "a\n", "h9.txt: unknown training file layout"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = tu_write_str(dir, bad[i].name, bad[i].body);
        ck_assert_int_eq(sq_labelled_read(p, NULL, NULL, &s, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[i].msg), "%s: %s", bad[i].name, err.msg);
        ck_assert_int_eq(s.n, 0);
        free(p);
    }
}
END_TEST

START_TEST(test_beir)
{
    free(tu_write_str(dir, "corpus.jsonl",
                      "{\"_id\": \"d1\", \"title\": \"T1\", \"text\": \"one\"}\n"
                      "{\"_id\": \"d2\", \"title\": \"\", \"text\": \"two\"}\n"
                      "{\"_id\": \"d3\", \"title\": \"T3\", \"text\": \"three\"}\n"
                      "{\"_id\": \"d4\", \"title\": \"T4\", \"text\": \"four\"}\n"));
    free(tu_write_str(dir, "queries.jsonl",
                      "{\"_id\": \"q1\", \"text\": \"first\"}\n"
                      "{\"_id\": \"q2\", \"text\": \"unjudged\"}\n"
                      "{\"_id\": \"q3\", \"text\": \"third\"}\n"));
    char *qrels_dir = malloc(strlen(dir) + 8);
    sprintf(qrels_dir, "%s/qrels", dir);
    ck_assert_int_eq(mkdir(qrels_dir, 0755), 0);
    free(tu_write_str(qrels_dir, "test.tsv", "query-id\tcorpus-id\tscore\nq3\td4\t1\nq1\td3\t2\n"));
    sq_eval_task t;
    sq_err err = {0};
    ck_assert_int_eq(sq_eval_task_detect(dir, &t, &err), 0);
    ck_assert_int_eq(t, SQ_TASK_SCIFACT);
    sq_beir b;
    ck_assert_int_eq(sq_beir_read(dir, "test", 0, &b, &err), 0);
    ck_assert_int_eq(b.n_docs, 4);
    ck_assert_int_eq(b.n_queries, 2);
    ck_assert_str_eq(b.doc_text[0], "T1 one");
    ck_assert_str_eq(b.doc_text[1], "two"); /* empty title: trimmed */
    ck_assert_str_eq(b.query_text[1], "third");
    ck_assert_int_eq(b.qrel_off[1], 1);
    ck_assert_int_eq(b.qrel_doc[0], 2);
    ck_assert_double_eq(b.qrel_grade[0], 2);
    ck_assert_int_eq(b.qrel_doc[1], 3);
    sq_beir_free(&b);
    /* cap 2: q1 (1 relevant doc <= 2/2) kept, q3 would pass half the cap */
    ck_assert_int_eq(sq_beir_read(dir, "test", 2, &b, &err), 0);
    ck_assert_int_eq(b.n_queries, 1);
    ck_assert_int_eq(b.n_docs, 2);
    ck_assert_str_eq(b.doc_id[0], "d1");
    ck_assert_str_eq(b.doc_id[1], "d3");
    ck_assert_int_eq(b.qrel_doc[0], 1);
    sq_beir_free(&b);
    /* a judgement naming an unknown document */
    free(tu_write_str(qrels_dir, "test.tsv", "query-id\tcorpus-id\tscore\nq1\td9\t1\n"));
    ck_assert_int_eq(sq_beir_read(dir, "test", 0, &b, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "test.tsv:2: corpus id 'd9' is not in corpus.jsonl"));
    /* a broken corpus line */
    free(tu_write_str(dir, "corpus.jsonl", "{\"_id\": \"d1\", \"text\": \"one\"}\n{\"_id\": 1.5}\n"));
    ck_assert_int_eq(sq_beir_read(dir, "test", 0, &b, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "corpus.jsonl:2: no \"_id\" string"));
    free(qrels_dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eval_metrics");
    TCase *m = tcase_create("metrics");
    tcase_add_test(m, test_cosine_stats);
    tcase_add_test(m, test_cosine_stats_centred_and_worst);
    tcase_add_test(m, test_percentile);
    tcase_add_test(m, test_ranks_and_spearman_ties);
    tcase_add_test(m, test_ndcg_recall);
    tcase_add_test(m, test_top_indices_ties);
    tcase_add_test(m, test_retrieval_eval);
    tcase_add_test(m, test_paired_se);
    tcase_add_test(m, test_topk_overlap);
    tcase_add_test(m, test_logreg_separable);
    tcase_add_test(m, test_softmax_train);
    suite_add_tcase(s, m);
    TCase *d = tcase_create("data");
    tcase_add_checked_fixture(d, setup, teardown);
    tcase_add_test(d, test_stsb_layouts);
    tcase_add_test(d, test_stsb_hostile);
    tcase_add_test(d, test_sst2);
    tcase_add_test(d, test_labelled);
    tcase_add_test(d, test_beir);
    suite_add_tcase(s, d);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

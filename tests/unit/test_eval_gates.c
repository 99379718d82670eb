/* The gates and the run metrics of an evaluation (eval/eval_gates.h,
 * eval/eval_run.h) on hand-made embeddings: a model equal to its reference
 * passes every gate; a deliberately bad one (one input destroyed) fails
 * cos_min while its mean still looks fine; gates the input cannot measure
 * fail with a reason; NaN never passes; max gates pass at equality. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_gates.h"
#include "test_util.h"

enum { N = 200, DIM = 16 };

/* Rows of a deterministic pseudo-random walk: different inputs clearly
 * differ (what a fixture must show before its gates mean anything). */
static float *make_rows(unsigned seed)
{
    float *x = malloc(sizeof(float) * N * DIM);
    unsigned s = seed;
    for (int i = 0; i < N * DIM; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int)(s >> 9) % 2001 - 1000) / 1000.0f;
    }
    return x;
}

static sq_eval_model model_of(float *emb)
{
    sq_eval_model m;
    memset(&m, 0, sizeof m);
    m.path = "x";
    m.res.n = N;
    m.res.dim = DIM;
    m.res.emb = emb;
    return m;
}

static sq_eval_input plain_input(void)
{
    sq_eval_input in;
    memset(&in, 0, sizeof in);
    in.task = SQ_TASK_PLAIN;
    in.n = N;
    return in;
}

static void set_gate(sq_recipe_gates *g, sq_gate_id id, double t)
{
    g->set[id] = true;
    g->threshold[id] = t;
}

START_TEST(test_identical_passes_everything_measurable)
{
    float *ref = make_rows(1), *same = malloc(sizeof(float) * N * DIM);
    memcpy(same, ref, sizeof(float) * N * DIM);
    sq_eval_model m = model_of(same), r = model_of(ref);
    sq_eval_input in = plain_input();
    sq_eval_metrics mt;
    sq_eval_measure(&in, &m, &r, 10, &mt);
    ck_assert_double_eq_tol(mt.cos.mean, 1.0, 1e-12);
    ck_assert_double_eq_tol(mt.topk, 1.0, 1e-12);
    ck_assert_int_eq(mt.n_task, 0);
    sq_recipe_gates g = {.topk_k = 10};
    set_gate(&g, SQ_GATE_COS_MEAN, 0.999);
    set_gate(&g, SQ_GATE_COS_MIN, 0.98);
    set_gate(&g, SQ_GATE_CENTRED_COS_MEAN, 0.97);
    set_gate(&g, SQ_GATE_TOPK_OVERLAP, 0.9);
    sq_eval_gate gr[SQ_GATE_COUNT];
    int n = sq_eval_gates(&g, &in, &mt, gr);
    ck_assert_int_eq(n, 4);
    /* table order, not the order set */
    ck_assert_int_eq(gr[0].id, SQ_GATE_COS_MEAN);
    ck_assert_int_eq(gr[1].id, SQ_GATE_COS_MIN);
    ck_assert(sq_eval_gates_pass(gr, n));
    free(same);
    free(ref);
}
END_TEST

START_TEST(test_one_destroyed_input_fails_cos_min_only)
{
    float *ref = make_rows(2), *bad = malloc(sizeof(float) * N * DIM);
    memcpy(bad, ref, sizeof(float) * N * DIM);
    /* A bad quantizer: input 37 comes out as another input's embedding. */
    memcpy(bad + 37 * DIM, ref + 90 * DIM, sizeof(float) * DIM);
    sq_eval_model m = model_of(bad), r = model_of(ref);
    sq_eval_input in = plain_input();
    sq_eval_metrics mt;
    sq_eval_measure(&in, &m, &r, 10, &mt);
    ck_assert_int_eq(mt.cos.argmin, 37);
    ck_assert_int_eq(mt.cos.worst[0], 37);
    ck_assert(mt.cos.mean > 0.99); /* the mean hides it */
    sq_recipe_gates g = {.topk_k = 10};
    set_gate(&g, SQ_GATE_COS_MEAN, 0.99);
    set_gate(&g, SQ_GATE_COS_MIN, 0.98);
    sq_eval_gate gr[SQ_GATE_COUNT];
    int n = sq_eval_gates(&g, &in, &mt, gr);
    ck_assert_int_eq(n, 2);
    ck_assert(gr[0].pass);
    ck_assert(!gr[1].pass && gr[1].measurable);
    ck_assert(gr[1].measured == mt.cos.min);
    ck_assert(!sq_eval_gates_pass(gr, n));
    free(bad);
    free(ref);
}
END_TEST

START_TEST(test_unmeasurable_gates_fail_with_reason)
{
    sq_eval_input in = plain_input();
    sq_eval_metrics mt;
    memset(&mt, 0, sizeof mt);
    mt.cos.mean = mt.cos.min = 1;
    mt.cos.centred_mean = NAN; /* fewer than 2 texts */
    mt.topk = NAN;
    sq_recipe_gates g = {.topk_k = 10};
    set_gate(&g, SQ_GATE_STSB_SPEARMAN_DROP, 0.003);
    set_gate(&g, SQ_GATE_NDCG10_DROP, 0.01);
    set_gate(&g, SQ_GATE_CENTRED_COS_MEAN, 0.97);
    set_gate(&g, SQ_GATE_TOPK_OVERLAP, 0.5);
    sq_eval_gate gr[SQ_GATE_COUNT];
    int n = sq_eval_gates(&g, &in, &mt, gr);
    ck_assert_int_eq(n, 4);
    for (int i = 0; i < n; i++) {
        ck_assert(!gr[i].measurable && !gr[i].pass);
        ck_assert_ptr_nonnull(gr[i].why);
    }
    ck_assert_ptr_nonnull(strstr(gr[0].why, "--task stsb") ? gr[0].why : gr[1].why);
    ck_assert(!sq_eval_gates_pass(gr, n));
    ck_assert(sq_eval_gates_pass(gr, 0));
}
END_TEST

START_TEST(test_drop_gates_and_nan)
{
    sq_eval_input in = plain_input();
    in.task = SQ_TASK_STSB;
    sq_eval_metrics mt;
    memset(&mt, 0, sizeof mt);
    mt.n_task = 1;
    mt.task[0] = (sq_eval_task_metric){.name = "spearman", .model = 0.80, .reference = 0.803}; /* drop 0.003 */
    sq_recipe_gates g = {.topk_k = 10};
    set_gate(&g, SQ_GATE_STSB_SPEARMAN_DROP, 0.0030000001);
    sq_eval_gate gr[SQ_GATE_COUNT];
    ck_assert_int_eq(sq_eval_gates(&g, &in, &mt, gr), 1);
    ck_assert(gr[0].measurable && gr[0].pass); /* max gate: <= passes */
    mt.task[0].model = 0.79;
    sq_eval_gates(&g, &in, &mt, gr);
    ck_assert(!gr[0].pass);
    mt.task[0].model = NAN; /* constant similarities */
    sq_eval_gates(&g, &in, &mt, gr);
    ck_assert(!gr[0].measurable && !gr[0].pass);
    /* a NaN cosine mean never passes a min gate */
    sq_recipe_gates g2 = {.topk_k = 10};
    set_gate(&g2, SQ_GATE_COS_MEAN, 0.5);
    mt.cos.mean = NAN;
    sq_eval_gates(&g2, &in, &mt, gr);
    ck_assert(!gr[0].pass);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("eval_gates");
    TCase *t = tcase_create("gates");
    tcase_add_test(t, test_identical_passes_everything_measurable);
    tcase_add_test(t, test_one_destroyed_input_fails_cos_min_only);
    tcase_add_test(t, test_unmeasurable_gates_fail_with_reason);
    tcase_add_test(t, test_drop_gates_and_nan);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

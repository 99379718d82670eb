/* Outlier channels (recipe `outliers`, SQM.md 6.4 steps 1 and 6):
 *   - sq_select_outliers picks channels by their activation or weight-column
 *     maximum against the median, the largest first, ascending indices, and
 *     ignores non-finite channels and a criterion whose median is 0;
 *   - the runtime linear with outlier channels equals, bit for bit, the same
 *     linear on the input with those channels zeroed plus the fp32 side sum
 *     in the order SQM.md gives, for int8 (with and without a zero point and
 *     the guard) and int4, at 1 and 2 threads; the outlier values never
 *     trigger the guard;
 *   - what it is for: one channel 60x the others costs a static int8 linear
 *     most of its precision, and almost nothing with the channel in fp32. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "ops.h"
#include "outlier_select.h"
#include "quant_weights.h"

static uint32_t rng_state = 777u;
static float gauss(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    float u = ((float)(rng_state >> 8) + 1.0f) / 16777217.0f;
    rng_state = rng_state * 1664525u + 1013904223u;
    float v = (float)(rng_state >> 8) / 16777216.0f;
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

START_TEST(select_by_activation_and_weight)
{
    enum { N = 16, K = 64 };
    float xmax[K], w[N * K];
    int32_t idx[K];
    for (int j = 0; j < K; j++)
        xmax[j] = 1.0f + 0.01f * (float)j;
    for (int i = 0; i < N * K; i++)
        w[i] = 0.05f * gauss();
    xmax[40] = 30.0f;                        /* activation outlier, score ~ 26 */
    xmax[5] = 6.0f;                          /* ~4.6x: below a ratio of 8, above 4 */
    for (int n = 0; n < N; n++)
        w[(size_t)n * K + 9] = 0.05f * gauss(); /* keep the column ordinary ... */
    w[3 * K + 9] = 3.0f;                     /* ... but one huge weight: score ~ 30+ */
    int m = sq_select_outliers(xmax, w, N, K, 8.0, 16, idx);
    ck_assert_int_eq(m, 2);
    ck_assert_int_eq(idx[0], 9); /* ascending */
    ck_assert_int_eq(idx[1], 40);
    /* The cap keeps the largest score. */
    m = sq_select_outliers(xmax, w, N, K, 8.0, 1, idx);
    ck_assert_int_eq(m, 1);
    ck_assert_int_eq(idx[0], 9); /* 3.0 against column maxima ~0.09 beats 30 against ~1.3 */
    /* A lower ratio also takes channel 5. */
    m = sq_select_outliers(xmax, w, N, K, 4.0, 16, idx);
    ck_assert_int_eq(m, 3);
    ck_assert_int_eq(idx[0], 5);
    /* A non-finite channel is never picked. */
    xmax[40] = NAN;
    m = sq_select_outliers(xmax, w, N, K, 8.0, 16, idx);
    ck_assert_int_eq(m, 1);
    ck_assert_int_eq(idx[0], 9);
    /* Mostly-zero maxima (a median of 0): that criterion is off. */
    for (int j = 0; j < K; j++)
        xmax[j] = j < 3 ? 5.0f : 0.0f;
    m = sq_select_outliers(xmax, w, N, K, 8.0, 16, idx);
    ck_assert_int_eq(m, 1);
    ck_assert_int_eq(idx[0], 9);
    /* Nothing stands out: none. */
    for (int j = 0; j < K; j++)
        xmax[j] = 1.0f;
    w[3 * K + 9] = 0.05f;
    ck_assert_int_eq(sq_select_outliers(xmax, w, N, K, 8.0, 16, idx), 0);
}
END_TEST

enum { R = 70, K = 256, N = 37, NO = 3 };
static const int32_t out_idx[NO] = {3, 130, 200};

typedef struct setup {
    float x[R * K], xz[R * K], w[N * K], wz[N * K], b[N], ow[NO * N];
} setup;

static void make(setup *s)
{
    for (int i = 0; i < R * K; i++)
        s->x[i] = gauss();
    for (int i = 0; i < N * K; i++)
        s->w[i] = 0.05f * gauss();
    for (int n = 0; n < N; n++)
        s->b[n] = 0.1f * gauss();
    for (int r = 0; r < R; r++) /* the outlier channels: 60x, both signs */
        for (int o = 0; o < NO; o++)
            s->x[(size_t)r * K + out_idx[o]] = 60.0f * gauss();
    memcpy(s->xz, s->x, sizeof s->x);
    memcpy(s->wz, s->w, sizeof s->w);
    for (int o = 0; o < NO; o++) {
        const int j = out_idx[o];
        for (int r = 0; r < R; r++)
            s->xz[(size_t)r * K + j] = 0.0f;
        for (int n = 0; n < N; n++) {
            s->ow[(size_t)o * N + n] = s->w[(size_t)n * K + j];
            s->wz[(size_t)n * K + j] = 0.0f;
        }
    }
}

/* The runtime linear on weights wz, with or without the outlier side path. */
static void run(const setup *s, sq_qtype qt, int z, bool guard, bool outliers, const float *x,
                float *y)
{
    sq_err err = {0};
    sq_linear l = {.in = K, .out = N, .qtype = qt, .b = (float *)s->b, .borrowed = true,
                   .guard = guard};
    if (outliers)
        l.n_outliers = NO, l.outlier_idx = out_idx, l.outlier_w = s->ow;
    ck_assert_msg(sq_quantize_weights(s->wz, N, K, qt, NULL, &l.qw, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(sq_linear_prepare_quant(&l, NULL, 3.0f / 127.0f, z), 0);
    for (int o = 0; outliers && o < NO; o++)
        ck_assert(l.act_mult[out_idx[o]] == 0.0f);
    int8_t *qa = malloc((size_t)R * l.qw.k_pad);
    int32_t *acc = malloc(sizeof(int32_t) * R * N);
    float *rs = malloc(sizeof(float) * R);
    sq_linear_scratch sc = {.qa = qa, .acc = acc, .row_scale = rs};
    sq_linear_forward(&l, x, R, y, &sc);
    if (outliers) /* the outlier values are not beyond the range: never clipped */
        ck_assert_int_eq(sq_linear_count_clipped(&l, x, R, NULL),
                         sq_linear_count_clipped(&l, s->xz, R, NULL));
    free(qa), free(acc), free(rs);
    l.b = NULL;
    sq_linear_free(&l);
}

START_TEST(side_path_bits)
{
    static setup s;
    make(&s);
    static const struct {
        sq_qtype qt;
        int z;
        bool guard;
    } cases[] = {{SQ_QT_S8, 0, false}, {SQ_QT_S8, 40, false}, {SQ_QT_S8, 0, true},
                 {SQ_QT_S8, -20, true}, {SQ_QT_S4G128, 0, false}, {SQ_QT_S4G128, 0, true}};
    static float y[R * N], y2[R * N], want[R * N];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        /* Expected: the linear on the zeroed input, then the side sum. */
        run(&s, cases[c].qt, cases[c].z, cases[c].guard, false, s.xz, want);
        for (int r = 0; r < R; r++)
            for (int n = 0; n < N; n++) {
                float t = 0;
                for (int o = 0; o < NO; o++) {
                    float p = s.x[(size_t)r * K + out_idx[o]] * s.ow[(size_t)o * N + n];
                    __asm__("" : "+x"(p)); /* product rounded, then the add */
                    t = o ? t + p : p;
                }
                want[(size_t)r * N + n] += t;
            }
        /* every vector level of the side path the CPU has (ops.h) */
        const sq_ops_level saved = sq_ops_get_level();
        for (sq_ops_level lv = SQ_OPS_SCALAR; lv <= SQ_OPS_AVX512; lv++) {
            if (!sq_ops_set_level(lv)) {
                if (c == 0)
                    printf("SKIPPED: side path at ops level %d (this CPU lacks it)\n", (int)lv);
                continue;
            }
            omp_set_num_threads(1);
            run(&s, cases[c].qt, cases[c].z, cases[c].guard, true, s.x, y);
            omp_set_num_threads(2);
            run(&s, cases[c].qt, cases[c].z, cases[c].guard, true, s.x, y2);
            ck_assert_msg(memcmp(y, want, sizeof y) == 0, "case %zu level %d: not the defined bits",
                          c, (int)lv);
            ck_assert_msg(memcmp(y, y2, sizeof y) == 0, "case %zu: thread count changes bits", c);
        }
        ck_assert(sq_ops_set_level(saved));
    }
}
END_TEST

/* Relative error against fp32 of the int8 linear whose static step covers
 * the outliers (no decomposition) vs with the outlier channels in fp32. */
START_TEST(decomposition_keeps_precision)
{
    static setup s;
    make(&s);
    double ref[R * N];
    for (int r = 0; r < R; r++)
        for (int n = 0; n < N; n++) {
            double a = s.b[n];
            for (int k = 0; k < K; k++)
                a += (double)s.x[(size_t)r * K + k] * s.w[(size_t)n * K + k];
            ref[(size_t)r * N + n] = a;
        }
    float amax_all = 0, amax_rest = 0;
    for (int i = 0; i < R * K; i++) {
        amax_all = fmaxf(amax_all, fabsf(s.x[i]));
        amax_rest = fmaxf(amax_rest, fabsf(s.xz[i]));
    }
    static float y[R * N];
    double e[2];
    for (int v = 0; v < 2; v++) {
        sq_err err = {0};
        sq_linear l = {.in = K, .out = N, .qtype = SQ_QT_S8, .b = s.b, .borrowed = true};
        if (v)
            l.n_outliers = NO, l.outlier_idx = out_idx, l.outlier_w = s.ow;
        ck_assert(sq_quantize_weights(v ? s.wz : s.w, N, K, SQ_QT_S8, NULL, &l.qw, &err) == 0);
        ck_assert_int_eq(sq_linear_prepare_quant(&l, NULL, (v ? amax_rest : amax_all) / 127.0f, 0),
                         0);
        int8_t *qa = malloc((size_t)R * l.qw.k_pad);
        int32_t *acc = malloc(sizeof(int32_t) * R * N);
        sq_linear_scratch sc = {.qa = qa, .acc = acc};
        sq_linear_forward(&l, s.x, R, y, &sc);
        free(qa), free(acc);
        l.b = NULL;
        sq_linear_free(&l);
        double num = 0, den = 0;
        for (int i = 0; i < R * N; i++)
            num += (y[i] - ref[i]) * (y[i] - ref[i]), den += ref[i] * ref[i];
        e[v] = sqrt(num / den);
    }
    printf("60x outlier channels: int8 static error %.4f, with them in fp32 %.4f\n", e[0], e[1]);
    ck_assert_msg(e[1] < 0.01 && e[0] > 5 * e[1], "errors %g vs %g", e[0], e[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("outliers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, select_by_activation_and_weight);
    tcase_add_test(tc, side_path_bits);
    tcase_add_test(tc, decomposition_keeps_precision);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

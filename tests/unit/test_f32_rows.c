/* The few-rows f32 linear (libquant/kernels/f32_rows.h): close to an f64 product,
 * each row's bits independent of the other rows and of the row count (what
 * a decoder's verify pass relies on), every ops level the CPU has giving
 * the scalar definition's bits (levels it lacks: SKIPPED, said so), the
 * same bits at 1 and 2 threads, and sq_linear_forward taking this path for
 * up to 16 rows. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_rows.h"
#include "linear.h"
#include "ops.h"
#include "test_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float *randv(size_t n)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = tu_frand(&rng);
    return v;
}

static const int Ks[] = {1, 7, 15, 16, 17, 31, 32, 33, 48, 64, 100, 172, 384};
static const int Ns[] = {1, 3, 4, 5, 16, 17, 37};

START_TEST(close_to_f64)
{
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++) {
            const int K = Ks[ki], N = Ns[ni], R = 5;
            float *x = randv((size_t)R * K), *W = randv((size_t)N * K), *b = randv((size_t)N);
            float *y = malloc((size_t)R * N * sizeof *y);
            sq_f32_rows(x, R, K, W, b, N, y);
            for (int r = 0; r < R; r++)
                for (int n = 0; n < N; n++) {
                    double ref = b[n], mag = fabs(b[n]);
                    for (int k = 0; k < K; k++) {
                        ref += (double)x[r * K + k] * W[n * K + k];
                        mag += fabs((double)x[r * K + k] * W[n * K + k]);
                    }
                    ck_assert_msg(fabs(y[r * N + n] - ref) <= 1e-6 * mag + 1e-30,
                                  "K %d N %d r %d n %d: %g vs %g", K, N, r, n, y[r * N + n], ref);
                }
            free(x), free(W), free(b), free(y);
        }
}
END_TEST

/* Row r of a call with R rows == the same row alone, for every R <= 16 and
 * every offset, at every level the CPU has; and every level == scalar. */
START_TEST(rows_independent_and_levels_agree)
{
    const sq_ops_level levels[] = {SQ_OPS_SCALAR, SQ_OPS_AVX2, SQ_OPS_AVX512};
    const char *names[] = {"scalar", "avx2", "avx512"};
    const sq_ops_level saved = sq_ops_get_level();
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
        const int K = Ks[ki], N = 21, R = SQ_F32_ROWS_MAX;
        float *x = randv((size_t)R * K), *W = randv((size_t)N * K), *b = randv((size_t)N);
        x[3] = NAN; /* propagates the same way everywhere */
        float *ref = malloc((size_t)R * N * sizeof *ref), *y = malloc((size_t)R * N * sizeof *y);
        for (int r = 0; r < R; r++) /* the definition: one row at a time, scalar */
            sq_f32_rows_at(SQ_OPS_SCALAR, x + (size_t)r * K, 1, K, W, b, N, ref + (size_t)r * N);
        for (int li = 0; li < 3; li++) {
            if (!sq_ops_set_level(levels[li])) {
                if (ki == 0)
                    printf("SKIPPED: f32 rows at level %s (this CPU lacks it)\n", names[li]);
                continue;
            }
            for (int rows = 1; rows <= R; rows++)
                for (int r0 = 0; r0 + rows <= R; r0 += rows) {
                    sq_f32_rows(x + (size_t)r0 * K, rows, K, W, b, N, y);
                    ck_assert_msg(!memcmp(y, ref + (size_t)r0 * N, (size_t)rows * N * sizeof *y),
                                  "level %s K %d: rows %d..%d differ from one row at a time",
                                  names[li], K, r0, r0 + rows - 1);
                }
        }
        sq_ops_set_level(saved);
        free(x), free(W), free(b), free(ref), free(y);
    }
}
END_TEST

START_TEST(threads_same_bits)
{
    const int K = 512, N = 1024, R = 7; /* enough work for a team */
    float *x = randv((size_t)R * K), *W = randv((size_t)N * K);
    float *y1 = malloc((size_t)R * N * sizeof *y1), *y2 = malloc((size_t)R * N * sizeof *y2);
    omp_set_num_threads(1);
    sq_f32_rows(x, R, K, W, NULL, N, y1);
    omp_set_num_threads(2);
    sq_f32_rows(x, R, K, W, NULL, N, y2);
    ck_assert(!memcmp(y1, y2, (size_t)R * N * sizeof *y1));
    free(x), free(W), free(y1), free(y2);
}
END_TEST

/* sq_linear_forward: up to 16 rows through this kernel (row-independent),
 * more through sgemm (close). */
START_TEST(linear_forward_uses_it)
{
    const int K = 96, N = 40, R = 24;
    sq_linear l = {.in = K, .out = N, .qtype = SQ_QT_F32};
    l.w = randv((size_t)N * K);
    l.b = randv((size_t)N);
    float *x = randv((size_t)R * K);
    float *big = malloc((size_t)R * N * sizeof *big), *one = malloc((size_t)N * sizeof *one);
    float *few = malloc((size_t)16 * N * sizeof *few);
    sq_linear_forward(&l, x, R, big, NULL);
    sq_linear_forward(&l, x, 16, few, NULL);
    for (int r = 0; r < 16; r++) {
        sq_linear_forward(&l, x + (size_t)r * K, 1, one, NULL);
        ck_assert(!memcmp(one, few + (size_t)r * N, (size_t)N * sizeof *one));
        for (int n = 0; n < N; n++)
            ck_assert(fabsf(one[n] - big[r * N + n]) <= 1e-5f * (1 + fabsf(one[n])));
    }
    free(x), free(big), free(one), free(few);
    sq_linear_free(&l);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("f32_rows");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, close_to_f64);
    tcase_add_test(tc, rows_independent_and_levels_agree);
    tcase_add_test(tc, threads_same_bits);
    tcase_add_test(tc, linear_forward_uses_it);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

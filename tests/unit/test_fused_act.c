/* The activation fused into the next linear's quantize step
 * (sq_gemm_quantize_acts_mapped, gemm_s8.h; sq_linear_forward_mapped,
 * linear.h):
 *   - the codes, row scales and kept outlier channels equal, byte for byte,
 *     mapping every row first and then running the quantize step of the
 *     mode (static with and without a zero point, the guard, per-row), for
 *     GELU (a row in place) and SwiGLU (a row of 2k read, k written), at
 *     1, 150 and 1000 rows (the last over the parallel threshold), at 1 and
 *     2 threads and every ops level the CPU has;
 *   - the linear through the fused path gives the bits of the op as its own
 *     pass followed by sq_linear_forward, for int8 (static, zero point,
 *     guard, dynamic, outlier channels) and int4, and f32 (never fused);
 *   - what it is for: the mapped rows never reach memory, and nothing
 *     downstream can tell. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_s8.h"
#include "linear.h"
#include "ops.h"
#include "quant_weights.h"
#include "test_util.h"

static uint64_t rng_state = 4242u;
static float urand(void) /* uniform in [-1, 1) */
{
    return tu_frand(&rng_state);
}

enum { K = 77, KP = 80, RMAX = 1000 };

typedef struct op {
    const char *name;
    sq_row_map map;
    int width; /* floats of x per row, in units of K */
} op;
static const op ops_[] = {{"gelu", sq_gelu_row, 1}, {"swiglu", sq_swiglu_row, 2}};

START_TEST(codes_match_map_then_quantize)
{
    static float x[RMAX * 2 * K], mapped[RMAX * K], m[K], rs[RMAX], rs_want[RMAX];
    static float keep[RMAX * 3];
    static int8_t qa[RMAX * KP], want[RMAX * KP];
    static const int32_t kidx[3] = {0, 40, 76};
    for (int j = 0; j < K; j++)
        m[j] = 30.0f + 10.0f * urand();
    for (int i = 0; i < RMAX * 2 * K; i++)
        x[i] = 2.0f * urand();
    for (int r = 0; r < RMAX; r += 7) /* rows beyond the static range: the guard fires */
        x[(size_t)r * 2 * K + 5] = 40.0f;
    static const int row_counts[] = {1, 150, RMAX};
    const sq_ops_level saved = sq_ops_get_level();
    int checked = 0;
    for (sq_ops_level lv = SQ_OPS_SCALAR; lv <= SQ_OPS_AVX512; lv++) {
        if (!sq_ops_set_level(lv)) {
            printf("SKIPPED: fused quantize at ops level %d (this CPU lacks it)\n", (int)lv);
            continue;
        }
        for (size_t o = 0; o < sizeof ops_ / sizeof *ops_; o++)
            for (size_t rc = 0; rc < 3; rc++)
                for (int mode = SQ_QA_STATIC; mode <= SQ_QA_ROWS; mode++)
                    for (int z = 0; z <= 60; z += 60)
                        for (int th = 1; th <= 2; th++) {
                            const int R = row_counts[rc], ldx = ops_[o].width * K;
                            omp_set_num_threads(th);
                            for (int r = 0; r < R; r++)
                                ops_[o].map(x + (size_t)r * ldx, mapped + (size_t)r * K, K);
                            int g_want = 0;
                            memset(rs_want, 0, sizeof rs_want);
                            if (mode == SQ_QA_STATIC)
                                sq_gemm_quantize_acts_zp(mapped, R, K, K, m, z, want, KP, KP);
                            else if (mode == SQ_QA_GUARD)
                                g_want = sq_gemm_quantize_acts_guard(mapped, R, K, K, m, z, want,
                                                                     KP, KP, rs_want);
                            else
                                g_want = sq_gemm_quantize_acts_rows(mapped, R, K, K, m, want, KP,
                                                                    KP, rs_want);
                            memset(qa, 0x55, sizeof qa);
                            memset(rs, 0, sizeof rs);
                            const int g = sq_gemm_quantize_acts_mapped(
                                x, R, K, (size_t)ldx, ops_[o].map, m, z, (sq_qa_mode)mode, qa, KP,
                                KP, rs, kidx, 3, keep);
                            ck_assert_int_eq(g, g_want);
                            ck_assert_msg(memcmp(qa, want, (size_t)R * KP) == 0,
                                          "%s, %d rows, mode %d, z %d, level %d: codes differ",
                                          ops_[o].name, R, mode, z, (int)lv);
                            if (mode != SQ_QA_STATIC)
                                ck_assert(memcmp(rs, rs_want, (size_t)R * sizeof *rs) == 0);
                            for (int r = 0; r < R; r++)
                                for (int k = 0; k < 3; k++)
                                    ck_assert(keep[r * 3 + k] == mapped[(size_t)r * K + kidx[k]]);
                            if (mode == SQ_QA_GUARD && z == 0 && R == RMAX)
                                ck_assert_int_gt(g, 0); /* the spiked rows were guarded */
                            checked++;
                        }
    }
    sq_ops_set_level(saved);
    omp_set_num_threads(2);
    printf("%d fused quantize configurations byte-identical to map, then quantize\n", checked);
}
END_TEST

enum { LR = 300, LK = 256, LN = 40, NO = 2 };
static const int32_t out_idx[NO] = {7, 190};

typedef struct lcase {
    const char *name;
    sq_qtype qt;
    int z;
    bool guard, dynamic, outliers;
} lcase;

/* y of the linear of case c on map(x): fused (sq_linear_forward_mapped) or
 * the op as its own pass, then sq_linear_forward. */
static void run_linear(const lcase *c, const op *o, const float *x, const float *w,
                       const float *b, const float *ow, bool fused, float *y)
{
    sq_err err = {0};
    sq_linear l = {.in = LK, .out = LN, .qtype = c->qt, .b = (float *)b, .borrowed = true,
                   .guard = c->guard, .dynamic = c->dynamic};
    if (c->outliers)
        l.n_outliers = NO, l.outlier_idx = out_idx, l.outlier_w = ow;
    if (c->qt == SQ_QT_F32)
        l.w = (float *)w;
    else {
        ck_assert_msg(sq_quantize_weights(w, LN, LK, c->qt, NULL, &l.qw, &err) == 0, "%s",
                      err.msg);
        ck_assert_int_eq(sq_linear_prepare_quant(&l, NULL, c->dynamic ? 1.0f : 0.5f / 127.0f,
                                                 c->z), 0);
    }
    const int kp = c->qt == SQ_QT_F32 ? LK : l.qw.k_pad;
    int8_t *qa = malloc((size_t)LR * kp);
    int32_t *acc = malloc(sizeof(int32_t) * LR * LN);
    float *rs = malloc(sizeof(float) * LR), *mapped = malloc(sizeof(float) * LR * LK);
    ck_assert(qa && acc && rs && mapped);
    sq_linear_scratch sc = {.qa = qa, .acc = acc, .row_scale = rs};
    const size_t ldx = (size_t)o->width * LK;
    if (fused)
        sq_linear_forward_mapped(&l, x, ldx, LR, o->map, mapped, y, &sc);
    else {
        for (int r = 0; r < LR; r++)
            o->map(x + (size_t)r * ldx, mapped + (size_t)r * LK, LK);
        sq_linear_forward(&l, mapped, LR, y, &sc);
    }
    free(qa), free(acc), free(rs), free(mapped);
    l.b = NULL;
    l.w = NULL;
    sq_linear_free(&l);
}

START_TEST(linear_bits)
{
    static float x[LR * 2 * LK], w[LN * LK], b[LN], ow[NO * LN], y[LR * LN], want[LR * LN];
    for (int i = 0; i < LR * 2 * LK; i++)
        x[i] = urand();
    for (int r = 0; r < LR; r += 5) /* beyond the static range */
        x[(size_t)r * 2 * LK + 11] = 9.0f;
    for (int i = 0; i < LN * LK; i++)
        w[i] = 0.05f * urand();
    for (int n = 0; n < LN; n++)
        b[n] = 0.1f * urand();
    for (int i = 0; i < NO * LN; i++)
        ow[i] = 0.05f * urand();
    static const lcase cases[] = {
        {"int8", SQ_QT_S8, 0, false, false, false},
        {"int8 zero point", SQ_QT_S8, 50, false, false, false},
        {"int8 guard", SQ_QT_S8, 0, true, false, false},
        {"int8 dynamic", SQ_QT_S8, 0, false, true, false},
        {"int8 outliers + guard", SQ_QT_S8, 0, true, false, true},
        {"int4", SQ_QT_S4G128, 0, false, false, false},
        {"int4 dynamic + outliers", SQ_QT_S4G128, 0, false, true, true},
        {"f32", SQ_QT_F32, 0, false, false, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t o = 0; o < sizeof ops_ / sizeof *ops_; o++)
            for (int th = 1; th <= 2; th++) {
                omp_set_num_threads(th);
                run_linear(&cases[c], &ops_[o], x, w, b, ow, false, want);
                run_linear(&cases[c], &ops_[o], x, w, b, ow, true, y);
                ck_assert_msg(memcmp(y, want, sizeof y) == 0, "%s, %s, %d threads: bits differ",
                              cases[c].name, ops_[o].name, th);
            }
    omp_set_num_threads(2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fused_act");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, codes_match_map_then_quantize);
    tcase_add_test(tc, linear_bits);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

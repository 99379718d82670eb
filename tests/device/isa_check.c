/* isa_check: the integer GEMM of every ISA this CPU has, against the scalar
 * reference, then its speed. Self-contained on purpose: it links only the
 * kernel sources (no BLAS, YAML, Check...), so it builds with a bare gcc on
 * a lent server (tests/device/run.sh) where squint's Debian dependencies are
 * absent, and runs the AVX-VNNI / AVX512-VNNI / AMX paths this project's
 * 2-core AVX2 machine cannot.
 *
 * Correctness: for each ISA, int8 and int4 on ragged shapes and all-extreme
 * values, sq_gemm_s8/_s4 byte-equal to scalar; the fused epilogue (with and
 * without zero-point offsets) byte-equal to scalar's; the zero-point
 * activation quantize step equal to the reference rounding. Any mismatch
 * exits 1 naming ISA, type and shape. ISAs the CPU lacks are reported as
 * SKIPPED with the missing feature.
 *
 * Speed (unless --quick): GOP/s of int8 and int4 GEMM per SIMD ISA (scalar
 * is left out: minutes, and no one's target) at the bge-small and bge-base
 * linear shapes, M = 4096 rows (32 x 128 tokens), at 1 thread and at all
 * threads; side by side in one run.
 *
 * usage: isa_check [--quick] [--rounds N] */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_features.h"
#include "gemm_s8.h"
#include "pack.h"
#include "qlinear_ref.h"
#include "qweight.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

static int failures;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            printf("FAIL: " __VA_ARGS__);                                                         \
            printf("\n");                                                                         \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

typedef struct problem {
    int M, N, K;
    sq_qtype qt;
    int8_t *a; /* [M][k_pad] */
    sq_qweight w;
} problem;

/* extreme: every value +-lim with random signs (pair sums of extremes) */
static int problem_make(problem *p, sq_qtype qt, int M, int N, int K, int extreme)
{
    memset(p, 0, sizeof *p);
    p->M = M, p->N = N, p->K = K, p->qt = qt;
    sq_err err;
    if (sq_qweight_alloc(&p->w, qt, N, K, &err) != 0) {
        printf("FAIL: qweight [%d x %d]: %s\n", N, K, err.msg);
        return -1;
    }
    int kp = p->w.k_pad, lim = qt == SQ_QT_S8 ? 127 : 7, groups = sq_qweight_groups(&p->w);
    p->a = calloc((size_t)M * kp, 1);
    int8_t *wv = malloc((size_t)N * K);
    if (!p->a || !wv)
        return free(wv), -1;
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            p->a[(size_t)m * kp + k] = (int8_t)(extreme ? (rng() & 1 ? 127 : -127)
                                                        : (int)(rng() % 255) - 127);
    for (size_t i = 0; i < (size_t)N * K; i++)
        wv[i] = (int8_t)(extreme ? (rng() & 1 ? lim : -lim) : (int)(rng() % (2u * lim + 1)) - lim);
    sq_pack(&p->w, wv);
    free(wv);
    for (int n = 0; n < N; n++)
        for (int g = 0; g < groups; g++)
            p->w.scale[(size_t)n * groups + g] = ldexpf(1.0f + (float)(rng() % 1000) / 7.0f, -12);
    return 0;
}

static void problem_free(problem *p)
{
    free(p->a);
    sq_qweight_free(&p->w);
}

/* C = A W^T on isa, [M][N] 32-bit (int32 or float) */
static void *gemm(sq_isa isa, const problem *p)
{
    void *c = malloc(4 * (size_t)p->M * p->N);
    int rc = p->qt == SQ_QT_S8
                 ? sq_gemm_s8(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, c, (size_t)p->N)
                 : sq_gemm_s4(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, c, (size_t)p->N);
    if (rc != 0) {
        free(c);
        return NULL;
    }
    return c;
}

static float *fused(sq_isa isa, const problem *p, const int32_t *off)
{
    float *scale = malloc(sizeof(float) * p->N), *bias = malloc(sizeof(float) * p->N);
    for (int n = 0; n < p->N; n++) {
        scale[n] = ldexpf((float)(n * 2654435761u % 1000 + 1), -20);
        bias[n] = (float)(n % 17) / 3.0f - 2.5f;
    }
    float *y = malloc(sizeof(float) * (size_t)p->M * p->N);
    void *scratch = malloc(4 * (size_t)p->M * p->N);
    sq_gemm_epilogue ep = {.out_scale = scale, .acc_off = off, .act_scale = 0.0137f,
                           .bias = bias, .y = y, .ldy = (size_t)p->N};
    int rc = p->qt == SQ_QT_S8
                 ? sq_gemm_s8_fused(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, &ep, scratch)
                 : sq_gemm_s4_fused(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, &ep, scratch);
    free(scale), free(bias), free(scratch);
    if (rc != 0) {
        free(y);
        return NULL;
    }
    return y;
}

static void check_isa(sq_isa isa)
{
    static const int shapes[][3] = {{1, 1, 1},     {1, 16, 4},     {3, 17, 5},    {7, 33, 127},
                                    {8, 15, 128},  {9, 96, 129},   {31, 100, 260}, {32, 48, 384},
                                    {33, 1152, 384}, {65, 384, 1536}, {130, 17, 1544}};
    long cases = 0;
    int failures_before = failures;
    for (int qi = 0; qi < 2; qi++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int ext = 0; ext < 2; ext++)
                for (int th = 1; th <= 2; th++) {
                    sq_qtype qt = qi ? SQ_QT_S4G128 : SQ_QT_S8;
                    problem p;
                    if (problem_make(&p, qt, shapes[s][0], shapes[s][1], shapes[s][2], ext) != 0) {
                        failures++;
                        continue;
                    }
                    omp_set_num_threads(th);
                    void *want = gemm(SQ_ISA_SCALAR, &p), *got = gemm(isa, &p);
                    CHECK(want && got && memcmp(want, got, 4 * (size_t)p.M * p.N) == 0,
                          "%s %s [%d x %d x %d]%s %d threads: GEMM differs from scalar",
                          sq_isa_name(isa), qi ? "int4" : "int8", p.M, p.N, p.K,
                          ext ? " extreme" : "", th);
                    int32_t *off = NULL;
                    if (!qi && s % 2) {
                        off = malloc(sizeof(int32_t) * p.N);
                        for (int n = 0; n < p.N; n++)
                            off[n] = 127 * p.w.wsum[n];
                    }
                    float *fw = fused(SQ_ISA_SCALAR, &p, off), *fg = fused(isa, &p, off);
                    CHECK(fw && fg && memcmp(fw, fg, sizeof(float) * (size_t)p.M * p.N) == 0,
                          "%s %s [%d x %d x %d]%s%s %d threads: fused epilogue differs",
                          sq_isa_name(isa), qi ? "int4" : "int8", p.M, p.N, p.K,
                          ext ? " extreme" : "", off ? " zero-point" : "", th);
                    free(want), free(got), free(fw), free(fg), free(off);
                    problem_free(&p);
                    cases++;
                }
    printf("%-11s %ld GEMM + fused cases vs scalar: %s\n", sq_isa_name(isa), cases,
           failures > failures_before ? "FAILURES above" : "OK");
}

/* the zero-point quantize step (AVX2 where present) vs the reference rule */
static void check_quantize(void)
{
    enum { K = 1000, KP = 1024 };
    static float x[K], m[K];
    static int8_t q[KP];
    for (int j = 0; j < K; j++) {
        m[j] = 0.25f + (float)(rng() % 1000) / 100.0f;
        x[j] = ((float)(int)(rng() % 60001) - 20000.0f) / 997.0f;
    }
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 0.49999997f / m[3];
    static const int zs[] = {0, 1, 64, 127, -127};
    for (size_t zi = 0; zi < sizeof zs / sizeof *zs; zi++) {
        sq_gemm_quantize_acts_zp(x, 1, K, K, m, zs[zi], q, KP, KP);
        int bad = 0;
        for (int j = 0; j < K; j++)
            bad += q[j] != sq_ref_round_s8_zp(x[j] * m[j], zs[zi]);
        for (int j = K; j < KP; j++)
            bad += q[j] != 0;
        CHECK(bad == 0, "quantize with zero point %d: %d values differ", zs[zi], bad);
    }
    printf("activation quantize (zero points 0, 1, 64, 127, -127): %s\n", failures ? "FAILURES" : "OK");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best of `rounds` timed GEMMs after one warm-up, in GOP/s (2 M N K). */
static double gops(sq_isa isa, const problem *p, int rounds)
{
    void *c = malloc(4 * (size_t)p->M * p->N);
    double best = 1e30;
    for (int r = 0; r <= rounds; r++) {
        double t0 = now_s();
        if (p->qt == SQ_QT_S8)
            sq_gemm_s8(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, c, (size_t)p->N);
        else
            sq_gemm_s4(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, c, (size_t)p->N);
        double t = now_s() - t0;
        if (r > 0 && t < best)
            best = t;
    }
    free(c);
    return 2.0 * p->M * p->N * p->K / best * 1e-9;
}

static void bench(int rounds)
{
    static const struct {
        const char *name;
        int N, K;
    } shapes[] = {{"small qkv", 1152, 384},  {"small ffn_up", 1536, 384},  {"small ffn_down", 384, 1536},
                  {"base qkv", 2304, 768},   {"base ffn_up", 3072, 768},   {"base ffn_down", 768, 3072}};
    const int M = 4096, all = omp_get_num_procs();
    printf("\nGEMM GOP/s, M = %d rows, best of %d; threads 1 and %d\n", M, rounds, all);
    printf("%-15s %-5s", "shape", "type");
    for (int i = 1; i < SQ_ISA_COUNT; i++)
        if (sq_isa_supported((sq_isa)i, NULL))
            printf(" %12s-1t %12s-%dt", sq_isa_name((sq_isa)i), sq_isa_name((sq_isa)i), all);
    printf("\n");
    for (int qi = 0; qi < 2; qi++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            problem p;
            if (problem_make(&p, qi ? SQ_QT_S4G128 : SQ_QT_S8, M, shapes[s].N, shapes[s].K, 0) != 0)
                return;
            printf("%-15s %-5s", shapes[s].name, qi ? "int4" : "int8");
            for (int i = 1; i < SQ_ISA_COUNT; i++) {
                if (!sq_isa_supported((sq_isa)i, NULL))
                    continue;
                omp_set_num_threads(1);
                double g1 = gops((sq_isa)i, &p, rounds);
                omp_set_num_threads(all);
                double gn = gops((sq_isa)i, &p, rounds);
                printf(" %15.1f %15.1f", g1, gn);
                fflush(stdout);
            }
            printf("\n");
            problem_free(&p);
        }
}

int main(int argc, char **argv)
{
    int quick = 0, rounds = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc && atoi(argv[i + 1]) > 0)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: isa_check [--quick] [--rounds N]\n");
            return 2;
        }
    }
    for (int i = 0; i < SQ_ISA_COUNT; i++) {
        const char *missing = NULL;
        if (sq_isa_supported((sq_isa)i, &missing))
            printf("ISA %-11s available\n", sq_isa_name((sq_isa)i));
        else
            printf("ISA %-11s SKIPPED (CPU lacks %s)\n", sq_isa_name((sq_isa)i),
                   missing ? missing : "?");
    }
    printf("best: %s\n", sq_isa_name(sq_isa_best()));
    check_quantize();
    for (int i = 1; i < SQ_ISA_COUNT; i++)
        if (sq_isa_supported((sq_isa)i, NULL))
            check_isa((sq_isa)i);
    if (!quick)
        bench(rounds);
    printf("\nisa_check: %s\n", failures ? "FAILED" : "all paths this CPU has agree with scalar");
    return failures ? 1 : 0;
}

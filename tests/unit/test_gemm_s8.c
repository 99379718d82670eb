/* The int8 / int4 GEMM kernels of every ISA against the scalar reference
 * and a naive int64 computation from unpacked values: ragged shapes,
 * extreme values (no saturation), thread-count independence, the SQUINT_ISA
 * override, the vectorized activation quantize step and the fused
 * epilogue (sq_gemm_s8_fused / sq_gemm_s4_fused). ISAs this CPU lacks
 * are reported as SKIPPED. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_kernel.h"
#include "gemm_s8.h"
#include "pack.h"
#include "qlinear_ref.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* Value patterns: random (extremes often), all +lim / -lim combinations,
 * random signs of +-lim (pair sums of opposite extremes). */
enum { PAT_RANDOM, PAT_PP, PAT_NP, PAT_NN, PAT_SIGNS, PAT_COUNT };

static int8_t value(int pat, int lim, int is_a)
{
    switch (pat) {
    case PAT_PP: return (int8_t)lim;
    case PAT_NP: return (int8_t)(is_a ? -lim : lim);
    case PAT_NN: return (int8_t)-lim;
    case PAT_SIGNS: return (int8_t)(rng() & 1 ? lim : -lim);
    default: {
        uint32_t r = rng() % 8;
        return (int8_t)(r == 0 ? lim : r == 1 ? -lim : (int)(rng() % (2u * lim + 1)) - lim);
    }
    }
}

/* One problem: activations, unpacked weights, the packed qweight and the
 * naive results. */
typedef struct problem {
    int M, N, K;
    sq_qtype qt;
    int8_t *a;  /* [M][k_pad], zero past K */
    int8_t *wv; /* [N][K] unpacked */
    sq_qweight w;
    int32_t *naive8; /* int8: [M][N] */
    float *naive4;   /* int4: [M][N] */
} problem;

static void problem_make(problem *p, sq_qtype qt, int M, int N, int K, int pat)
{
    memset(p, 0, sizeof *p);
    p->M = M, p->N = N, p->K = K, p->qt = qt;
    int lim = qt == SQ_QT_S8 ? 127 : 7;
    sq_err err;
    ck_assert_msg(sq_qweight_alloc(&p->w, qt, N, K, &err) == 0, "%s", err.msg);
    int kp = p->w.k_pad, groups = sq_qweight_groups(&p->w);
    p->a = calloc((size_t)M * kp, 1);
    p->wv = malloc((size_t)N * K);
    ck_assert(p->a && p->wv);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            p->a[(size_t)m * kp + k] = value(pat, 127, 1);
    for (size_t i = 0; i < (size_t)N * K; i++)
        p->wv[i] = value(pat, lim, 0);
    sq_pack(&p->w, p->wv);
    for (int n = 0; n < N; n++)
        for (int g = 0; g < groups; g++)
            p->w.scale[(size_t)n * groups + g] = ldexpf(1.0f + (float)(rng() % 1000) / 7.0f, -12);
    /* naive: int64 sums of unpacked values, then (int4) the documented
     * float epilogue */
    if (qt == SQ_QT_S8) {
        p->naive8 = malloc(sizeof(int32_t) * (size_t)M * N);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t s = 0;
                for (int k = 0; k < K; k++)
                    s += (int64_t)p->a[(size_t)m * kp + k] * p->wv[(size_t)n * K + k];
                ck_assert(s >= INT32_MIN && s <= INT32_MAX);
                p->naive8[(size_t)m * N + n] = (int32_t)s;
            }
    } else {
        p->naive4 = malloc(sizeof(float) * (size_t)M * N);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float out = 0.0f;
                for (int g = 0; g < groups; g++) {
                    int64_t s = 0;
                    for (int k = g * SQ_INT4_GROUP; k < K && k < (g + 1) * SQ_INT4_GROUP; k++)
                        s += (int64_t)p->a[(size_t)m * kp + k] * p->wv[(size_t)n * K + k];
                    out = sq_gemm_add_scaled(out, (int32_t)s, p->w.scale[(size_t)n * groups + g]);
                }
                p->naive4[(size_t)m * N + n] = out;
            }
    }
}

static void problem_free(problem *p)
{
    free(p->a);
    free(p->wv);
    free(p->naive8);
    free(p->naive4);
    sq_qweight_free(&p->w);
}

/* Run isa on p with ldc = N + 3 (guard columns must stay untouched) and
 * return the packed [M][N] result (malloc'd). */
static void *run(sq_isa isa, const problem *p)
{
    size_t ldc = (size_t)p->N + 3, esz = 4;
    uint8_t *c = malloc(esz * ldc * (size_t)p->M);
    memset(c, 0xA5, esz * ldc * (size_t)p->M);
    int rc = p->qt == SQ_QT_S8
                 ? sq_gemm_s8(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, (int32_t *)c, ldc)
                 : sq_gemm_s4(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, (float *)c, ldc);
    ck_assert_int_eq(rc, 0);
    uint8_t *out = malloc(esz * (size_t)p->M * p->N);
    for (int m = 0; m < p->M; m++) {
        memcpy(out + esz * (size_t)m * p->N, c + esz * ldc * m, esz * (size_t)p->N);
        for (size_t i = esz * (size_t)p->N; i < esz * ldc; i++)
            ck_assert_msg(c[esz * ldc * m + i] == 0xA5, "%s wrote past column N", sq_isa_name(isa));
    }
    free(c);
    return out;
}

/* 130 rows at K 1536 span two row chunks of the tile driver and part of a
 * third (gemm_tiles.c: 84 rows per chunk there, 64 for the AVX2 wide tiles). */
static const int Ms[] = {1, 3, 17, 64, 130};
static const int Ns[] = {1, 15, 16, 17, 96, 1152};
static const int Ks[] = {1, 3, 4, 5, 127, 128, 129, 384, 1536};
#define LEN(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* Every shape (big ones with random values only, to bound the scalar
 * reference's time) and pattern, for every ISA this CPU runs. */
static void all_shapes(sq_qtype qt)
{
    long cases[SQ_ISA_COUNT] = {0};
    for (int mi = 0; mi < LEN(Ms); mi++)
        for (int ni = 0; ni < LEN(Ns); ni++)
            for (int ki = 0; ki < LEN(Ks); ki++)
                for (int pat = 0; pat < PAT_COUNT; pat++) {
                    int M = Ms[mi], N = Ns[ni], K = Ks[ki];
                    double macs = (double)M * N * K;
                    if (macs > 3e7 || (pat != PAT_RANDOM && macs > 2e6))
                        continue;
                    problem p;
                    problem_make(&p, qt, M, N, K, pat);
                    void *ref = run(SQ_ISA_SCALAR, &p);
                    const void *naive = qt == SQ_QT_S8 ? (void *)p.naive8 : (void *)p.naive4;
                    ck_assert_msg(memcmp(ref, naive, 4 * (size_t)M * N) == 0,
                                  "scalar %s [%d x %d x %d] pattern %d differs from naive",
                                  qt == SQ_QT_S8 ? "s8" : "s4", M, N, K, pat);
                    cases[SQ_ISA_SCALAR]++;
                    for (int isa = 1; isa < SQ_ISA_COUNT; isa++) {
                        if (!sq_isa_supported((sq_isa)isa, NULL))
                            continue;
                        void *got = run((sq_isa)isa, &p);
                        ck_assert_msg(memcmp(got, ref, 4 * (size_t)M * N) == 0,
                                      "%s %s [%d x %d x %d] pattern %d differs from scalar",
                                      sq_isa_name((sq_isa)isa), qt == SQ_QT_S8 ? "s8" : "s4", M,
                                      N, K, pat);
                        free(got);
                        cases[isa]++;
                    }
                    free(ref);
                    problem_free(&p);
                }
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        const char *missing;
        if (sq_isa_supported((sq_isa)isa, &missing))
            printf("%s %s: %ld cases OK\n", sq_isa_name((sq_isa)isa),
                   qt == SQ_QT_S8 ? "int8" : "int4", cases[isa]);
        else
            printf("SKIPPED: %s (CPU lacks %s)\n", sq_isa_name((sq_isa)isa), missing);
    }
    fflush(stdout);
}

START_TEST(int8_all_isas)
{
    all_shapes(SQ_QT_S8);
}
END_TEST

START_TEST(int4_all_isas)
{
    all_shapes(SQ_QT_S4G128);
}
END_TEST

/* 1 and 2 threads give identical bytes, on a shape above the threshold
 * where the driver forks. */
START_TEST(thread_count_independent)
{
    for (int qi = 0; qi < 2; qi++) {
        problem p;
        problem_make(&p, qi ? SQ_QT_S4G128 : SQ_QT_S8, 130, 1152, 384, PAT_RANDOM);
        for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
            if (!sq_isa_supported((sq_isa)isa, NULL))
                continue;
            omp_set_num_threads(1);
            void *one = run((sq_isa)isa, &p);
            omp_set_num_threads(2);
            void *two = run((sq_isa)isa, &p);
            ck_assert_msg(memcmp(one, two, 4 * (size_t)p.M * p.N) == 0, "%s: 1 vs 2 threads",
                          sq_isa_name((sq_isa)isa));
            free(one);
            free(two);
        }
        problem_free(&p);
    }
}
END_TEST

/* Bad arguments and unsupported ISAs are refused without writing. */
START_TEST(argument_checks)
{
    problem p;
    problem_make(&p, SQ_QT_S8, 3, 17, 5, PAT_RANDOM);
    int32_t c[3 * 17];
    ck_assert_int_eq(sq_gemm_s8(SQ_ISA_SCALAR, p.a, 3, 7, &p.w, c, 17), -1); /* lda < k_pad */
    ck_assert_int_eq(sq_gemm_s8(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, c, 16), -1); /* ldc < n */
    ck_assert_int_eq(sq_gemm_s4(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, (float *)c, 17), -1);
    ck_assert_int_eq(sq_gemm_s8(SQ_ISA_SCALAR, p.a, 0, 8, &p.w, c, 17), 0);
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++)
        if (!sq_isa_supported((sq_isa)isa, NULL))
            ck_assert_int_eq(sq_gemm_s8((sq_isa)isa, p.a, 3, 8, &p.w, c, 17), -1);
    problem_free(&p);
}
END_TEST

/* SQUINT_ISA forces a path, or fails naming the missing feature. */
START_TEST(isa_override)
{
    sq_err err;
    sq_isa got;
    unsetenv("SQUINT_ISA");
    ck_assert_int_eq(sq_isa_select(&got, &err), 0);
    ck_assert_int_eq(got, sq_isa_best());
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        setenv("SQUINT_ISA", sq_isa_name((sq_isa)isa), 1);
        const char *missing;
        if (sq_isa_supported((sq_isa)isa, &missing)) {
            ck_assert_int_eq(sq_isa_select(&got, &err), 0);
            ck_assert_int_eq(got, isa);
        } else {
            ck_assert_int_eq(sq_isa_select(&got, &err), -1);
            ck_assert_msg(strstr(err.msg, missing) && strstr(err.msg, "lacks"), "%s", err.msg);
            printf("SQUINT_ISA=%s -> %s\n", sq_isa_name((sq_isa)isa), err.msg);
        }
    }
    setenv("SQUINT_ISA", "avx9000", 1);
    ck_assert_int_eq(sq_isa_select(&got, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "avx9000"));
    unsetenv("SQUINT_ISA");
    ck_assert(sq_isa_supported(SQ_ISA_SCALAR, NULL));
    ck_assert_str_eq(sq_isa_name(SQ_ISA_AVX512VNNI), "avx512vnni");
    ck_assert_str_eq(sq_isa_name((sq_isa)99), "?");
    const sq_cpu_features *f = sq_cpu_features_get();
    printf("cpu: avx2=%d fma=%d avx_vnni=%d avx512f=%d avx512bw=%d avx512vnni=%d amx_tile=%d "
           "amx_int8=%d amx_denied=%d best=%s\n",
           f->avx2, f->fma, f->avx_vnni, f->avx512f, f->avx512bw, f->avx512vnni, f->amx_tile,
           f->amx_int8, f->amx_denied, sq_isa_name(sq_isa_best()));
}
END_TEST

/* A quantize loop (one kernel table row's, or the public step when qf is
 * NULL) matches sq_ref_quantize_acts bit for bit, ties and the 0.49999997f
 * trap included, zero-fills the K padding and reports each row's min and
 * max of x_j * m_j with NaN left out. */
static void quantize_check(sq_quantize_fn qf, const char *name)
{
    enum { ROWS = 3, K = 77, KP = 80 };
    static const float special[] = {0.49999997f, 0.5f,  -0.5f,    1.5f,     2.5f,    -2.5f,
                                    126.5f,      127.4f, 127.5f,  -127.5f,  1e30f,   -1e30f,
                                    NAN,         INFINITY, -INFINITY, -0.0f, 0.0f,   -0.49999997f,
                                    1.4999999f,  8388607.5f};
    float x[ROWS * K], m[K];
    for (int j = 0; j < K; j++)
        m[j] = j % 5 == 0 ? 1.0f : 0.5f + (float)(rng() % 1000) / 250.0f;
    for (int i = 0; i < ROWS * K; i++) {
        int j = i % K;
        x[i] = (m[j] == 1.0f && i / 5 < (int)(sizeof special / sizeof *special))
                   ? special[i / 5]
                   : ((float)(int)(rng() % 20001) - 10000.0f) / 97.0f;
    }
    int8_t ref[ROWS * K], got[ROWS * KP];
    memset(got, 0x55, sizeof got);
    sq_ref_quantize_acts(x, ROWS, K, m, ref);
    float range[2 * ROWS];
    if (qf)
        qf(x, ROWS, K, K, m, 0, got, KP, KP, range);
    else
        sq_gemm_quantize_acts(x, ROWS, K, K, m, got, KP, KP);
    for (int r = 0; r < ROWS; r++) {
        ck_assert_msg(memcmp(got + r * KP, ref + r * K, K) == 0, "%s: row %d differs", name, r);
        for (int j = K; j < KP; j++)
            ck_assert_int_eq(got[r * KP + j], 0);
        float lo = INFINITY, hi = -INFINITY;
        for (int j = 0; j < K; j++) {
            float v = x[r * K + j] * m[j];
            if (v < lo)
                lo = v;
            if (v > hi)
                hi = v;
        }
        if (qf)
            ck_assert_msg(range[2 * r] == lo && range[2 * r + 1] == hi,
                          "%s: row %d range [%g, %g], expected [%g, %g]", name, r,
                          (double)range[2 * r], (double)range[2 * r + 1], (double)lo, (double)hi);
    }
    /* exhaustive-ish: a sweep of float bit patterns around the ties */
    enum { SWEEP = 4096 };
    static float xs[SWEEP], ms[SWEEP];
    static int8_t r1[SWEEP], r2[SWEEP];
    for (int i = 0; i < SWEEP; i++) {
        float base = (float)(i % 300) - 150.0f + 0.5f;
        xs[i] = nextafterf(base, (i / 300) % 2 ? 1e9f : -1e9f);
        if (i % 7 == 0)
            xs[i] = base;
        ms[i] = 1.0f;
    }
    sq_ref_quantize_acts(xs, 1, SWEEP, ms, r1);
    if (qf)
        qf(xs, 1, SWEEP, SWEEP, ms, 0, r2, SWEEP, SWEEP, NULL);
    else
        sq_gemm_quantize_acts(xs, 1, SWEEP, SWEEP, ms, r2, SWEEP, SWEEP);
    ck_assert_msg(memcmp(r1, r2, SWEEP) == 0, "%s: sweep differs", name);

    /* With zero points: the same data, the same equality (the sweep reaches
     * +-150, so codes clip on both sides), padding still 0. */
    static const int zeros[] = {0, 1, -1, 5, 64, 126, 127, -127};
    for (int zi = 0; zi < LEN(zeros); zi++) {
        int z = zeros[zi];
        memset(got, 0x55, sizeof got);
        sq_ref_quantize_acts_zp(x, ROWS, K, m, z, ref);
        if (qf)
            qf(x, ROWS, K, K, m, z, got, KP, KP, NULL);
        else
            sq_gemm_quantize_acts_zp(x, ROWS, K, K, m, z, got, KP, KP);
        for (int r = 0; r < ROWS; r++) {
            ck_assert_msg(memcmp(got + r * KP, ref + r * K, K) == 0, "%s: z %d row %d differs",
                          name, z, r);
            for (int j = K; j < KP; j++)
                ck_assert_int_eq(got[r * KP + j], 0);
        }
        for (int i = 0; i < SWEEP; i++)
            xs[i] = xs[i] + (float)(z > 0 ? z : 0); /* move the ties into the shifted range */
        sq_ref_quantize_acts_zp(xs, 1, SWEEP, ms, z, r1);
        if (qf)
            qf(xs, 1, SWEEP, SWEEP, ms, z, r2, SWEEP, SWEEP, NULL);
        else
            sq_gemm_quantize_acts_zp(xs, 1, SWEEP, SWEEP, ms, z, r2, SWEEP, SWEEP);
        ck_assert_msg(memcmp(r1, r2, SWEEP) == 0, "%s: z %d sweep differs", name, z);
        for (int i = 0; i < SWEEP; i++)
            xs[i] = xs[i] - (float)(z > 0 ? z : 0);
    }
}

/* Every kernel table row's own quantize loop this CPU runs, and the public
 * step (the fastest of them); the rows this CPU lacks are named skipped. */
START_TEST(quantize_acts_matches_reference)
{
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        const sq_gemm_kernels *k = sq_gemm_kernels_for((sq_isa)isa);
        if (!k) {
            printf("quantize step, %s row: skipped (not on this CPU)\n", sq_isa_name((sq_isa)isa));
            continue;
        }
        if (!k->quantize)
            continue; /* the row has no loop of its own */
        quantize_check(k->quantize, sq_isa_name((sq_isa)isa));
        printf("quantize step, %s row: matches the reference\n", sq_isa_name((sq_isa)isa));
    }
    quantize_check(NULL, "sq_gemm_quantize_acts");
}
END_TEST

/* The zero-point rounding rule itself: round half away from zero first,
 * then shift (rounding is not translation invariant), then clamp. */
START_TEST(round_zero_point_rule)
{
    ck_assert_int_eq(sq_ref_round_s8_zp(0.5f, 1), 0);  /* round(0.5) - 1, not round(-0.5) */
    ck_assert_int_eq(sq_ref_round_s8_zp(-0.5f, -1), 0);
    ck_assert_int_eq(sq_ref_round_s8_zp(1.5f, 127), -125);
    ck_assert_int_eq(sq_ref_round_s8_zp(0.0f, 127), -127); /* x = 0 is exactly code -z */
    ck_assert_int_eq(sq_ref_round_s8_zp(254.0f, 127), 127);
    ck_assert_int_eq(sq_ref_round_s8_zp(254.5f, 127), 127);
    ck_assert_int_eq(sq_ref_round_s8_zp(200.4f, 127), 73);
    ck_assert_int_eq(sq_ref_round_s8_zp(-3.0f, 127), -127);
    ck_assert_int_eq(sq_ref_round_s8_zp(1e30f, 127), 127);
    ck_assert_int_eq(sq_ref_round_s8_zp(-1e30f, -127), -127);
    ck_assert_int_eq(sq_ref_round_s8_zp(INFINITY, 127), 127);
    ck_assert_int_eq(sq_ref_round_s8_zp(NAN, 64), 0);
    static const float vals[] = {0.49999997f, 0.5f, -0.5f, 126.5f, 127.5f, -127.5f, 1e30f,
                                 -1e30f, NAN, -0.0f, 8388607.5f};
    for (int i = 0; i < LEN(vals); i++) /* z = 0 is the symmetric rule */
        ck_assert_int_eq(sq_ref_round_s8_zp(vals[i], 0), sq_ref_round_s8(vals[i]));
}
END_TEST

/* Row counts around the AVX2 kernel's switch from 4-row sign-trick tiles
 * to widened tiles (8 rows), register-block tails (rows mod 3 of a tile),
 * tile tails (rows mod 32) and K that ends mid-chunk (k_pad mod 128 != 0
 * for int8), extreme values included, for every ISA this CPU runs. */
START_TEST(tile_and_chunk_edges)
{
    static const int ms[] = {7, 8, 9, 10, 31, 32, 33, 34, 35, 97};
    static const int nk[][2] = {{33, 260}, {48, 1544}, {17, 128}, {64, 4}};
    for (int qi = 0; qi < 2; qi++)
        for (int mi = 0; mi < LEN(ms); mi++)
            for (int s = 0; s < LEN(nk); s++)
                for (int pat = 0; pat < PAT_COUNT; pat += PAT_SIGNS) {
                    problem p;
                    problem_make(&p, qi ? SQ_QT_S4G128 : SQ_QT_S8, ms[mi], nk[s][0], nk[s][1], pat);
                    const void *naive = qi ? (void *)p.naive4 : (void *)p.naive8;
                    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
                        if (!sq_isa_supported((sq_isa)isa, NULL))
                            continue;
                        void *got = run((sq_isa)isa, &p);
                        ck_assert_msg(memcmp(got, naive, 4 * (size_t)p.M * p.N) == 0,
                                      "%s %s [%d x %d x %d] pattern %d differs from naive",
                                      sq_isa_name((sq_isa)isa), qi ? "s4" : "s8", p.M, p.N, p.K,
                                      pat);
                        free(got);
                    }
                    problem_free(&p);
                }
}
END_TEST

/* The former separate epilogue of the quantized linear (linear.c before
 * the fusion), on a packed [M][N] GEMM result: product rounded to float,
 * then the add (the asm keeps any compiler from fusing them). */
static float *epilogue_ref(const problem *p, const void *c, const int32_t *off, const float *scale,
                           float act_scale, const float *bias)
{
    float *y = malloc(sizeof(float) * (size_t)p->M * p->N);
    for (size_t i = 0; i < (size_t)p->M * p->N; i++) {
        int n = (int)(i % (size_t)p->N);
        float v = p->qt == SQ_QT_S8 ? (float)(((const int32_t *)c)[i] + (off ? off[n] : 0)) * scale[n]
                                    : ((const float *)c)[i] * act_scale;
        __asm__("" : "+x"(v));
        y[i] = v + bias[n];
    }
    return y;
}

/* Run the fused path of isa into y with ldy = N + 5 (guard columns, and
 * padding channels n >= N would land on them: must stay untouched) and
 * return the packed [M][N] y. scratch (if not NULL) is [M][N] of 0xA5
 * bytes; *scratch_used tells whether the call changed it. */
static float *run_fused(sq_isa isa, const problem *p, const sq_gemm_epilogue *tmpl,
                        int use_scratch, int *scratch_used)
{
    size_t ldy = (size_t)p->N + 5, ysz = sizeof(float) * ldy * (size_t)p->M;
    size_t ssz = 4 * (size_t)p->M * p->N;
    uint8_t *yb = malloc(ysz), *sb = use_scratch ? malloc(ssz) : NULL;
    memset(yb, 0xA5, ysz);
    if (sb)
        memset(sb, 0xA5, ssz);
    sq_gemm_epilogue ep = *tmpl;
    ep.y = (float *)yb, ep.ldy = ldy;
    int rc = p->qt == SQ_QT_S8
                 ? sq_gemm_s8_fused(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, &ep, (int32_t *)sb)
                 : sq_gemm_s4_fused(isa, p->a, p->M, (size_t)p->w.k_pad, &p->w, &ep, (float *)sb);
    ck_assert_int_eq(rc, 0);
    float *y = malloc(sizeof(float) * (size_t)p->M * p->N);
    for (int m = 0; m < p->M; m++) {
        memcpy(y + (size_t)m * p->N, yb + sizeof(float) * ldy * m, sizeof(float) * p->N);
        for (size_t i = sizeof(float) * p->N; i < sizeof(float) * ldy; i++)
            ck_assert_msg(yb[sizeof(float) * ldy * m + i] == 0xA5,
                          "%s fused wrote past column N", sq_isa_name(isa));
    }
    *scratch_used = 0;
    for (size_t i = 0; sb && i < ssz; i++)
        if (sb[i] != 0xA5)
            *scratch_used = 1;
    free(yb);
    free(sb);
    return y;
}

/* Fused GEMM + epilogue == GEMM + the separate epilogue, bit for bit, int8
 * and int4, every ISA this CPU runs, ragged shapes (both AVX2 tile kinds),
 * 1 and 2 threads; the fusing ISAs never touch the scratch. The values
 * make an FMA differ from mul-then-add (checked), so a contraction would
 * be caught. */
START_TEST(fused_epilogue_matches_separate)
{
    static const int shapes[][3] = {{1, 17, 5},   {3, 1, 129},   {7, 33, 384},  {8, 15, 128},
                                    {9, 96, 260}, {33, 100, 384}, {97, 48, 1544}, {130, 1152, 384}};
    long fused_cases[SQ_ISA_COUNT] = {0};
    int fma_differs = 0;
    for (int qi = 0; qi < 2; qi++)
        for (int s = 0; s < LEN(shapes); s++) {
            problem p;
            problem_make(&p, qi ? SQ_QT_S4G128 : SQ_QT_S8, shapes[s][0], shapes[s][1],
                         shapes[s][2], PAT_RANDOM);
            float *scale = malloc(sizeof(float) * p.N), *bias = malloc(sizeof(float) * p.N);
            for (int n = 0; n < p.N; n++) {
                scale[n] = ldexpf((float)(rng() | 1u), -32 - (int)(rng() % 12));
                bias[n] = ((float)(int)(rng() % 200001) - 100000.0f) / 4099.0f;
            }
            /* int8, every other shape: accumulator offsets (a zero point's z * wsum) */
            int32_t *off = NULL;
            if (!qi && s % 2) {
                off = malloc(sizeof(int32_t) * p.N);
                for (int n = 0; n < p.N; n++)
                    off[n] = (int32_t)(rng() % 4000001u) - 2000000;
            }
            float act_scale = 0.0137f;
            sq_gemm_epilogue tmpl = {.out_scale = scale, .acc_off = off, .act_scale = act_scale,
                                     .bias = bias};
            void *c = run(SQ_ISA_SCALAR, &p);
            float *ref = epilogue_ref(&p, c, off, scale, act_scale, bias);
            for (size_t i = 0; i < (size_t)p.M * p.N; i++) {
                int n = (int)(i % (size_t)p.N);
                float f = qi ? fmaf(((float *)c)[i], act_scale, bias[n])
                             : fmaf((float)((int32_t *)c)[i], scale[n], bias[n]);
                fma_differs += memcmp(&f, ref + i, sizeof f) != 0;
            }
            for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
                if (!sq_isa_supported((sq_isa)isa, NULL))
                    continue;
                for (int th = 1; th <= 2; th++)
                    for (int use_scratch = 1; use_scratch >= !sq_gemm_fuses((sq_isa)isa);
                         use_scratch--) {
                        omp_set_num_threads(th);
                        int used;
                        float *y = run_fused((sq_isa)isa, &p, &tmpl, use_scratch, &used);
                        ck_assert_msg(memcmp(y, ref, sizeof(float) * (size_t)p.M * p.N) == 0,
                                      "%s %s fused [%d x %d x %d] %d threads%s differs",
                                      sq_isa_name((sq_isa)isa), qi ? "s4" : "s8", p.M, p.N, p.K,
                                      th, use_scratch ? "" : " (no scratch)");
                        ck_assert_msg(used == !sq_gemm_fuses((sq_isa)isa),
                                      "%s: scratch %s", sq_isa_name((sq_isa)isa),
                                      used ? "written by a fusing ISA" : "unused by the fallback");
                        free(y);
                        fused_cases[isa]++;
                    }
            }
            free(ref);
            free(c);
            free(off);
            free(scale);
            free(bias);
            problem_free(&p);
        }
    ck_assert_msg(fma_differs > 0, "test values cannot tell FMA from mul+add");
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++)
        if (fused_cases[isa])
            printf("%s fused epilogue: %ld cases OK (%s)\n", sq_isa_name((sq_isa)isa),
                   fused_cases[isa], sq_gemm_fuses((sq_isa)isa) ? "in the tile driver" : "scratch");
    printf("fused epilogue: FMA would differ in %d outputs\n", fma_differs);
    fflush(stdout);
}
END_TEST

/* The fused entry points refuse bad arguments without writing y. */
START_TEST(fused_argument_checks)
{
    problem p;
    problem_make(&p, SQ_QT_S8, 3, 17, 5, PAT_RANDOM);
    float y[3 * 17], scale[17] = {0}, bias[17] = {0};
    int32_t scratch[3 * 17];
    memset(y, 0x5A, sizeof y);
    sq_gemm_epilogue ep = {.out_scale = scale, .bias = bias, .y = y, .ldy = 17};
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, NULL, scratch), -1);
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, &ep, NULL), -1);
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 3, 7, &p.w, &ep, scratch), -1);
    ck_assert_int_eq(sq_gemm_s4_fused(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, &ep, (float *)scratch),
                     -1); /* W is int8 */
    ep.ldy = 16;
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, &ep, scratch), -1);
    ep.ldy = 17, ep.out_scale = NULL;
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, &ep, scratch), -1);
    ep.out_scale = scale, ep.bias = NULL;
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 3, 8, &p.w, &ep, scratch), -1);
    ep.bias = bias;
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++)
        if (!sq_isa_supported((sq_isa)isa, NULL))
            ck_assert_int_eq(sq_gemm_s8_fused((sq_isa)isa, p.a, 3, 8, &p.w, &ep, scratch), -1);
    for (size_t i = 0; i < sizeof y; i++)
        ck_assert_int_eq(((uint8_t *)y)[i], 0x5A);
    ck_assert_int_eq(sq_gemm_s8_fused(SQ_ISA_SCALAR, p.a, 0, 8, &p.w, &ep, NULL), 0);
    ck_assert(sq_gemm_fuses(SQ_ISA_AVX2) && !sq_gemm_fuses(SQ_ISA_SCALAR));
    problem_free(&p);
}
END_TEST

/* Informational: GOP/s of every available ISA on 128 x 1152 x 384. */
START_TEST(throughput)
{
    problem p;
    problem_make(&p, SQ_QT_S8, 128, 1152, 384, PAT_RANDOM);
    int32_t *c = malloc(sizeof(int32_t) * 128 * 1152);
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        if (!sq_isa_supported((sq_isa)isa, NULL))
            continue;
        int reps = isa == SQ_ISA_SCALAR ? 2 : 20;
        struct timespec t0, t1;
        sq_gemm_s8((sq_isa)isa, p.a, 128, (size_t)p.w.k_pad, &p.w, c, 1152); /* warm up */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < reps; i++)
            sq_gemm_s8((sq_isa)isa, p.a, 128, (size_t)p.w.k_pad, &p.w, c, 1152);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        printf("throughput %s int8 128x1152x384: %.1f GOP/s (%d threads)\n",
               sq_isa_name((sq_isa)isa), 2.0 * 128 * 1152 * 384 * reps / s / 1e9,
               omp_get_max_threads());
    }
    free(c);
    problem_free(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_s8");
    TCase *tc = tcase_create("gemm_s8");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, isa_override);
    tcase_add_test(tc, argument_checks);
    tcase_add_test(tc, quantize_acts_matches_reference);
    tcase_add_test(tc, int8_all_isas);
    tcase_add_test(tc, int4_all_isas);
    tcase_add_test(tc, thread_count_independent);
    tcase_add_test(tc, tile_and_chunk_edges);
    tcase_add_test(tc, fused_argument_checks);
    tcase_add_test(tc, round_zero_point_rule);
    tcase_add_test(tc, fused_epilogue_matches_separate);
    tcase_add_test(tc, throughput);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

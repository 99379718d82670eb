/* The AMX kernel body (libquant/kernels/gemm_s8_amx.inc, the very code that
 * gemm_s8_amx.c compiles for the hardware) run on the emulated tile
 * register file of amx_emul.h, against the scalar reference: byte-identical
 * s32 (int8) and f32 (int4) outputs on ragged M / N / K, extreme and
 * full-range values, lda > k_pad with garbage past k_pad, guard columns
 * past N, 1 vs several threads, and every thread's tile config released.
 * Runs on any x86-64 CPU; tests/unit/test_gemm_s8.c runs the real
 * instructions where the CPU has AMX. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_s8.h"
#include "pack.h"

#include "amx_emul.h"
#define T_AMX /* no target attribute: plain C */
#include "gemm_s8_amx.inc"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

static int failures;
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

/* Value patterns. RAW: weights are random bytes written straight into the
 * packed data (int8 -128 and int4 nibble 0x8 = -8 included) and
 * activations span [-128, 127]: outside the documented value ranges, but
 * both the scalar reference and tdpbssd are exact there, so they must
 * still agree bit for bit. */
enum { PAT_RANDOM, PAT_PP, PAT_NP, PAT_NN, PAT_SIGNS, PAT_RAW, PAT_COUNT };
static const char *const pat_names[PAT_COUNT] = {"random", "+max*+max", "-max*+max",
                                                 "-max*-max", "+-max", "raw"};

static int8_t value(int pat, int lim, int is_a)
{
    switch (pat) {
    case PAT_PP: return (int8_t)lim;
    case PAT_NP: return (int8_t)(is_a ? -lim : lim);
    case PAT_NN: return (int8_t)-lim;
    case PAT_SIGNS: return (int8_t)(rng() & 1 ? lim : -lim);
    case PAT_RAW: return (int8_t)(is_a ? (int)(rng() & 0xff) - 128 : 0);
    default: {
        uint32_t r = rng() % 8;
        return (int8_t)(r == 0 ? lim : r == 1 ? -lim : (int)(rng() % (2u * lim + 1)) - lim);
    }
    }
}

typedef struct problem {
    int M, N, K, pat;
    size_t lda;
    sq_qtype qt;
    int8_t *a; /* [M][lda], exactly M * lda bytes */
    sq_qweight w;
} problem;

static int problem_make(problem *p, sq_qtype qt, int M, int N, int K, int pat, int lda_extra)
{
    memset(p, 0, sizeof *p);
    p->M = M, p->N = N, p->K = K, p->qt = qt, p->pat = pat;
    int lim = qt == SQ_QT_S8 ? 127 : 7;
    sq_err err;
    if (sq_qweight_alloc(&p->w, qt, N, K, &err) != 0) {
        printf("FAIL: sq_qweight_alloc: %s\n", err.msg);
        return -1;
    }
    int kp = p->w.k_pad, groups = sq_qweight_groups(&p->w);
    p->lda = (size_t)kp + (size_t)lda_extra;
    p->a = malloc((size_t)M * p->lda);
    int8_t *wv = malloc((size_t)N * K);
    if (!p->a || !wv)
        abort();
    for (int m = 0; m < M; m++)
        for (size_t k = 0; k < p->lda; k++)
            p->a[(size_t)m * p->lda + k] =
                (int)k < K ? value(pat, 127, 1)
                : (int)k < kp ? 0 /* the K padding the contract requires */
                              : (int8_t)(0x5A ^ (int)(rng() & 0xff)); /* must be ignored */
    for (size_t i = 0; i < (size_t)N * K; i++)
        wv[i] = value(pat, lim, 0);
    sq_pack(&p->w, wv);
    free(wv);
    if (pat == PAT_RAW)
        for (uint64_t i = 0; i < p->w.data_size; i++)
            ((uint8_t *)p->w.data)[i] = (uint8_t)rng();
    for (int n = 0; n < p->w.n_pad; n++)
        for (int g = 0; g < groups; g++) {
            float s = ldexpf(1.0f + (float)(rng() % 1000) / 7.0f, -14 + (int)(rng() % 6));
            p->w.scale[(size_t)n * groups + g] = rng() % 5 == 0 ? -s : s;
        }
    return 0;
}

static void problem_free(problem *p)
{
    free(p->a);
    sq_qweight_free(&p->w);
}

enum { GUARD = 3, GUARD_ROWS = 32 };

/* Run the emulated AMX kernel (amx != 0) or the scalar reference on p into
 * a fresh [M + GUARD_ROWS][N + GUARD] buffer prefilled with 0xA5 (the
 * kernel may write rows < M, columns < N only). */
static uint8_t *run(const problem *p, int amx)
{
    size_t ldc = (size_t)p->N + GUARD, bytes = 4 * ldc * (size_t)(p->M + GUARD_ROWS);
    uint8_t *c = malloc(bytes);
    if (!c)
        abort();
    memset(c, 0xA5, bytes);
    if (p->qt == SQ_QT_S8) {
        if (amx)
            sq_amx_gemm_s8(p->a, p->M, p->lda, &p->w, (int32_t *)c, ldc, NULL);
        else
            sq_gemm_kernels_scalar.s8(p->a, p->M, p->lda, &p->w, (int32_t *)c, ldc, NULL);
    } else {
        if (amx)
            sq_amx_gemm_s4(p->a, p->M, p->lda, &p->w, (float *)c, ldc, NULL);
        else
            sq_gemm_kernels_scalar.s4(p->a, p->M, p->lda, &p->w, (float *)c, ldc, NULL);
    }
    return c;
}

/* Compare the emulated kernel with the scalar reference on p: live columns
 * byte-identical, guard columns untouched, no tile config left loaded. */
static int check_problem(const problem *p)
{
    uint8_t *ref = run(p, 0), *got = run(p, 1);
    size_t ldc = (size_t)p->N + GUARD;
    const char *qn = p->qt == SQ_QT_S8 ? "int8" : "int4";
    int ok = 1;
    for (int m = 0; m < p->M && ok; m++) {
        const uint8_t *g = got + 4 * ldc * m, *r = ref + 4 * ldc * m;
        if (memcmp(g, r, 4 * (size_t)p->N) != 0) {
            int n = 0;
            while (memcmp(g + 4 * n, r + 4 * n, 4) == 0)
                n++;
            int32_t gv, rv;
            memcpy(&gv, g + 4 * n, 4);
            memcpy(&rv, r + 4 * n, 4);
            CHECK(0, "%s [%d x %d x %d] lda %zu %s: C[%d][%d] = 0x%08x, scalar 0x%08x", qn, p->M,
                  p->N, p->K, p->lda, pat_names[p->pat], m, n, (unsigned)gv, (unsigned)rv);
            ok = 0;
        }
        for (size_t i = 4 * (size_t)p->N; i < 4 * ldc && ok; i++)
            if (g[i] != 0xA5) {
                CHECK(0, "%s [%d x %d x %d] %s: wrote past column N in row %d", qn, p->M, p->N,
                      p->K, pat_names[p->pat], m);
                ok = 0;
            }
    }
    for (size_t i = 4 * ldc * p->M; i < 4 * ldc * (size_t)(p->M + GUARD_ROWS) && ok; i++)
        if (got[i] != 0xA5) {
            CHECK(0, "%s [%d x %d x %d] %s: wrote past row M", qn, p->M, p->N, p->K,
                  pat_names[p->pat]);
            ok = 0;
        }
    /* The fused epilogue (each tile through it into y) against the
     * epilogue run over the scalar reference's C: the same bytes. */
    if (ok) {
        const int N = p->N, M = p->M;
        float *os = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
        float *rs = malloc(sizeof(float) * M);
        int32_t *off = malloc(sizeof(int32_t) * N);
        float *yw = malloc(sizeof(float) * M * N), *yg = malloc(sizeof(float) * M * N);
        int32_t *cref = malloc(sizeof(int32_t) * M * N);
        if (!os || !b || !rs || !off || !yw || !yg || !cref)
            abort();
        for (int n = 0; n < N; n++) {
            os[n] = ldexpf(1.0f + (float)(rng() % 100) / 9.0f, -12);
            b[n] = (float)((int)(rng() % 200) - 100) / 16.0f;
            off[n] = (int32_t)(rng() % 2001) - 1000;
        }
        for (int m = 0; m < M; m++)
            rs[m] = m % 3 == 1 ? 1.0f + (float)(rng() % 50) / 8.0f : 0.0f;
        for (int m = 0; m < M; m++) /* the reference C, packed to stride N */
            memcpy(cref + (size_t)m * N, ref + 4 * ldc * m, 4 * (size_t)N);
        sq_gemm_epilogue ep = {.out_scale = os, .acc_off = p->qt == SQ_QT_S8 ? off : NULL,
                               .act_scale = 0.37f, .bias = b, .y = yw, .ldy = (size_t)N,
                               .row_scale = rs};
        if (p->qt == SQ_QT_S8)
            sq_gemm_epilogue_s8(cref, M, N, &ep);
        else
            sq_gemm_epilogue_s4((const float *)cref, M, N, &ep);
        ep.y = yg;
        if (p->qt == SQ_QT_S8)
            sq_amx_gemm_s8(p->a, M, p->lda, &p->w, NULL, 0, &ep);
        else
            sq_amx_gemm_s4(p->a, M, p->lda, &p->w, NULL, 0, &ep);
        if (memcmp(yw, yg, sizeof(float) * M * N) != 0) {
            CHECK(0, "%s [%d x %d x %d] %s: the fused epilogue differs from the epilogue over C",
                  qn, M, N, p->K, pat_names[p->pat]);
            ok = 0;
        }
        free(os), free(b), free(rs), free(off), free(yw), free(yg), free(cref);
    }
    long live = __atomic_load_n(&sq_emu_stats.live_configs, __ATOMIC_RELAXED);
    if (live != 0) {
        CHECK(0, "%s [%d x %d x %d]: %ld thread(s) kept a tile config (no _tile_release)", qn,
              p->M, p->N, p->K, live);
        ok = 0;
    }
    free(ref);
    free(got);
    return ok;
}

/* The emulator itself on hand-checked cases: dpbssd arithmetic with
 * wraparound, zeroing of the rows and bytes a load does not cover. */
static void emulator_selftest(void)
{
    amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    cfg.rows[0] = 2, cfg.colsb[0] = 8;  /* C: 2 x 2 s32 */
    cfg.rows[1] = 2, cfg.colsb[1] = 12; /* A: 2 x 12 bytes (K = 12) */
    cfg.rows[2] = 3, cfg.colsb[2] = 8;  /* B: 3 rows x (2 columns x 4) */
    _tile_loadconfig(&cfg);
    int8_t a[2][12], b[3][8];
    for (int i = 0; i < 24; i++)
        a[i / 12][i % 12] = (int8_t)(i * 37 % 255 - 127);
    for (int i = 0; i < 24; i++)
        b[i / 8][i % 8] = (int8_t)(i * 53 % 255 - 127);
    int32_t c0[2][2] = {{INT32_MAX, INT32_MIN}, {-5, 12345}}, c[2][2];
    _tile_loadd(0, c0, 8);
    _tile_loadd(1, a, 12);
    _tile_loadd(2, b, 8);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, c, 8);
    for (int m = 0; m < 2; m++)
        for (int n = 0; n < 2; n++) {
            int64_t s = c0[m][n];
            for (int k = 0; k < 12; k++)
                s += a[m][k] * b[k / 4][4 * n + k % 4];
            int32_t want = (int32_t)(uint32_t)(uint64_t)s; /* mod 2^32 */
            CHECK(c[m][n] == want, "emulator dpbssd C[%d][%d] = %d, want %d", m, n, c[m][n],
                  want);
        }
    CHECK(sq_emu.t[1].data[0][12] == 0 && sq_emu.t[1].data[2][0] == 0,
          "emulator: a load must zero the bytes past colsb and the rows past rows");
    _tile_release();
    CHECK(sq_emu.palette == 0 && sq_emu_stats.live_configs == 0, "emulator: release");
}

static const int Ms[] = {1, 3, 15, 16, 17, 31, 32, 33, 130};
static const int Ns[] = {1, 16, 17, 33, 48, 1152};
static const int Ks8[] = {1, 3, 4, 5, 60, 63, 64, 65, 124, 127, 128, 129, 200, 384, 1000, 1536};
static const int Ks4[] = {1, 64, 127, 128, 129, 255, 300, 384, 1536};
#define LEN(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* Every shape x pattern (big shapes with fewer patterns, to bound the
 * scalar reference's time), lda = k_pad and lda = k_pad + 13. */
static long sweep(sq_qtype qt, long *cases_out)
{
    const int *Ks = qt == SQ_QT_S8 ? Ks8 : Ks4;
    int nk = qt == SQ_QT_S8 ? LEN(Ks8) : LEN(Ks4);
    long cases = 0, passed = 0;
    for (int mi = 0; mi < LEN(Ms); mi++)
        for (int ni = 0; ni < LEN(Ns); ni++)
            for (int ki = 0; ki < nk; ki++)
                for (int pat = 0; pat < PAT_COUNT; pat++) {
                    int M = Ms[mi], N = Ns[ni], K = Ks[ki];
                    double macs = (double)M * N * K;
                    if (macs > 3e7 || (pat != PAT_RANDOM && pat != PAT_RAW && macs > 2e6))
                        continue;
                    int lda_extra = (mi + ni + ki + pat) % 2 ? 13 : 0;
                    problem p;
                    if (problem_make(&p, qt, M, N, K, pat, lda_extra) != 0)
                        return -1;
                    cases++;
                    passed += check_problem(&p);
                    problem_free(&p);
                }
    *cases_out = cases;
    return passed;
}

/* The same bytes with 1, 2, 3 and the default number of threads, on shapes
 * above the threshold where the driver forks. */
static long thread_independence(long *cases_out)
{
    static const int shapes[][3] = {{130, 1152, 384}, {33, 48, 1544}, {97, 1152, 200}};
    long cases = 0, passed = 0;
    int def = omp_get_max_threads();
    for (int qi = 0; qi < 2; qi++)
        for (int s = 0; s < LEN(shapes); s++) {
            problem p;
            if (problem_make(&p, qi ? SQ_QT_S4G128 : SQ_QT_S8, shapes[s][0], shapes[s][1],
                             shapes[s][2], PAT_RANDOM, 5) != 0)
                return -1;
            omp_set_num_threads(1);
            uint8_t *one = run(&p, 1);
            size_t bytes = 4 * ((size_t)p.N + GUARD) * (size_t)(p.M + GUARD_ROWS);
            int ok = 1;
            for (int t = 2; t <= 4; t++) {
                omp_set_num_threads(t == 4 ? (def > 1 ? def : 4) : t);
                uint8_t *other = run(&p, 1);
                if (memcmp(one, other, bytes) != 0) {
                    CHECK(0, "%s [%d x %d x %d]: 1 thread vs %d threads differ",
                          qi ? "int4" : "int8", p.M, p.N, p.K, omp_get_max_threads());
                    ok = 0;
                }
                free(other);
            }
            omp_set_num_threads(def);
            cases++;
            passed += ok && check_problem(&p);
            free(one);
            problem_free(&p);
        }
    *cases_out = cases;
    return passed;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep the messages if the emulator aborts */
    emulator_selftest();
    long c8 = 0, c4 = 0, ct = 0;
    long p8 = sweep(SQ_QT_S8, &c8);
    long p4 = sweep(SQ_QT_S4G128, &c4);
    long pt = thread_independence(&ct);
    printf("amx emulation: int8 %ld/%ld cases passed, int4 %ld/%ld cases passed, "
           "thread-count independence %ld/%ld\n",
           p8, c8, p4, c4, pt, ct);
    printf("amx emulation: emulated %ld tdpbssd, %ld tileloadd, %ld tilestored, %ld tilezero, "
           "%ld ldtilecfg, %ld tilerelease\n",
           sq_emu_stats.dpbssd, sq_emu_stats.loadd, sq_emu_stats.stored, sq_emu_stats.zero,
           sq_emu_stats.loadconfig, sq_emu_stats.release);
    if (failures || p8 != c8 || p4 != c4 || pt != ct) {
        printf("FAILED (%d failure(s))\n", failures);
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}

/* kernel_bench: GOP/s of the linear-layer GEMMs of bge-small and bge-base,
 * squint int8 (best ISA and avx2), squint int4, OpenBLAS sgemm and, when
 * built with it, oneDNN's u8s8s32 matmul, on the same shapes in the same
 * run. Every repetition runs every method once (interleaved), and each
 * method reports the median over the repetitions. Ops = 2 * M * N * K for
 * every method (a multiply-add is two ops).
 *
 *   kernel_bench [--threads T] [--reps R] [--m M[,M...]] [--model small|base|all]
 *                [--stat median|min]
 *
 * On a shared, noisy machine --stat min (the fastest repetition of each
 * method) is the steadier estimate of what a kernel can do; the default is
 * the median.
 *
 * Weights are prepared outside the timed region as each library would hold
 * them: squint panels packed, oneDNN weights reordered into the layout its
 * matmul asks for (format any), sgemm on the plain [N][K] fp32 matrix. The
 * int8 times exclude the activation quantize step; its cost is printed
 * separately as "quant%" (sq_gemm_quantize_acts time / int8 GEMM time). */
#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_s8.h"
#include "pack.h"

#ifdef SQ_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

void openblas_set_num_threads(int);
char *openblas_get_config(void);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int use_min; /* --stat min: the fastest repetition instead of the median */

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    if (use_min)
        return v[0];
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { M_S8_BEST, M_S8_AVX2, M_S4_BEST, M_SGEMM, M_DNNL, M_QUANT, M_COUNT };
static const char *method_name[M_COUNT] = {"s8-best", "s8-avx2", "s4-best", "sgemm", "dnnl-u8s8", "quant"};

#ifdef SQ_HAVE_DNNL
#define DNNL_OK(x)                                                                             \
    do {                                                                                       \
        dnnl_status_t st_ = (x);                                                               \
        if (st_ != dnnl_success) {                                                             \
            fprintf(stderr, "oneDNN: %s failed (%d)\n", #x, (int)st_);                       \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

typedef struct dnnl_case {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, dst;
} dnnl_case;

static dnnl_engine_t engine;
static dnnl_stream_t stream;

/* u8 src [M][K] (the quantized activations + 128), s8 weights [K][N]
 * (given as w[n][k]), s32 dst [M][N]; weights reordered to the matmul's
 * preferred layout. */
static int dnnl_setup(dnnl_case *c, int M, int N, int K, uint8_t *src, const int8_t *w,
                      int32_t *dst)
{
    dnnl_memory_desc_t src_md, wei_plain_md, wei_any_md, dst_md;
    dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
    DNNL_OK(dnnl_memory_desc_init_by_tag(&src_md, 2, sd, dnnl_u8, dnnl_ab));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_plain_md, 2, wd, dnnl_s8, dnnl_ba)); /* w[n][k] */
    DNNL_OK(dnnl_memory_desc_init_by_tag(&wei_any_md, 2, wd, dnnl_s8, dnnl_format_tag_any));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_s32, dnnl_ab));
    dnnl_matmul_desc_t md;
    DNNL_OK(dnnl_matmul_desc_init(&md, &src_md, &wei_any_md, NULL, &dst_md));
    dnnl_primitive_desc_t pd;
    DNNL_OK(dnnl_primitive_desc_create(&pd, &md, NULL, engine, NULL));
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    DNNL_OK(dnnl_memory_create(&c->src, &src_md, engine, src));
    DNNL_OK(dnnl_memory_create(&c->dst, &dst_md, engine, dst));
    DNNL_OK(dnnl_memory_create(&c->wei, wmd, engine, DNNL_MEMORY_ALLOCATE));
    dnnl_memory_t plain;
    DNNL_OK(dnnl_memory_create(&plain, &wei_plain_md, engine, (void *)w));
    dnnl_primitive_desc_t rpd;
    DNNL_OK(dnnl_reorder_primitive_desc_create(&rpd, &wei_plain_md, engine, wmd, engine, NULL));
    dnnl_primitive_t reorder;
    DNNL_OK(dnnl_primitive_create(&reorder, rpd));
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, c->wei}};
    DNNL_OK(dnnl_primitive_execute(reorder, stream, 2, rargs));
    DNNL_OK(dnnl_stream_wait(stream));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(plain);
    DNNL_OK(dnnl_primitive_create(&c->prim, pd));
    dnnl_primitive_desc_destroy(pd);
    return 0;
}

static int dnnl_run(dnnl_case *c)
{
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, c->src}, {DNNL_ARG_WEIGHTS, c->wei}, {DNNL_ARG_DST, c->dst}};
    DNNL_OK(dnnl_primitive_execute(c->prim, stream, 3, args));
    DNNL_OK(dnnl_stream_wait(stream));
    return 0;
}

static void dnnl_teardown(dnnl_case *c)
{
    dnnl_primitive_destroy(c->prim);
    dnnl_memory_destroy(c->src);
    dnnl_memory_destroy(c->wei);
    dnnl_memory_destroy(c->dst);
}
#endif

static int reps = 5;

static void bench_shape(const char *label, int M, int N, int K, sq_isa best)
{
    sq_err err;
    sq_qweight w8, w4;
    if (sq_qweight_alloc(&w8, SQ_QT_S8, N, K, &err) || sq_qweight_alloc(&w4, SQ_QT_S4G128, N, K, &err)) {
        fprintf(stderr, "alloc: %s\n", err.msg);
        exit(1);
    }
    int kp8 = w8.k_pad, kp4 = w4.k_pad, kp = kp8 > kp4 ? kp8 : kp4;
    int8_t *wv8 = malloc((size_t)N * K), *wv4 = malloc((size_t)N * K);
    float *wf = malloc(sizeof(float) * (size_t)N * K);
    float *x = malloc(sizeof(float) * (size_t)M * K), *mult = malloc(sizeof(float) * (size_t)K);
    int8_t *qa = aligned_alloc(64, ((size_t)M * kp + 63) / 64 * 64);
    uint8_t *ua = malloc((size_t)M * K);
    int32_t *c32 = malloc(sizeof(int32_t) * (size_t)M * N);
    int32_t *c32d = malloc(sizeof(int32_t) * (size_t)M * N);
    float *cf = malloc(sizeof(float) * (size_t)M * N);
    if (!wv8 || !wv4 || !wf || !x || !mult || !qa || !ua || !c32 || !c32d || !cf) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < (size_t)N * K; i++) {
        wv8[i] = (int8_t)((int)(rng() % 255) - 127);
        wv4[i] = (int8_t)((int)(rng() % 15) - 7);
        wf[i] = (float)wv8[i] / 127.0f;
    }
    for (int n = 0; n < N; n++)
        for (int g = 0; g < kp4 / SQ_INT4_GROUP; g++)
            w4.scale[(size_t)n * (kp4 / SQ_INT4_GROUP) + g] = 1.0f / 64;
    sq_pack(&w8, wv8);
    sq_pack(&w4, wv4);
    for (size_t i = 0; i < (size_t)M * K; i++)
        x[i] = ((float)(rng() % 20001) - 10000.0f) / 5000.0f;
    for (int k = 0; k < K; k++)
        mult[k] = 60.0f;
    sq_gemm_quantize_acts(x, M, K, (size_t)K, mult, qa, kp, (size_t)kp);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++)
            ua[(size_t)m * K + k] = (uint8_t)(qa[(size_t)m * kp + k] + 128);
    int have[M_COUNT] = {1, sq_isa_supported(SQ_ISA_AVX2, NULL), 1, 1, 0, 1};
#ifdef SQ_HAVE_DNNL
    dnnl_case dc;
    have[M_DNNL] = dnnl_setup(&dc, M, N, K, ua, wv8, c32d) == 0;
#endif
    double t[M_COUNT][256];
    for (int rep = -1; rep < reps; rep++) /* rep -1: warm-up, not recorded */
        for (int meth = 0; meth < M_COUNT; meth++) {
            if (!have[meth])
                continue;
            double t0 = now();
            switch (meth) {
            case M_S8_BEST: sq_gemm_s8(best, qa, M, (size_t)kp, &w8, c32, (size_t)N); break;
            case M_S8_AVX2: sq_gemm_s8(SQ_ISA_AVX2, qa, M, (size_t)kp, &w8, c32, (size_t)N); break;
            case M_S4_BEST: sq_gemm_s4(best, qa, M, (size_t)kp, &w4, cf, (size_t)N); break;
            case M_SGEMM:
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, wf, K,
                            0.0f, cf, N);
                break;
#ifdef SQ_HAVE_DNNL
            case M_DNNL: dnnl_run(&dc); break;
#endif
            case M_QUANT:
                sq_gemm_quantize_acts(x, M, K, (size_t)K, mult, qa, kp, (size_t)kp);
                break;
            }
            if (rep >= 0)
                t[meth][rep] = now() - t0;
        }
#ifdef SQ_HAVE_DNNL
    /* oneDNN computes sum (a + 128) * w = squint's exact result + 128 * wsum;
     * count the outputs where it does not (s16 saturation in u8 x s8 code
     * paths without VNNI) */
    if (have[M_DNNL]) {
        sq_gemm_s8(best, qa, M, (size_t)kp, &w8, c32, (size_t)N);
        long bad = 0;
        int64_t worst = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                int64_t d = (int64_t)c32d[(size_t)m * N + n] -
                            ((int64_t)c32[(size_t)m * N + n] + 128 * (int64_t)w8.wsum[n]);
                if (d) {
                    bad++;
                    worst = llabs(d) > worst ? llabs(d) : worst;
                }
            }
        if (bad)
            printf("  note: oneDNN u8s8s32 differs from the exact sum in %ld of %ld outputs "
                   "(max |diff| %lld)\n",
                   bad, (long)M * N, (long long)worst);
        dnnl_teardown(&dc);
    }
#endif
    double ops = 2.0 * M * N * K, med[M_COUNT];
    printf("%-10s M=%-5d N=%-5d K=%-5d", label, M, N, K);
    for (int meth = 0; meth < M_COUNT; meth++) {
        med[meth] = have[meth] ? median(t[meth], reps) : 0;
        if (meth == M_QUANT)
            continue;
        if (have[meth])
            printf(" %9.1f", ops / med[meth] / 1e9);
        else
            printf(" %9s", "-");
    }
    printf(" %7.2fx %7.1f%%\n", med[M_SGEMM] / med[M_S8_AVX2],
           100.0 * med[M_QUANT] / med[M_S8_BEST]);
    fflush(stdout);
    free(wv8), free(wv4), free(wf), free(x), free(mult), free(qa), free(ua), free(c32),
        free(c32d), free(cf);
    sq_qweight_free(&w8);
    sq_qweight_free(&w4);
}

int main(int argc, char **argv)
{
    int threads = 0, ms[8] = {128, 8192}, nm = 2, small = 1, base = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--m") && i + 1 < argc) {
            nm = 0;
            for (char *s = argv[++i]; *s && nm < 8; s++) {
                ms[nm++] = (int)strtol(s, &s, 10);
                if (!*s)
                    break;
            }
        } else if (!strcmp(argv[i], "--stat") && i + 1 < argc) {
            use_min = !strcmp(argv[++i], "min");
        } else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
            i++;
            small = !strcmp(argv[i], "small") || !strcmp(argv[i], "all");
            base = !strcmp(argv[i], "base") || !strcmp(argv[i], "all");
        } else {
            fprintf(stderr,
                    "usage: kernel_bench [--threads T] [--reps R] [--m M[,M...]] "
                    "[--model small|base|all] [--stat median|min]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 256)
        reps = reps < 1 ? 1 : 256;
    if (threads > 0)
        omp_set_num_threads(threads);
    threads = omp_get_max_threads();
    openblas_set_num_threads(threads);
    const sq_cpu_features *f = sq_cpu_features_get();
    sq_isa isa = sq_isa_best(); /* SQUINT_ISA picks the ISA of the *-best columns */
    sq_err ierr = {0};
    if (sq_isa_select(&isa, &ierr) != 0) {
        fprintf(stderr, "kernel_bench: %s\n", ierr.msg);
        return 2;
    }
    printf("kernel_bench: %d threads, %d reps (%s), squint ISA %s%s (avx2=%d avx_vnni=%d "
           "avx512vnni=%d amx_int8=%d)\n",
           threads, reps, use_min ? "min" : "median", sq_isa_name(isa),
           getenv("SQUINT_ISA") ? " (SQUINT_ISA)" : "", f->avx2, f->avx_vnni, f->avx512vnni,
           f->amx_int8);
    printf("OpenBLAS: %s\n", openblas_get_config());
#ifdef SQ_HAVE_DNNL
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "oneDNN: no CPU engine\n");
        return 1;
    }
    const dnnl_version_t *v = dnnl_version();
    printf("oneDNN: %d.%d.%d (u8 src x s8 weights -> s32 matmul; ISA: set ONEDNN_VERBOSE=1 to "
           "see it)\n", v->major, v->minor, v->patch);
#else
    printf("oneDNN: not built in (install libdnnl-dev and reconfigure)\n");
#endif
    printf("GOP/s (2 ops per multiply-add); s8x = sgemm time / squint avx2 int8 time; quant%% = "
           "activation quantize time / int8 GEMM time\n");
    printf("%-10s %-7s %-7s %-7s %9s %9s %9s %9s %9s %8s %8s\n", "shape", "", "", "",
           method_name[0], method_name[1], method_name[2], method_name[3], method_name[4],
           "s8x", "quant%");
    struct {
        const char *model;
        int h, ffn, on;
    } models[] = {{"bge-small", 384, 1536, small}, {"bge-base", 768, 3072, base}};
    for (int mi = 0; mi < 2; mi++) {
        if (!models[mi].on)
            continue;
        int h = models[mi].h, ffn = models[mi].ffn;
        struct {
            const char *name;
            int n, k;
        } sh[] = {{"qkv", 3 * h, h}, {"out", h, h}, {"ffn1", ffn, h}, {"ffn2", h, ffn}};
        for (int i = 0; i < nm; i++)
            for (int s = 0; s < 4; s++) {
                char label[32];
                snprintf(label, sizeof label, "%s/%s", models[mi].model + 4, sh[s].name);
                bench_shape(label, ms[i], sh[s].n, sh[s].k, isa);
            }
    }
    return 0;
}

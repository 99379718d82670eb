/* CPUID + XCR0 feature detection and the SQUINT_ISA override (x86-64). */
#include "cpu_features.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SQ_X86 1
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* Linux arch_prctl codes (asm/prctl.h), spelled out for older headers. */
#define SQ_ARCH_REQ_XCOMP_PERM 0x1023
#define SQ_XFEATURE_XTILEDATA 18

/* XCR0 state components. */
#define XCR0_SSE (1ull << 1)
#define XCR0_AVX (1ull << 2)
#define XCR0_OPMASK (1ull << 5)
#define XCR0_ZMM_HI256 (1ull << 6)
#define XCR0_HI16_ZMM (1ull << 7)
#define XCR0_TILECFG (1ull << 17)
#define XCR0_TILEDATA (1ull << 18)

static sq_cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#ifdef SQ_X86
static unsigned long long read_xcr0(void)
{
    unsigned eax, edx;
    /* xgetbv as raw asm: the intrinsic would need target("xsave"). */
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

/* Ask Linux for permission to use AMX tile data (required since 5.16);
 * without it the first tile instruction faults. */
static bool request_amx_permission(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, SQ_ARCH_REQ_XCOMP_PERM, SQ_XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}
#endif

static void detect(void)
{
    memset(&features, 0, sizeof features);
#ifdef SQ_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    bool osxsave = c & (1u << 27), avx = c & (1u << 28), fma = c & (1u << 12);
    if (!osxsave || !avx)
        return; /* no OS-managed AVX state: nothing beyond scalar */
    unsigned long long xcr0 = read_xcr0();
    bool ymm_os = (xcr0 & (XCR0_SSE | XCR0_AVX)) == (XCR0_SSE | XCR0_AVX);
    unsigned long long zmm_bits = XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM;
    bool zmm_os = ymm_os && (xcr0 & zmm_bits) == zmm_bits;
    bool tile_os = (xcr0 & (XCR0_TILECFG | XCR0_TILEDATA)) == (XCR0_TILECFG | XCR0_TILEDATA);
    if (!ymm_os)
        return;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d7);
        unsigned sub_max = a;
        if (sub_max >= 1)
            __cpuid_count(7, 1, a71, b, c, d);
    }
    features.fma = fma;
    features.avx2 = b7 & (1u << 5);
    features.avx_vnni = features.avx2 && (a71 & (1u << 4));
    features.avx512f = zmm_os && (b7 & (1u << 16));
    features.avx512bw = features.avx512f && (b7 & (1u << 30));
    features.avx512vnni = features.avx512f && (c7 & (1u << 11));
    features.avx512bf16 = features.avx512f && (a71 & (1u << 5));
    bool amx_cpu = (d7 & (1u << 24)) && (d7 & (1u << 25));
    if (amx_cpu && tile_os) {
        if (request_amx_permission()) {
            features.amx_tile = true;
            features.amx_int8 = true;
        } else {
            features.amx_denied = true;
        }
    }
#endif
}

const sq_cpu_features *sq_cpu_features_get(void)
{
    pthread_once(&features_once, detect);
    return &features;
}

static const char *const isa_names[SQ_ISA_COUNT] = {"scalar", "avx2", "avxvnni", "avx512vnni",
                                                    "amx"};

const char *sq_isa_name(sq_isa isa)
{
    return (unsigned)isa < SQ_ISA_COUNT ? isa_names[isa] : "?";
}

int sq_isa_parse(const char *name, sq_isa *out)
{
    for (int i = 0; i < SQ_ISA_COUNT; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            *out = (sq_isa)i;
            return 0;
        }
    return -1;
}

bool sq_isa_supported(sq_isa isa, const char **missing)
{
    const sq_cpu_features *f = sq_cpu_features_get();
    const char *why = NULL;
    switch (isa) {
    case SQ_ISA_SCALAR:
        break;
    case SQ_ISA_AVX2:
        why = !f->avx2 ? "avx2" : NULL;
        break;
    case SQ_ISA_AVXVNNI:
        why = !f->avx2 ? "avx2" : !f->avx_vnni ? "avx_vnni" : NULL;
        break;
    case SQ_ISA_AVX512VNNI:
        why = !f->avx512f      ? "avx512f"
              : !f->avx512bw   ? "avx512bw"
              : !f->avx512vnni ? "avx512_vnni"
                               : NULL;
        break;
    case SQ_ISA_AMX:
        /* tdpbssd (gemm_s8_amx.c): CPUID amx_tile + amx_int8, the XCR0
         * tile states and the granted arch_prctl permission (detect()
         * sets amx_tile/amx_int8 only then); its int4 unpack and f32
         * epilogue are compiled for AVX2, which every AMX CPU has */
        if (f->amx_denied)
            why = "AMX tile-data permission (arch_prctl refused)";
        else if (!f->amx_tile)
            why = "amx_tile";
        else if (!f->amx_int8)
            why = "amx_int8";
        else if (!f->avx2)
            why = "avx2";
        break;
    default:
        why = "a known ISA";
    }
    if (missing)
        *missing = why;
    return why == NULL;
}

sq_isa sq_isa_best(void)
{
    for (int i = SQ_ISA_COUNT - 1; i > 0; i--)
        if (sq_isa_supported((sq_isa)i, NULL))
            return (sq_isa)i;
    return SQ_ISA_SCALAR;
}

int sq_isa_select(sq_isa *out, sq_err *err)
{
    const char *env = getenv("SQUINT_ISA");
    if (!env || !*env || strcmp(env, "auto") == 0) {
        *out = sq_isa_best();
        return 0;
    }
    sq_isa isa;
    if (sq_isa_parse(env, &isa) != 0)
        return sq_err_set(err,
                          "SQUINT_ISA=%s: unknown ISA (expected scalar, avx2, avxvnni, "
                          "avx512vnni, amx or auto)",
                          env);
    const char *missing;
    if (!sq_isa_supported(isa, &missing))
        return sq_err_set(err, "SQUINT_ISA=%s: this CPU lacks %s", env, missing);
    *out = isa;
    return 0;
}

void sq_cpu_name(char *out, size_t cap)
{
    char raw[49] = {0};
#ifdef SQ_X86
    unsigned r[12];
    if (__get_cpuid(0x80000000u, &r[0], &r[1], &r[2], &r[3]) && r[0] >= 0x80000004u) {
        for (unsigned leaf = 0; leaf < 3; leaf++)
            __get_cpuid(0x80000002u + leaf, &r[4 * leaf], &r[4 * leaf + 1], &r[4 * leaf + 2],
                        &r[4 * leaf + 3]);
        memcpy(raw, r, 48);
    }
#endif
    /* Printable ASCII, runs of spaces collapsed, no leading / trailing ones. */
    size_t n = 0;
    for (size_t i = 0; raw[i] && n + 1 < cap; i++) {
        char ch = raw[i] >= 0x20 && raw[i] < 0x7f ? raw[i] : ' ';
        if (ch == ' ' && (n == 0 || out[n - 1] == ' '))
            continue;
        out[n++] = ch;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    if (cap)
        out[n] = '\0';
    if (n == 0 && cap)
        snprintf(out, cap, "unknown");
}

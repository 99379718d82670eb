/* Runtime CPU feature detection and the choice of GEMM instruction set.
 *
 * A feature counts as present only when the CPU reports it (CPUID) AND the
 * OS saves its register state (XCR0 via xgetbv): AVX needs the YMM state,
 * AVX-512 the opmask and ZMM states, AMX the tile config and tile data
 * states plus, on Linux, a granted arch_prctl(ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA) request. Kernels for every ISA are compiled into the
 * binary (per-function target attributes); these checks decide which run. */
#ifndef SQ_CPU_FEATURES_H
#define SQ_CPU_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

#include "sq_error.h"

/* The int8 GEMM code paths, slowest to fastest. */
typedef enum sq_isa {
    SQ_ISA_SCALAR = 0,
    SQ_ISA_AVX2,       /* vpmaddubsw with the sign trick */
    SQ_ISA_AVXVNNI,    /* VEX vpdpbusd on ymm (u8 + 128, compensated) */
    SQ_ISA_AVX512VNNI, /* EVEX vpdpbusd on zmm (u8 + 128, compensated) */
    SQ_ISA_AMX,        /* tdpbssd on tiles (s8 x s8) */
    SQ_ISA_COUNT
} sq_isa;

typedef struct sq_cpu_features {
    bool avx2, fma, avx_vnni;
    bool avx512f, avx512bw, avx512vnni;
    bool avx512bf16; /* vdpbf16ps: the bf16 attention (attn_bf16.h) */
    bool amx_tile, amx_int8;
    /* AMX reported by CPUID and XCR0 but the OS refused tile data
     * permission: AMX is unusable (amx_tile/amx_int8 are then false). */
    bool amx_denied;
} sq_cpu_features;

/* The features of this CPU with OS support (detected once, then cached;
 * thread-safe). The first call may issue the AMX permission request. */
const sq_cpu_features *sq_cpu_features_get(void);

/* Lower-case name of isa ("scalar", "avx2", "avxvnni", "avx512vnni",
 * "amx"); "?" when out of range. */
const char *sq_isa_name(sq_isa isa);

/* Parse a name as written by sq_isa_name; returns -1 when unknown. */
int sq_isa_parse(const char *name, sq_isa *out);

/* True when this CPU (and OS) can run isa. When it cannot and missing is
 * non-NULL, *missing names the first missing feature ("avx512_vnni",
 * "amx_int8", "AMX tile-data permission (arch_prctl)", ...). */
bool sq_isa_supported(sq_isa isa, const char **missing);

/* The fastest isa this CPU can run. */
sq_isa sq_isa_best(void);

/* The isa to use: SQUINT_ISA when set (scalar|avx2|avxvnni|avx512vnni|amx,
 * or "auto"/empty for the best), else sq_isa_best(). Returns 0, or -1 with
 * err naming the value or the missing CPU feature when SQUINT_ISA cannot
 * be honoured (never a silent fallback). */
int sq_isa_select(sq_isa *out, sq_err *err);

/* The CPU's model name (CPUID brand string, spaces collapsed), e.g. "AMD EPYC
 * 9R14 96-Core Processor"; "unknown" when the CPU does not report one. */
void sq_cpu_name(char *out, size_t cap);

#endif

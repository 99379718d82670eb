/* Test-only scalar emulation of the AMX tile instructions that the AMX
 * kernel (libquant/kernels/gemm_s8_amx.inc) uses, under the names of the
 * <immintrin.h> intrinsics: include this instead of <immintrin.h>, then the
 * kernel body. Each thread has its own emulated state (tile config and the
 * 8 tile registers of palette 1: 16 rows x 64 bytes), as on hardware.
 *
 * Semantics follow the Intel SDM (and are stricter where the hardware
 * faults, so that a kernel bug shows up as a failure, never as silently
 * right numbers):
 *   _tile_loadconfig(cfg)  LDTILECFG: byte 0 palette (0 = release, 1 =
 *       the only other accepted), byte 1 start_row (must be 0), bytes
 *       2..15 reserved (must be 0), colsb[i] u16 at 16 + 2i, rows[i] at
 *       48 + i; tiles 8..15 must be 0; rows <= 16, colsb <= 64, and rows
 *       and colsb both zero (tile unused) or both non-zero. Zeroes every
 *       tile.
 *   _tile_loadd(t, base, stride)  TILELOADD: row r < rows[t] gets colsb[t]
 *       bytes from base + r * stride; the rest of the tile is zeroed.
 *   _tile_stored(t, base, stride)  TILESTORED: writes rows[t] x colsb[t]
 *       bytes, nothing else.
 *   _tile_zero(t)  TILEZERO.
 *   _tile_dpbssd(c, a, b)  TDPBSSD: requires c.rows == a.rows, a.colsb / 4
 *       == b.rows, c.colsb == b.colsb, colsb multiples of 4, three distinct
 *       registers; then for m < c.rows, n < c.colsb / 4:
 *       C[m][n] += sum over k < a.colsb / 4, i < 4 of
 *                  (s8)A[m][4k + i] * (s8)B[k][4n + i]
 *       in 32-bit two's complement arithmetic (wraps, no saturation).
 *   _tile_release()  TILERELEASE: back to the init state (no config).
 * Any tile use without a loaded config, or of a tile the config leaves
 * unused, is a fault: the emulator prints it and aborts.
 *
 * The counters in sq_emu_stats (atomic) let a test check that every
 * thread that loaded a config released it (live_configs back to 0) and
 * report the instruction mix. */
#ifndef SQ_AMX_EMUL_H
#define SQ_AMX_EMUL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQ_EMU_TILES 8
#define SQ_EMU_ROWS 16
#define SQ_EMU_COLSB 64

typedef struct sq_emu_tile {
    int rows, colsb; /* 0, 0: unused */
    uint8_t data[SQ_EMU_ROWS][SQ_EMU_COLSB];
} sq_emu_tile;

typedef struct sq_emu_state {
    int palette; /* 0: init state (no config loaded) */
    sq_emu_tile t[SQ_EMU_TILES];
} sq_emu_state;

static _Thread_local sq_emu_state sq_emu;

static struct {
    long live_configs; /* threads holding a config (loaded, not released) */
    long loadconfig, release, loadd, stored, zero, dpbssd;
} sq_emu_stats;

#define SQ_EMU_COUNT(field) __atomic_add_fetch(&sq_emu_stats.field, 1, __ATOMIC_RELAXED)

static void sq_emu_fault(const char *insn, int t, const char *why)
{
    fprintf(stderr, "AMX emulation fault: %s (tmm%d): %s\n", insn, t, why);
    fflush(stderr);
    abort();
}

/* The tile t, which must exist and be configured. */
static sq_emu_tile *sq_emu_use(const char *insn, int t)
{
    if (t < 0 || t >= SQ_EMU_TILES)
        sq_emu_fault(insn, t, "no such tile register in palette 1");
    if (sq_emu.palette == 0)
        sq_emu_fault(insn, t, "no tile config loaded in this thread");
    if (sq_emu.t[t].rows == 0)
        sq_emu_fault(insn, t, "tile not configured (rows = 0)");
    return &sq_emu.t[t];
}

static void sq_emu_reset(void)
{
    if (sq_emu.palette)
        __atomic_sub_fetch(&sq_emu_stats.live_configs, 1, __ATOMIC_RELAXED);
    memset(&sq_emu, 0, sizeof sq_emu);
}

static inline void _tile_release(void)
{
    SQ_EMU_COUNT(release);
    sq_emu_reset();
}

static inline void _tile_loadconfig(const void *config)
{
    const uint8_t *b = (const uint8_t *)config;
    SQ_EMU_COUNT(loadconfig);
    sq_emu_reset();
    if (b[0] == 0)
        return; /* palette 0: the init state */
    if (b[0] != 1)
        sq_emu_fault("ldtilecfg", -1, "palette other than 0 or 1");
    if (b[1] != 0)
        sq_emu_fault("ldtilecfg", -1, "start_row != 0 (no restarted instruction here)");
    for (int i = 2; i < 16; i++)
        if (b[i])
            sq_emu_fault("ldtilecfg", -1, "reserved byte not zero");
    for (int t = 0; t < 16; t++) {
        int colsb = b[16 + 2 * t] | b[17 + 2 * t] << 8, rows = b[48 + t];
        if (t >= SQ_EMU_TILES) {
            if (colsb || rows)
                sq_emu_fault("ldtilecfg", t, "tile beyond palette 1 configured");
            continue;
        }
        if (rows > SQ_EMU_ROWS || colsb > SQ_EMU_COLSB)
            sq_emu_fault("ldtilecfg", t, "rows > 16 or colsb > 64");
        if ((rows == 0) != (colsb == 0))
            sq_emu_fault("ldtilecfg", t, "rows and colsb must be both zero or both non-zero");
        sq_emu.t[t].rows = rows;
        sq_emu.t[t].colsb = colsb;
    }
    sq_emu.palette = 1;
    __atomic_add_fetch(&sq_emu_stats.live_configs, 1, __ATOMIC_RELAXED);
}

static inline void sq_emu_loadd(int t, const void *base, long stride)
{
    sq_emu_tile *x = sq_emu_use("tileloadd", t);
    SQ_EMU_COUNT(loadd);
    memset(x->data, 0, sizeof x->data);
    for (int r = 0; r < x->rows; r++)
        memcpy(x->data[r], (const uint8_t *)base + (long)r * stride, (size_t)x->colsb);
}

static inline void sq_emu_stored(int t, void *base, long stride)
{
    sq_emu_tile *x = sq_emu_use("tilestored", t);
    SQ_EMU_COUNT(stored);
    for (int r = 0; r < x->rows; r++)
        memcpy((uint8_t *)base + (long)r * stride, x->data[r], (size_t)x->colsb);
}

static inline void sq_emu_zero(int t)
{
    sq_emu_tile *x = sq_emu_use("tilezero", t);
    SQ_EMU_COUNT(zero);
    memset(x->data, 0, sizeof x->data);
}

static inline void sq_emu_dpbssd(int tc, int ta, int tb)
{
    sq_emu_tile *c = sq_emu_use("tdpbssd", tc), *a = sq_emu_use("tdpbssd", ta),
                *b = sq_emu_use("tdpbssd", tb);
    SQ_EMU_COUNT(dpbssd);
    if (tc == ta || tc == tb || ta == tb)
        sq_emu_fault("tdpbssd", tc, "source and destination registers must differ");
    if (c->colsb % 4 || a->colsb % 4 || b->colsb % 4)
        sq_emu_fault("tdpbssd", tc, "colsb not a multiple of 4");
    if (c->rows != a->rows)
        sq_emu_fault("tdpbssd", tc, "dst rows != src1 rows");
    if (a->colsb / 4 != b->rows)
        sq_emu_fault("tdpbssd", tc, "src1 colsb / 4 != src2 rows");
    if (c->colsb != b->colsb)
        sq_emu_fault("tdpbssd", tc, "dst colsb != src2 colsb");
    int kd = a->colsb / 4, nd = c->colsb / 4;
    for (int m = 0; m < c->rows; m++)
        for (int n = 0; n < nd; n++) {
            uint32_t acc;
            memcpy(&acc, c->data[m] + 4 * n, 4);
            for (int k = 0; k < kd; k++) {
                const int8_t *av = (const int8_t *)a->data[m] + 4 * k;
                const int8_t *bv = (const int8_t *)b->data[k] + 4 * n;
                int32_t dot = av[0] * bv[0] + av[1] * bv[1] + av[2] * bv[2] + av[3] * bv[3];
                acc += (uint32_t)dot; /* 32-bit wraparound */
            }
            memcpy(c->data[m] + 4 * n, &acc, 4);
        }
}

#define _tile_loadd(dst, base, stride) sq_emu_loadd((dst), (base), (long)(stride))
#define _tile_stored(src, base, stride) sq_emu_stored((src), (base), (long)(stride))
#define _tile_zero(dst) sq_emu_zero(dst)
#define _tile_dpbssd(dst, src1, src2) sq_emu_dpbssd((dst), (src1), (src2))

#endif

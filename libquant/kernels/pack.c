/* VNNI-4 panel packing (layouts in pack.h). */
#include "pack.h"
#include "par_threads.h"

#include <assert.h>
#include <string.h>

#define ROW_BYTES (SQ_PANEL_N * SQ_PANEL_K) /* 64: one k-group of a panel */

static uint64_t round_up(uint64_t v, uint64_t m)
{
    return (v + m - 1) / m * m;
}

uint64_t sq_packed_size_s8(int n, int k)
{
    return round_up((uint64_t)n, SQ_PANEL_N) * round_up((uint64_t)k, SQ_PANEL_K);
}

uint64_t sq_packed_size_s4(int n, int k)
{
    return round_up((uint64_t)n, SQ_PANEL_N) * round_up((uint64_t)k, SQ_INT4_GROUP) / 2;
}

uint64_t sq_packed_size(sq_qtype qt, int n, int k)
{
    const sq_qtype_traits *t = sq_qtype_get(qt);
    return t && t->packed_size ? t->packed_size(n, k) : 0;
}

static int clampi(int v, int lim)
{
    return v < -lim ? -lim : v > lim ? lim : v;
}

/* Panel row index of (panel p, k-group g) and byte index within the int8 row. */
static size_t row_of(const sq_qweight *q, int n, int k)
{
    return (size_t)(n / SQ_PANEL_N) * (size_t)(q->k_pad / SQ_PANEL_K) + (size_t)(k / SQ_PANEL_K);
}

static int byte_of(int n, int k)
{
    return (n % SQ_PANEL_N) * SQ_PANEL_K + k % SQ_PANEL_K;
}

/* Rows of panel p that hold real channels. */
static int live_rows(const sq_qweight *q, int p)
{
    int live = q->n - p * SQ_PANEL_N;
    return live > SQ_PANEL_N ? SQ_PANEL_N : live;
}

void sq_pack_panel_s8(sq_qweight *q, int p, const int8_t *rows, size_t ld)
{
    int kg = q->k_pad / SQ_PANEL_K, live = live_rows(q, p);
    int8_t *dst = (int8_t *)q->data + (size_t)p * kg * ROW_BYTES;
    memset(dst, 0, (size_t)kg * ROW_BYTES);
    for (int i = 0; i < SQ_PANEL_N; i++) {
        int32_t sum = 0;
        if (i < live)
            for (int k = 0; k < q->k; k++) {
                int v = clampi(rows[(size_t)i * ld + k], 127);
                dst[(size_t)(k / SQ_PANEL_K) * ROW_BYTES + byte_of(i, k)] = (int8_t)v;
                sum += v;
            }
        q->wsum[p * SQ_PANEL_N + i] = sum;
    }
}

void sq_pack_panel_s4(sq_qweight *q, int p, const int8_t *rows, size_t ld)
{
    int kg = q->k_pad / SQ_PANEL_K, groups = q->k_pad / SQ_INT4_GROUP, live = live_rows(q, p);
    uint8_t *dst = (uint8_t *)q->data + (size_t)p * kg * (ROW_BYTES / 2);
    memset(dst, 0, (size_t)kg * (ROW_BYTES / 2));
    for (int i = 0; i < SQ_PANEL_N; i++) {
        int32_t *ws = q->wsum + (size_t)(p * SQ_PANEL_N + i) * groups;
        memset(ws, 0, (size_t)groups * sizeof *ws);
        if (i >= live)
            continue;
        for (int k = 0; k < q->k; k++) {
            int v = clampi(rows[(size_t)i * ld + k], 7);
            int b = byte_of(i, k);
            uint8_t nib = (uint8_t)(v & 0x0f);
            dst[(size_t)(k / SQ_PANEL_K) * (ROW_BYTES / 2) + (b & 31)] |=
                (uint8_t)(b < 32 ? nib : nib << 4);
            ws[k / SQ_INT4_GROUP] += v;
        }
    }
}

void sq_pack(sq_qweight *q, const int8_t *values)
{
    const sq_qtype_traits *t = sq_qtype_get(q->qtype);
    int panels = q->n_pad / SQ_PANEL_N;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, (double)q->n_pad * q->k, panels))
    for (int p = 0; p < panels; p++)
        t->pack_panel(q, p, values + (size_t)p * SQ_PANEL_N * q->k, (size_t)q->k);
}

int sq_panel_get_s8(const sq_qweight *q, int n, int k)
{
    assert(n >= 0 && n < q->n_pad && k >= 0 && k < q->k_pad);
    return ((const int8_t *)q->data)[row_of(q, n, k) * ROW_BYTES + byte_of(n, k)];
}

int sq_panel_get_s4(const sq_qweight *q, int n, int k)
{
    assert(n >= 0 && n < q->n_pad && k >= 0 && k < q->k_pad);
    int b = byte_of(n, k);
    uint8_t byte = ((const uint8_t *)q->data)[row_of(q, n, k) * (ROW_BYTES / 2) + (b & 31)];
    int nib = b < 32 ? byte & 0x0f : byte >> 4;
    return (nib ^ 8) - 8; /* sign-extend the two's complement nibble */
}

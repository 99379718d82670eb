/* Consistency of a packed weight (qweight_check.h). */
#include "qweight_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pack.h"
#include "qlinear_ref.h"

#define ROW_BYTES (SQ_PANEL_N * SQ_PANEL_K)
#define ROWS_PER_GROUP (SQ_INT4_GROUP / SQ_PANEL_K)

const char *sq_qweight_problem_suffix(sq_qweight_problem p)
{
    return p == SQ_QW_BAD_SCALE ? "scale" : p == SQ_QW_BAD_WSUM ? "wsum" : "weight";
}

static sq_qweight_problem fail(sq_qweight_problem p, char *why, size_t n, const char *fmt, ...)
    SQ_PRINTF(4, 5);
static sq_qweight_problem fail(sq_qweight_problem p, char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && n)
        vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return p;
}

/* Per-byte sums of `rows` consecutive 64-byte int8 panel rows, and whether
 * any byte is -128. Written so the compiler vectorizes it. */
static int sum_rows_s8(const int8_t *w, size_t rows, int32_t s[ROW_BYTES])
{
    int bad = 0;
    for (size_t r = 0; r < rows; r++, w += ROW_BYTES)
        for (int b = 0; b < ROW_BYTES; b++) {
            s[b] += w[b];
            bad |= w[b] == -128;
        }
    return bad;
}

/* The same for 32-byte int4 rows: lanes 0..7 in the low nibbles, 8..15 in
 * the high nibbles (pack.h); a nibble v is the value (v ^ 8) - 8. */
static int sum_rows_s4(const uint8_t *w, size_t rows, int32_t s[ROW_BYTES])
{
    int bad = 0;
    for (size_t r = 0; r < rows; r++, w += ROW_BYTES / 2)
        for (int b = 0; b < ROW_BYTES / 2; b++) {
            int lo = w[b] & 15, hi = w[b] >> 4;
            s[b] += (lo ^ 8) - 8;
            s[b + ROW_BYTES / 2] += (hi ^ 8) - 8;
            bad |= (lo == 8) | (hi == 8);
        }
    return bad;
}

/* The first padding value (channel >= n or input >= k) that is not 0. */
static int padding_nonzero(const sq_qweight *q, int *pn, int *pk)
{
    int (*get)(const sq_qweight *, int, int) = sq_qtype_get(q->qtype)->get;
    for (int n = 0; n < q->n_pad; n++) {
        int k0 = n < q->n ? q->k : 0; /* a padding channel is padding throughout */
        for (int k = k0; k < q->k_pad; k++)
            if (get(q, n, k) != 0) {
                *pn = n;
                *pk = k;
                return 1;
            }
    }
    return 0;
}

sq_qweight_problem sq_qweight_check(const sq_qweight *q, char *why, size_t why_size)
{
    int s8 = q->qtype == SQ_QT_S8;
    if (!s8 && q->qtype != SQ_QT_S4G128)
        return fail(SQ_QW_BAD_WEIGHT, why, why_size, "not a packed int8 or int4 weight");
    if (s8 && q->k_pad > SQ_REF_MAX_K)
        return fail(SQ_QW_BAD_WEIGHT, why, why_size,
                    "K = %d inputs: an int8 linear takes at most %d (the int32 accumulator "
                    "bound 127 * 127 * K < 2^31)", q->k, SQ_REF_MAX_K);
    const int G = sq_qweight_groups(q), panels = q->n_pad / SQ_PANEL_N;
    const size_t kg = (size_t)q->k_pad / SQ_PANEL_K;
    const size_t row_bytes = s8 ? ROW_BYTES : ROW_BYTES / 2;
    /* Per panel and group: sums of the 64 byte positions, 4 per channel. */
    const size_t rows_per_sum = s8 ? kg : ROWS_PER_GROUP;
    for (int p = 0; p < panels; p++)
        for (int g = 0; g < G; g++) {
            int32_t s[ROW_BYTES] = {0};
            const uint8_t *w = (const uint8_t *)q->data +
                               ((size_t)p * kg + (size_t)g * rows_per_sum) * row_bytes;
            int bad = s8 ? sum_rows_s8((const int8_t *)w, rows_per_sum, s)
                         : sum_rows_s4(w, rows_per_sum, s);
            if (bad)
                return fail(SQ_QW_BAD_WEIGHT, why, why_size,
                            "panel %d holds the value %d, which no %s weight may take", p,
                            s8 ? -128 : -8, s8 ? "int8 (range -127..127)" : "int4 (range -7..7)");
            for (int i = 0; i < SQ_PANEL_N; i++) {
                int64_t sum = (int64_t)s[4 * i] + s[4 * i + 1] + s[4 * i + 2] + s[4 * i + 3];
                int n = p * SQ_PANEL_N + i;
                int32_t stored = q->wsum[(size_t)n * G + g];
                if (stored != sum) {
                    if (G > 1)
                        return fail(SQ_QW_BAD_WSUM, why, why_size,
                                    "channel %d group %d: stored %d, the panels sum to %lld", n,
                                    g, (int)stored, (long long)sum);
                    return fail(SQ_QW_BAD_WSUM, why, why_size,
                                "channel %d: stored %d, the panels sum to %lld", n, (int)stored,
                                (long long)sum);
                }
            }
        }
    int pn, pk;
    if (padding_nonzero(q, &pn, &pk))
        return fail(SQ_QW_BAD_WEIGHT, why, why_size,
                    "padding value W[%d][%d] is not 0 (the matrix is [%d, %d])", pn, pk, q->n,
                    q->k);
    for (size_t i = 0; i < (size_t)q->n * G; i++) {
        float v = q->scale[i];
        if (!(isfinite(v) && v > 0))
            return fail(SQ_QW_BAD_SCALE, why, why_size,
                        "entry %zu (channel %zu) is %g, not a finite scale > 0", i, i / G,
                        (double)v);
    }
    return SQ_QW_OK;
}

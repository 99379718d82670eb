#include "histogram.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "par_threads.h"

/* Values per work item of the parallel loop. */
#define BLOCK_VALUES 16384
/* Each thread counts into NSUB interleaved 32-bit sub-histograms: consecutive
 * values often land in the same bin (bin 0 after GELU) and one counter would
 * serialize on store-to-load forwarding. They are flushed into 64-bit counts
 * before any counter could reach 2^32 and at the end. */
#define NSUB 4
#define FLUSH_VALUES ((size_t)1 << 31)

void sq_hist_init(sq_hist *h)
{
    memset(h, 0, sizeof *h);
    h->exp = SQ_HIST_MIN_EXP;
}

double sq_hist_range(const sq_hist *h)
{
    return h->max_abs > 0 ? ldexp(1.0, h->exp) : 0.0;
}

double sq_hist_bin_width(const sq_hist *h)
{
    return h->max_abs > 0 ? ldexp(1.0, h->exp - SQ_HIST_LOG2_BINS) : 0.0;
}

int sq_hist_used_bins(const sq_hist *h)
{
    for (int k = SQ_HIST_BINS - 1; k >= 0; k--)
        if (h->count[k])
            return k + 1;
    return 0;
}

/* Smallest exponent e with 2^e > v (v finite, > 0), clamped to the minimum. */
static int exp_above(float v)
{
    int e = ilogbf(v) + 1;
    return e < SQ_HIST_MIN_EXP ? SQ_HIST_MIN_EXP : e;
}

/* Re-bin to range 2^e (e >= h->exp): new bin = old bin >> shift, which is
 * exactly `shift` pairwise doublings. */
static void rebin(sq_hist *h, int e)
{
    int shift = e - h->exp;
    if (shift <= 0)
        return;
    if (shift >= SQ_HIST_LOG2_BINS) {
        uint64_t all = 0;
        for (int k = 0; k < SQ_HIST_BINS; k++)
            all += h->count[k];
        memset(h->count, 0, sizeof h->count);
        h->count[0] = all;
    } else {
        for (int j = 0; j < SQ_HIST_BINS >> shift; j++) {
            uint64_t s = 0;
            for (int k = j << shift; k < (j + 1) << shift; k++)
                s += h->count[k];
            h->count[j] = s;
        }
        memset(h->count + (SQ_HIST_BINS >> shift), 0,
               (SQ_HIST_BINS - (SQ_HIST_BINS >> shift)) * sizeof h->count[0]);
    }
    h->exp = e;
}

void sq_hist_grow(sq_hist *h, float v)
{
    if (!(v > 0))
        return;
    if (h->max_abs > 0) {
        if (v >= ldexpf(1.0f, h->exp))
            rebin(h, exp_above(v));
    } else {
        /* Only zeros so far, all in bin 0 at any range: pick the range directly. */
        h->exp = exp_above(v);
    }
    if (v > h->max_abs)
        h->max_abs = v;
}

/* Bin of a finite |x| = a: exact floor(a * 2^(11-exp)). The clamp only
 * matters for a caller of sq_hist_add_finite that understated max_abs. */
static inline uint32_t bin_of(float a, float inv)
{
    float t = a * inv;
    return t < (float)SQ_HIST_BINS ? (uint32_t)t : SQ_HIST_BINS - 1;
}

/* Count x[0..n) into sub-histograms sub[NSUB][BINS]; NaN/Inf skipped. */
static void count_block(uint32_t (*sub)[SQ_HIST_BINS], const float *x, size_t n, float inv,
                        uint64_t *zeros)
{
    uint64_t z = 0;
    size_t i = 0;
    for (; i + NSUB <= n; i += NSUB) {
        for (int s = 0; s < NSUB; s++) {
            float a = fabsf(x[i + s]);
            if (a <= FLT_MAX) {
                sub[s][bin_of(a, inv)]++;
                z += a == 0.0f;
            }
        }
    }
    for (; i < n; i++) {
        float a = fabsf(x[i]);
        if (a <= FLT_MAX) {
            sub[0][bin_of(a, inv)]++;
            z += a == 0.0f;
        }
    }
    *zeros += z;
}

static void flush(uint64_t *dst, uint32_t (*sub)[SQ_HIST_BINS])
{
    for (int s = 0; s < NSUB; s++)
        for (int k = 0; k < SQ_HIST_BINS; k++)
            dst[k] += sub[s][k];
    memset(sub, 0, sizeof(uint32_t) * NSUB * SQ_HIST_BINS);
}

/* Count the finite values of x into h, whose range already covers them.
 * Integer counts summed per thread: the order of the sums does not matter. */
static void count_all(sq_hist *h, const float *x, size_t n)
{
    float inv = ldexpf(1.0f, SQ_HIST_LOG2_BINS - h->exp);
    size_t nblocks = (n + BLOCK_VALUES - 1) / BLOCK_VALUES;
    uint64_t zeros = 0, counted = 0;
    /* a bin index and an increment per value, and each thread's
     * sub-histograms to clear and flush */
#pragma omp parallel reduction(+ : zeros, counted) \
    num_threads(sq_par_threads(SQ_WORK_SCALAR, 2.0 * n, (int64_t)nblocks))
    {
        uint32_t sub[NSUB][SQ_HIST_BINS];
        uint64_t local[SQ_HIST_BINS];
        memset(sub, 0, sizeof sub);
        memset(local, 0, sizeof local);
        size_t pending = 0;
#pragma omp for schedule(static)
        for (size_t b = 0; b < nblocks; b++) {
            size_t lo = b * BLOCK_VALUES;
            size_t len = n - lo < BLOCK_VALUES ? n - lo : BLOCK_VALUES;
            if (pending + len >= FLUSH_VALUES) {
                flush(local, sub);
                pending = 0;
            }
            count_block(sub, x + lo, len, inv, &zeros);
            pending += len;
        }
        flush(local, sub);
        uint64_t c = 0;
        for (int k = 0; k < SQ_HIST_BINS; k++)
            c += local[k];
        counted += c;
#pragma omp critical(sq_hist_merge)
        for (int k = 0; k < SQ_HIST_BINS; k++)
            h->count[k] += local[k];
    }
    h->zeros += zeros;
    h->total += counted;
}

void sq_hist_add_finite(sq_hist *h, const float *x, size_t n, float max_abs)
{
    sq_hist_grow(h, max_abs);
    count_all(h, x, n);
}

size_t sq_hist_add(sq_hist *h, const float *x, size_t n)
{
    float m = 0.0f;
    size_t bad = 0;
#pragma omp parallel for schedule(static) reduction(max : m) reduction(+ : bad) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, (double)n, (int64_t)n))
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        int ok = a <= FLT_MAX; /* false for NaN and Inf; branch-free so it vectorizes */
        m = ok && a > m ? a : m;
        bad += !ok;
    }
    sq_hist_grow(h, m);
    count_all(h, x, n);
    return bad;
}

void sq_hist_merge(sq_hist *dst, const sq_hist *src)
{
    if (src->max_abs > 0) {
        /* Align both to the larger range; both are powers of two: exact. */
        sq_hist_grow(dst, src->max_abs);
        int shift = dst->exp - src->exp;
        for (int k = 0; k < SQ_HIST_BINS; k++)
            dst->count[shift >= SQ_HIST_LOG2_BINS ? 0 : k >> shift] += src->count[k];
    } else {
        dst->count[0] += src->count[0]; /* src holds only zeros */
    }
    dst->total += src->total;
    dst->zeros += src->zeros;
}

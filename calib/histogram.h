/* A histogram of |x| for activation calibration: SQ_HIST_BINS equal bins over
 * [0, range), u64 counts.
 *
 * The range is always a power of two, 2^exp, and always strictly greater than
 * the largest |x| counted. Bin index = floor(|x| * 2^(11 - exp)); multiplying a
 * float by a power of two is exact, so:
 *   - doubling the range (bins 2j and 2j+1 merge into j) gives exactly the
 *     histogram that binning the same values directly at the doubled range
 *     gives;
 *   - the final histogram depends only on the multiset of values counted, not
 *     on how they were split into batches, nor on the thread count;
 *   - two histograms always differ in range by a power of two, so merging is
 *     always exact (no proportional splitting of bins is ever needed).
 * The price is resolution: the data fills between half and all of the bins
 * (bin width <= max|x| / 1024).
 *
 * Zeros: exact zeros are counted in bin 0 like every other value (bin 0 also
 * holds the many small post-GELU values, which are real values that quantize
 * to 0 with a small error), and additionally in `zeros`, so that a selection
 * method can drop them (TensorRT's skip_zeros) or treat them exactly (zero
 * quantizes to zero with no error at any scale). Non-finite values are never
 * counted; sq_hist_add reports how many it skipped. */
#ifndef SQ_HISTOGRAM_H
#define SQ_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#define SQ_HIST_BINS 2048
#define SQ_HIST_LOG2_BINS 11
/* Ranges never go below 2^SQ_HIST_MIN_EXP (keeps 2^(11-exp) a normal float). */
#define SQ_HIST_MIN_EXP (-100)

typedef struct sq_hist {
    int exp;        /* range = 2^exp; meaningful once max_abs > 0 */
    float max_abs;  /* largest |x| counted (0 while only zeros were seen) */
    uint64_t total; /* values counted (finite only) */
    uint64_t zeros; /* exact zeros among them (also inside count[0]) */
    uint64_t count[SQ_HIST_BINS];
} sq_hist;

/* An empty histogram. */
void sq_hist_init(sq_hist *h);

/* Count the finite values of x[0..n) (all of them, sign dropped). Grows the
 * range first when the batch max exceeds it. Parallel over the values with
 * OpenMP when n is large; the result is identical for any thread count.
 * Returns the number of NaN/Inf values skipped (not counted). */
size_t sq_hist_add(sq_hist *h, const float *x, size_t n);

/* Same as sq_hist_add for a batch the caller has already scanned: every x is
 * finite and |x| <= max_abs. Saves one pass over the data. */
void sq_hist_add_finite(sq_hist *h, const float *x, size_t n, float max_abs);

/* Make the range at least large enough for |x| = v (v finite, >= 0): doubles
 * it, merging bins pairwise, as many times as needed. Counts are preserved. */
void sq_hist_grow(sq_hist *h, float v);

/* dst += src (dst's range grows to src's if smaller; exact). */
void sq_hist_merge(sq_hist *dst, const sq_hist *src);

/* The range upper edge (2^exp), 0 for a histogram without a nonzero value. */
double sq_hist_range(const sq_hist *h);
/* Width of one bin (range / SQ_HIST_BINS), 0 without a nonzero value. */
double sq_hist_bin_width(const sq_hist *h);
/* One past the last nonzero bin (0 for an empty histogram). */
int sq_hist_used_bins(const sq_hist *h);

#endif

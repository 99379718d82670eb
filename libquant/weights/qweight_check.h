/* Is a packed weight what its kernels assume? A .sqm is hostile input: its
 * checksums can be recomputed by anyone, so a loaded sq_qweight is checked
 * against the rules every GEMM path relies on (formats/SQM.md, "What the
 * loader proves"):
 *   - panel values in [-127, 127] (int8: -128 breaks the AVX2 sign trick) or
 *     [-7, 7] (int4: the nibble 0x8 never occurs), padding (channels >= n,
 *     inputs >= k) zero;
 *   - wsum equal to the sum of the panel's values per channel (int8) or per
 *     channel and 128-group (int4), padding channels 0: the VNNI kernels
 *     subtract 128 * wsum, so a wrong entry shifts every output silently;
 *   - int8: k_pad <= SQ_REF_MAX_K, so that sum_k a w (|a|, |w| <= 127) is
 *     exact in int32 on every path;
 *   - the n (int8) or n * groups (int4) weight scales finite and > 0.
 * One pass over the panels: about as much memory traffic as one GEMM row. */
#ifndef SQ_QWEIGHT_CHECK_H
#define SQ_QWEIGHT_CHECK_H

#include <stddef.h>

#include "qweight.h"

/* The companion tensor a problem is in. */
typedef enum sq_qweight_problem {
    SQ_QW_OK = 0,
    SQ_QW_BAD_WEIGHT, /* the panels: a value out of range, non-zero padding, K too large */
    SQ_QW_BAD_SCALE,  /* a scale that is not finite and > 0 */
    SQ_QW_BAD_WSUM,   /* a wsum entry that is not the sum of its panel values */
} sq_qweight_problem;

/* Check q (data, scale for the n live rows, wsum) against the rules above.
 * Returns SQ_QW_OK, or the first problem with a one-line reason in why
 * (naming the channel, group and values). */
sq_qweight_problem sq_qweight_check(const sq_qweight *q, char *why, size_t why_size);

/* The tensor-name suffix of a problem: "weight", "scale" or "wsum". */
const char *sq_qweight_problem_suffix(sq_qweight_problem p);

#endif

/* Attention in int8 (formats/SQM.md 6.5, `attention: int8`): one
 * (sequence, head) of ctx = softmax(c Q K^T) V with Q, K and V quantized
 * dynamically and both matmuls summed exactly in int32, the softmax's
 * probabilities kept as 8-bit codes normalised by their integer sum.
 *
 * The bits are defined here, not by the instruction, and the scalar code
 * computes them on every CPU:
 *   rows(X): for each row r (n values) a_r = max_t |X[r][t]| (NaN ignored);
 *            when a_r is 0 or not finite: codes 0 and step 0; otherwise
 *            codes round_s8(X[r][t] * fl(127 / a_r)) (qlinear_ref.h: half
 *            away from zero, clamped to +-127) and step fl(a_r / 127).
 *   cols(X): the same per column (over the sequence).
 *   q, sq = rows(Q); k, sk = rows(K); u_i = fl(c sq_i);
 *   S[i][j] = fl(fl(u_i sk_j) (float) sum_t q[i][t] k[j][t]);
 *   p[i][j] = sq_softmax_row_u8 of S[i] (ops.h: rint(255 exp(S - max))),
 *   Z_i = sum_j p[i][j] (>= 255), r_i = fl(1 / (float) Z_i);
 *   v, sv = cols(V);
 *   ctx[i][d] = fl(fl(r_i sv_d) (float) sum_j p[i][j] v[j][d]).
 * Every sum is exact in int32 (|S's| <= 127^2 dh, ctx's <= 255 127 L); the
 * float conversions round to nearest even. On a CPU with AVX512-VNNI (and
 * the AVX-512 ops level) vpdpbusd kernels give the same values (Q as u8 =
 * q + 128 with 128 sum_t k[j][t] taken off; P is u8 already); the test
 * unit-attn_s8 holds the two to the same bits.
 *
 * Both paths round as the activation quantize step does: the scalar one
 * through sq_gemm_quantizer, the vector one with round_s8_zmm.h. */
#ifndef SQ_ATTN_S8_H
#define SQ_ATTN_S8_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of scratch one head needs at length <= max_len, head width dh. */
size_t sq_attn_s8_scratch_bytes(int max_len, int dh);

/* True when the vpdpbusd kernels run here (AVX512-VNNI and BW, and the
 * AVX-512 ops level, ops.h); otherwise the scalar code runs. */
bool sq_attn_s8_hw(void);

/* Times of the three steps of one head (seconds, sq_op_now), or NULL. */
typedef struct sq_attn_s8_times {
    double scores, softmax, context;
} sq_attn_s8_times;

/* One head: Q, K, V L rows of dh floats each, row stride ld; ctx gets L
 * rows of dh (stride ldc). c: the scores' scale. scratch:
 * sq_attn_s8_scratch_bytes(L, dh) bytes, 64-byte aligned. hw: the
 * vpdpbusd path (only when sq_attn_s8_hw()). prange (or NULL) gets the
 * min and max over i, j of p[i][j] / Z_i folded in (min into prange[0],
 * max into prange[1]); times (or NULL) gets each step's time added. */
void sq_attn_s8_head(const float *Q, const float *K, const float *V, int ld, int L, int dh,
                     float c, float *ctx, int ldc, void *scratch, bool hw, float *prange,
                     sq_attn_s8_times *times);

#endif

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
 * through sq_gemm_quantizer, the vector one with round_s8_zmm.h.
 *
 * The causal form (decoders: M new query rows against N cached keys, row i
 * seeing keys 0 .. n_i - 1, n_i = first + i) cannot quantize V by columns:
 * a column's range over the sequence would let later tokens change an
 * earlier row's output, and a prefill would no longer equal token-by-token
 * decoding. It quantizes V by rows, each token on its own, and folds the
 * token's step into the probabilities before the second 8-bit rounding:
 *   q, sq = rows(Q); k, sk = rows(K); v, sv = rows(V) (sv_j per token);
 *   S[i][j] as above, for j < n_i;
 *   p[i][j] = sq_softmax_row_u8 of S[i][0 .. n_i), Z_i = sum_j p[i][j];
 *   w_j = fl((float) p[i][j] sv_j), a_i = max_j w_j;
 *   e[i][j] = (int) min(fl(fl(w_j fl(255 / a_i)) + 0.5), 255) (0 beyond n_i);
 *   g_i = fl(fl(a_i / 255) fl(1 / (float) Z_i));
 *   ctx[i][d] = fl(fl(g_i 1) (float) sum_j e[i][j] v[j][d])
 * (a_i 0 or not finite: e and g_i 0). Row i depends on Q_i and the first n_i
 * keys and values only, never on M or on later keys: the same bits for a
 * row whether it runs in a prefill or alone. */
#ifndef SQ_ATTN_S8_H
#define SQ_ATTN_S8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * rows of dh (stride ldc). c: the scores' scale. rel (or NULL): a bias
 * added to score (i, j) before the softmax, rel[j - i] (i, j < L; MPNet's
 * relative positions, encoder.h rel_table). win: the sliding window's half
 * width (attn_window.h), -1 none. scratch:
 * sq_attn_s8_scratch_bytes(L, dh) bytes, 64-byte aligned. hw: the
 * vpdpbusd path (only when sq_attn_s8_hw()). prange (or NULL) gets the
 * min and max over i, j of p[i][j] / Z_i folded in (min into prange[0],
 * max into prange[1]); times (or NULL) gets each step's time added. */
void sq_attn_s8_head(const float *Q, const float *K, const float *V, int ld, int L, int dh,
                     float c, const float *rel, int win, float *ctx, int ldc, void *scratch,
                     bool hw, float *prange, sq_attn_s8_times *times);

/* The causal form's KV cache of one (layer, kv head): each key's and
 * value's codes and step, quantized once when the token enters (rows() of
 * that row alone), kept in the vpdpbusd kernels' packed layout so a step
 * of decoding reads them as they are. Positions hold stale codes beyond
 * the current length; nothing reads them into a result. */
typedef struct sq_attn_s8_cache {
    int max_keys, dh, dq, dv;
    uint8_t *kp;   /* K codes in blocks of 16 keys, quads along dh */
    uint8_t *vp;   /* V codes in quads along the sequence, 16 channels a block */
    int32_t *ksum; /* 128 x the sum of a key's codes */
    float *sk;     /* a key's step */
    float *svt;    /* a value row's step */
    float *mrow;   /* the quantize step's multipliers (scratch of put) */
} sq_attn_s8_cache;

/* Bytes of a cache of max_keys positions at head width dh (<= 2048). */
size_t sq_attn_s8_cache_bytes(int max_keys, int dh);
/* Lay a cache out in mem (64-byte aligned, sq_attn_s8_cache_bytes), zeroed. */
void sq_attn_s8_cache_init(sq_attn_s8_cache *kv, void *mem, int max_keys, int dh);
/* Quantize and store the key k and value v (dh floats each) at pos. hw:
 * the zmm quantize step (only when sq_attn_s8_hw()); the same codes. */
void sq_attn_s8_cache_put(sq_attn_s8_cache *kv, int pos, const float *k, const float *v, bool hw);

/* Bytes of scratch of sq_attn_s8_causal_cached: up to max_rows queries,
 * max_keys keys. */
size_t sq_attn_s8_causal_scratch_bytes(int max_rows, int max_keys, int dh);

/* The causal form above: Q M rows (stride ldq) against the cache's first N
 * positions, first >= 1 and first + M - 1 <= N <= max_keys; ctx gets M rows
 * of dh (stride ldc). Same scratch alignment and hw as sq_attn_s8_head. */
void sq_attn_s8_causal_cached(const float *Q, int ldq, int M, const sq_attn_s8_cache *kv, int N,
                              int first, float c, float *ctx, int ldc, void *scratch, bool hw);

#endif

/* The two f32 attention matmuls of one (sequence, head), S = c (Q K^T)
 * and ctx = P V, with their bits defined here rather than by a BLAS:
 *   S[i][j]   = fl(c * dot(Q_i, K_j)),
 *   ctx[i][e] = dot(P_i, V[.][e]),
 * where dot(a, b) over n terms is acc = +0; acc = fma(a_t, b_t, acc) for
 * t = 0 .. n-1 in order (one rounding per term). The scalar code
 * (fmaf) and the AVX2 / AVX-512 kernels (one lane per output, the same
 * chain) give the same bits on every CPU and at every thread count; the
 * level follows the ops level (ops.h). unit-attn_f32 holds them together. */
#ifndef SQ_ATTN_F32_H
#define SQ_ATTN_F32_H

#include <stddef.h>

/* Floats of scratch one head needs at length <= max_len, head width dh
 * (K transposed and padded). The scratch must be 64-byte aligned. */
size_t sq_attn_f32_scratch_floats(int max_len, int dh);

/* Q, K: L rows of dh floats, row stride ld; S gets [L][L] (stride L). */
void sq_attn_f32_scores(const float *Q, const float *K, int ld, int L, int dh, float c, float *S,
                        float *scratch);

/* P: [L][L] (stride L); V: L rows of dh floats (stride ld); ctx gets L
 * rows of dh (stride ldc). */
void sq_attn_f32_context(const float *P, const float *V, int ld, int L, int dh, float *ctx,
                         int ldc);

/* The same for M queries and N keys (a causal LM's new rows against its
 * cache), every matrix with its own row stride: S [M][N] (stride lds),
 * ctx [M][dh] (stride ldc); the scratch holds pad32(N) x dh floats
 * (sq_attn_f32_scratch_floats(N, dh)). Each output is the same fma chain
 * as above, so row i's bits do not depend on M. */
void sq_attn_f32_scores_mn(const float *Q, int ldq, int M, const float *K, int ldk, int N,
                           int dh, float c, float *S, int lds, float *scratch);
void sq_attn_f32_context_mn(const float *P, int ldp, int M, const float *V, int ldv, int N,
                            int dh, float *ctx, int ldc);

#endif

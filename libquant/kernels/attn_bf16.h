/* Attention matmuls in bf16 (formats/SQM.md 6.5, `attention: bf16`): the
 * two products of one (sequence, head), S = c (Q K^T) and ctx = P V, with
 * their operands rounded to bf16 and the products summed in f32, two
 * pairs at a time as AVX512-BF16's vdpbf16ps does. The softmax between
 * them stays f32 (ops.h).
 *
 * The bits are defined here, not by the instruction, and the scalar code
 * computes them on every CPU:
 *   bf16(x): NaN -> a quiet NaN; |x| < 2^-60 -> a zero of x's sign (so no
 *            product of two operands is ever below the f32 normal range);
 *            otherwise x rounded to nearest-even to 8 significant bits.
 *   dot(a, b) over n pairs (n = dh / 2 for S; ceil(L / 2) for ctx, the odd
 *            last element paired with a 0): acc = +0; for each pair t in
 *            order: acc = ftz(acc + a[2t+1] b[2t+1]); acc = ftz(acc +
 *            a[2t] b[2t]); each product is exact in f32 and ftz() makes a
 *            result below 2^-126 in magnitude a zero of its sign.
 *   S[i][j] = fl(c * dot(bf16(Q_i), bf16(K_j)));
 *   ctx[i][d] = dot(bf16(P_i), bf16(V[.][d])).
 * On a CPU with AVX512-BF16 (and the AVX-512 ops level) the same values
 * come from vdpbf16ps (DAZ / FTZ, round to nearest even; the test
 * unit-attn_bf16 holds the two to the same bits). */
#ifndef SQ_ATTN_BF16_H
#define SQ_ATTN_BF16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* bf16(x) as above, the upper 16 bits of an f32. */
uint16_t sq_bf16_round(float x);

/* Bytes of scratch one head needs at length <= max_len, head width dh. */
size_t sq_attn_bf16_scratch_bytes(int max_len, int dh);

/* True when the vdpbf16ps path runs here (the CPU has AVX512-BF16 and the
 * ops level, ops.h, is AVX-512); otherwise the scalar code runs. */
bool sq_attn_bf16_hw(void);

/* Q, K: L rows of dh (even) floats, row stride ld; S gets [L][L] (stride
 * L). scratch: sq_attn_bf16_scratch_bytes(L, dh) bytes, 64-byte aligned.
 * hw: the vdpbf16ps path (only when sq_attn_bf16_hw()). */
void sq_attn_bf16_scores(const float *Q, const float *K, int ld, int L, int dh, float c,
                         float *S, void *scratch, bool hw);

/* P: [L][L] (stride L), V: L rows of dh floats (stride ld); ctx gets L rows
 * of dh (stride ldc). Same scratch and hw as above. */
void sq_attn_bf16_context(const float *P, const float *V, int ld, int L, int dh, float *ctx,
                          int ldc, void *scratch, bool hw);

/* The same two products for M query rows against N keys (a decoder's new
 * rows against its KV cache): Q M rows (stride ldq), K N rows (stride
 * ldk), S [M][N] (stride lds); P [M][N] (stride ldp), V N rows (stride
 * ldv), ctx M rows (stride ldc). Row i's bits depend on its own Q or P
 * row and on K or V only, never on M: the square calls above are these
 * with M = N = L. scratch: sq_attn_bf16_scratch_bytes_mn(M, N, dh). */
size_t sq_attn_bf16_scratch_bytes_mn(int max_rows, int max_keys, int dh);
void sq_attn_bf16_scores_mn(const float *Q, int ldq, int M, const float *K, int ldk, int N,
                            int dh, float c, float *S, int lds, void *scratch, bool hw);
void sq_attn_bf16_context_mn(const float *P, int ldp, int M, const float *V, int ldv, int N,
                             int dh, float *ctx, int ldc, void *scratch, bool hw);

#endif

/* Rotary positions of an encoder (NomicBERT, hf_config.h SQ_POS_ROTARY):
 * the q and k rows of every head rotated by their token's index in its
 * sequence, in place on the attention core's q|k|v rows before any score is
 * taken, so the f32, bf16 and int8 attention all see the same rotated rows.
 *
 * The pairing is GPT-NeoX's "rotate half" (rotary_emb_interleaved false):
 * for head size d, dimension i < d/2 pairs with i + d/2 and both turn by
 *   angle(p, i) = p * base^(-2i/d)
 *   x'[i]       = x[i] cos - x[i + d/2] sin
 *   x'[i + d/2] = x[i + d/2] cos + x[i] sin
 * The frequency and the angle are float32 steps as the reference computes
 * them (its cos/sin cache is float32 `arange(p) outer inv_freq`): e = float
 * 2i / float d, inv = 1 / float(base^e), angle = float(p * inv), cos and sin
 * of it rounded to float (SQM.md 6.12 gives the exact steps). The
 * checkpoint's Wqkv rows are used as they are (no permutation at load). */
#ifndef SQ_ENCODER_ROPE_H
#define SQ_ENCODER_ROPE_H

/* The frequency of pair i of a head of size d: float32 1 / base^(2i/d). */
float sq_rope_inv_freq(double base, int i, int d);

/* Rotate one row of `heads` heads of size d (contiguous, head h at h * d)
 * to position pos. */
void sq_rope_rotate_row(float *x, int heads, int d, int pos, double base);

/* Every sequence of a packed batch (offsets[n_seq + 1]): q (columns
 * [0, D)) and k ([D, 2D)) of rows with stride 3D, position = the row's
 * index within its sequence. Each element on its own: the same bits at
 * any thread count. */
void sq_rope_batch(float *qkv, int D, int heads, const int *offsets, int n_seq, double base);

#endif

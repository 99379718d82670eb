/* A sliding attention window (ModernBERT's local layers): query i of a
 * sequence of L tokens sees key j only when |i - j| <= win; win < 0: every
 * key (a global layer, and every other family). Keys outside the window
 * get probability exactly 0: the softmax runs over the window's keys only,
 * which is the reference's additive -inf (finfo.min) mask. The f32, bf16
 * and int8 attention all take their window from here. */
#ifndef SQ_ATTN_WINDOW_H
#define SQ_ATTN_WINDOW_H

#include <stdint.h>

/* The keys [*lo, *hi) that query i sees. */
static inline void sq_attn_window(int i, int L, int win, int *lo, int *hi)
{
    if (win < 0) {
        *lo = 0, *hi = L;
        return;
    }
    *lo = i - win > 0 ? i - win : 0;
    *hi = i + win + 1 < L ? i + win + 1 : L;
}

/* The probabilities of query row i from its L scores, in place: zero
 * outside the window, sq_softmax_row over it (win < 0: sq_softmax_row of the
 * row, the same bits as without a window). */
void sq_attn_window_softmax(float *row, int i, int L, int win);

/* The same for the int8 attention's probability codes (sq_softmax_row_u8):
 * codes outside the window are 0; returns the sum of the codes. */
int sq_attn_window_softmax_u8(const float *row, int i, int L, int win, uint8_t *codes);

#endif

#include "attn_window.h"

#include <string.h>

#include "ops.h"

void sq_attn_window_softmax(float *row, int i, int L, int win)
{
    int lo, hi;
    sq_attn_window(i, L, win, &lo, &hi);
    memset(row, 0, (size_t)lo * sizeof *row);
    sq_softmax_row(row + lo, hi - lo);
    memset(row + hi, 0, (size_t)(L - hi) * sizeof *row);
}

int sq_attn_window_softmax_u8(const float *row, int i, int L, int win, uint8_t *codes)
{
    int lo, hi;
    sq_attn_window(i, L, win, &lo, &hi);
    memset(codes, 0, (size_t)lo);
    const int z = sq_softmax_row_u8(row + lo, hi - lo, codes + lo);
    memset(codes + hi, 0, (size_t)(L - hi));
    return z;
}

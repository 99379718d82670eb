#include "quant_embed.h"

void sq_embed_dequant_s8_row(const int8_t *q, float scale, int cols, float *out)
{
    for (int c = 0; c < cols; c++)
        out[c] = q[c] * scale;
}

int sq_embed_s4_groups(int cols)
{
    return (cols + 127) / 128;
}

void sq_embed_dequant_s4_row(const uint8_t *q, const float *scale, int cols, float *out)
{
    for (int c = 0; c < cols; c++) {
        int nib = c % 2 == 0 ? (q[c / 2] & 0xf) : (q[c / 2] >> 4);
        int v = nib >= 8 ? nib - 16 : nib;
        out[c] = v * scale[c / 128];
    }
}

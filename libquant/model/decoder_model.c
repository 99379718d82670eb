#include "decoder_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sq_decoder_rope_tables(sq_decoder *d)
{
    const int half = d->cfg.head_dim / 2;
    const size_t n = (size_t)d->cfg.max_pos * half;
    d->rope_cos = malloc(n * sizeof(float));
    d->rope_sin = malloc(n * sizeof(float));
    if (!d->rope_cos || !d->rope_sin)
        return -1;
    for (int j = 0; j < half; j++) {
        /* theta^(-2j / head_dim), the angle in double, rounded once */
        double freq = pow((double)d->cfg.rope_theta, -2.0 * j / d->cfg.head_dim);
        for (int p = 0; p < d->cfg.max_pos; p++) {
            d->rope_cos[(size_t)p * half + j] = (float)cos(p * freq);
            d->rope_sin[(size_t)p * half + j] = (float)sin(p * freq);
        }
    }
    return 0;
}

void sq_decoder_free(sq_decoder *d)
{
    if (d->layers)
        for (int l = 0; l < d->cfg.n_layers; l++)
            sq_block_free(&d->layers[l], d->borrowed);
    free(d->layers);
    sq_linear_free(&d->classifier);
    if (!d->borrowed) {
        free(d->tok_emb);
        free(d->rms_final);
    }
    free(d->cls_bias);
    free(d->rope_cos);
    free(d->rope_sin);
    memset(d, 0, sizeof *d);
}

#include "pooling.h"

#include <math.h>
#include <string.h>

void sq_pool(const float *hidden, const int *offsets, int n_seq, int H, sq_pooling mode,
             bool normalize, float *out)
{
    for (int s = 0; s < n_seq; s++) {
        float *o = out + (size_t)s * H;
        int t0 = offsets[s], t1 = offsets[s + 1];
        if (mode == SQ_POOL_CLS || mode == SQ_POOL_LAST) {
            const int t = mode == SQ_POOL_CLS ? t0 : t1 - 1;
            memcpy(o, hidden + (size_t)t * H, (size_t)H * sizeof(float));
        } else {
            for (int c = 0; c < H; c++) {
                double acc = 0;
                for (int t = t0; t < t1; t++)
                    acc += hidden[(size_t)t * H + c];
                o[c] = (float)(acc / (t1 - t0));
            }
        }
    }
    if (normalize)
        sq_l2_normalize_rows(out, n_seq, H);
}

void sq_l2_normalize_rows(float *x, int n, int H)
{
    for (int s = 0; s < n; s++) {
        float *o = x + (size_t)s * H;
        double n2 = 0;
        for (int c = 0; c < H; c++)
            n2 += (double)o[c] * o[c];
        /* torch.nn.functional.normalize: x / max(||x||, 1e-12) */
        double nrm = sqrt(n2);
        float inv = (float)(1.0 / (nrm > 1e-12 ? nrm : 1e-12));
        for (int c = 0; c < H; c++)
            o[c] *= inv;
    }
}

void sq_truncate_dims(float *x, int64_t n, int H, int dims, bool normalize)
{
    if (dims < 1 || dims >= H)
        return;
    for (int64_t i = 0; i < n; i++) /* forward: a row's new place never overlaps a later row */
        memmove(x + (size_t)i * dims, x + (size_t)i * H, (size_t)dims * sizeof *x);
    if (normalize)
        for (int64_t i = 0; i < n; i += 1 << 20) /* sq_l2_normalize_rows takes an int count */
            sq_l2_normalize_rows(x + (size_t)i * dims, (int)(n - i < (1 << 20) ? n - i : 1 << 20),
                                 dims);
}

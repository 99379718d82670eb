/* sq_qweight lifetime: shapes, aligned allocation, borrowed views. */
#include "qweight.h"

#include <stdlib.h>
#include <string.h>

#include "pack.h"

#define ALIGN 64

int sq_qweight_groups(const sq_qweight *q)
{
    int block = sq_qtype_get(q->qtype)->block;
    return block ? q->k_pad / block : 1;
}

int sq_qweight_shape(sq_qweight *q, sq_qtype qt, int n, int k, sq_err *err)
{
    memset(q, 0, sizeof *q);
    const sq_qtype_traits *t = sq_qtype_get(qt);
    if (!t || !t->packed_size)
        return sq_err_set(err, "qtype %d has no packed form", (int)qt);
    if (n < 1 || k < 1 || n > SQ_QWEIGHT_MAX_DIM || k > SQ_QWEIGHT_MAX_DIM)
        return sq_err_set(err, "weight shape [%d, %d] is outside [1, %d]", n, k,
                          SQ_QWEIGHT_MAX_DIM);
    q->qtype = qt;
    q->n = n;
    q->k = k;
    q->n_pad = (n + SQ_PANEL_N - 1) / SQ_PANEL_N * SQ_PANEL_N;
    q->k_pad = (k + t->k_align - 1) / t->k_align * t->k_align;
    q->data_size = t->packed_size(n, k);
    return 0;
}

static void *aligned_zalloc(size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, ALIGN, size ? size : ALIGN) != 0)
        return NULL;
    memset(p, 0, size);
    return p;
}

int sq_qweight_alloc(sq_qweight *q, sq_qtype qt, int n, int k, sq_err *err)
{
    if (sq_qweight_shape(q, qt, n, k, err) != 0)
        return -1;
    size_t entries = (size_t)q->n_pad * (size_t)sq_qweight_groups(q);
    q->data = aligned_zalloc((size_t)q->data_size);
    q->scale = aligned_zalloc(entries * sizeof *q->scale);
    q->wsum = aligned_zalloc(entries * sizeof *q->wsum);
    if (!q->data || !q->scale || !q->wsum) {
        sq_qweight_free(q);
        return sq_err_set(err, "out of memory for a [%d, %d] %s weight", n, k,
                          sq_qtype_get(qt)->name);
    }
    return 0;
}

int sq_qweight_view(sq_qweight *q, sq_qtype qt, int n, int k, const void *data,
                    uint64_t data_size, const float *scale, const int32_t *wsum, sq_err *err)
{
    if (sq_qweight_shape(q, qt, n, k, err) != 0)
        return -1;
    if (data_size != q->data_size) {
        uint64_t want = q->data_size;
        memset(q, 0, sizeof *q);
        return sq_err_set(err, "packed %s weight [%d, %d] is %llu bytes, expected %llu",
                          sq_qtype_get(qt)->name, n, k, (unsigned long long)data_size,
                          (unsigned long long)want);
    }
    if (!data || !scale || !wsum || (uintptr_t)data % ALIGN) {
        memset(q, 0, sizeof *q);
        return sq_err_set(err, "packed weight data missing or not 64-byte aligned");
    }
    /* The view never writes through these pointers; the casts only let one
     * struct serve owned and borrowed weights. */
    q->data = (void *)(uintptr_t)data;
    q->scale = (float *)(uintptr_t)scale;
    q->wsum = (int32_t *)(uintptr_t)wsum;
    q->borrowed = 1;
    return 0;
}

void sq_qweight_free(sq_qweight *q)
{
    if (!q)
        return;
    if (!q->borrowed) {
        free(q->data);
        free(q->scale);
        free(q->wsum);
    }
    memset(q, 0, sizeof *q);
}

#include "emb_precision.h"

#include "npy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"float32", "int8", "uint8", "binary", "ubinary"};

int sq_emb_precision_parse(const char *s, sq_emb_precision *p)
{
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (strcmp(s, names[i]) == 0) {
            *p = (sq_emb_precision)i;
            return 0;
        }
    return -1;
}

const char *sq_emb_precision_name(sq_emb_precision p)
{
    return (unsigned)p < sizeof names / sizeof *names ? names[p] : "?";
}

const char *sq_emb_precision_names(void)
{
    return "float32, int8, uint8, binary, ubinary";
}

int sq_emb_precision_width(sq_emb_precision p, int dim)
{
    return p == SQ_PREC_BINARY || p == SQ_PREC_UBINARY ? (dim + 7) / 8 : dim;
}

bool sq_emb_precision_signed(sq_emb_precision p)
{
    return p == SQ_PREC_INT8 || p == SQ_PREC_BINARY;
}

bool sq_emb_precision_needs_ranges(sq_emb_precision p)
{
    return p == SQ_PREC_INT8 || p == SQ_PREC_UINT8;
}

void sq_emb_ranges_init(float *ranges, int dim)
{
    for (int d = 0; d < dim; d++) {
        ranges[d] = INFINITY;
        ranges[dim + d] = -INFINITY;
    }
}

void sq_emb_ranges_add(float *ranges, const float *x, int64_t n, int dim)
{
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < dim; d++) {
            const float v = x[(size_t)i * dim + d];
            if (v < ranges[d])
                ranges[d] = v;
            if (v > ranges[dim + d])
                ranges[dim + d] = v;
        }
}

/* trunc((x - lo) / step + shift) clamped to [min, max]; step 0: min. */
static int code_of(float x, float lo, float step, float shift, int min, int max)
{
    if (!(step > 0.0f))
        return min;
    const float v = (x - lo) / step + shift;
    if (!(v > (float)min)) /* NaN too */
        return min;
    if (v >= (float)max)
        return max;
    return (int)v; /* truncation toward zero, as numpy's astype */
}

void sq_emb_quantize(sq_emb_precision p, const float *x, int64_t n, int dim,
                     const float *ranges, uint8_t *out)
{
    const int w = sq_emb_precision_width(p, dim);
    for (int64_t i = 0; i < n; i++) {
        const float *r = x + (size_t)i * dim;
        uint8_t *o = out + (size_t)i * w;
        if (p == SQ_PREC_BINARY || p == SQ_PREC_UBINARY) {
            memset(o, 0, (size_t)w);
            for (int d = 0; d < dim; d++)
                if (r[d] > 0.0f)
                    o[d / 8] |= (uint8_t)(0x80u >> (d % 8));
            if (p == SQ_PREC_BINARY)
                for (int b = 0; b < w; b++)
                    o[b] = (uint8_t)(int8_t)((int)o[b] - 128);
            continue;
        }
        for (int d = 0; d < dim; d++) {
            const float lo = ranges[d], step = (ranges[dim + d] - lo) / 255.0f;
            o[d] = p == SQ_PREC_INT8 ? (uint8_t)(int8_t)code_of(r[d], lo, step, -128.0f, -128, 127)
                                     : (uint8_t)code_of(r[d], lo, step, 0.0f, 0, 255);
        }
    }
}

int sq_emb_ranges_load(const char *path, int dim, float *ranges, sq_err *err)
{
    float *r = NULL;
    int64_t rows, cols;
    if (sq_npy_read_f32_2d(path, &r, &rows, &cols, err) != 0)
        return -1;
    if (rows != 2 || cols != dim) {
        free(r);
        return sq_err_set(err, "%s: ranges of shape [%lld, %lld]; the embeddings need [2, %d] "
                               "(min row, max row)",
                          path, (long long)rows, (long long)cols, dim);
    }
    for (int d = 0; d < dim; d++) /* the reader refuses NaN and infinities already */
        if (!(r[d] <= r[dim + d])) {
            sq_err_set(err, "%s: dimension %d has min %g above max %g", path, d, (double)r[d],
                       (double)r[dim + d]);
            free(r);
            return -1;
        }
    memcpy(ranges, r, (size_t)2 * dim * sizeof *r);
    free(r);
    return 0;
}

/* Fuzz the classification head readers (heads/head.h, formats/HEAD.md): a
 * head file is hostile input, JSON or safetensors. Every input is read
 * twice: as head.json (JSON, or safetensors when its first bytes look like
 * one) and as head.safetensors (the name forces the safetensors reader). An
 * accepted head must be consistent (classes and dim in range, labels
 * present) and usable: applying it to an embedding gives probabilities
 * that sum to 1. */
#include <math.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "head.h"

static void read_one(const char *name, const uint8_t *data, size_t size)
{
    char *path = fuzz_write(name, data, size);
    sq_head h;
    sq_err err;
    if (sq_head_read(path, &h, &err) == 0) {
        if (h.classes < 2 || h.dim < 1 || h.dim > SQ_HEAD_MAX_DIM)
            abort();
        for (int c = 0; c < h.classes; c++)
            if (!h.labels[c])
                abort();
        float *e = calloc((size_t)h.dim, sizeof *e);
        double *p = malloc((size_t)h.classes * sizeof *p);
        if (e && p) {
            e[0] = 1.0f;
            sq_head_apply(&h, e, 1, p);
            double s = 0;
            for (int c = 0; c < h.classes; c++)
                s += p[c];
            if (!(fabs(s - 1.0) < 1e-6))
                abort();
        }
        free(e);
        free(p);
        sq_head_free(&h);
    }
    free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_one("head.json", data, size);
    read_one("head.safetensors", data, size);
    return 0;
}

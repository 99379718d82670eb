/* Fuzz the TensorFlow.js graph model reader. The input is model.json, a NUL,
 * then the shard bytes (NULs allowed), which go into two files "s0" (first
 * half) and "s1" (the rest) so a manifest with paths ["s0", "s1"] reads
 * weights across a shard boundary. On success every query runs. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tfjs_model.h"

static void query(const sq_tfjs_model *m)
{
    sq_err err;
    for (int i = 0; i < m->n_tensors; i++) {
        const sq_tfjs_tensor *t = &m->tensors[i];
        if (sq_tfjs_find(m, t->name) != t)
            abort();
        if (sq_tfjs_get(m, t->name, t->dtype, t->ndim, t->shape, &err) != t)
            abort();
        int64_t want[SQ_TFJS_MAX_DIMS] = {-1, 1, -1, 2};
        sq_tfjs_get(m, t->name, SQ_TFJS_F32, t->ndim, want, &err);
        sq_tfjs_get(m, t->name, SQ_TFJS_I32, 3, want, &err);
        double d;
        int64_t v;
        sq_tfjs_scalar_f32(m, t->name, &d, &err);
        sq_tfjs_scalar_i32(m, t->name, &v, &err);
        /* Touch the data (ASan checks it lies inside the buffer). */
        const volatile unsigned char *b = t->data;
        if (t->numel > 0)
            (void)(b[0] + b[t->numel * 4 - 1]);
        sq_tfjs_node(m, t->name);
    }
    for (int i = 0; i < m->n_nodes; i++) {
        const json_t *n = json_array_get(m->nodes, (size_t)i);
        const char *name = json_string_value(json_object_get(n, "name"));
        if (sq_tfjs_node(m, name) == NULL)
            abort();
        sq_tfjs_count_op(m, sq_tfjs_node_op(n));
        int k = sq_tfjs_node_n_inputs(n);
        for (int j = -1; j <= k; j++) {
            const char *in = sq_tfjs_node_input(n, j);
            if ((in == NULL) != (j < 0 || j == k))
                abort();
            sq_tfjs_node_input_port(n, j);
            if (in)
                sq_tfjs_node(m, in);
        }
    }
    sq_tfjs_find(m, "");
    sq_tfjs_get(m, "missing", SQ_TFJS_F32, 2, NULL, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[2];
    size_t len[2];
    size_t n = fuzz_split(data, size, 2, part, len);
    free(fuzz_write("model.json", part[0], len[0]));
    size_t sl = n > 1 ? len[1] : 0, half = sl / 2;
    free(fuzz_write("s0", n > 1 ? part[1] : data, half));
    free(fuzz_write("s1", n > 1 ? part[1] + half : data, sl - half));

    sq_tfjs_is_model_dir(fuzz_tmpdir());
    sq_tfjs_model m;
    sq_err err;
    if (sq_tfjs_open(fuzz_tmpdir(), &m, &err) == 0) {
        query(&m);
        sq_tfjs_close(&m);
    }
    return 0;
}

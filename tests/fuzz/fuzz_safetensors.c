/* Fuzz the safetensors reader: header JSON, dtype/shape/offset validation,
 * then every lookup and f32 conversion the model loader would do. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "safetensors.h"

#define MAX_READ_BYTES (4u << 20) /* convert tensors up to this size */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = fuzz_write("model.safetensors", data, size);
    sq_safetensors st;
    sq_err err;
    if (sq_safetensors_open(path, &st, &err) == 0) {
        for (int i = 0; i < st.n_tensors; i++) {
            const sq_st_tensor *t = &st.tensors[i];
            if (sq_safetensors_find(&st, t->name) != t)
                abort(); /* sorted lookup must find every tensor it listed */
            if (t->numel < 0 || (uint64_t)t->numel * sizeof(float) > MAX_READ_BYTES)
                continue;
            float *dst = malloc((size_t)t->numel * sizeof(float) + 1);
            if (!dst)
                abort();
            sq_safetensors_read_f32(&st, t, dst, &err);
            free(dst);
        }
        sq_safetensors_find(&st, "embeddings.word_embeddings.weight");
        sq_safetensors_close(&st);
    }
    free(path);
    return 0;
}

/* Fuzz the packed-model loader: a .sqm opened as a runnable model
 * (libquant/embed_model.h -> sqm_model.c and sqm_tokenizer.c: metadata,
 * tokenizer vocabulary, every tensor's dtype and shape), then one short text
 * embedded with it. Checksums are repaired first, or almost every mutation
 * would stop at verification. */
#include <stdlib.h>
#include <string.h>

#include "container_fixup.h"
#include "embedder.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size + 1);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    container_fixup(copy, size);
    char *path = fuzz_write("model.sqm", copy, size);
    free(copy);

    sq_embed_model m;
    sq_err err;
    if (sq_embed_model_open(path, &m, &err) == 0) {
        static const char *const texts[] = {"hello world, [MASK] and unknown tokens"};
        size_t lens[1] = {strlen(texts[0])};
        sq_embed_opts o = {.batch = 1, .max_seq = m.max_seq < 16 ? m.max_seq : 16,
                           .pooling = m.pool.pooling, .normalize = m.pool.normalize};
        sq_embed_result res;
        if (sq_embed_texts(&m, texts, lens, 1, &o, &res, &err) == 0)
            sq_embed_result_free(&res);
        sq_embed_model_close(&m);
    }
    free(path);
    return 0;
}

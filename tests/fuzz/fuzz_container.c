/* Fuzz the squint container reader (formats/container.h) over a buffer:
 * open as any kind, as statistics and as a model, verify, look up every
 * tensor and touch its bytes; then the same after repairing checksums (so
 * mutations reach the directory checks) and through the zstd form. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "container.h"
#include "container_fixup.h"

/* Keep decompression small: the fuzzer wants speed, not 16 GiB buffers. */
#define MAX_DECOMPRESSED (8u << 20)

static volatile uint8_t g_sink;

static void open_one(const uint8_t *data, size_t size, uint32_t kind)
{
    sq_container_opts o = {kind, MAX_DECOMPRESSED};
    sq_container c;
    sq_err err;
    if (sq_container_open_buffer(data, size, "fuzz.sqc", &o, &c, &err) != 0)
        return;
    for (size_t i = 0; i < c.n_tensors; i++) {
        const sq_container_tensor *t = sq_container_tensor_at(&c, i);
        if (!t || sq_container_find(&c, t->name) != t)
            abort(); /* names are unique, so find returns this entry */
        if (t->size) /* ASan checks both ends are inside the buffer */
            g_sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->size - 1];
    }
    sq_container_tensor_at(&c, c.n_tensors);
    sq_container_find(&c, "no such tensor");
    sq_container_verify(&c, &err);
    sq_container_close(&c);
}

static void open_all_kinds(const uint8_t *data, size_t size)
{
    open_one(data, size, 0);
    open_one(data, size, SQ_KIND_SQC);
    open_one(data, size, SQ_KIND_SQM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_all_kinds(data, size);

    uint8_t *copy = malloc(size + 1);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    if (container_fixup(copy, size)) {
        open_all_kinds(copy, size);

        /* The same bytes in the zstd form. */
        size_t cap = ZSTD_compressBound(size);
        void *z = malloc(cap);
        if (!z)
            abort();
        size_t zn = ZSTD_compress(z, cap, copy, size, 1);
        if (!ZSTD_isError(zn))
            open_one(z, zn, 0);
        free(z);
    }
    free(copy);
    return 0;
}

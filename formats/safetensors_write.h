/* Writer for the safetensors format, the counterpart of safetensors.h:
 * u64 little-endian header length N, N bytes of compact JSON header (padded
 * with spaces so the data buffer starts at a multiple of 8), then the tensor
 * bytes back to back. Tensors are laid out sorted by name, so the output
 * depends only on the tensors given, never on their order in the array. The
 * file is written atomically (temp file in the same directory, fsync,
 * rename): on failure nothing is left at `path`. */
#ifndef SQ_SAFETENSORS_WRITE_H
#define SQ_SAFETENSORS_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "safetensors.h"
#include "sq_error.h"

typedef struct sq_stw_tensor sq_stw_tensor;

/* Produces the bytes of tensor t (nbytes of them, little-endian, already in
 * t->dtype) into buf. Returns 0, or -1 with err set. */
typedef int (*sq_stw_fill_fn)(void *ctx, const sq_stw_tensor *t, void *buf, size_t nbytes,
                              sq_err *err);

struct sq_stw_tensor {
    const char *name;  /* UTF-8, unique, not "__metadata__" */
    sq_st_dtype dtype; /* any dtype safetensors.h knows (F32, F16, BF16, ...) */
    int ndim;          /* 0 (scalar) .. SQ_ST_MAX_DIMS */
    int64_t shape[SQ_ST_MAX_DIMS];
    /* Either the bytes themselves (numel * dtype size, little-endian) ... */
    const void *data;
    /* ... or, with data == NULL, a callback that produces them when the
     * tensor is written, so a large checkpoint need not sit in memory. */
    sq_stw_fill_fn fill;
    void *fill_ctx;
};

/* Write `n` tensors to `path`. `metadata` is an optional NULL-terminated list
 * of key, value string pairs stored under "__metadata__" (e.g. "format",
 * "pt"); pass NULL for none. Returns 0, or -1 with err set ("path: ..."). */
int sq_safetensors_write(const char *path, const sq_stw_tensor *tensors, int n,
                         const char *const *metadata, sq_err *err);

#endif

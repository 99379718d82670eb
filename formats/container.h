/* The squint file container shared by calibration statistics (.sqc) and packed
 * models (.sqm): a fixed header, UTF-8 YAML metadata, a tensor directory,
 * 64-byte aligned tensor data and a trailer with a whole-file xxh64.
 * formats/SPEC.md specifies every byte; this is the reader and the writer.
 *
 * Reading maps the file and validates the header, metadata and directory
 * (every field bounded, every range inside its section, no overlaps), but
 * does not hash tensor data: sq_container_verify does the full check.
 * A file that starts with the zstd frame magic is decompressed (bounded)
 * into memory and then validated the same way.
 *
 * Writing is deterministic: the same kind, metadata and tensors added in the
 * same order give byte-identical files. The writer sorts nothing; callers
 * that want a stable file add tensors in a fixed order. */
#ifndef SQ_CONTAINER_H
#define SQ_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "fileio.h"
#include "sq_error.h"

/* ---- format constants (SPEC.md "Constants" and "Limits") ---- */
#define SQ_CONTAINER_MAGIC "SQNT"
#define SQ_CONTAINER_TRAILER_MAGIC "SQEND\0\0\0"
#define SQ_CONTAINER_VERSION_MAJOR 1
#define SQ_CONTAINER_VERSION_MINOR 0
#define SQ_CONTAINER_HEADER_SIZE 128
#define SQ_CONTAINER_TRAILER_SIZE 16
#define SQ_CONTAINER_ALIGN 64 /* data section and every tensor */

/* Kinds: the 4 kind bytes read as a little-endian u32. */
#define SQ_KIND_CODE(a, b, c, d)                                                                   \
    ((uint32_t)(uint8_t)(a) | (uint32_t)(uint8_t)(b) << 8 | (uint32_t)(uint8_t)(c) << 16 |         \
     (uint32_t)(uint8_t)(d) << 24)
#define SQ_KIND_SQC SQ_KIND_CODE('S', 'Q', 'C', 0) /* calibration statistics */
#define SQ_KIND_SQM SQ_KIND_CODE('S', 'Q', 'M', 0) /* packed model */

/* Limits a reader enforces (and a writer refuses to exceed). */
#define SQ_CONTAINER_MAX_TENSORS 1000000u
#define SQ_CONTAINER_MAX_NAME 512 /* bytes of UTF-8 */
#define SQ_CONTAINER_MAX_DIMS 8
#define SQ_CONTAINER_MAX_METADATA ((uint64_t)256 << 20)    /* 256 MiB */
#define SQ_CONTAINER_MAX_DIRECTORY ((uint64_t)1 << 30)     /* 1 GiB */
#define SQ_CONTAINER_MAX_DECOMPRESSED ((uint64_t)16 << 30) /* 16 GiB, zstd form */

/* ---- dtypes: one table (container.c); a code is one byte on disk ---- */
typedef enum sq_cdtype {
    SQ_CDT_F32 = 0x01,
    SQ_CDT_F64 = 0x02,
    SQ_CDT_I32 = 0x03,
    SQ_CDT_U32 = 0x04,
    SQ_CDT_I64 = 0x05,
    SQ_CDT_U64 = 0x06,
    SQ_CDT_I8 = 0x07,
    SQ_CDT_U8 = 0x08,
    SQ_CDT_F16 = 0x09,
    SQ_CDT_BF16 = 0x0a,
    /* 0x40..0x7f: packed quantized weights (SPEC.md 6.1). dims are the
     * logical [N, K] of the weight matrix; the bytes are the padded panels
     * (libquant/kernels/pack.h), size = round_up(N, 16) * round_up(K, 4) for s8 and
     * round_up(N, 16) * round_up(K, 128) / 2 for s4g128. */
    SQ_CDT_S8_PANEL = 0x40,     /* int8, [N/16][K/4][16][4] VNNI panels */
    SQ_CDT_S4G128_PANEL = 0x41, /* int4 nibbles unpacking to the same panels */
} sq_cdtype;

/* Name of a dtype code ("f32", ...) or NULL for an unassigned code. */
const char *sq_cdtype_name(unsigned code);
/* Element size in bytes of a plain dtype; 0 for packed, reserved or unknown. */
unsigned sq_cdtype_elem_size(unsigned code);
/* Byte size of a tensor of this dtype and shape. Returns 0 and sets *size, or
 * -1 (with a message in err, no file name) when the code is unknown or
 * reserved, the shape is invalid for the dtype (a packed type needs 2 dims),
 * or the size overflows. */
int sq_cdtype_size(unsigned code, int ndim, const uint64_t *dims, uint64_t *size, sq_err *err);

/* "statistics" for SQC, "model" for SQM, else the kind bytes as text in buf. */
const char *sq_kind_describe(uint32_t kind, char buf[8]);

/* ---- reader ---- */
typedef struct sq_container_tensor {
    const char *name; /* NUL-terminated, owned by the container */
    unsigned dtype;   /* sq_cdtype */
    int ndim;
    uint64_t dims[SQ_CONTAINER_MAX_DIMS]; /* outermost first (row-major) */
    uint64_t offset;                      /* relative to the data section; multiple of 64 */
    uint64_t size;                        /* bytes */
    uint64_t xxh64;                       /* of the tensor bytes, as stored in the directory */
    const void *data;                     /* 64-byte aligned; valid until sq_container_close */
} sq_container_tensor;

typedef struct sq_container {
    char *path;
    uint32_t kind;
    unsigned version_major, version_minor;
    uint32_t flags;
    int compressed; /* 1 when read through zstd */
    /* Metadata text: a NUL-terminated copy (metadata_len bytes before it). */
    char *metadata;
    size_t metadata_len;
    size_t n_tensors;
    sq_container_tensor *tensors; /* directory order */

    /* private */
    const uint8_t *bytes; /* the uncompressed container */
    size_t size;
    sq_mapped_file mf;
    void *owned; /* decompressed buffer */
    char *names;
    uint32_t *index; /* open-addressing hash of names -> tensor index + 1 */
    size_t index_cap;
    uint64_t data_offset, data_size;
} sq_container;

typedef struct sq_container_opts {
    uint32_t kind;             /* expected kind, 0 = any */
    uint64_t max_decompressed; /* zstd form limit; 0 = SQ_CONTAINER_MAX_DECOMPRESSED */
} sq_container_opts;

/* Open and validate (not the tensor checksums: see verify). expected_kind 0
 * accepts any kind; opts NULL means kind 0 and the default limit. On
 * failure c is zeroed and err names the file. A zstd file is decompressed
 * into memory (c->compressed = 1); a plain file is memory-mapped. */
int sq_container_open(const char *path, uint32_t expected_kind, sq_container *c, sq_err *err);
int sq_container_open_ex(const char *path, const sq_container_opts *opts, sq_container *c,
                         sq_err *err);
/* Same over a caller's buffer (e.g. a fuzzer's input), which must outlive c
 * unless it was zstd (then c owns the decompressed copy). `name` is used in
 * messages. */
int sq_container_open_buffer(const void *data, size_t size, const char *name,
                             const sq_container_opts *opts, sq_container *c, sq_err *err);
void sq_container_close(sq_container *c);

/* Full check: every tensor's xxh64 (first mismatch reported by name), zero
 * padding in the data section, and the whole-file checksum. */
int sq_container_verify(const sq_container *c, sq_err *err);

/* Lookup; NULL when absent / out of range. */
const sq_container_tensor *sq_container_find(const sq_container *c, const char *name);
const sq_container_tensor *sq_container_tensor_at(const sq_container *c, size_t i);

/* ---- writer ---- */
typedef struct sq_container_writer sq_container_writer;

/* NULL on out of memory. */
sq_container_writer *sq_container_writer_new(uint32_t kind);
void sq_container_writer_free(sq_container_writer *w);

/* Metadata text (UTF-8, no NUL bytes), copied. Replaces earlier text. */
int sq_container_writer_set_metadata(sq_container_writer *w, const char *text, size_t len,
                                     sq_err *err);

/* Add a tensor. `size` must equal sq_cdtype_size(dtype, dims). Names are
 * UTF-8, 1..SQ_CONTAINER_MAX_NAME bytes, unique. add_tensor copies the bytes;
 * add_tensor_ref keeps the pointer, which must stay valid and unchanged
 * until sq_container_writer_write returns (use it for large tensors: no
 * second copy is made). Errors name the tensor, not a file. */
int sq_container_writer_add_tensor(sq_container_writer *w, const char *name, unsigned dtype,
                                   int ndim, const uint64_t *dims, const void *data, uint64_t size,
                                   sq_err *err);
int sq_container_writer_add_tensor_ref(sq_container_writer *w, const char *name, unsigned dtype,
                                       int ndim, const uint64_t *dims, const void *data,
                                       uint64_t size, sq_err *err);

/* add_tensor_ref for writers that list many tensors: a failure (a bad
 * name or shape, out of memory) is kept, later adds are ignored, and
 * sq_container_writer_write reports it ("PATH: the problem"), writing
 * nothing. */
void sq_container_writer_add(sq_container_writer *w, const char *name, unsigned dtype, int ndim,
                             const uint64_t *dims, const void *data, uint64_t size);

/* zstd-compress the whole file when written: level 1..22, negative for
 * zstd's fast modes, 0 = plain (the default). Out-of-range levels are clamped. */
void sq_container_writer_set_zstd(sq_container_writer *w, int level);

/* Write atomically (sq_atomic_*): on failure nothing is left at path and an
 * existing file there is untouched. The writer can be written again. */
int sq_container_writer_write(sq_container_writer *w, const char *path, sq_err *err);

#endif

/* Reader for the safetensors format (https://huggingface.co/docs/safetensors):
 * u64 little-endian header length N, N bytes of JSON header, then the data
 * buffer. The file is memory-mapped; the header is validated completely
 * before any tensor is handed out. */
#ifndef SQ_SAFETENSORS_H
#define SQ_SAFETENSORS_H

#include <stdint.h>

#include "fileio.h"
#include "sq_error.h"

#define SQ_ST_MAX_HEADER (100u << 20) /* same bound the reference implementation uses */
#define SQ_ST_MAX_TENSORS 100000
#define SQ_ST_MAX_DIMS 8
#define SQ_ST_MAX_NAME 1024

typedef enum sq_st_dtype {
    SQ_DT_F64, SQ_DT_F32, SQ_DT_F16, SQ_DT_BF16,
    SQ_DT_I64, SQ_DT_I32, SQ_DT_I16, SQ_DT_I8, SQ_DT_U8, SQ_DT_BOOL,
    SQ_DT_U16, SQ_DT_U32, SQ_DT_U64, SQ_DT_F8_E4M3, SQ_DT_F8_E5M2,
    SQ_DT_COUNT
} sq_st_dtype;

typedef struct sq_st_tensor {
    char *name;
    sq_st_dtype dtype;
    int ndim;
    int64_t shape[SQ_ST_MAX_DIMS];
    int64_t numel;
    uint64_t offset; /* absolute byte offset in the file */
    uint64_t nbytes;
} sq_st_tensor;

typedef struct sq_safetensors {
    sq_mapped_file mf;
    sq_st_tensor *tensors; /* sorted by name */
    int n_tensors;
    /* "__metadata__": its string values, in header order (others skipped) */
    char **meta_key, **meta_value;
    int n_meta;
} sq_safetensors;

const char *sq_st_dtype_name(sq_st_dtype dt);
int sq_st_dtype_size(sq_st_dtype dt);

int sq_safetensors_open(const char *path, sq_safetensors *st, sq_err *err);
void sq_safetensors_close(sq_safetensors *st);

/* Lookup by exact name (binary search); NULL when absent. */
const sq_st_tensor *sq_safetensors_find(const sq_safetensors *st, const char *name);

/* The "__metadata__" string value of key; NULL when absent or not a string. */
const char *sq_safetensors_meta(const sq_safetensors *st, const char *key);

/* Copy a tensor into dst as f32 (F32 copied, F16/BF16 converted); other
 * dtypes, or NaN/Inf values, are errors naming the file and tensor. */
int sq_safetensors_read_f32(const sq_safetensors *st, const sq_st_tensor *t, float *dst,
                            sq_err *err);

/* Half-precision conversions (exact). */
float sq_f16_to_f32(uint16_t h);
float sq_bf16_to_f32(uint16_t h);
uint16_t sq_f32_to_f16(float f);  /* round to nearest even */
uint16_t sq_f32_to_bf16(float f); /* round to nearest even */

#endif

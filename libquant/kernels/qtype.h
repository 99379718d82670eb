/* The table of quantization types. Every linear layer carries one; adding a
 * type is adding a row here plus its kernels: the rows say how the weights
 * are stored (quant_weights.c produces them, pack.c lays them out) and how
 * the executor runs them (linear.c, sqm_model.c), and the tools read the
 * same rows (names, container dtypes). */
#ifndef SQ_QTYPE_H
#define SQ_QTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_features.h"

typedef enum sq_qtype { SQ_QT_F32 = 0, SQ_QT_S8 = 1, SQ_QT_S4G128 = 2, SQ_QT_COUNT } sq_qtype;

struct sq_qweight;
struct sq_gemm_epilogue;

/* What the integer GEMM of a packed type accumulates, which decides where
 * the weight scales are applied. */
typedef enum sq_qacc {
    SQ_ACC_NONE = 0, /* not run by the integer GEMM (f32) */
    SQ_ACC_S32,      /* exact int32 sums; the epilogue applies act_scale * scale[n] */
    SQ_ACC_F32,      /* float sums of per-group int32 sums times the group scales;
                        the epilogue applies act_scale */
} sq_qacc;

/* The quantize-GEMM-epilogue of a packed type (gemm_s8.h): A the quantized
 * activations, the epilogue into ep->y, scratch [M][W->n] accumulators
 * (int32 or float, 4 bytes each) for ISAs that do not fuse. */
typedef int (*sq_qgemm_fn)(sq_isa isa, const int8_t *A, int M, size_t lda,
                           const struct sq_qweight *W, const struct sq_gemm_epilogue *ep,
                           void *scratch);

typedef struct sq_qtype_traits {
    const char *name;  /* as written in recipes and model files */
    const char *label; /* its family in size tables and summaries ("int8", "int4") */
    int bits;          /* bits per weight */
    int block;         /* inputs sharing one scale along K (0: per output channel);
                          scales (and wsums) are [n] when 0, else [n][k_pad / block] */
    bool executable;   /* the executor runs it (linear.c); model files of other
                          types are refused at load */
    /* How the executor runs it (SQ_ACC_NONE / NULL for f32, run by sgemm). */
    sq_qacc acc;
    sq_qgemm_fn gemm;  /* sq_gemm_s8_fused / sq_gemm_s4_fused */
    bool act_zero;     /* an activation zero point is supported (int32 exactness
                          bound of sq_ref_act_zero_problem) */
    /* Packed storage (all zero / NULL for f32, which is stored unpacked). */
    int qmax;              /* symmetric integer range [-qmax, qmax] */
    int k_align;           /* K is padded up to a multiple of this in the panels */
    unsigned cdtype;       /* container dtype code of the packed bytes (container.h) */
    /* Bytes of the packed panels of an [n][k] matrix (pack.h). */
    uint64_t (*packed_size)(int n, int k);
    /* Pack panel p (16 output channels) from unpacked values (pack.h). */
    void (*pack_panel)(struct sq_qweight *q, int p, const int8_t *rows, size_t ld);
    /* One quantized value read back from the panels (pack.h). */
    int (*get)(const struct sq_qweight *q, int n, int k);
} sq_qtype_traits;

/* The row of qt, or NULL when qt is out of range. */
const sq_qtype_traits *sq_qtype_get(sq_qtype qt);
/* The packed type stored as container dtype `code`; -1 for a plain or
 * unknown code. */
int sq_qtype_from_cdtype(unsigned code);
/* Parse a name; returns -1 when unknown. */
int sq_qtype_parse(const char *name, sq_qtype *out);

#endif

/* The table of quantization types. Every linear layer carries one; adding a
 * type is adding a row here plus its kernels (see DESIGN.md). Only f32 is
 * executable so far; the s8 and s4g128 rows describe the packed storage that
 * quant_weights.c produces and pack.c lays out. */
#ifndef SQ_QTYPE_H
#define SQ_QTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sq_qtype { SQ_QT_F32 = 0, SQ_QT_S8 = 1, SQ_QT_S4G128 = 2, SQ_QT_COUNT } sq_qtype;

struct sq_qweight;

typedef struct sq_qtype_traits {
    const char *name;  /* as written in recipes and model files */
    int bits;          /* bits per weight */
    int block;         /* inputs sharing one scale along K (0: per output channel) */
    bool executable;   /* a kernel exists in this build */
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
/* Parse a name; returns -1 when unknown. */
int sq_qtype_parse(const char *name, sq_qtype *out);

#endif

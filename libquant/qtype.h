/* The table of quantization types. Every linear layer carries one; adding a
 * type is adding a row here plus its kernels (see DESIGN.md). Only f32 is
 * executable so far; s8 and s4g128 rows describe the storage the
 * quantization issue will produce. */
#ifndef SQ_QTYPE_H
#define SQ_QTYPE_H

#include <stdbool.h>

typedef enum sq_qtype { SQ_QT_F32 = 0, SQ_QT_S8 = 1, SQ_QT_S4G128 = 2, SQ_QT_COUNT } sq_qtype;

typedef struct sq_qtype_traits {
    const char *name;  /* as written in recipes and model files */
    int bits;          /* bits per weight */
    int block;         /* inputs sharing one scale along K (0: per output channel) */
    bool executable;   /* a kernel exists in this build */
} sq_qtype_traits;

const sq_qtype_traits *sq_qtype_get(sq_qtype qt);
/* Parse a name; returns -1 when unknown. */
int sq_qtype_parse(const char *name, sq_qtype *out);

#endif

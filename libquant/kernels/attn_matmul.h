/* The precision of an encoder's attention matmuls (formats/SQM.md 6.5):
 * the one table of its names, shared by the recipe (`attention.matmul`),
 * the .sqm metadata (`attention`) and the loader. */
#ifndef SQ_ATTN_MATMUL_H
#define SQ_ATTN_MATMUL_H

typedef enum sq_attn_matmul {
    SQ_ATTN_F32 = 0, /* attn_f32.h (the default; absent from files) */
    SQ_ATTN_BF16,    /* attn_bf16.h: bf16 operands, f32 sums (even head width) */
    SQ_ATTN_INT8,    /* attn_s8.h: dynamic int8 Q, K, V, 8-bit probabilities */
    SQ_ATTN_MATMUL_COUNT
} sq_attn_matmul;

/* "f32", "bf16", "int8"; "?" when out of range. */
const char *sq_attn_matmul_name(sq_attn_matmul m);
/* The matmul named s; -1 when s names none. */
int sq_attn_matmul_parse(const char *s, sq_attn_matmul *out);
/* "f32, bf16, int8": the names, for messages. */
const char *sq_attn_matmul_names(void);
/* Why m cannot run an encoder whose attention inputs are hidden or
 * embed_dim wide, with heads heads, or NULL when it can (bf16 pairs along
 * the head width, so it needs both widths / heads even). */
const char *sq_attn_matmul_problem(sq_attn_matmul m, int hidden, int embed_dim, int heads);

#endif

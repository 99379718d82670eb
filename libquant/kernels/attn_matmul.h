/* The precision of a model's attention matmuls (formats/SQM.md 6.5, 10.3):
 * the one table of its names, shared by the recipe (`attention.matmul`),
 * the .sqm metadata (`attention`) and the loaders: encoders, and decoders
 * (f32 / bf16 kernels over the KV cache, or int8 with a quantized KV
 * cache: attn_s8.h's causal form). */
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
/* Why m cannot run a model whose attention inputs are hidden or embed_dim
 * wide, with heads heads, over sequences of up to positions tokens, or
 * NULL when it can (bf16 pairs along the head width, so it needs both
 * widths / heads even; int8 keeps a head's codes on the stack, up to 2048,
 * and sums P V exactly in int32: 255 x 127 x keys < 2^31, so at most
 * SQ_ATTN_INT8_MAX_KEYS positions). */
#define SQ_ATTN_INT8_MAX_KEYS 65536
const char *sq_attn_matmul_problem(sq_attn_matmul m, int hidden, int embed_dim, int heads,
                                   int positions);

#endif

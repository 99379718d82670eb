/* Per-op wall time of encoder forward passes (squint bench --profile): the
 * encoder and the quantized linears add the seconds of each op they run to
 * a profile when the workspace carries one (NULL: nothing is timed). Ops
 * inside parallel regions (the three steps of attention) are timed per
 * thread and their share of attention's wall time split by those times. */
#ifndef SQ_OP_PROFILE_H
#define SQ_OP_PROFILE_H

#include <stdint.h>

typedef enum sq_op {
    SQ_OP_EMBED,          /* embedding gather (+ dequantize), sums */
    SQ_OP_LAYERNORM,      /* LayerNorms, with their residual add (post-LN) */
    SQ_OP_RESIDUAL,       /* residual adds (pre-LN), the widening copy */
    SQ_OP_QUANTIZE,       /* activations to int8 before a packed linear (incl. the guard) */
    SQ_OP_GEMM_QKV,       /* each linear's GEMM + epilogue (int8/int4 kernel or sgemm;
                             the outlier channels' fp32 side path is in the epilogue) */
    SQ_OP_GEMM_ATTN_OUT,
    SQ_OP_GEMM_FFN_UP,
    SQ_OP_GEMM_FFN_DOWN,
    SQ_OP_GEMM_RES,
    SQ_OP_ATTN_SCORES,    /* Q K^T (sgemm) */
    SQ_OP_SOFTMAX,
    SQ_OP_ATTN_CONTEXT,   /* P V (sgemm) */
    SQ_OP_ACTIVATION,     /* GELU / ReLU / SwiGLU as their own pass */
    SQ_OP_ACT_QUANTIZE,   /* the activation fused into the next linear's quantize step */
    SQ_OP_COUNT
} sq_op;

typedef struct sq_op_profile {
    double seconds[SQ_OP_COUNT];
    int64_t calls[SQ_OP_COUNT];
    double total; /* seconds inside sq_encoder_forward */
    int64_t forwards;
} sq_op_profile;

const char *sq_op_name(sq_op op);
/* Monotonic seconds. */
double sq_op_now(void);
/* Add the time since t0 to op (p may be NULL); returns the current time. */
double sq_op_add(sq_op_profile *p, sq_op op, double t0);

#endif

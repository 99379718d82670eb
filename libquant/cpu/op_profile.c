/* Per-op wall time (op_profile.h). */
#include "op_profile.h"

#include <time.h>

const char *sq_op_name(sq_op op)
{
    static const char *const names[SQ_OP_COUNT] = {
        [SQ_OP_EMBED] = "embeddings",         [SQ_OP_LAYERNORM] = "layernorm",
        [SQ_OP_RESIDUAL] = "residual",        [SQ_OP_QUANTIZE] = "quantize acts",
        [SQ_OP_GEMM_QKV] = "linear qkv",      [SQ_OP_GEMM_ATTN_OUT] = "linear attn_out",
        [SQ_OP_GEMM_FFN_UP] = "linear ffn_up", [SQ_OP_GEMM_FFN_DOWN] = "linear ffn_down",
        [SQ_OP_GEMM_RES] = "linear res",
        [SQ_OP_ATTN_SCORES] = "attn Q.K^T",   [SQ_OP_SOFTMAX] = "softmax",
        [SQ_OP_ATTN_CONTEXT] = "attn P.V",    [SQ_OP_ACTIVATION] = "gelu/relu",
        [SQ_OP_ACT_QUANTIZE] = "act+quantize",
    };
    return (unsigned)op < SQ_OP_COUNT ? names[op] : "?";
}

double sq_op_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double sq_op_add(sq_op_profile *p, sq_op op, double t0)
{
    double t = sq_op_now();
    if (p) {
        p->seconds[op] += t - t0;
        p->calls[op]++;
    }
    return t;
}

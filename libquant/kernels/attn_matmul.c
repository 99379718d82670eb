#include "attn_matmul.h"

#include <string.h>

static const char *const names[SQ_ATTN_MATMUL_COUNT] = {"f32", "bf16", "int8"};

const char *sq_attn_matmul_name(sq_attn_matmul m)
{
    return (unsigned)m < SQ_ATTN_MATMUL_COUNT ? names[m] : "?";
}

int sq_attn_matmul_parse(const char *s, sq_attn_matmul *out)
{
    for (int i = 0; i < SQ_ATTN_MATMUL_COUNT; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (sq_attn_matmul)i;
            return 0;
        }
    return -1;
}

const char *sq_attn_matmul_names(void)
{
    return "f32, bf16, int8";
}

const char *sq_attn_matmul_problem(sq_attn_matmul m, int hidden, int embed_dim, int heads,
                                   int positions)
{
    if (m == SQ_ATTN_BF16 && (heads <= 0 || (hidden / heads) % 2 != 0 || (embed_dim / heads) % 2 != 0))
        return "bf16 attention needs even head widths (hidden / heads and embed_dim / heads)";
    if (m == SQ_ATTN_INT8 && (heads <= 0 || hidden / heads > 2048 || embed_dim / heads > 2048))
        return "int8 attention takes head widths up to 2048";
    if (m == SQ_ATTN_INT8 && positions > SQ_ATTN_INT8_MAX_KEYS)
        return "int8 attention sums P.V exactly in int32, which holds up to 65,536 positions";
    return NULL;
}

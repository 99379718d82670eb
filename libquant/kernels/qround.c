/* The int8 rounding rules of the reference linear (qlinear_ref.h), in a file
 * of their own: every kernel reproduces them, and the kernels build without
 * the rest of the reference (which needs BLAS), e.g. in tests/device. */
#include <math.h>

#include "qlinear_ref.h"

int8_t sq_ref_round_s8(float v)
{
    float r = roundf(v); /* half away from zero */
    if (r > (float)SQ_REF_QMAX)
        return SQ_REF_QMAX;
    if (r < -(float)SQ_REF_QMAX)
        return -SQ_REF_QMAX;
    if (r != r) /* NaN: neither comparison above holds */
        return 0;
    return (int8_t)r;
}

int8_t sq_ref_round_s8_zp(float v, int z)
{
    float r = roundf(v);
    if (r != r)
        return 0;
    /* clamp first so r - z is exact and cannot overflow */
    const float lim = (float)(SQ_REF_QMAX + SQ_REF_MAX_ZERO);
    r = fminf(fmaxf(r, -lim), lim) - (float)z;
    if (r > (float)SQ_REF_QMAX)
        return SQ_REF_QMAX;
    if (r < -(float)SQ_REF_QMAX)
        return -SQ_REF_QMAX;
    return (int8_t)r;
}

/* the message spells the bounds out */
_Static_assert(SQ_REF_MAX_ZERO == 127 && SQ_REF_MAX_K / 2 == 66572, "update the message below");

const char *sq_ref_act_zero_problem(int64_t z, bool int8, int64_t k)
{
    if (int8 && z >= -SQ_REF_MAX_ZERO && z <= SQ_REF_MAX_ZERO && k <= SQ_REF_MAX_K / 2)
        return NULL;
    return "a zero point must be in [-127, 127], on an int8 linear with K <= 66572";
}

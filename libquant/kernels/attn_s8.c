/* int8 attention (attn_s8.h): the quantize steps, the scalar definition
 * and the AVX512-VNNI kernels. Scratch layout (each part 64-byte aligned;
 * Lr = L rounded up to 8 rows, Lk = L rounded up to 64 keys, Lj = L
 * rounded up to 4, dq = dh rounded up to 4, dv = dh rounded up to 32):
 *   Qc   [Lr][dq]            Q codes (u8 = code + 128 on the vpdpbusd path)
 *   Kc   [Lk][dq]            K codes, rows >= L zero
 *   Kp   [Lk/16][dq/4][16][4] K in blocks of 16 keys, quads along dh
 *   Pc   [Lr][Lj]            probability codes, zero beyond L
 *   Vc   [Lj][dv]            V codes, zero beyond L rows and dh columns
 *   Vp   [Lj/4][dv/16][16][4] V in quads along the sequence, 16 channels
 *   floats: u [Lr], ksum (int32) [Lk], sk [Lk], rz [Lr], sv [dv], mv [dv],
 *           mrow [dq], strip S [4][Lk]
 * Padding lanes hold zero codes, so they add nothing to any live sum. */
#include "attn_s8.h"
#include "attn_window.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_features.h"
#include "gemm_s8.h"
#include "op_profile.h"
#include "ops.h"

#define INLINE static inline __attribute__((always_inline))
#define T_512 __attribute__((target("avx512f,avx512bw,avx512vnni")))
#include "round_s8_zmm.h" /* after T_512 and INLINE, which it uses */

enum { SROWS = 4 /* rows per scores strip */, CROWS = 8 /* rows per context tile */ };

static size_t up(size_t n, size_t m)
{
    return (n + m - 1) / m * m;
}

/* M query rows against N keys (M == N == L for an encoder's head);
 * first > 0: causal (attn_s8.h), row i sees keys 0 .. first + i - 1. */
typedef struct parts {
    int M, N, first, dh, lr, lk, lj, dq, dv;
    const float *rel; /* NULL, or the relative bias: rel[j - i] joins score (i, j) */
    int win;          /* the sliding window's half width (attn_window.h); -1: none */
    uint8_t *qc, *kc, *kp, *pc, *vc, *vp;
    int32_t *ksum;
    float *u, *sk, *rz, *sv, *mv, *mrow, *strip, *svt;
} parts;

/* Lay the parts out from base (or only measure them, base NULL): returns
 * the bytes used. */
static size_t layout(char *base, int M, int N, int dh, parts *p)
{
    p->M = M, p->N = N, p->first = 0, p->dh = dh, p->rel = NULL, p->win = -1;
    p->lr = (int)up((size_t)M, CROWS);
    p->lk = (int)up((size_t)N, 64);
    p->lj = (int)up((size_t)N, 4);
    p->dq = (int)up((size_t)dh, 4);
    p->dv = (int)up((size_t)dh, 32);
    size_t off = 0;
#define PART(field, type, count)                                                                   \
    p->field = base ? (type *)(base + off) : NULL;                                                 \
    off += up((size_t)(count) * sizeof(type), 64);
    PART(qc, uint8_t, (size_t)p->lr * p->dq)
    PART(kc, uint8_t, (size_t)p->lk * p->dq)
    PART(kp, uint8_t, (size_t)p->lk * p->dq)
    PART(pc, uint8_t, (size_t)p->lr * p->lj)
    PART(vc, uint8_t, (size_t)p->lj * p->dv)
    PART(vp, uint8_t, (size_t)p->lj * p->dv)
    PART(ksum, int32_t, p->lk)
    PART(u, float, p->lr)
    PART(sk, float, p->lk)
    PART(rz, float, p->lr)
    PART(sv, float, p->dv)
    PART(mv, float, p->dv)
    PART(mrow, float, p->dq)
    PART(strip, float, (size_t)SROWS * p->lk)
    PART(svt, float, p->lj)
#undef PART
    return off;
}

size_t sq_attn_s8_scratch_bytes(int max_len, int dh)
{
    parts p;
    return layout(NULL, max_len, max_len, dh, &p);
}

bool sq_attn_s8_hw(void)
{
    const sq_cpu_features *f = sq_cpu_features_get();
    return f->avx512vnni && f->avx512bw && sq_ops_get_level() == SQ_OPS_AVX512;
}

/* ---- the quantize steps (both paths) ---- */

/* The multiplier of a range a: fl(127 / a), or 0 (codes 0, step 0) when a
 * is 0 or not finite. */
static float mult_of(float a, float *step)
{
    if (!(a > 0.0f) || !isfinite(a)) {
        *step = 0.0f;
        return 0.0f;
    }
    *step = a / 127.0f;
    return 127.0f / a;
}

static float max_abs(const float *x, int n)
{
    float a = 0.0f;
    for (int t = 0; t < n; t++) {
        float v = fabsf(x[t]);
        a = v > a ? v : a; /* NaN ignored; max is exact in any order */
    }
    return a;
}

/* rows(X) of n rows into codes [n][dq] (padding zero), steps into step. */
static void quantize_rows(const float *X, int ld, int n, int dh, int dq, float *mrow,
                          int8_t *codes, float *step)
{
    const sq_quantize_fn qz = sq_gemm_quantizer();
    for (int r = 0; r < n; r++) {
        const float *x = X + (size_t)r * ld;
        const float m = mult_of(max_abs(x, dh), &step[r]);
        for (int t = 0; t < dh; t++)
            mrow[t] = m;
        qz(x, 1, dh, (size_t)dh, mrow, 0, codes + (size_t)r * dq, dq, (size_t)dq, NULL);
    }
}

/* rows(X) on zmm: the same max (exact in any order; max_ps keeps its
 * second operand for a NaN first) and the same rounding as the quantizer
 * (round_s8_zmm.h), so the same codes and steps as quantize_rows. */
T_512 static void quantize_rows_zmm(const float *X, int ld, int n, int dh, int dq, int8_t *codes,
                                    float *step)
{
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
    for (int r = 0; r < n; r++) {
        const float *x = X + (size_t)r * ld;
        __m512 va = _mm512_setzero_ps();
        for (int t = 0; t < dh; t += 16) {
            const __mmask16 mk = dh - t >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (dh - t)) - 1);
            va = _mm512_max_ps(_mm512_castsi512_ps(_mm512_and_si512(
                                   _mm512_castps_si512(_mm512_maskz_loadu_ps(mk, x + t)), absmask)),
                               va);
        }
        const __m512 vm = _mm512_set1_ps(mult_of(_mm512_reduce_max_ps(va), &step[r]));
        int8_t *q = codes + (size_t)r * dq;
        for (int t = 0; t < dq; t += 16) {
            const int live = dh - t >= 16 ? 16 : dh - t > 0 ? dh - t : 0;
            const __mmask16 mk = (__mmask16)((1u << live) - 1);
            __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk, x + t), vm);
            __asm__("" : "+v"(v)); /* v rounded to float before the rounding step */
            __m512i qi = _mm512_cvtps_epi32(round_s8_ps512(v, _mm512_setzero_ps()));
            const int w = dq - t >= 16 ? 16 : dq - t;
            _mm512_mask_cvtsepi32_storeu_epi8(q + t, (__mmask16)((1u << w) - 1), qi);
        }
    }
}

static void rows_of(const float *X, int ld, int n, int width, int8_t *codes, float *step,
                    const parts *p, bool hw)
{
    if (hw)
        quantize_rows_zmm(X, ld, n, p->dh, width, codes, step);
    else
        quantize_rows(X, ld, n, p->dh, width, p->mrow, codes, step);
}

/* rows(Q) into u (times c) and rows(K) into sk: Q rows beyond M and K rows
 * beyond N zero. */
static void quantize_qk(const float *Q, int ldq, const float *K, int ldk, float c, parts *p,
                        bool hw)
{
    const int M = p->M, N = p->N;
    rows_of(Q, ldq, M, p->dq, (int8_t *)p->qc, p->u, p, hw);
    memset(p->qc + (size_t)M * p->dq, 0, (size_t)(p->lr - M) * p->dq);
    for (int i = 0; i < M; i++)
        p->u[i] = c * p->u[i];
    rows_of(K, ldk, N, p->dq, (int8_t *)p->kc, p->sk, p, hw);
    memset(p->kc + (size_t)N * p->dq, 0, (size_t)(p->lk - N) * p->dq);
    for (int j = N; j < p->lk; j++)
        p->sk[j] = 0.0f;
}

/* Q, K and V of an encoder's head quantized into the parts (rows and
 * columns beyond L zero); V by columns. */
static void quantize_qkv(const float *Q, const float *K, const float *V, int ld, float c,
                         parts *p, bool hw)
{
    const int L = p->N, dh = p->dh;
    quantize_qk(Q, ld, K, ld, c, p, hw);
    /* cols(V): each channel's range over the sequence, then one pass of
     * the quantizer with the channels' multipliers */
    for (int d = 0; d < dh; d++)
        p->mv[d] = 0.0f;
    for (int j = 0; j < L; j++) {
        const float *v = V + (size_t)j * ld;
        for (int d = 0; d < dh; d++) {
            float a = fabsf(v[d]);
            p->mv[d] = a > p->mv[d] ? a : p->mv[d];
        }
    }
    for (int d = 0; d < dh; d++)
        p->mv[d] = mult_of(p->mv[d], &p->sv[d]);
    for (int d = dh; d < p->dv; d++)
        p->sv[d] = 0.0f;
    sq_gemm_quantizer()(V, L, dh, (size_t)ld, p->mv, 0, (int8_t *)p->vc, p->dv, (size_t)p->dv,
                        NULL);
    memset(p->vc + (size_t)L * p->dv, 0, (size_t)(p->lj - L) * p->dv);
}

/* The causal form's row: p over the n = first + i keys row i sees, then
 * each p[j] times its token's V step, requantized to 8 bits (attn_s8.h);
 * g_i into rz. */
static void prob_row_causal(const float *S, parts *p, int i)
{
    uint8_t *pr = p->pc + (size_t)i * p->lj;
    const int n = p->first + i;
    const int z = sq_softmax_row_u8(S, n, pr);
    float a = 0.0f;
    for (int j = 0; j < n; j++) {
        const float w = (float)pr[j] * p->svt[j];
        a = w > a ? w : a;
    }
    if (!(a > 0.0f) || !isfinite(a) || z <= 0) {
        memset(pr, 0, (size_t)p->lj);
        p->rz[i] = 0.0f;
        return;
    }
    const float m = 255.0f / a;
    for (int j = 0; j < n; j++) {
        const float e = ((float)pr[j] * p->svt[j]) * m;
        pr[j] = (uint8_t)(int)(e + 0.5f > 255.0f ? 255.0f : e + 0.5f);
    }
    memset(pr + n, 0, (size_t)(p->lj - n));
    p->rz[i] = (a / 255.0f) * (1.0f / (float)z);
}

/* One row of probability codes from S (the scratch strip: the relative
 * bias is added in place), its r_i, and the range of p / Z. */
static void prob_row(float *S, parts *p, int i, float *lo, float *hi)
{
    if (p->first > 0) {
        prob_row_causal(S, p, i);
        return;
    }
    if (p->rel)
        for (int j = 0; j < p->N; j++)
            S[j] += p->rel[j - i];
    uint8_t *pr = p->pc + (size_t)i * p->lj;
    const int z = sq_attn_window_softmax_u8(S, i, p->N, p->win, pr);
    memset(pr + p->N, 0, (size_t)(p->lj - p->N));
    p->rz[i] = z > 0 ? 1.0f / (float)z : 0.0f;
    if (lo) {
        int cmin = 255, cmax = 0;
        for (int j = 0; j < p->N; j++) {
            cmin = pr[j] < cmin ? pr[j] : cmin;
            cmax = pr[j] > cmax ? pr[j] : cmax;
        }
        float a = (float)cmin * p->rz[i], b = (float)cmax * p->rz[i];
        *lo = a < *lo ? a : *lo;
        *hi = b > *hi ? b : *hi;
    }
}

/* ---- the definition, in scalar code ---- */

static void head_scalar(parts *p, float *ctx, int ldc, float *lo, float *hi,
                        sq_attn_s8_times *tm)
{
    const int M = p->M, N = p->N, dh = p->dh;
    const int8_t *q = (const int8_t *)p->qc, *k = (const int8_t *)p->kc;
    const int8_t *v = (const int8_t *)p->vc;
    double t = tm ? sq_op_now() : 0, t1;
    for (int i = 0; i < M; i++) {
        float *S = p->strip;
        for (int j = 0; j < N; j++) {
            int32_t acc = 0;
            for (int d = 0; d < dh; d++)
                acc += (int32_t)q[(size_t)i * p->dq + d] * k[(size_t)j * p->dq + d];
            S[j] = (p->u[i] * p->sk[j]) * (float)acc;
        }
        if (tm)
            t1 = sq_op_now(), tm->scores += t1 - t, t = t1;
        prob_row(S, p, i, lo, hi);
        if (tm)
            t1 = sq_op_now(), tm->softmax += t1 - t, t = t1;
    }
    for (int i = 0; i < M; i++) {
        const uint8_t *pr = p->pc + (size_t)i * p->lj;
        for (int d = 0; d < dh; d++) {
            int32_t acc = 0;
            for (int j = 0; j < N; j++)
                acc += (int32_t)pr[j] * v[(size_t)j * p->dv + d];
            ctx[(size_t)i * ldc + d] = (p->rz[i] * p->sv[d]) * (float)acc;
        }
    }
    if (tm)
        tm->context += sq_op_now() - t;
}

/* ---- AVX512-VNNI ---- */

/* Q's codes turned into u8 (code + 128, the xor of the sign bit). */
static void flip_q(parts *p)
{
    for (size_t t = 0; t < (size_t)p->lr * p->dq; t++)
        p->qc[t] ^= 0x80;
}

/* Kp from Kc (a quad of one key is one int32) and ksum = 128 sum_t k[j][t];
 * Q flipped. */
static void pack_qk(parts *p)
{
    const int G = p->dq / 4;
    const int32_t *kc = (const int32_t *)p->kc;
    int32_t *kp = (int32_t *)p->kp;
    for (int jb = 0; jb < p->lk / 16; jb++)
        for (int g = 0; g < G; g++)
            for (int n = 0; n < 16; n++)
                kp[((size_t)jb * G + g) * 16 + n] = kc[((size_t)jb * 16 + n) * G + g];
    for (int j = 0; j < p->lk; j++) {
        const int8_t *kr = (const int8_t *)p->kc + (size_t)j * p->dq;
        int32_t s = 0;
        for (int t = 0; t < p->dq; t++)
            s += kr[t];
        p->ksum[j] = 128 * s;
    }
    flip_q(p);
}

/* Vp from Vc: quad t of the sequence, block b of 16 channels, lane n holds
 * the four codes v[4t .. 4t+3][16b + n]. */
static void pack_v(parts *p)
{
    const int B = p->dv / 16;
    for (int t = 0; t < p->lj / 4; t++)
        for (int b = 0; b < B; b++) {
            uint8_t *dst = p->vp + ((size_t)t * B + b) * 64;
            for (int n = 0; n < 16; n++)
                for (int e = 0; e < 4; e++)
                    dst[n * 4 + e] = p->vc[(size_t)(4 * t + e) * p->dv + 16 * b + n];
        }
}

T_512 INLINE __m512i bcast(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

#define R4(X) X(0) X(1) X(2) X(3)
#define R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* Scores of the SROWS rows from i0 into the strip (stride lk): tiles of 4
 * rows x 64 keys, 16 named accumulators. */
T_512 static void scores_strip(const parts *p, int i0)
{
    const int G = p->dq / 4;
    const uint8_t *q0 = p->qc + (size_t)i0 * p->dq, *q1 = q0 + p->dq, *q2 = q1 + p->dq,
                  *q3 = q2 + p->dq;
    for (int kb = 0; kb < p->lk / 64; kb++) {
#define DECL(r)                                                                                    \
    __m512i a##r##0 = _mm512_setzero_si512(), a##r##1 = _mm512_setzero_si512(),                    \
            a##r##2 = _mm512_setzero_si512(), a##r##3 = _mm512_setzero_si512();
        R4(DECL)
#undef DECL
        const uint8_t *kb0 = p->kp + (size_t)kb * 4 * G * 64;
        for (int g = 0; g < G; g++) {
            const __m512i b0 = _mm512_load_si512(kb0 + (size_t)g * 64);
            const __m512i b1 = _mm512_load_si512(kb0 + ((size_t)G + g) * 64);
            const __m512i b2 = _mm512_load_si512(kb0 + ((size_t)2 * G + g) * 64);
            const __m512i b3 = _mm512_load_si512(kb0 + ((size_t)3 * G + g) * 64);
#define STEP(r)                                                                                    \
    {                                                                                              \
        const __m512i x = bcast(q##r + 4 * g);                                                     \
        a##r##0 = _mm512_dpbusd_epi32(a##r##0, x, b0);                                             \
        a##r##1 = _mm512_dpbusd_epi32(a##r##1, x, b1);                                             \
        a##r##2 = _mm512_dpbusd_epi32(a##r##2, x, b2);                                             \
        a##r##3 = _mm512_dpbusd_epi32(a##r##3, x, b3);                                             \
    }
            R4(STEP)
#undef STEP
        }
        const int j0 = kb * 64;
#define OUT1(r, c)                                                                                 \
    {                                                                                              \
        const int j = j0 + 16 * (c);                                                               \
        __m512 f = _mm512_cvtepi32_ps(                                                             \
            _mm512_sub_epi32(a##r##c, _mm512_loadu_si512(p->ksum + j)));                           \
        __m512 w = _mm512_mul_ps(_mm512_set1_ps(p->u[i0 + (r)]), _mm512_loadu_ps(p->sk + j));      \
        _mm512_storeu_ps(p->strip + (size_t)(r) * p->lk + j, _mm512_mul_ps(w, f));                 \
    }
#define OUT(r) OUT1(r, 0) OUT1(r, 1) OUT1(r, 2) OUT1(r, 3)
        R4(OUT)
#undef OUT
#undef OUT1
    }
}

/* ctx rows i0 .. i0+7 (those < L), channels 32 cb .. 32 cb + 31 (those <
 * dh): 8 rows x 2 blocks of 16 channels, 16 named accumulators. */
T_512 static void context_tile(const parts *p, int i0, int cb, float *ctx, int ldc)
{
    const int B = p->dv / 16, T = p->lj / 4;
#define PTR(r) const uint8_t *p##r = p->pc + (size_t)(i0 + (r)) * p->lj;
    R8(PTR)
#undef PTR
#define DECL(r) __m512i a##r##0 = _mm512_setzero_si512(), a##r##1 = _mm512_setzero_si512();
    R8(DECL)
#undef DECL
    const uint8_t *vb = p->vp + (size_t)2 * cb * 64;
    for (int t = 0; t < T; t++) {
        const __m512i b0 = _mm512_load_si512(vb + (size_t)t * B * 64);
        const __m512i b1 = _mm512_load_si512(vb + (size_t)t * B * 64 + 64);
#define STEP(r)                                                                                    \
    {                                                                                              \
        const __m512i x = bcast(p##r + 4 * t);                                                     \
        a##r##0 = _mm512_dpbusd_epi32(a##r##0, x, b0);                                             \
        a##r##1 = _mm512_dpbusd_epi32(a##r##1, x, b1);                                             \
    }
        R8(STEP)
#undef STEP
    }
    const int d0 = 32 * cb;
    const int n0 = p->dh - d0 >= 16 ? 16 : p->dh - d0, n1 = p->dh - d0 - 16;
    const __mmask16 m0 = (__mmask16)((1u << n0) - 1);
    const __mmask16 m1 = n1 >= 16 ? (__mmask16)0xffff : n1 > 0 ? (__mmask16)((1u << n1) - 1) : 0;
    const __m512 s0 = _mm512_loadu_ps(p->sv + d0), s1 = _mm512_loadu_ps(p->sv + d0 + 16);
#define OUT(r)                                                                                     \
    if (i0 + (r) < p->M) {                                                                         \
        const __m512 rz = _mm512_set1_ps(p->rz[i0 + (r)]);                                         \
        float *o = ctx + (size_t)(i0 + (r)) * ldc + d0;                                            \
        _mm512_mask_storeu_ps(o, m0, _mm512_mul_ps(_mm512_mul_ps(rz, s0), _mm512_cvtepi32_ps(a##r##0))); \
        if (m1)                                                                                    \
            _mm512_mask_storeu_ps(o + 16, m1,                                                      \
                                  _mm512_mul_ps(_mm512_mul_ps(rz, s1), _mm512_cvtepi32_ps(a##r##1))); \
    }
    R8(OUT)
#undef OUT
}

/* The kernels on packed parts (K and V packed, Q flipped). */
static void head_packed(parts *p, float *ctx, int ldc, float *lo, float *hi,
                        sq_attn_s8_times *tm)
{
    double t = tm ? sq_op_now() : 0, t1;
    for (int i0 = 0; i0 < p->M; i0 += SROWS) {
        scores_strip(p, i0);
        if (tm)
            t1 = sq_op_now(), tm->scores += t1 - t, t = t1;
        for (int r = 0; r < SROWS && i0 + r < p->M; r++)
            prob_row(p->strip + (size_t)r * p->lk, p, i0 + r, lo, hi);
        if (tm)
            t1 = sq_op_now(), tm->softmax += t1 - t, t = t1;
    }
    memset(p->pc + (size_t)p->M * p->lj, 0, (size_t)(p->lr - p->M) * p->lj);
    for (int i0 = 0; i0 < p->M; i0 += CROWS)
        for (int cb = 0; cb < p->dv / 32; cb++)
            context_tile(p, i0, cb, ctx, ldc);
    if (tm)
        tm->context += sq_op_now() - t;
}

static void head_hw(parts *p, float *ctx, int ldc, float *lo, float *hi, sq_attn_s8_times *tm)
{
    pack_qk(p);
    pack_v(p);
    head_packed(p, ctx, ldc, lo, hi, tm);
}

void sq_attn_s8_head(const float *Q, const float *K, const float *V, int ld, int L, int dh,
                     float c, const float *rel, int win, float *ctx, int ldc, void *scratch,
                     bool hw, float *prange, sq_attn_s8_times *times)
{
    if (L <= 0 || dh <= 0)
        return;
    parts p;
    layout(scratch, L, L, dh, &p);
    p.rel = rel;
    p.win = win;
    double t = times ? sq_op_now() : 0;
    quantize_qkv(Q, K, V, ld, c, &p, hw);
    if (times) /* the quantize steps count with the matmul they feed */
        times->scores += sq_op_now() - t;
    float *lo = prange ? &prange[0] : NULL, *hi = prange ? &prange[1] : NULL;
    if (hw)
        head_hw(&p, ctx, ldc, lo, hi, times);
    else
        head_scalar(&p, ctx, ldc, lo, hi, times);
}

/* ---- the causal form over a packed KV cache ---- */

size_t sq_attn_s8_cache_bytes(int max_keys, int dh)
{
    const size_t lk = up((size_t)max_keys, 64), lj = up((size_t)max_keys, 4);
    const size_t dq = up((size_t)dh, 4), dv = up((size_t)dh, 32);
    return up(lk * dq, 64) + up(lj * dv, 64) + up(lk * 4, 64) + up(lk * 4, 64) + up(lj * 4, 64) +
           up(dq * 4, 64);
}

void sq_attn_s8_cache_init(sq_attn_s8_cache *kv, void *mem, int max_keys, int dh)
{
    const size_t lk = up((size_t)max_keys, 64), lj = up((size_t)max_keys, 4);
    kv->max_keys = max_keys, kv->dh = dh;
    kv->dq = (int)up((size_t)dh, 4), kv->dv = (int)up((size_t)dh, 32);
    memset(mem, 0, sq_attn_s8_cache_bytes(max_keys, dh));
    char *c = mem;
    kv->kp = (uint8_t *)c, c += up(lk * kv->dq, 64);
    kv->vp = (uint8_t *)c, c += up(lj * kv->dv, 64);
    kv->ksum = (int32_t *)c, c += up(lk * 4, 64);
    kv->sk = (float *)c, c += up(lk * 4, 64);
    kv->svt = (float *)c, c += up(lj * 4, 64);
    kv->mrow = (float *)c;
}

void sq_attn_s8_cache_put(sq_attn_s8_cache *kv, int pos, const float *k, const float *v, bool hw)
{
    if (pos < 0 || pos >= kv->max_keys)
        return;
    const int dh = kv->dh, dq = kv->dq, dv = kv->dv, G = dq / 4, B = dv / 16;
    int8_t codes[2048]; /* dv <= 2048: sq_attn_s8_cache_init's callers keep dh <= 2048 */
    if (dv > (int)sizeof codes)
        return;
    /* K: rows(K) of this key, its quads into block pos / 16, its ksum */
    if (hw)
        quantize_rows_zmm(k, dh, 1, dh, dq, codes, &kv->sk[pos]);
    else
        quantize_rows(k, dh, 1, dh, dq, kv->mrow, codes, &kv->sk[pos]);
    int32_t *kp = (int32_t *)kv->kp, quad, sum = 0;
    for (int g = 0; g < G; g++) {
        memcpy(&quad, codes + 4 * g, 4);
        kp[((size_t)(pos / 16) * G + g) * 16 + pos % 16] = quad;
    }
    for (int t = 0; t < dq; t++)
        sum += codes[t];
    kv->ksum[pos] = 128 * sum;
    /* V: rows(V) of this token, its codes into lane pos % 4 of quad pos / 4 */
    if (hw)
        quantize_rows_zmm(v, dh, 1, dh, dv, codes, &kv->svt[pos]);
    else
        quantize_rows(v, dh, 1, dh, dv, kv->mrow, codes, &kv->svt[pos]);
    for (int b = 0; b < B; b++) {
        uint8_t *dst = kv->vp + ((size_t)(pos / 4) * B + b) * 64 + pos % 4;
        for (int n = 0; n < 16; n++)
            dst[n * 4] = (uint8_t)codes[16 * b + n];
    }
}

size_t sq_attn_s8_causal_scratch_bytes(int max_rows, int max_keys, int dh)
{
    parts p;
    return layout(NULL, max_rows, max_keys, dh, &p);
}

void sq_attn_s8_causal_cached(const float *Q, int ldq, int M, const sq_attn_s8_cache *kv, int N,
                              int first, float c, float *ctx, int ldc, void *scratch, bool hw)
{
    const int dh = kv->dh;
    if (M <= 0 || dh <= 0 || first < 1 || first + M - 1 > N || N > kv->max_keys)
        return;
    parts p;
    layout(scratch, M, N, dh, &p);
    p.first = first;
    rows_of(Q, ldq, M, p.dq, (int8_t *)p.qc, p.u, &p, hw);
    memset(p.qc + (size_t)M * p.dq, 0, (size_t)(p.lr - M) * p.dq);
    for (int i = 0; i < M; i++)
        p.u[i] = c * p.u[i];
    for (int d = 0; d < p.dv; d++)
        p.sv[d] = 1.0f; /* the V steps are per token, folded into the probabilities */
    p.ksum = kv->ksum, p.sk = kv->sk, p.svt = kv->svt;
    if (hw) { /* the kernels read the cache's packed blocks */
        p.kp = kv->kp, p.vp = kv->vp;
        flip_q(&p);
        head_packed(&p, ctx, ldc, NULL, NULL, NULL);
        return;
    }
    /* the scalar definition on plain codes taken out of the blocks */
    const int G = p.dq / 4, B = p.dv / 16;
    const int32_t *kp = (const int32_t *)kv->kp;
    memset(p.kc, 0, (size_t)p.lk * p.dq);
    memset(p.vc, 0, (size_t)p.lj * p.dv);
    for (int j = 0; j < N; j++) {
        for (int g = 0; g < G; g++)
            memcpy(p.kc + (size_t)j * p.dq + 4 * g, &kp[((size_t)(j / 16) * G + g) * 16 + j % 16], 4);
        for (int b = 0; b < B; b++)
            for (int n = 0; n < 16; n++)
                p.vc[(size_t)j * p.dv + 16 * b + n] = kv->vp[((size_t)(j / 4) * B + b) * 64 + n * 4 + j % 4];
    }
    head_scalar(&p, ctx, ldc, NULL, NULL, NULL);
}

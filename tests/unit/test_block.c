/* The one transformer block (libquant/model/block.h) against an f64
 * reference written here from the formulas, for every description: norm
 * kind (LayerNorm, RMSNorm) x placement (pre, post) x activation (GELU,
 * ReLU, SwiGLU), and a widening layer. Also: the observer sees each linear's
 * input in order (the FFN's after the activation), a run with the observer
 * gives the same bits as one without (the activation fused into ffn_down),
 * and the attention core's probability range reaches the observer only
 * when the core reports it. The attention core here is a stand-in that
 * mixes q, k and v per row, so the check is of the block's wiring, not of
 * attention (the attention kernels have their own tests). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "test_util.h"

enum { ROWS = 5, IN = 12, H = 12, F = 20, MAXW = 2 * F };

typedef struct layer {
    sq_block blk;
    int in, h, f, up;
} layer;

static float *rnd(uint64_t *s, int n, float scale, float offset)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = offset + scale * tu_frand(s);
    return v;
}

static void make_linear(sq_linear *l, uint64_t *s, int out, int in)
{
    memset(l, 0, sizeof *l);
    l->in = in, l->out = out, l->qtype = SQ_QT_F32;
    l->w = rnd(s, out * in, 0.4f, 0.0f);
    l->b = rnd(s, out, 0.1f, 0.0f);
}

static layer make_layer(const sq_block_desc *d, int in, uint64_t seed)
{
    layer y = {.in = in, .h = H, .f = F, .up = sq_act_gated(d->act) ? 2 * F : F};
    uint64_t s = seed;
    make_linear(&y.blk.lin[SQ_LIN_QKV], &s, 3 * in, in);
    make_linear(&y.blk.lin[SQ_LIN_ATTN_OUT], &s, H, in);
    make_linear(&y.blk.lin[SQ_LIN_FFN_UP], &s, y.up, H);
    make_linear(&y.blk.lin[SQ_LIN_FFN_DOWN], &s, H, F);
    if (in != H)
        make_linear(&y.blk.lin[SQ_LIN_RES], &s, H, in);
    const int n1 = d->place == SQ_NORM_PRE ? in : H;
    y.blk.n1_g = rnd(&s, n1, 0.3f, 1.0f);
    y.blk.n2_g = rnd(&s, H, 0.3f, 1.0f);
    if (d->norm == SQ_NORM_LAYER) {
        y.blk.n1_b = rnd(&s, n1, 0.2f, 0.0f);
        y.blk.n2_b = rnd(&s, H, 0.2f, 0.0f);
    }
    return y;
}

/* The stand-in attention core: ctx[r][j] = q[r][j] + k[r][j] * v[r][j]. */
typedef struct core {
    int in, calls;
    bool report;
} core;

static bool core_run(void *ctx, int layer, float *qkv, float *out, float *prange)
{
    (void)layer;
    core *c = ctx;
    c->calls++;
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < c->in; j++) {
            const float *q = qkv + (size_t)r * 3 * c->in;
            out[(size_t)r * c->in + j] = q[j] + q[c->in + j] * q[2 * c->in + j];
        }
    if (prange && c->report) {
        prange[0] = 0.25f, prange[1] = 0.75f;
        return true;
    }
    return false;
}

/* ---- the reference, in f64 ---- */

static void ref_linear(const sq_linear *l, const double *x, int rows, double *y)
{
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < l->out; o++) {
            double a = l->b[o];
            for (int i = 0; i < l->in; i++)
                a += (double)l->w[(size_t)o * l->in + i] * x[(size_t)r * l->in + i];
            y[(size_t)r * l->out + o] = a;
        }
}

static void ref_norm(const sq_block_desc *d, const double *x, double *y, int rows, int w,
                     const float *g, const float *b)
{
    for (int r = 0; r < rows; r++) {
        const double *v = x + (size_t)r * w;
        double mean = 0, ss = 0;
        for (int i = 0; i < w; i++)
            mean += v[i];
        mean /= w;
        if (d->norm == SQ_NORM_RMS) {
            for (int i = 0; i < w; i++)
                ss += v[i] * v[i];
            for (int i = 0; i < w; i++)
                y[(size_t)r * w + i] = g[i] * v[i] / sqrt(ss / w + d->eps);
        } else {
            for (int i = 0; i < w; i++)
                ss += (v[i] - mean) * (v[i] - mean);
            for (int i = 0; i < w; i++)
                y[(size_t)r * w + i] = (v[i] - mean) / sqrt(ss / w + d->eps) * g[i] + b[i];
        }
    }
}

static double act1(sq_act a, double v)
{
    return a == SQ_ACT_RELU ? (v > 0 ? v : 0) : 0.5 * v * (1 + erf(v / sqrt(2.0)));
}

static void ref_block(const sq_block_desc *d, const layer *y, double *x)
{
    const sq_block *L = &y->blk;
    const bool pre = d->place == SQ_NORM_PRE;
    double a[ROWS * 3 * IN], qkv[ROWS * 3 * IN], ctx[ROWS * IN], o[ROWS * H], res[ROWS * H];
    double u[ROWS * MAXW], h[ROWS * F];
    if (pre)
        ref_norm(d, x, a, ROWS, y->in, L->n1_g, L->n1_b);
    else
        memcpy(a, x, sizeof(double) * ROWS * y->in);
    ref_linear(&L->lin[SQ_LIN_QKV], a, ROWS, qkv);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < y->in; j++) {
            const double *q = qkv + (size_t)r * 3 * y->in;
            ctx[r * y->in + j] = (float)((float)q[j] + (float)q[y->in + j] * (float)q[2 * y->in + j]);
        }
    ref_linear(&L->lin[SQ_LIN_ATTN_OUT], ctx, ROWS, o);
    if (y->in != H) {
        ref_linear(&L->lin[SQ_LIN_RES], x, ROWS, res);
        memcpy(x, res, sizeof res);
    }
    for (int i = 0; i < ROWS * H; i++)
        x[i] += o[i];
    if (!pre)
        ref_norm(d, x, x, ROWS, H, L->n1_g, L->n1_b);
    if (pre)
        ref_norm(d, x, a, ROWS, H, L->n2_g, L->n2_b);
    else
        memcpy(a, x, sizeof(double) * ROWS * H);
    ref_linear(&L->lin[SQ_LIN_FFN_UP], a, ROWS, u);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < F; j++) {
            const double *g = u + (size_t)r * y->up;
            h[r * F + j] = d->act == SQ_ACT_SWIGLU  ? g[j] / (1 + exp(-g[j])) * g[F + j]
                           : d->act == SQ_ACT_GEGLU ? act1(SQ_ACT_GELU, g[j]) * g[F + j]
                                                    : act1(d->act, g[j]);
        }
    ref_linear(&L->lin[SQ_LIN_FFN_DOWN], h, ROWS, o);
    for (int i = 0; i < ROWS * H; i++)
        x[i] += o[i];
    if (!pre)
        ref_norm(d, x, x, ROWS, H, L->n2_g, L->n2_b);
}

/* ---- the observer ---- */

typedef struct seen {
    int n, kinds[8], rows[8], cols[8], probs;
    float p[2];
    double act_err; /* the FFN_DOWN input against the activation of the FFN_UP input's output */
} seen;

static void on_input(void *ctx, int layer, sq_linear_kind k, const float *x, int rows, int cols)
{
    (void)layer, (void)x;
    seen *s = ctx;
    if (s->n < 8)
        s->kinds[s->n] = k, s->rows[s->n] = rows, s->cols[s->n] = cols;
    s->n++;
}

static void on_probs(void *ctx, int layer, float pmin, float pmax)
{
    (void)layer;
    seen *s = ctx;
    s->probs++;
    s->p[0] = pmin, s->p[1] = pmax;
}

/* Run one description: against the reference, with and without the
 * observer; returns the largest error relative to the output's scale. */
static void check_desc(sq_block_desc d, int in)
{
    layer y = make_layer(&d, in, 0x5eed0000u + (unsigned)in * 7 + d.norm * 3 + d.place * 11 + d.act);
    uint64_t s = 0xabcdefu;
    float *x0 = rnd(&s, ROWS * in, 1.5f, 0.2f);
    static float tmp[ROWS * H], qkv[ROWS * 3 * IN], ctxb[ROWS * IN], ffn[ROWS * MAXW],
        actb[ROWS * F], res[ROWS * H], xa[ROWS * H], xb[ROWS * H];
    sq_linear_scratch lin = {0};
    sq_block_bufs b = {.tmp = tmp, .qkv = qkv, .ctx = ctxb, .ffn = ffn,
                       .act = sq_act_gated(d.act) ? actb : ffn, .res = res, .lin = &lin};
    core c = {.in = in, .report = d.norm == SQ_NORM_LAYER};
    sq_block_attn attn = {core_run, &c};

    memcpy(xa, x0, sizeof(float) * ROWS * in);
    sq_block_forward(&d, &y.blk, 3, xa, ROWS, &b, &attn, NULL);

    seen sn = {0};
    sq_observer obs = {on_input, on_probs, &sn};
    memcpy(xb, x0, sizeof(float) * ROWS * in);
    sq_block_forward(&d, &y.blk, 3, xb, ROWS, &b, &attn, &obs);
    ck_assert_msg(memcmp(xa, xb, sizeof xa) == 0,
                  "norm %d place %d act %d: the observed run differs from the fused one", d.norm,
                  d.place, d.act);
    ck_assert_int_eq(c.calls, 2);
    const int want[] = {SQ_LIN_QKV, SQ_LIN_ATTN_OUT, SQ_LIN_RES, SQ_LIN_FFN_UP, SQ_LIN_FFN_DOWN};
    const int wcols[] = {in, in, in, H, F};
    int k = 0;
    for (int i = 0; i < 5; i++) {
        if (want[i] == SQ_LIN_RES && in == H)
            continue;
        ck_assert_int_eq(sn.kinds[k], want[i]);
        ck_assert_int_eq(sn.rows[k], ROWS);
        ck_assert_int_eq(sn.cols[k], wcols[i]);
        k++;
    }
    ck_assert_int_eq(sn.n, k);
    ck_assert_int_eq(sn.probs, c.report ? 1 : 0);
    if (c.report)
        ck_assert(sn.p[0] == 0.25f && sn.p[1] == 0.75f);

    double ref[ROWS * H];
    for (int i = 0; i < ROWS * in; i++)
        ref[i] = x0[i];
    ref_block(&d, &y, ref);
    double worst = 0, scale = 0;
    for (int i = 0; i < ROWS * H; i++) {
        worst = fmax(worst, fabs(xa[i] - ref[i]));
        scale = fmax(scale, fabs(ref[i]));
    }
    ck_assert_msg(scale > 0.1, "degenerate output");
    ck_assert_msg(worst <= 2e-5 * scale + 1e-5,
                  "norm %d place %d act %d in %d: worst error %g (scale %g)", d.norm, d.place,
                  d.act, in, worst, scale);
    /* the reference itself can fail: a different description gives a
     * clearly different output */
    sq_block_desc other = d;
    other.act = d.act == SQ_ACT_RELU    ? SQ_ACT_GELU
                : d.act == SQ_ACT_GEGLU ? SQ_ACT_SWIGLU
                                        : SQ_ACT_RELU;
    if (d.act != SQ_ACT_SWIGLU) {
        double alt[ROWS * H];
        for (int i = 0; i < ROWS * in; i++)
            alt[i] = x0[i];
        ref_block(&other, &y, alt);
        double diff = 0;
        for (int i = 0; i < ROWS * H; i++)
            diff = fmax(diff, fabs(alt[i] - ref[i]));
        ck_assert_msg(diff > 100 * (worst + 1e-6), "the activations are indistinguishable here");
    }
    sq_block_free(&y.blk, false);
    free(x0);
}

START_TEST(every_description_matches_the_reference)
{
    const sq_norm_kind norms[] = {SQ_NORM_LAYER, SQ_NORM_RMS};
    const sq_norm_place places[] = {SQ_NORM_PRE, SQ_NORM_POST};
    const sq_act acts[] = {SQ_ACT_GELU, SQ_ACT_RELU, SQ_ACT_SWIGLU, SQ_ACT_GEGLU};
    for (int n = 0; n < 2; n++)
        for (int p = 0; p < 2; p++)
            for (int a = 0; a < 4; a++)
                check_desc((sq_block_desc){norms[n], places[p], acts[a], 1e-5f}, IN);
}
END_TEST

START_TEST(a_widening_layer_projects_its_residual)
{
    /* USE Lite's first layer: pre-LN, ReLU, input narrower than H */
    check_desc((sq_block_desc){SQ_NORM_LAYER, SQ_NORM_PRE, SQ_ACT_RELU, 1e-6f}, IN / 2);
    check_desc((sq_block_desc){SQ_NORM_RMS, SQ_NORM_PRE, SQ_ACT_SWIGLU, 1e-6f}, IN / 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("block");
    TCase *tc = tcase_create("block");
    tcase_add_test(tc, every_description_matches_the_reference);
    tcase_add_test(tc, a_widening_layer_projects_its_residual);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

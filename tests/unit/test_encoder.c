/* The executor against a plain double-precision implementation of the BERT
 * math written here (no BLAS), plus determinism across thread counts. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "ops.h"
#include "pooling.h"
#include "threads.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static float *rand_vec(size_t n, float scale, float offset)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = offset + scale * frand();
    return v;
}

static void make_linear(sq_linear *l, int out, int in)
{
    l->in = in;
    l->out = out;
    l->qtype = SQ_QT_F32;
    l->w = rand_vec((size_t)out * in, 0.2f, 0);
    l->b = rand_vec((size_t)out, 0.1f, 0);
}

static void make_encoder(sq_encoder *e, int layers, int H, int A, int F, int V, int P)
{
    memset(e, 0, sizeof *e);
    e->cfg = (sq_bert_config){.vocab_size = V, .hidden = H, .layers = layers, .heads = A,
                              .ffn = F, .max_pos = P, .type_vocab = 2, .ln_eps = 1e-12,
                              .embed_dim = H, .emb_ln = true};
    e->word_emb = rand_vec((size_t)V * H, 1, 0);
    e->pos_emb = rand_vec((size_t)P * H, 0.5f, 0);
    e->type_emb = rand_vec((size_t)2 * H, 0.1f, 0);
    e->emb_ln_g = rand_vec(H, 0.1f, 1);
    e->emb_ln_b = rand_vec(H, 0.1f, 0);
    e->layers = calloc((size_t)layers, sizeof *e->layers);
    for (int l = 0; l < layers; l++) {
        sq_block *L = &e->layers[l];
        make_linear(&L->lin[SQ_LIN_QKV], 3 * H, H);
        make_linear(&L->lin[SQ_LIN_ATTN_OUT], H, H);
        make_linear(&L->lin[SQ_LIN_FFN_UP], F, H);
        make_linear(&L->lin[SQ_LIN_FFN_DOWN], H, F);
        L->n1_g = rand_vec(H, 0.1f, 1);
        L->n1_b = rand_vec(H, 0.1f, 0);
        L->n2_g = rand_vec(H, 0.1f, 1);
        L->n2_b = rand_vec(H, 0.1f, 0);
    }
}

/* ---- naive double reference, one sequence at a time ---- */
static void ref_linear(const sq_linear *l, const double *x, int T, double *y)
{
    for (int t = 0; t < T; t++)
        for (int o = 0; o < l->out; o++) {
            double s = l->b[o];
            for (int k = 0; k < l->in; k++)
                s += x[t * l->in + k] * l->w[(size_t)o * l->in + k];
            y[t * l->out + o] = s;
        }
}

static void ref_ln(double *x, const double *add, int T, int H, const float *g, const float *b, double eps)
{
    for (int t = 0; t < T; t++) {
        double *v = x + t * H, m = 0, q = 0;
        for (int c = 0; c < H; c++) {
            if (add)
                v[c] += add[t * H + c];
            m += v[c];
        }
        m /= H;
        for (int c = 0; c < H; c++)
            q += (v[c] - m) * (v[c] - m);
        q /= H;
        for (int c = 0; c < H; c++)
            v[c] = (v[c] - m) / sqrt(q + eps) * g[c] + b[c];
    }
}

static void ref_forward(const sq_encoder *e, const int32_t *ids, int T, double *x)
{
    const int H = e->cfg.hidden, A = e->cfg.heads, dh = H / A, F = e->cfg.ffn;
    double *qkv = malloc(sizeof(double) * T * 3 * H), *ctx = malloc(sizeof(double) * T * H),
           *tmp = malloc(sizeof(double) * T * H), *ff = malloc(sizeof(double) * T * F),
           *p = malloc(sizeof(double) * T);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < H; c++)
            x[t * H + c] = (double)e->word_emb[ids[t] * H + c] + e->pos_emb[t * H + c] + e->type_emb[c];
    ref_ln(x, NULL, T, H, e->emb_ln_g, e->emb_ln_b, e->cfg.ln_eps);
    for (int l = 0; l < e->cfg.layers; l++) {
        const sq_block *L = &e->layers[l];
        ref_linear(&L->lin[SQ_LIN_QKV], x, T, qkv);
        for (int h = 0; h < A; h++)
            for (int i = 0; i < T; i++) {
                double mx = -1e300, s = 0;
                for (int j = 0; j < T; j++) {
                    double d = 0;
                    for (int k = 0; k < dh; k++)
                        d += qkv[i * 3 * H + h * dh + k] * qkv[j * 3 * H + H + h * dh + k];
                    p[j] = d / sqrt((double)dh);
                    mx = p[j] > mx ? p[j] : mx;
                }
                for (int j = 0; j < T; j++)
                    s += (p[j] = exp(p[j] - mx));
                for (int k = 0; k < dh; k++) {
                    double acc = 0;
                    for (int j = 0; j < T; j++)
                        acc += p[j] / s * qkv[j * 3 * H + 2 * H + h * dh + k];
                    ctx[i * H + h * dh + k] = acc;
                }
            }
        ref_linear(&L->lin[SQ_LIN_ATTN_OUT], ctx, T, tmp);
        ref_ln(x, tmp, T, H, L->n1_g, L->n1_b, e->cfg.ln_eps);
        ref_linear(&L->lin[SQ_LIN_FFN_UP], x, T, ff);
        for (int i = 0; i < T * F; i++)
            ff[i] = 0.5 * ff[i] * (1 + erf(ff[i] / sqrt(2.0)));
        ref_linear(&L->lin[SQ_LIN_FFN_DOWN], ff, T, tmp);
        ref_ln(x, tmp, T, H, L->n2_g, L->n2_b, e->cfg.ln_eps);
    }
    free(qkv);
    free(ctx);
    free(tmp);
    free(ff);
    free(p);
}

static int obs_calls[SQ_LIN_KINDS];
static void count_obs(void *ctx, int layer, sq_linear_kind k, const float *x, int rows, int cols)
{
    (void)layer;
    (void)x;
    int *T = ctx;
    ck_assert_int_eq(rows, *T);
    ck_assert(cols == 32 || cols == 48);
    obs_calls[k]++;
}

START_TEST(forward_matches_reference)
{
    sq_encoder e;
    make_encoder(&e, 2, 32, 4, 48, 50, 40);
    /* Three sequences of different lengths in one packed batch. */
    int off[4] = {0, 7, 8, 37};
    int T = off[3];
    int32_t ids[37];
    for (int i = 0; i < T; i++)
        ids[i] = (i * 7 + 3) % 50;
    sq_batch b = {.n_seq = 3, .offsets = off, .ids = ids, .type_ids = NULL};
    sq_workspace ws = {0};
    float *hid1 = malloc(sizeof(float) * T * 32), *hid2 = malloc(sizeof(float) * T * 32);
    sq_err err = {0};
    sq_observer obs = {.linear_input = count_obs, .ctx = &T};
    sq_threads_init(1);
    ck_assert_int_eq(sq_encoder_forward(&e, &ws, &b, hid1, &obs, &err), 0);
    for (int k = 0; k < SQ_LIN_KINDS; k++) /* no res: the layers do not widen */
        ck_assert_int_eq(obs_calls[k], k == SQ_LIN_RES ? 0 : 2);
    sq_threads_init(2);
    ck_assert_int_eq(sq_encoder_forward(&e, &ws, &b, hid2, NULL, &err), 0);
    ck_assert_mem_eq(hid1, hid2, sizeof(float) * T * 32); /* thread count does not matter */
    double maxd = 0;
    for (int s = 0; s < 3; s++) {
        int L = off[s + 1] - off[s];
        double *x = malloc(sizeof(double) * L * 32);
        ref_forward(&e, ids + off[s], L, x);
        for (int i = 0; i < L * 32; i++) {
            double d = fabs(x[i] - hid1[off[s] * 32 + i]);
            maxd = d > maxd ? d : maxd;
        }
        free(x);
    }
    ck_assert_msg(maxd < 1e-4, "max abs diff %g", maxd);
    /* Bad ids are refused, not read out of bounds. */
    ids[3] = 50;
    ck_assert_int_eq(sq_encoder_forward(&e, &ws, &b, hid1, NULL, &err), -1);
    ck_assert(strstr(err.msg, "outside the vocabulary"));
    free(hid1);
    free(hid2);
    sq_workspace_free(&ws);
    sq_encoder_free(&e);
}
END_TEST

START_TEST(pooling_modes)
{
    float hid[3 * 2] = {1, 2, 3, 4, 5, 6};
    int off[3] = {0, 2, 3};
    float out[4];
    sq_pool(hid, off, 2, 2, SQ_POOL_MEAN, false, out);
    ck_assert(out[0] == 2 && out[1] == 3 && out[2] == 5 && out[3] == 6);
    sq_pool(hid, off, 2, 2, SQ_POOL_CLS, true, out);
    ck_assert(fabsf(out[0] - 1 / sqrtf(5)) < 1e-7f && fabsf(out[3] - 6 / sqrtf(61)) < 1e-7f);
    float z[2] = {0, 0};
    int off1[2] = {0, 1};
    sq_pool(z, off1, 1, 2, SQ_POOL_CLS, true, out);
    ck_assert(out[0] == 0 && out[1] == 0); /* no NaN from a zero vector */
}
END_TEST

/* Every vector level the CPU has (scalar, AVX2, AVX-512: the ones it lacks
 * are reported as skipped) gives the scalar code's bits for LayerNorm,
 * GELU and softmax, at lengths around the 8- and 16-lane blocks and at
 * BERT widths; LayerNorm also against a double-precision reference. */
START_TEST(ops_same_bits_every_level)
{
    static const int lens[] = {1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 31, 33, 64, 100, 256, 300, 384, 1024};
    const int nl = (int)(sizeof lens / sizeof lens[0]);
    enum { MAXL = 1024 };
    static float in[MAXL], g[MAXL], b[MAXL], ref[3][MAXL], got[MAXL];
    const sq_ops_level saved = sq_ops_get_level();
    for (int li = 0; li < nl; li++) {
        const int n = lens[li];
        for (int i = 0; i < n; i++) {
            in[i] = 4.0f * frand() + (i % 37 == 0 ? 60.0f : 0.0f); /* a few outlier dims */
            g[i] = 1.0f + 0.5f * frand();
            b[i] = 0.1f * frand();
        }
        ck_assert(sq_ops_set_level(SQ_OPS_SCALAR));
        memcpy(ref[0], in, sizeof(float) * n);
        sq_layernorm_to(in, ref[0], 1, n, g, b, 1e-12f);
        memcpy(ref[1], in, sizeof(float) * n);
        sq_gelu_inplace(ref[1], n);
        memcpy(ref[2], in, sizeof(float) * n);
        sq_softmax_row(ref[2], n);
        if (n > 1) { /* LayerNorm against double */
            double m = 0, v = 0;
            for (int i = 0; i < n; i++)
                m += in[i];
            m /= n;
            for (int i = 0; i < n; i++)
                v += (in[i] - m) * (in[i] - m);
            v /= n;
            for (int i = 0; i < n; i++) {
                double want = (in[i] - m) / sqrt(v + 1e-12) * g[i] + b[i];
                ck_assert_msg(fabs(ref[0][i] - want) <= 1e-5 * fmax(1, fabs(want)),
                              "layernorm len %d [%d] = %g, want %g", n, i, ref[0][i], want);
            }
        }
        for (sq_ops_level lv = SQ_OPS_AVX2; lv <= SQ_OPS_AVX512; lv++) {
            if (!sq_ops_set_level(lv)) {
                if (li == 0)
                    printf("SKIPPED: ops level %s (this CPU lacks it)\n",
                           lv == SQ_OPS_AVX2 ? "avx2" : "avx512");
                continue;
            }
            sq_layernorm_to(in, got, 1, n, g, b, 1e-12f);
            ck_assert_msg(memcmp(got, ref[0], sizeof(float) * n) == 0, "layernorm level %d len %d", lv, n);
            memcpy(got, in, sizeof(float) * n);
            sq_gelu_inplace(got, n);
            ck_assert_msg(memcmp(got, ref[1], sizeof(float) * n) == 0, "gelu level %d len %d", lv, n);
            memcpy(got, in, sizeof(float) * n);
            sq_softmax_row(got, n);
            ck_assert_msg(memcmp(got, ref[2], sizeof(float) * n) == 0, "softmax level %d len %d", lv, n);
        }
    }
    ck_assert(sq_ops_set_level(saved));
}
END_TEST

START_TEST(ops_exact)
{
    float x[5] = {-3, -0.5f, 0, 0.5f, 3};
    sq_gelu_inplace(x, 5);
    const double in[5] = {-3, -0.5, 0, 0.5, 3};
    for (int i = 0; i < 5; i++)
        ck_assert(fabs(x[i] - 0.5 * in[i] * (1 + erf(in[i] / sqrt(2.0)))) < 1e-6);
    /* The vectorized GELU stays within 1e-6 (relative to max(1, |x|)) of double erf. */
    enum { N = 20001 };
    static float g[N];
    for (int i = 0; i < N; i++)
        g[i] = -10.0f + 20.0f * i / (N - 1);
    sq_gelu_inplace(g, N);
    for (int i = 0; i < N; i++) {
        double v = -10.0 + 20.0 * i / (N - 1);
        v = (float)v;
        double want = 0.5 * v * (1 + erf(v / sqrt(2.0)));
        ck_assert_msg(fabs(g[i] - want) <= 1e-6 * fmax(1, fabs(v)), "gelu(%g) = %g, want %g", v, g[i], want);
    }
    /* The dispatched GELU (AVX2 where the CPU has it) and the scalar one
     * give the same bits, everywhere and at every position (tails of 1..7
     * elements included): one definition on every CPU. */
    static float g2[N];
    for (int i = 0; i < N; i++)
        g2[i] = -10.0f + 20.0f * i / (N - 1);
    sq_gelu_inplace_scalar(g2, N);
    ck_assert(memcmp(g, g2, sizeof g) == 0);
    for (int n = 1; n < 40; n++) {
        float a[40], b[40];
        for (int i = 0; i < n; i++)
            a[i] = b[i] = 8.0f * (frand() - 0.5f);
        sq_gelu_inplace(a, n);
        sq_gelu_inplace_scalar(b, n);
        ck_assert_msg(memcmp(a, b, sizeof(float) * n) == 0, "gelu differs at length %d", n);
    }
    /* Softmax likewise, every length from 1 to 70, and against libm. */
    for (int len = 1; len < 70; len++) {
        float a[70], b[70];
        double ref[70], m = -INFINITY, sum = 0;
        for (int i = 0; i < len; i++) {
            a[i] = b[i] = 30.0f * frand();
            m = a[i] > m ? a[i] : m;
        }
        for (int i = 0; i < len; i++)
            sum += ref[i] = exp(a[i] - m);
        sq_softmax_row(a, len);
        sq_softmax_row_scalar(b, len);
        ck_assert_msg(memcmp(a, b, sizeof(float) * len) == 0, "softmax differs at length %d", len);
        for (int i = 0; i < len; i++)
            ck_assert(fabs(a[i] - ref[i] / sum) <= 1e-6);
    }
    float s[3] = {1000, 1000, -1e30f};
    sq_softmax_row(s, 3);
    ck_assert(fabsf(s[0] - 0.5f) < 1e-7f && s[2] == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("encoder");
    TCase *tc = tcase_create("encoder");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, forward_matches_reference);
    tcase_add_test(tc, pooling_modes);
    tcase_add_test(tc, ops_exact);
    tcase_add_test(tc, ops_same_bits_every_level);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

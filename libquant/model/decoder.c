#include "decoder.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attn_bf16.h"
#include "attn_f32.h"
#include "attn_s8.h"
#include "ops.h"
#include "par_threads.h"
#include "quant_embed.h"

/* An f32 linear of out x in, its weights gathered from up to two row
 * blocks (a[0 .. na rows) then b[0 .. nb rows)), no bias (zeros). */
static int make_linear(sq_linear *l, int in, const float *a, int na, const float *b, int nb,
                       const float *c, int nc)
{
    memset(l, 0, sizeof *l);
    l->in = in;
    l->out = na + nb + nc;
    l->qtype = SQ_QT_F32;
    l->w = malloc((size_t)l->out * (size_t)in * sizeof(float));
    l->b = calloc((size_t)l->out, sizeof(float));
    if (!l->w || !l->b)
        return -1;
    float *w = l->w;
    memcpy(w, a, (size_t)na * in * sizeof(float));
    w += (size_t)na * in;
    if (nb) {
        memcpy(w, b, (size_t)nb * in * sizeof(float));
        w += (size_t)nb * in;
    }
    if (nc)
        memcpy(w, c, (size_t)nc * in * sizeof(float));
    return 0;
}

int sq_decoder_from_llama(sq_llama_ckpt *ck, sq_decoder *d, sq_err *err)
{
    memset(d, 0, sizeof *d);
    const sq_llama_config *c = &ck->cfg;
    sq_decoder_config *k = &d->cfg;
    k->dim = c->dim;
    k->hidden = c->hidden;
    k->n_layers = c->n_layers;
    k->n_heads = c->n_heads;
    k->n_kv_heads = c->n_kv_heads;
    k->head_dim = c->head_dim > 0 ? c->head_dim : c->dim / c->n_heads;
    k->kv_dim = k->head_dim * c->n_kv_heads;
    k->q_dim = k->head_dim * c->n_heads;
    k->qk_norm = ck->q_norm != NULL;
    k->vocab = c->vocab;
    k->max_pos = c->seq_len;
    k->norm_eps = c->norm_eps;
    k->rope_theta = c->rope_theta;
    k->bos = c->bos;
    k->eos = c->eos;
    k->tied_classifier = c->shared_classifier;
    const size_t D = (size_t)k->dim, H = (size_t)k->hidden, KV = (size_t)k->kv_dim;
    const size_t Q = (size_t)k->q_dim, hd = (size_t)k->head_dim;
    d->layers = calloc((size_t)k->n_layers, sizeof *d->layers);
    if (!d->layers)
        goto oom;
    for (int l = 0; l < k->n_layers; l++) {
        sq_block *L = &d->layers[l];
        if (make_linear(&L->lin[SQ_LIN_QKV], k->dim, ck->wq + l * Q * D, k->q_dim,
                        ck->wk + l * KV * D, k->kv_dim, ck->wv + l * KV * D, k->kv_dim) != 0 ||
            make_linear(&L->lin[SQ_LIN_ATTN_OUT], k->q_dim, ck->wo + l * D * Q, k->dim, NULL, 0,
                        NULL, 0) != 0 ||
            make_linear(&L->lin[SQ_LIN_FFN_UP], k->dim, ck->w1 + l * H * D, k->hidden,
                        ck->w3 + l * H * D, k->hidden, NULL, 0) != 0 ||
            make_linear(&L->lin[SQ_LIN_FFN_DOWN], k->hidden, ck->w2 + l * D * H, k->dim, NULL, 0,
                        NULL, 0) != 0)
            goto oom;
        L->n1_g = malloc(D * sizeof(float));
        L->n2_g = malloc(D * sizeof(float));
        if (!L->n1_g || !L->n2_g)
            goto oom;
        memcpy(L->n1_g, ck->rms_att + l * D, D * sizeof(float));
        memcpy(L->n2_g, ck->rms_ffn + l * D, D * sizeof(float));
        if (k->qk_norm) {
            if (!(L->qn_g = malloc(hd * sizeof(float))) || !(L->kn_g = malloc(hd * sizeof(float))))
                goto oom;
            memcpy(L->qn_g, ck->q_norm + l * hd, hd * sizeof(float));
            memcpy(L->kn_g, ck->k_norm + l * hd, hd * sizeof(float));
        }
    }
    /* Moved, not copied. */
    d->tok_emb = ck->tok_emb;
    ck->tok_emb = NULL;
    d->rms_final = ck->rms_final;
    ck->rms_final = NULL;
    sq_linear *cl = &d->classifier;
    cl->in = k->dim;
    cl->out = k->vocab;
    cl->qtype = SQ_QT_F32;
    if (!(d->cls_bias = calloc((size_t)k->vocab, sizeof(float))))
        goto oom;
    if (ck->no_head) {
        d->no_head = true; /* the classifier stays empty */
    } else if (k->tied_classifier) {
        cl->w = d->tok_emb;
        cl->b = d->cls_bias;
        cl->borrowed = true;
    } else {
        cl->w = ck->wcls;
        ck->wcls = NULL;
        cl->b = d->cls_bias;
        d->cls_bias = NULL; /* owned by the linear */
    }
    if (sq_decoder_rope_tables(d) != 0)
        goto oom;
    sq_llama_ckpt_free(ck);
    return 0;
oom:
    sq_llama_ckpt_free(ck);
    sq_decoder_free(d);
    return sq_err_set(err, "out of memory building the decoder");
}

int sq_decoder_state_init(sq_decoder_state *st, const sq_decoder *d, int max_rows, int max_pos,
                          sq_err *err)
{
    memset(st, 0, sizeof *st);
    const sq_decoder_config *c = &d->cfg;
    if (max_pos <= 0 || max_pos > c->max_pos)
        max_pos = c->max_pos;
    if (max_rows < 1)
        max_rows = 1;
    st->max_rows = max_rows;
    st->max_pos = max_pos;
    st->n_threads = omp_get_max_threads();
    const size_t R = (size_t)max_rows;
    const size_t cache = (size_t)c->n_layers * max_pos * c->kv_dim;
    const bool f32_cache = d->attn_matmul != SQ_ATTN_INT8; /* int8: its own cache, below */
    st->k_cache = f32_cache ? malloc(cache * sizeof(float)) : NULL;
    st->v_cache = f32_cache ? malloc(cache * sizeof(float)) : NULL;
    st->x = malloc(R * c->dim * sizeof(float));
    st->xb = malloc(R * c->dim * sizeof(float));
    st->qkv = malloc(R * (c->q_dim + 2 * c->kv_dim) * sizeof(float));
    st->att = malloc(R * c->q_dim * sizeof(float));
    st->gu = malloc(R * 2 * c->hidden * sizeof(float));
    st->hb = malloc(R * c->hidden * sizeof(float));
    /* the probabilities (f32 and bf16) and the f32 kernels' scratch; int8
     * attention has its own (attn_q, the int8 cache) */
    /* the one rule of what each precision can run (attn_matmul.h) */
    const char *why = sq_attn_matmul_problem(d->attn_matmul, c->q_dim, c->q_dim, c->n_heads, max_pos);
    if (why) {
        sq_decoder_state_free(st);
        return sq_err_set(err, "%s (%d positions asked)", why, max_pos);
    }
    if (d->attn_matmul != SQ_ATTN_INT8)
        st->scores = malloc((size_t)st->n_threads * R * max_pos * sizeof(float));
    if (d->attn_matmul == SQ_ATTN_F32) {
        st->attn_scratch_floats = (sq_attn_f32_scratch_floats(max_pos, c->head_dim) + 15) / 16 * 16;
        void *scr = NULL;
        if (posix_memalign(&scr, 64, (size_t)st->n_threads * st->attn_scratch_floats * sizeof(float)) == 0)
            st->attn_scratch = scr;
    }
    bool attn_q_ok = true;
    if (d->attn_matmul != SQ_ATTN_F32) {
        const size_t b = d->attn_matmul == SQ_ATTN_INT8
                             ? sq_attn_s8_causal_scratch_bytes(max_rows, max_pos, c->head_dim)
                             : sq_attn_bf16_scratch_bytes_mn(max_rows, max_pos, c->head_dim);
        st->attn_q_bytes = (b + 63) / 64 * 64;
        void *q = NULL;
        attn_q_ok = posix_memalign(&q, 64, (size_t)st->n_threads * st->attn_q_bytes) == 0;
        st->attn_q = attn_q_ok ? q : NULL;
    }
    if (attn_q_ok && d->attn_matmul == SQ_ATTN_INT8) {
        const size_t nc = (size_t)c->n_layers * c->n_kv_heads;
        const size_t cb = (sq_attn_s8_cache_bytes(max_pos, c->head_dim) + 63) / 64 * 64;
        void *mem = NULL;
        st->s8_cache = calloc(nc, sizeof *st->s8_cache);
        attn_q_ok = st->s8_cache && posix_memalign(&mem, 64, nc * cb) == 0;
        st->s8_cache_mem = attn_q_ok ? mem : NULL;
        for (size_t i = 0; attn_q_ok && i < nc; i++)
            sq_attn_s8_cache_init(&st->s8_cache[i], (char *)mem + i * cb, max_pos, c->head_dim);
    }
    /* Quantized linears: the widest padded input (int4 pads K to 128) and
     * the widest output. */
    size_t kmax = (size_t)(c->hidden > c->dim ? c->hidden : c->dim);
    if ((size_t)c->q_dim > kmax) /* attn_out's input */
        kmax = (size_t)c->q_dim;
    const size_t kpad = (kmax + 127) / 128 * 128;
    size_t nmax = (size_t)(c->q_dim + 2 * c->kv_dim);
    if ((size_t)2 * c->hidden > nmax)
        nmax = (size_t)2 * c->hidden;
    if (d->classifier.qtype != SQ_QT_F32 && (size_t)c->vocab > nmax) /* int8 classifier */
        nmax = (size_t)c->vocab;
    void *qa = NULL, *acc = NULL;
    if (posix_memalign(&qa, 64, R * kpad) == 0)
        st->lin.qa = qa;
    if (posix_memalign(&acc, 64, R * nmax * sizeof(int32_t)) == 0)
        st->lin.acc = acc;
    st->lin.row_scale = malloc(R * sizeof(float));
    if ((f32_cache && (!st->k_cache || !st->v_cache || !st->scores)) || !st->x || !st->xb ||
        !st->qkv || !st->att || !st->gu || !st->hb ||
        (d->attn_matmul == SQ_ATTN_F32 && !st->attn_scratch) || !attn_q_ok || !st->lin.qa ||
        !st->lin.acc || !st->lin.row_scale) {
        sq_decoder_state_free(st);
        return sq_err_set(err, "out of memory for the decoder state (%d positions)", max_pos);
    }
    return 0;
}

void sq_decoder_state_free(sq_decoder_state *st)
{
    free(st->k_cache);
    free(st->v_cache);
    free(st->x);
    free(st->xb);
    free(st->qkv);
    free(st->att);
    free(st->gu);
    free(st->hb);
    free(st->scores);
    free(st->attn_scratch);
    free(st->attn_q);
    free(st->s8_cache);
    free(st->s8_cache_mem);
    free(st->lin.qa);
    free(st->lin.acc);
    free(st->lin.row_scale);
    memset(st, 0, sizeof *st);
}

/* Rotate the adjacent pairs of each head of v (n_heads_here heads) by
 * position p. */
static void rope(const sq_decoder *d, float *v, int n_heads_here, int p)
{
    const int hd = d->cfg.head_dim, half = hd / 2;
    const float *cs = d->rope_cos + (size_t)p * half, *sn = d->rope_sin + (size_t)p * half;
    for (int h = 0; h < n_heads_here; h++) {
        float *x = v + (size_t)h * hd;
        for (int j = 0; j < half; j++) {
            float a = x[2 * j], b = x[2 * j + 1];
            x[2 * j] = a * cs[j] - b * sn[j];
            x[2 * j + 1] = a * sn[j] + b * cs[j];
        }
    }
}

void sq_decoder_qk_row(const sq_decoder *d, int layer, float *qkv_row, int p)
{
    const sq_decoder_config *c = &d->cfg;
    float *q = qkv_row, *k = qkv_row + c->q_dim;
    if (c->qk_norm) { /* each head a row of head_dim (in place: read before written) */
        const sq_block *L = &d->layers[layer];
        sq_rmsnorm_to(q, q, c->n_heads, c->head_dim, L->qn_g, c->norm_eps);
        sq_rmsnorm_to(k, k, c->n_kv_heads, c->head_dim, L->kn_g, c->norm_eps);
    }
    rope(d, q, c->n_heads, p);
    rope(d, k, c->n_kv_heads, p);
}

/* The decoder's attention core (block.h): RoPE on the chunk's queries and
 * keys, K and V appended to the layer's cache, then per head the chunk's
 * rows against the cache's pos + n keys with libquant's attention kernels
 * in the model's precision; causal: row r attends to keys 0 .. pos + r.
 * f32 and bf16 compute the scores of every cached key and zero the
 * probabilities past each row's; int8 is attn_s8.h's causal form. Every
 * path gives a row the same bits whatever the number of rows run with it
 * (attn_f32.h, attn_bf16.h, attn_s8.h), so a prefill equals
 * token-by-token decoding. The probabilities' range is not observed
 * (calib/SQC.md: [1, 0] for decoders). */
typedef struct dec_attn {
    const sq_decoder *d;
    sq_decoder_state *st;
    int n, pos;
} dec_attn;

static bool dec_attn_run(void *ctx, int layer, float *qkv, float *out, float *prange)
{
    (void)prange;
    const dec_attn *a = ctx;
    const sq_decoder *d = a->d;
    sq_decoder_state *st = a->st;
    const sq_decoder_config *c = &d->cfg;
    /* D: the attention width (q_dim), hidden for Llama */
    const int D = c->q_dim, KV = c->kv_dim, hd = c->head_dim, QKV = D + 2 * KV;
    const int group = c->n_heads / c->n_kv_heads, n = a->n, pos = a->pos;
    const float inv_sqrt = 1.0f / sqrtf((float)hd);
    const sq_attn_matmul mm = d->attn_matmul;
    float *kc = mm != SQ_ATTN_INT8 ? st->k_cache + (size_t)layer * st->max_pos * KV : NULL;
    float *vc = mm != SQ_ATTN_INT8 ? st->v_cache + (size_t)layer * st->max_pos * KV : NULL;
    const bool hw = mm == SQ_ATTN_INT8 ? sq_attn_s8_hw() : mm == SQ_ATTN_BF16 && sq_attn_bf16_hw();
    sq_attn_s8_cache *s8c = st->s8_cache ? st->s8_cache + (size_t)layer * c->n_kv_heads : NULL;
    for (int r = 0; r < n; r++) {
        float *q = qkv + (size_t)r * QKV;
        sq_decoder_qk_row(d, layer, q, pos + r);
        if (mm == SQ_ATTN_INT8) { /* quantized once, into the int8 cache */
            for (int g = 0; g < c->n_kv_heads; g++)
                sq_attn_s8_cache_put(&s8c[g], pos + r, q + D + g * hd, q + D + KV + g * hd, hw);
            continue;
        }
        memcpy(kc + (size_t)(pos + r) * KV, q + D, (size_t)KV * sizeof(float));
        memcpy(vc + (size_t)(pos + r) * KV, q + D + KV, (size_t)KV * sizeof(float));
    }
    const int N = pos + n;
    int nt = sq_par_threads(SQ_WORK_SCALAR, 2.0 * n * c->n_heads * N * hd, c->n_heads);
    if (nt > st->n_threads)
        nt = st->n_threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int h = 0; h < c->n_heads; h++) {
        const int tid = omp_get_thread_num();
        const int kvo = (h / group) * hd;
        const float *Q = qkv + (size_t)h * hd;
        float *o = out + (size_t)h * hd;
        void *qscr = mm != SQ_ATTN_F32 ? (char *)st->attn_q + (size_t)tid * st->attn_q_bytes : NULL;
        if (mm == SQ_ATTN_INT8) {
            sq_attn_s8_causal_cached(Q, QKV, n, &s8c[h / group], N, pos + 1, inv_sqrt, o, D, qscr,
                                     hw);
            continue;
        }
        float *S = st->scores + (size_t)tid * st->max_rows * st->max_pos;
        if (mm == SQ_ATTN_BF16)
            sq_attn_bf16_scores_mn(Q, QKV, n, kc + kvo, KV, N, hd, inv_sqrt, S, st->max_pos, qscr,
                                   hw);
        else
            sq_attn_f32_scores_mn(Q, QKV, n, kc + kvo, KV, N, hd, inv_sqrt, S, st->max_pos,
                                  st->attn_scratch + (size_t)tid * st->attn_scratch_floats);
        for (int r = 0; r < n; r++) {
            float *row = S + (size_t)r * st->max_pos;
            const int seen = pos + r + 1;
            sq_softmax_row(row, seen);
            memset(row + seen, 0, (size_t)(N - seen) * sizeof *row);
        }
        if (mm == SQ_ATTN_BF16)
            sq_attn_bf16_context_mn(S, st->max_pos, n, vc + kvo, KV, N, hd, o, D, qscr, hw);
        else
            sq_attn_f32_context_mn(S, st->max_pos, n, vc + kvo, KV, N, hd, o, D);
    }
    return false;
}

/* One chunk of n <= max_rows rows at positions pos.. through every layer
 * (the one block, block.h); st->x holds the final hidden state (before
 * the last RMSNorm). */
static void run_chunk(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int n,
                      int pos)
{
    const sq_decoder_config *c = &d->cfg;
    const int D = c->dim;
    for (int r = 0; r < n; r++) {
        if (d->tok_q)
            sq_embed_dequant_s8_row(d->tok_q + (size_t)ids[r] * D, d->tok_scale[ids[r]], D,
                                    st->x + (size_t)r * D);
        else
            memcpy(st->x + (size_t)r * D, d->tok_emb + (size_t)ids[r] * D,
                   (size_t)D * sizeof(float));
    }
    const sq_block_desc desc = {.norm = SQ_NORM_RMS, .place = SQ_NORM_PRE, .act = SQ_ACT_SWIGLU,
                                .eps = c->norm_eps};
    dec_attn core = {d, st, n, pos};
    const sq_block_attn attn = {dec_attn_run, &core};
    const sq_block_bufs bufs = {.tmp = st->xb, .qkv = st->qkv, .ctx = st->att, .ffn = st->gu,
                                .act = st->hb, .res = NULL, .lin = &st->lin};
    for (int l = 0; l < c->n_layers; l++)
        sq_block_forward(&desc, &d->layers[l], l, st->x, n, &bufs, &attn, st->obs);
}

/* The one check of a forward's ids and positions against st and d. */
static int check_run(const sq_decoder *d, const sq_decoder_state *st, const int32_t *ids, int n,
                     int pos, sq_err *err)
{
    const sq_decoder_config *c = &d->cfg;
    if (n < 1 || pos < 0 || pos > st->max_pos - n)
        return sq_err_set(err, "positions %d..%d are beyond the context of %d tokens", pos,
                          pos + n - 1, st->max_pos);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return sq_err_set(err, "token id %d is outside the vocabulary of %d", (int)ids[i],
                              c->vocab);
    return 0;
}

int sq_decoder_forward(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int n,
                       int pos, float *logits, bool all_logits, sq_err *err)
{
    const sq_decoder_config *c = &d->cfg;
    if (d->no_head)
        return sq_err_set(err, "the model has no LM head (a causal embedding model: it embeds "
                               "with last-token pooling, it does not give next-token logits)");
    if (check_run(d, st, ids, n, pos, err) != 0)
        return -1;
    for (int done = 0; done < n; done += st->max_rows) {
        const int m = n - done < st->max_rows ? n - done : st->max_rows;
        run_chunk(d, st, ids + done, m, pos + done);
        if (all_logits) {
            sq_rmsnorm_to(st->x, st->xb, m, c->dim, d->rms_final, c->norm_eps);
            sq_linear_forward(&d->classifier, st->xb, m, logits + (size_t)done * c->vocab, &st->lin);
        } else if (done + m == n) {
            float *last = st->x + (size_t)(m - 1) * c->dim;
            sq_rmsnorm_to(last, st->xb, 1, c->dim, d->rms_final, c->norm_eps);
            sq_linear_forward(&d->classifier, st->xb, 1, logits, &st->lin);
        }
    }
    return 0;
}

int sq_decoder_last_hidden(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int n,
                           int pos, float *out, sq_err *err)
{
    const sq_decoder_config *c = &d->cfg;
    if (check_run(d, st, ids, n, pos, err) != 0)
        return -1;
    int m = 0;
    for (int done = 0; done < n; done += m) {
        m = n - done < st->max_rows ? n - done : st->max_rows;
        run_chunk(d, st, ids + done, m, pos + done);
    }
    sq_rmsnorm_to(st->x + (size_t)(m - 1) * c->dim, out, 1, c->dim, d->rms_final, c->norm_eps);
    return 0;
}

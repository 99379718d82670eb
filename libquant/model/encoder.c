#include "encoder.h"

#include "attn_bf16.h"
#include "attn_f32.h"
#include "attn_s8.h"
#include "attn_window.h"
#include "encoder_rope.h"

#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "f32_rows.h"
#include "ops.h"
#include "quant_embed.h"
#include "par_threads.h"

int sq_layer_in_dim(const sq_bert_config *c, int layer)
{
    return layer == 0 ? c->embed_dim : c->hidden;
}

bool sq_linear_shape(const sq_bert_config *c, int layer, sq_linear_kind k, int *N, int *K)
{
    const int in = sq_layer_in_dim(c, layer), H = c->hidden, F = c->ffn;
    int n = 0, kk = 0;
    switch (k) {
    case SQ_LIN_QKV: n = 3 * in, kk = in; break;
    case SQ_LIN_ATTN_OUT: n = H, kk = in; break;
    case SQ_LIN_FFN_UP: n = sq_act_gated(c->act) ? 2 * F : F, kk = H; break; /* gate|up */
    case SQ_LIN_FFN_DOWN: n = H, kk = F; break;
    case SQ_LIN_RES: n = in != H ? H : 0, kk = in != H ? in : 0; break;
    default: break;
    }
    *N = n;
    *K = kk;
    return n > 0;
}

int sq_ln_attn_dim(const sq_bert_config *c, int layer)
{
    return c->norm == SQ_NORM_PRE ? sq_layer_in_dim(c, layer) : c->hidden;
}

sq_block_desc sq_encoder_block_desc(const sq_bert_config *c)
{
    return (sq_block_desc){.norm = SQ_NORM_LAYER, .place = c->norm, .act = c->act,
                           .eps = (float)c->ln_eps};
}

/* y = x W^T + b for n pooled rows, each row on its own (f32_rows.h) in
 * chunks of up to SQ_F32_ROWS_MAX: a text's embedding or score does not
 * depend on the batch it was pooled in (sgemm rounds a many-row product
 * differently from a few-row one). */
static void pooled_linear(const sq_linear *l, const float *x, int n, float *y)
{
    for (int r = 0; r < n; r += SQ_F32_ROWS_MAX) {
        const int m = n - r < SQ_F32_ROWS_MAX ? n - r : SQ_F32_ROWS_MAX;
        sq_f32_rows(x + (size_t)r * l->in, m, l->in, l->w, l->b, l->out, y + (size_t)r * l->out);
    }
}

void sq_encoder_apply_head(const sq_encoder *enc, float *x, int n, float *tmp)
{
    if (enc->cfg.head == SQ_HEAD_NONE || n <= 0)
        return;
    const int H = enc->cfg.hidden;
    pooled_linear(&enc->head, x, n, tmp);
    if (enc->cfg.head == SQ_HEAD_IDENTITY)
        memcpy(x, tmp, (size_t)n * H * sizeof *x);
    else
        for (int64_t i = 0; i < (int64_t)n * H; i++)
            x[i] = tanhf(tmp[i]);
}

void sq_encoder_apply_score(const sq_encoder *enc, const float *x, int n, float *logits)
{
    if (enc->cfg.num_labels <= 0 || n <= 0)
        return;
    pooled_linear(&enc->score, x, n, logits);
}

static float *alloc_floats(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) != 0)
        return NULL;
    return p;
}

void sq_workspace_free(sq_workspace *ws)
{
    free(ws->qkv);
    free(ws->ctx);
    free(ws->tmp);
    free(ws->ffn);
    free(ws->scores);
    free(ws->attn_q);
    free(ws->attn_f32);
    free(ws->res);
    free(ws->act);
    free(ws->lin.qa);
    free(ws->lin.acc);
    free(ws->lin.row_scale);
    memset(ws, 0, sizeof *ws);
}

int sq_workspace_reserve(sq_workspace *ws, const sq_encoder *enc, int max_tokens, int max_len)
{
    /* One score matrix per OpenMP thread that attention() may run on: the
     * team size OpenMP will use, whoever set it (found by fuzzing: a caller
     * that never called sq_threads_init got more threads than buffers). */
    int nt = omp_get_max_threads();
    if (ws->qkv && max_tokens <= ws->max_tokens && max_len <= ws->max_len && nt <= ws->n_threads &&
        (enc->attn_matmul == SQ_ATTN_F32 || ws->attn_q) &&
        (!sq_act_gated(enc->cfg.act) || ws->act))
        return 0;
    if (ws->qkv) {
        if (max_tokens < ws->max_tokens)
            max_tokens = ws->max_tokens;
        if (max_len < ws->max_len)
            max_len = ws->max_len;
    }
    sq_op_profile *prof = ws->lin.prof; /* the caller's, kept across a regrow */
    sq_workspace_free(ws);
    ws->lin.prof = prof;
    size_t T = (size_t)max_tokens, H = (size_t)enc->cfg.hidden, F = (size_t)enc->cfg.ffn;
    /* SwiGLU: ffn holds the gate|up rows (2F wide), the activation writes
     * act (F wide); in place, rows run in parallel would overwrite gate
     * rows another thread has yet to read */
    const bool swiglu = sq_act_gated(enc->cfg.act);
    const size_t up = swiglu ? 2 * F : F;
    if (swiglu && !(ws->act = alloc_floats(T * F))) {
        sq_workspace_free(ws);
        return -1;
    }
    /* Every layer input is at most H wide (embed_dim <= hidden). */
    ws->qkv = alloc_floats(T * 3 * H);
    if (enc->cfg.embed_dim != enc->cfg.hidden && !(ws->res = alloc_floats(T * H))) {
        sq_workspace_free(ws);
        return -1;
    }
    ws->ctx = alloc_floats(T * H);
    ws->tmp = alloc_floats(T * H);
    ws->ffn = alloc_floats(T * up);
    ws->scores = alloc_floats((size_t)nt * max_len * max_len);
    ws->attn_f32_floats =
        (sq_attn_f32_scratch_floats(max_len, enc->cfg.hidden / enc->cfg.heads) + 15) / 16 * 16;
    ws->attn_f32 = alloc_floats((size_t)nt * ws->attn_f32_floats);
    if (enc->attn_matmul != SQ_ATTN_F32) {
        const int dh = enc->cfg.hidden / enc->cfg.heads;
        size_t b = enc->attn_matmul == SQ_ATTN_BF16 ? sq_attn_bf16_scratch_bytes(max_len, dh)
                                                    : sq_attn_s8_scratch_bytes(max_len, dh);
        ws->attn_q_bytes = (b + 63) / 64 * 64;
        if (posix_memalign(&ws->attn_q, 64, (size_t)nt * ws->attn_q_bytes) != 0) {
            ws->attn_q = NULL;
            sq_workspace_free(ws);
            return -1;
        }
    }
    /* Quantized linears: widest padded input and widest output. */
    size_t kmax = (size_t)(F > H ? F : H), kpad = (kmax + 127) / 128 * 128;
    size_t nmax = 3 * H > up ? 3 * H : up;
    void *qa = NULL, *acc = NULL;
    if (posix_memalign(&qa, 64, T * kpad) == 0)
        ws->lin.qa = qa;
    if (posix_memalign(&acc, 64, T * nmax * sizeof(int32_t)) == 0)
        ws->lin.acc = acc;
    ws->lin.row_scale = alloc_floats(T);
    if (!ws->lin.qa || !ws->lin.acc || !ws->lin.row_scale || !ws->qkv || !ws->ctx || !ws->tmp ||
        !ws->ffn || !ws->scores || !ws->attn_f32) {
        sq_workspace_free(ws);
        return -1;
    }
    ws->max_tokens = max_tokens;
    ws->max_len = max_len;
    ws->n_threads = nt;
    return 0;
}

int sq_encoder_build_rel_table(sq_encoder *enc, sq_err *err)
{
    const sq_bert_config *c = &enc->cfg;
    if (c->rel_buckets <= 0)
        return 0;
    const int A = c->heads, NB = c->rel_buckets, M = sq_bert_max_tokens(c), W = 2 * M - 1;
    for (int i = 0; i < NB * A; i++)
        if (!isfinite(enc->rel_bias[i]))
            return sq_err_set(err, "relative attention bias [%d][%d] is not finite", i / A, i % A);
    free(enc->rel_table);
    if (!(enc->rel_table = malloc((size_t)A * W * sizeof(float))))
        return sq_err_set(err, "out of memory");
    for (int d = -(M - 1); d <= M - 1; d++) {
        const int bk = sq_rel_bucket(d, NB, c->rel_max_distance);
        for (int h = 0; h < A; h++)
            enc->rel_table[(size_t)h * W + d + M - 1] = enc->rel_bias[(size_t)bk * A + h];
    }
    return 0;
}

/* The position row of token t of a sequence starting at t0 (hf_config.h
 * sq_pos_ids); *run counts the sequence's non-pad tokens so far. */
static int position_of(const sq_bert_config *c, int32_t id, int t, int t0, int *run)
{
    if (c->pos_ids == SQ_POS_IDS_INDEX)
        return t - t0;
    if (id == c->pad_token_id)
        return c->pad_token_id;
    return c->pad_token_id + ++*run;
}

static void embed(const sq_encoder *enc, const sq_batch *b, float *x)
{
    const int E = enc->cfg.embed_dim;
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM, 3.0 * b->offsets[b->n_seq] * E, b->n_seq))
    for (int s = 0; s < b->n_seq; s++) {
        int run = 0;
        for (int t = b->offsets[s]; t < b->offsets[s + 1]; t++) {
            int pos = position_of(&enc->cfg, b->ids[t], t, b->offsets[s], &run);
            /* rotary positions (no table) turn q and k in the attention core */
            const float *pe = enc->pos_emb ? enc->pos_emb + (size_t)pos * E : NULL;
            float *o = x + (size_t)t * E;
            size_t id = (size_t)b->ids[t];
            if (enc->word_qt == SQ_QT_S8)
                sq_embed_dequant_s8_row((const int8_t *)enc->word_q + id * E, enc->word_scale[id], E, o);
            else if (enc->word_qt == SQ_QT_S4G128)
                sq_embed_dequant_s4_row((const uint8_t *)enc->word_q + id * (E / 2),
                                        enc->word_scale + id * sq_embed_s4_groups(E), E, o);
            else
                memcpy(o, enc->word_emb + id * E, (size_t)E * sizeof(float));
            /* the same sums in the same order as before for every table kind */
            const float *te = enc->type_emb
                                  ? enc->type_emb + (size_t)(b->type_ids ? b->type_ids[t] : 0) * E
                                  : NULL;
            if (te && pe)
                for (int c = 0; c < E; c++)
                    o[c] = o[c] + te[c] + pe[c];
            else if (te)
                for (int c = 0; c < E; c++)
                    o[c] = o[c] + te[c];
            else if (pe)
                for (int c = 0; c < E; c++)
                    o[c] = o[c] + pe[c];
        }
    }
}

/* Multi-head self-attention core at width D (the layer input width):
 * ctx = softmax(Q K^T / sqrt(dh)) V per (sequence, head); qkv rows hold
 * [Q | K | V], each D wide; ctx rows are D wide. */
static void attention(const sq_encoder *enc, const sq_batch *b, const float *qkv, float *ctx,
                      const sq_workspace *ws, int D, int win, float *prange,
                      sq_op_profile *prof)
{
    float *scores = ws->scores;
    const int max_len = ws->max_len;
    /* bf16 matmuls (attn_bf16.h) and int8 attention (attn_s8.h): the
     * vdpbf16ps / vpdpbusd kernels where the CPU has them, the scalar
     * definition otherwise; same bits either way */
    const bool bf16 = enc->attn_matmul == SQ_ATTN_BF16 && ws->attn_q && (D / enc->cfg.heads) % 2 == 0;
    const bool s8 = enc->attn_matmul == SQ_ATTN_INT8 && ws->attn_q;
    const bool hw = bf16 ? sq_attn_bf16_hw() : s8 && sq_attn_s8_hw();
    const int H = D, A = enc->cfg.heads, dh = H / A, ld = 3 * H;
    const float scale = 1.0f / sqrtf((float)dh);
    const int rel_w = 2 * sq_bert_max_tokens(&enc->cfg) - 1; /* a head's rel_table row */
    const int jobs = b->n_seq * A;
    float pmin = 1.0f, pmax = 0.0f; /* min/max reductions are order-independent */
    double t_qk = 0, t_sm = 0, t_pv = 0, wall = prof ? sq_op_now() : 0; /* thread time per step */
    double sq_len = 0; /* sum of L^2: the scores of each head */
    for (int s = 0; s < b->n_seq; s++) {
        const double L = b->offsets[s + 1] - b->offsets[s];
        sq_len += L * L;
    }
    const double work_ns = sq_work_ns(SQ_WORK_MAC_F32, sq_len * A * 2.0 * dh) +
                           sq_work_ns(SQ_WORK_ELEM_MATH, sq_len * A);
#pragma omp parallel for schedule(dynamic, 1) reduction(min : pmin) reduction(max : pmax) \
    reduction(+ : t_qk, t_sm, t_pv) num_threads(sq_par_threads_ns(work_ns, jobs))
    for (int j = 0; j < jobs; j++) {
        int s = j / A, h = j % A;
        int t0 = b->offsets[s], L = b->offsets[s + 1] - t0;
        float *S = scores + (size_t)omp_get_thread_num() * max_len * max_len;
        const float *Q = qkv + (size_t)t0 * ld + h * dh;
        const float *K = Q + H, *V = Q + 2 * H;
        double t = prof ? sq_op_now() : 0, u;
        /* MPNet: the bias of key j for query i is rel[j - i] */
        const float *rel = enc->rel_table ? enc->rel_table + (size_t)h * rel_w + rel_w / 2 : NULL;
        void *scratch = bf16 || s8 ? (char *)ws->attn_q + (size_t)omp_get_thread_num() *
                                                              ws->attn_q_bytes
                                   : NULL;
        if (s8) {
            float pr[2] = {1.0f, 0.0f};
            sq_attn_s8_times tm = {0, 0, 0};
            sq_attn_s8_head(Q, K, V, ld, L, dh, scale, rel, win, ctx + (size_t)t0 * H + h * dh,
                            H, scratch, hw, prange ? pr : NULL, prof ? &tm : NULL);
            pmin = pr[0] < pmin ? pr[0] : pmin;
            pmax = pr[1] > pmax ? pr[1] : pmax;
            t_qk += tm.scores, t_sm += tm.softmax, t_pv += tm.context;
            continue;
        }
        if (bf16)
            sq_attn_bf16_scores(Q, K, ld, L, dh, scale, S, scratch, hw);
        else
            sq_attn_f32_scores(Q, K, ld, L, dh, scale, S,
                               ws->attn_f32 + (size_t)omp_get_thread_num() * ws->attn_f32_floats);
        if (rel)
            for (int r = 0; r < L; r++)
                for (int c = 0; c < L; c++)
                    S[(size_t)r * L + c] += rel[c - r];
        if (prof)
            u = sq_op_now(), t_qk += u - t, t = u;
        for (int r = 0; r < L; r++)
            sq_attn_window_softmax(S + (size_t)r * L, r, L, win);
        if (prange)
            for (int i = 0; i < L * L; i++) {
                pmin = S[i] < pmin ? S[i] : pmin;
                pmax = S[i] > pmax ? S[i] : pmax;
            }
        if (prof)
            u = sq_op_now(), t_sm += u - t, t = u;
        if (bf16)
            sq_attn_bf16_context(S, V, ld, L, dh, ctx + (size_t)t0 * H + h * dh, H, scratch, hw);
        else
            sq_attn_f32_context(S, V, ld, L, dh, ctx + (size_t)t0 * H + h * dh, H);
        if (prof)
            t_pv += sq_op_now() - t;
    }
    if (prange) {
        prange[0] = pmin;
        prange[1] = pmax;
    }
    if (prof) { /* attention's wall time, split by the threads' time in each step */
        double w = sq_op_now() - wall, sum = t_qk + t_sm + t_pv;
        if (sum > 0) {
            prof->seconds[SQ_OP_ATTN_SCORES] += w * t_qk / sum;
            prof->seconds[SQ_OP_SOFTMAX] += w * t_sm / sum;
            prof->seconds[SQ_OP_ATTN_CONTEXT] += w * t_pv / sum;
        }
        prof->calls[SQ_OP_ATTN_SCORES]++, prof->calls[SQ_OP_SOFTMAX]++;
        prof->calls[SQ_OP_ATTN_CONTEXT]++;
    }
}

/* The encoder's attention core (block.h): bidirectional within each
 * sequence of the batch, at the layer's input width. */
typedef struct enc_attn {
    const sq_encoder *enc;
    const sq_batch *b;
    const sq_workspace *ws;
} enc_attn;

static bool enc_attn_run(void *ctx, int layer, float *qkv, float *out, float *prange)
{
    const enc_attn *a = ctx;
    const sq_bert_config *c = &a->enc->cfg;
    const int D = sq_layer_in_dim(c, layer);
    if (c->positions == SQ_POS_ROTARY) /* before every attention kernel: one place */
        sq_rope_batch(qkv, D, c->heads, a->b->offsets, a->b->n_seq,
                      sq_layer_rotary_base(c, layer));
    attention(a->enc, a->b, qkv, out, a->ws, D, sq_layer_window(c, layer), prange,
              a->ws->lin.prof);
    return true;
}

int sq_encoder_forward(const sq_encoder *enc, sq_workspace *ws, const sq_batch *b,
                       float *hidden_out, const sq_observer *obs, sq_err *err)
{
    const sq_bert_config *c = &enc->cfg;
    if (!enc->layers) /* embed_model.h: a causal embedding model's interface only */
        return sq_err_set(err, "this model has no encoder layers (a causal embedding model runs "
                               "through its decoder: this command takes encoders only)");
    if (b->n_seq <= 0 || b->offsets[0] != 0)
        return sq_err_set(err, "empty batch");
    int T = b->offsets[b->n_seq], max_len = 0;
    for (int s = 0; s < b->n_seq; s++) {
        int L = b->offsets[s + 1] - b->offsets[s];
        if (L <= 0 || L > sq_bert_max_tokens(c))
            return sq_err_set(err, "sequence %d has %d tokens (must be 1..%d)", s, L,
                              sq_bert_max_tokens(c));
        if (L > max_len)
            max_len = L;
    }
    for (int t = 0; t < T; t++) {
        if (b->ids[t] < 0 || b->ids[t] >= c->vocab_size)
            return sq_err_set(err, "token id %d is outside the vocabulary (%d)", b->ids[t],
                              c->vocab_size);
        /* no type table (MPNet): every token is of type 0 */
        if (b->type_ids && (b->type_ids[t] < 0 || b->type_ids[t] >= (c->type_vocab > 0 ? c->type_vocab : 1)))
            return sq_err_set(err, "token type %d is outside [0, %d)", b->type_ids[t],
                              c->type_vocab > 0 ? c->type_vocab : 1);
    }
    if (sq_workspace_reserve(ws, enc, T, max_len) != 0)
        return sq_err_set(err, "out of memory for a batch of %d tokens", T);
    float *x = hidden_out;
    sq_op_profile *prof = ws->lin.prof;
    const double t_start = prof ? sq_op_now() : 0;
    embed(enc, b, x);
    double t = prof ? sq_op_add(prof, SQ_OP_EMBED, t_start) : 0;
    if (enc->emb_ln_g)
        sq_add_layernorm(x, NULL, T, c->embed_dim, enc->emb_ln_g, enc->emb_ln_b, (float)c->ln_eps);
    if (prof)
        sq_op_add(prof, SQ_OP_LAYERNORM, t);
    const sq_block_desc desc = sq_encoder_block_desc(c);
    enc_attn core = {enc, b, ws};
    const sq_block_attn attn = {enc_attn_run, &core};
    const sq_block_bufs bufs = {.tmp = ws->tmp, .qkv = ws->qkv, .ctx = ws->ctx, .ffn = ws->ffn,
                                .act = ws->act ? ws->act : ws->ffn, .res = ws->res, .lin = &ws->lin};
    for (int l = 0; l < c->layers; l++)
        sq_block_forward(&desc, &enc->layers[l], l, x, T, &bufs, &attn, obs);
    if (enc->final_ln_g) { /* ModernBERT's final_norm */
        t = prof ? sq_op_now() : 0;
        sq_add_layernorm(x, NULL, T, c->hidden, enc->final_ln_g, enc->final_ln_b,
                         (float)c->ln_eps);
        if (prof)
            sq_op_add(prof, SQ_OP_LAYERNORM, t);
    }
    if (prof) {
        prof->total += sq_op_now() - t_start;
        prof->forwards++;
    }
    return 0;
}

void sq_encoder_free(sq_encoder *enc)
{
    if (enc->layers)
        for (int l = 0; l < enc->cfg.layers; l++)
            sq_block_free(&enc->layers[l], enc->borrowed);
    free(enc->layers);
    sq_linear_free(&enc->head);
    sq_linear_free(&enc->score);
    if (!enc->borrowed) {
        free(enc->word_emb);
        free(enc->pos_emb);
        free(enc->type_emb);
        free(enc->emb_ln_g);
        free(enc->emb_ln_b);
        free(enc->final_ln_g);
        free(enc->final_ln_b);
        free(enc->rel_bias);
    }
    free(enc->rel_table);
    memset(enc, 0, sizeof *enc);
}

#include "hf_llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "hf_config.h"
#include "hf_weights.h"

/* RoPE pairs. The executor (and llama2.c, and Meta's original weights)
 * rotates the adjacent pairs (2j, 2j+1) of each head by angle p * f_j.
 * Hugging Face's Llama rotates (j, j + hd/2) instead (rotate_half), and its
 * checkpoints were made to match: convert_llama_weights_to_hf.py permutes
 * the rows of q_proj and k_proj inside each head,
 *     w.view(heads, hd/2, 2, D).transpose(1, 2).reshape(heads * hd, D),
 * so Meta's row h*hd + 2j + c is HF's row h*hd + c*hd/2 + j. q . k is a sum
 * over a head's rows, so any consistent order of them gives the same
 * attention; undoing the permutation at load puts each HF pair (j, j + hd/2)
 * back on the adjacent rows (2j, 2j+1) the executor rotates, with the same
 * frequency f_j = theta^(-2j/hd): the same model, one executor. */
static void unpermute_rows(float *w, int heads, int hd, int cols, float *tmp)
{
    const int half = hd / 2;
    const size_t row = (size_t)cols * sizeof(float);
    for (int h = 0; h < heads; h++) {
        float *head = w + (size_t)h * hd * cols;
        memcpy(tmp, head, (size_t)hd * row);
        for (int j = 0; j < half; j++)
            for (int c = 0; c < 2; c++)
                memcpy(head + (size_t)(2 * j + c) * cols, tmp + (size_t)(c * half + j) * cols,
                       row);
    }
}

/* Tensor name of layer l into a stacked [L][rows][cols] array at layer l. */
static int load_layer_part(const sq_hf_weights *w, const char *pfx, int l, const char *what,
                           float *dst, int64_t rows, int64_t cols, sq_err *err)
{
    char name[160];
    snprintf(name, sizeof name, "%slayers.%d.%s.weight", pfx, l, what);
    float *t = sq_hf_weights_load(w, name, rows, cols, err);
    if (!t)
        return -1;
    const size_t n = (size_t)rows * (size_t)(cols > 0 ? cols : 1);
    memcpy(dst + (size_t)l * n, t, n * sizeof(float));
    free(t);
    return 0;
}

int sq_hf_llama_load(const char *dir, sq_llama_ckpt *ck, sq_err *err)
{
    memset(ck, 0, sizeof *ck);
    char *cfg_path = sq_path_join(dir, "config.json");
    if (!cfg_path)
        return sq_err_set(err, "out of memory");
    sq_hf_llama_config hc;
    int rc = sq_hf_llama_config_load(cfg_path, &hc, err);
    if (rc == 0 && (hc.bos < 0 || hc.eos < 0))
        rc = sq_err_set(err, "%s: bos_token_id and eos_token_id are needed (generation starts "
                             "at one and stops at the other)",
                        cfg_path);
    free(cfg_path);
    if (rc != 0)
        return -1;
    sq_llama_config *c = &ck->cfg;
    c->dim = hc.hidden;
    c->hidden = hc.ffn;
    c->n_layers = hc.layers;
    c->n_heads = hc.heads;
    c->n_kv_heads = hc.kv_heads;
    c->vocab = hc.vocab;
    c->seq_len = hc.max_pos;
    c->shared_classifier = hc.tied;
    c->norm_eps = (float)hc.rms_eps;
    c->rope_theta = (float)hc.rope_theta;
    c->bos = hc.bos;
    c->eos = hc.eos;
    c->head_dim = hc.head_dim;
    sq_hf_weights w;
    if (sq_hf_weights_open(dir, &w, err) != 0)
        return -1;
    /* The causal LM's names (model.layers...), or the bare model's that a
     * causal embedding model saves (Qwen3-Embedding: layers..., no lm_head). */
    const sq_safetensors *in;
    const char *pfx = sq_hf_weights_find(&w, "model.embed_tokens.weight", &in) ||
                              !sq_hf_weights_find(&w, "embed_tokens.weight", &in)
                          ? "model."
                          : "";
    char name[64];
    snprintf(name, sizeof name, "%slayers.", pfx);
    if (sq_hf_weights_check_layers(&w, name, c->n_layers, "config.json num_hidden_layers",
                                   err) != 0) {
        sq_hf_weights_close(&w);
        return -1;
    }
    const size_t L = (size_t)c->n_layers, D = (size_t)c->dim, H = (size_t)c->hidden;
    const int hd = c->head_dim, KV = hd * c->n_kv_heads, Q = hd * c->n_heads;
    const size_t QD = (size_t)Q * D;
    float *tmp = NULL;
    rc = -1;
    ck->rms_att = malloc(L * D * sizeof(float));
    ck->rms_ffn = malloc(L * D * sizeof(float));
    ck->wq = malloc(L * QD * sizeof(float));
    ck->wk = malloc(L * (size_t)KV * D * sizeof(float));
    ck->wv = malloc(L * (size_t)KV * D * sizeof(float));
    ck->wo = malloc(L * QD * sizeof(float));
    if (hc.qwen3) {
        ck->q_norm = malloc(L * (size_t)hd * sizeof(float));
        ck->k_norm = malloc(L * (size_t)hd * sizeof(float));
    }
    ck->w1 = malloc(L * H * D * sizeof(float));
    ck->w2 = malloc(L * D * H * sizeof(float));
    ck->w3 = malloc(L * H * D * sizeof(float));
    tmp = malloc((size_t)hd * D * sizeof(float));
    if (!ck->rms_att || !ck->rms_ffn || !ck->wq || !ck->wk || !ck->wv || !ck->wo || !ck->w1 ||
        !ck->w2 || !ck->w3 || !tmp || (hc.qwen3 && (!ck->q_norm || !ck->k_norm))) {
        sq_err_set(err, "%s: out of memory for the weights", dir);
        goto out;
    }
    snprintf(name, sizeof name, "%sembed_tokens.weight", pfx);
    if (!(ck->tok_emb = sq_hf_weights_load(&w, name, c->vocab, c->dim, err)))
        goto out;
    snprintf(name, sizeof name, "%snorm.weight", pfx);
    if (!(ck->rms_final = sq_hf_weights_load(&w, name, c->dim, 0, err)))
        goto out;
    for (int l = 0; l < c->n_layers; l++) {
        if (load_layer_part(&w, pfx, l, "input_layernorm", ck->rms_att, c->dim, 0, err) ||
            load_layer_part(&w, pfx, l, "post_attention_layernorm", ck->rms_ffn, c->dim, 0, err) ||
            load_layer_part(&w, pfx, l, "self_attn.q_proj", ck->wq, Q, c->dim, err) ||
            load_layer_part(&w, pfx, l, "self_attn.k_proj", ck->wk, KV, c->dim, err) ||
            load_layer_part(&w, pfx, l, "self_attn.v_proj", ck->wv, KV, c->dim, err) ||
            load_layer_part(&w, pfx, l, "self_attn.o_proj", ck->wo, c->dim, Q, err) ||
            load_layer_part(&w, pfx, l, "mlp.gate_proj", ck->w1, c->hidden, c->dim, err) ||
            load_layer_part(&w, pfx, l, "mlp.up_proj", ck->w3, c->hidden, c->dim, err) ||
            load_layer_part(&w, pfx, l, "mlp.down_proj", ck->w2, c->dim, c->hidden, err))
            goto out;
        unpermute_rows(ck->wq + (size_t)l * QD, c->n_heads, hd, c->dim, tmp);
        unpermute_rows(ck->wk + (size_t)l * KV * D, c->n_kv_heads, hd, c->dim, tmp);
        if (hc.qwen3) {
            /* Qwen3's q_norm / k_norm [head_dim] scale each head's channels
             * before RoPE; RMS over a head does not depend on the channels'
             * order, so the weight takes the rows' permutation and the
             * normed head is the HF one, un-permuted */
            if (load_layer_part(&w, pfx, l, "self_attn.q_norm", ck->q_norm, hd, 0, err) ||
                load_layer_part(&w, pfx, l, "self_attn.k_norm", ck->k_norm, hd, 0, err))
                goto out;
            unpermute_rows(ck->q_norm + (size_t)l * hd, 1, hd, 1, tmp);
            unpermute_rows(ck->k_norm + (size_t)l * hd, 1, hd, 1, tmp);
        }
    }
    const bool has_head = sq_hf_weights_find(&w, "lm_head.weight", &in) != NULL;
    /* An untied causal embedding model may come without its head (the bare
     * Qwen3Model that sentence-transformers saves): it never runs one. */
    sq_pooling_config pc;
    sq_err ignored;
    if (!c->shared_classifier && !has_head && sq_pooling_config_load_dir(dir, &pc, &ignored) == 0 &&
        pc.from_sentence_transformers && pc.pooling == SQ_POOL_LAST)
        ck->no_head = true;
    if (!c->shared_classifier && !ck->no_head) {
        if (!has_head) {
            sq_err_set(err, "%s: missing tensor \"lm_head.weight\" (tie_word_embeddings is "
                            "false, and the folder is no causal embedding model: no "
                            "sentence-transformers Pooling module with pooling_mode_lasttoken)",
                       w.shards[0].mf.path);
            goto out;
        }
        if (!(ck->wcls = sq_hf_weights_load(&w, "lm_head.weight", c->vocab, c->dim, err)))
            goto out;
    }
    /* tied with an lm_head.weight present: transformers ties it to the
     * embedding and ignores the stored copy; so does squint */
    rc = 0;
out:
    free(tmp);
    sq_hf_weights_close(&w);
    if (rc != 0) {
        sq_llama_config keep = ck->cfg;
        sq_llama_ckpt_free(ck);
        ck->cfg = keep;
    }
    return rc;
}

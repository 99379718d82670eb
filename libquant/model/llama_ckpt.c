#include "llama_ckpt.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "llama_ckpt.c reads little-endian files by memcpy: port the loads first"
#endif

#define HEADER_BYTES 28
#define MAGIC_AK42 0x616b3432u /* "ak42": llama2.c's versioned exports */

/* a * b into *out; false on uint64 overflow. */
static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

static int range(const char *path, const char *name, int32_t v, int32_t lo, int32_t hi, sq_err *err)
{
    if (v < lo || v > hi)
        return sq_err_set(err, "%s: header %s = %" PRId32 " is outside [%" PRId32 ", %" PRId32
                               "]: not a llama2.c checkpoint, or a damaged one",
                          path, name, v, lo, hi);
    return 0;
}

/* The tensors of the file in order: name, floats per layer (or in all when
 * per_layer is false), and where the copy goes. */
typedef struct tensor_spec {
    const char *name;
    uint64_t count; /* floats in all */
    uint64_t per;   /* floats per layer (for messages); == count if not layered */
    float **dst;    /* NULL: skipped (freq_cis) */
} tensor_spec;

static int specs(const sq_llama_config *c, sq_llama_ckpt *ck, tensor_spec *t)
{
    const uint64_t L = (uint64_t)c->n_layers, D = (uint64_t)c->dim, H = (uint64_t)c->hidden;
    const uint64_t V = (uint64_t)c->vocab, KV = D / (uint64_t)c->n_heads * (uint64_t)c->n_kv_heads;
    const uint64_t hs = D / (uint64_t)c->n_heads;
    int n = 0;
#define T(nm, cnt, p, d) t[n++] = (tensor_spec){nm, (cnt), (p), (d)}
    T("token_embedding", V * D, V * D, ck ? &ck->tok_emb : NULL);
    T("rms_att", L * D, D, ck ? &ck->rms_att : NULL);
    T("wq", L * D * D, D * D, ck ? &ck->wq : NULL);
    T("wk", L * KV * D, KV * D, ck ? &ck->wk : NULL);
    T("wv", L * KV * D, KV * D, ck ? &ck->wv : NULL);
    T("wo", L * D * D, D * D, ck ? &ck->wo : NULL);
    T("rms_ffn", L * D, D, ck ? &ck->rms_ffn : NULL);
    T("w1", L * H * D, H * D, ck ? &ck->w1 : NULL);
    T("w2", L * D * H, D * H, ck ? &ck->w2 : NULL);
    T("w3", L * H * D, H * D, ck ? &ck->w3 : NULL);
    T("rms_final", D, D, ck ? &ck->rms_final : NULL);
    T("freq_cis_real", (uint64_t)c->seq_len * (hs / 2), (uint64_t)c->seq_len * (hs / 2), NULL);
    T("freq_cis_imag", (uint64_t)c->seq_len * (hs / 2), (uint64_t)c->seq_len * (hs / 2), NULL);
    if (!c->shared_classifier)
        T("wcls", V * D, V * D, ck ? &ck->wcls : NULL);
#undef T
    return n;
}

int sq_llama_config_from_header(const int32_t hdr[7], sq_llama_config *cfg,
                                uint64_t *expected_bytes, const char *path, sq_err *err)
{
    if ((uint32_t)hdr[0] == MAGIC_AK42)
        return sq_err_set(err, "%s: a versioned llama2.c export (\"ak42\" magic, version %" PRId32
                               "): only the legacy (version 0) float32 checkpoint is read",
                          path, hdr[1]);
    memset(cfg, 0, sizeof *cfg);
    if (range(path, "dim", hdr[0], 2, SQ_LLAMA_MAX_DIM, err) ||
        range(path, "hidden_dim", hdr[1], 1, 4 * SQ_LLAMA_MAX_DIM, err) ||
        range(path, "n_layers", hdr[2], 1, SQ_LLAMA_MAX_LAYERS, err) ||
        range(path, "n_heads", hdr[3], 1, SQ_LLAMA_MAX_HEADS, err) ||
        range(path, "n_kv_heads", hdr[4], 1, hdr[3], err) ||
        range(path, "seq_len", hdr[6], 1, SQ_LLAMA_MAX_SEQ, err))
        return -1;
    if (hdr[5] == 0 || hdr[5] < -SQ_LLAMA_MAX_VOCAB || hdr[5] > SQ_LLAMA_MAX_VOCAB)
        return sq_err_set(err, "%s: header vocab_size = %" PRId32 " is 0 or beyond +-%d: not a "
                               "llama2.c checkpoint, or a damaged one",
                          path, hdr[5], SQ_LLAMA_MAX_VOCAB);
    if (hdr[0] % hdr[3] != 0 || (hdr[0] / hdr[3]) % 2 != 0)
        return sq_err_set(err, "%s: dim %" PRId32 " is not n_heads %" PRId32
                               " times an even head size (RoPE rotates pairs)",
                          path, hdr[0], hdr[3]);
    if (hdr[3] % hdr[4] != 0)
        return sq_err_set(err, "%s: n_heads %" PRId32 " is not a multiple of n_kv_heads %" PRId32,
                          path, hdr[3], hdr[4]);
    cfg->dim = hdr[0];
    cfg->hidden = hdr[1];
    cfg->n_layers = hdr[2];
    cfg->n_heads = hdr[3];
    cfg->n_kv_heads = hdr[4];
    cfg->shared_classifier = hdr[5] > 0;
    cfg->vocab = hdr[5] > 0 ? hdr[5] : -hdr[5];
    cfg->seq_len = hdr[6];
    cfg->norm_eps = 1e-5f;
    cfg->rope_theta = 10000.0f;
    cfg->bos = 1;
    cfg->eos = 2;
    tensor_spec t[16] = {{0}};
    int n = specs(cfg, NULL, t);
    uint64_t floats = 0;
    for (int i = 0; i < n; i++) {
        /* Every count is a product of bounded header fields (< 2^62 floats). */
        if (t[i].count > UINT64_MAX / 8 - floats)
            return sq_err_set(err, "%s: the header implies an impossible size", path);
        floats += t[i].count;
    }
    uint64_t bytes;
    if (!mul_ok(floats, 4, &bytes) || bytes > UINT64_MAX - HEADER_BYTES)
        return sq_err_set(err, "%s: the header implies an impossible size", path);
    if (expected_bytes)
        *expected_bytes = bytes + HEADER_BYTES;
    return 0;
}

/* Copy count floats from src to a new array, refusing a non-finite one. */
static int copy_checked(const char *path, const tensor_spec *t, const uint8_t *src, float **dst,
                        sq_err *err)
{
    float *d = malloc((size_t)t->count * sizeof(float));
    if (!d)
        return sq_err_set(err, "%s: out of memory for %s (%" PRIu64 " floats)", path, t->name,
                          t->count);
    memcpy(d, src, (size_t)t->count * sizeof(float));
    for (uint64_t i = 0; i < t->count; i++)
        if (!isfinite(d[i])) {
            const double v = d[i];
            free(d);
            if (t->per != t->count)
                return sq_err_set(err, "%s: non-finite weight %g in %s (layer %" PRIu64
                                       ", element %" PRIu64 ")",
                                  path, v, t->name, i / t->per, i % t->per);
            return sq_err_set(err, "%s: non-finite weight %g in %s (element %" PRIu64 ")", path,
                              v, t->name, i);
        }
    *dst = d;
    return 0;
}

int sq_llama_ckpt_load(const char *path, sq_llama_ckpt *ck, sq_err *err)
{
    memset(ck, 0, sizeof *ck);
    sq_mapped_file mf;
    if (sq_map_file(path, &mf, err) != 0)
        return -1;
    int rc = -1;
    if (mf.size < HEADER_BYTES) {
        sq_err_set(err, "%s: %zu bytes, shorter than the 28-byte llama2.c header", path, mf.size);
        goto out;
    }
    int32_t hdr[7];
    memcpy(hdr, mf.data, sizeof hdr);
    uint64_t want;
    if (sq_llama_config_from_header(hdr, &ck->cfg, &want, path, err) != 0)
        goto out;
    if ((uint64_t)mf.size != want) {
        const uint64_t cls = (uint64_t)ck->cfg.vocab * (uint64_t)ck->cfg.dim * 4;
        const char *hint = (uint64_t)mf.size < want ? "truncated?" : "trailing bytes?";
        if (ck->cfg.shared_classifier && (uint64_t)mf.size == want + cls)
            hint = "a separate classifier follows, but vocab_size is positive (shared)";
        else if (!ck->cfg.shared_classifier && (uint64_t)mf.size + cls == want)
            hint = "no separate classifier, but vocab_size is negative (separate)";
        sq_err_set(err, "%s: %zu bytes, but the header (dim %d, hidden %d, %d layers, %d/%d heads, "
                        "vocab %d, seq_len %d) implies %" PRIu64 " (%s)",
                   path, mf.size, ck->cfg.dim, ck->cfg.hidden, ck->cfg.n_layers, ck->cfg.n_heads,
                   ck->cfg.n_kv_heads, ck->cfg.vocab, ck->cfg.seq_len, want, hint);
        goto out;
    }
    tensor_spec t[16] = {{0}};
    int n = specs(&ck->cfg, ck, t);
    uint64_t off = HEADER_BYTES;
    for (int i = 0; i < n; i++) {
        if (t[i].dst && copy_checked(path, &t[i], mf.data + off, t[i].dst, err) != 0)
            goto out;
        off += t[i].count * 4;
    }
    rc = 0;
out:
    sq_unmap_file(&mf);
    if (rc != 0) {
        sq_llama_config keep = ck->cfg;
        sq_llama_ckpt_free(ck);
        ck->cfg = keep;
    }
    return rc;
}

void sq_llama_ckpt_free(sq_llama_ckpt *ck)
{
    float **p[] = {&ck->tok_emb, &ck->rms_att, &ck->rms_ffn, &ck->wq, &ck->wk, &ck->wv,
                   &ck->wo, &ck->w1, &ck->w2, &ck->w3, &ck->rms_final, &ck->wcls,
                   &ck->q_norm, &ck->k_norm};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        free(*p[i]);
        *p[i] = NULL;
    }
}

/* The public API (include/squint.h) over the runtime in libquant/: opaque
 * handles, status codes, and per-call thread counts. Nothing here computes;
 * it only translates between the stable interface and the internal one. */
#include "squint.h"

#include <cblas.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "embed_model.h"
#include "emb_precision.h"
#include "embedder.h"
#include "linear.h"
#include "threads.h"
#include "squint_version.h"
#include "utf8.h"

struct squint_model {
    sq_embed_model m;
};

static squint_status fail(squint_error *err, squint_status code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->message, sizeof err->message, "%s", msg);
    }
    return code;
}

static void ok(squint_error *err)
{
    if (err) {
        err->code = SQUINT_OK;
        err->message[0] = '\0';
    }
}

const char *squint_version(void)
{
    return SQUINT_VERSION;
}

const char *squint_status_name(squint_status s)
{
    switch (s) {
    case SQUINT_OK: return "ok";
    case SQUINT_ERR_ARGUMENT: return "argument";
    case SQUINT_ERR_MODEL: return "model";
    case SQUINT_ERR_INPUT: return "input";
    case SQUINT_ERR_MEMORY: return "memory";
    case SQUINT_ERR_CPU: return "cpu";
    }
    return "unknown";
}

squint_model *squint_model_open(const char *path, squint_error *err)
{
    if (!path) {
        fail(err, SQUINT_ERR_ARGUMENT, "squint_model_open: path is NULL");
        return NULL;
    }
    /* squint threads with OpenMP only: a multi-threaded OpenBLAS inside our
     * parallel regions would oversubscribe and change nothing in results. */
    openblas_set_num_threads(1);
    squint_model *h = calloc(1, sizeof *h);
    if (!h) {
        fail(err, SQUINT_ERR_MEMORY, "squint_model_open: out of memory");
        return NULL;
    }
    sq_err e = {0};
    if (sq_embed_model_open(path, &h->m, &e) != 0) {
        sq_isa isa;
        sq_err isa_err = {0};
        bool cpu = h->m.is_sqm && sq_linear_isa(&isa, &isa_err) != 0;
        fail(err, cpu ? SQUINT_ERR_CPU : SQUINT_ERR_MODEL, e.msg);
        free(h);
        return NULL;
    }
    if (sq_embed_model_require_embeddings(&h->m, path, &e) != 0) {
        sq_embed_model_close(&h->m);
        fail(err, SQUINT_ERR_MODEL, e.msg);
        free(h);
        return NULL;
    }
    ok(err);
    return h;
}

void squint_model_close(squint_model *h)
{
    if (!h)
        return;
    sq_embed_model_close(&h->m);
    free(h);
}

int squint_model_dim(const squint_model *h)
{
    return h ? h->m.enc.cfg.hidden : 0;
}

int squint_model_max_seq(const squint_model *h)
{
    return h ? h->m.max_seq : 0;
}

int squint_model_is_quantized(const squint_model *h)
{
    return h && h->m.is_sqm;
}

void squint_embed_options_init(squint_embed_options *o)
{
    if (o)
        *o = (squint_embed_options){.normalize = -1, .pooling = SQUINT_POOLING_MODEL};
}

/* Options -> the runtime's, checked; the limits are the CLI's. */
static squint_status resolve_options(const squint_model *h, const squint_embed_options *in,
                                     sq_embed_opts *o, squint_error *err)
{
    squint_embed_options d;
    squint_embed_options_init(&d);
    if (!in)
        in = &d;
    char msg[160];
    if (in->threads < 0 || in->threads > SQ_THREADS_MAX) {
        snprintf(msg, sizeof msg, "squint_embed: threads must be in [0, %d]", SQ_THREADS_MAX);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    if (in->batch < 0 || in->batch > SQ_BATCH_MAX) {
        snprintf(msg, sizeof msg, "squint_embed: batch must be in [0, %d]", SQ_BATCH_MAX);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    if (in->normalize < -1 || in->normalize > 1)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: normalize must be -1, 0 or 1");
    if (in->max_seq != 0 && (in->max_seq < 3 || in->max_seq > sq_bert_max_tokens(&h->m.enc.cfg))) {
        snprintf(msg, sizeof msg, "squint_embed: max_seq %d is outside [3, %d] (0: the model's %d)",
                 in->max_seq, sq_bert_max_tokens(&h->m.enc.cfg), h->m.max_seq);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    sq_pooling pooling = h->m.pool.pooling;
    switch (in->pooling) {
    case SQUINT_POOLING_MODEL: break;
    case SQUINT_POOLING_CLS: pooling = SQ_POOL_CLS; break;
    case SQUINT_POOLING_MEAN: pooling = SQ_POOL_MEAN; break;
    default: return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: unknown pooling");
    }
    *o = (sq_embed_opts){
        .batch = in->batch ? in->batch : 32,
        .max_seq = in->max_seq ? in->max_seq : h->m.max_seq,
        .pooling = pooling,
        .normalize = in->normalize >= 0 ? in->normalize == 1 : h->m.pool.normalize,
    };
    return SQUINT_OK;
}

/* squint_embed and squint_embed_dims: dims 0 = the whole width. */
static squint_status embed(const squint_model *h, const char *const *texts, const size_t *lens,
                           size_t n, const squint_embed_options *opts, int dims, float *out,
                           squint_error *err)
{
    if (!h || (n && (!texts || !out)))
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: model, texts or out is NULL");
    sq_embed_opts o;
    squint_status st = resolve_options(h, opts, &o, err);
    if (st != SQUINT_OK)
        return st;
    if (dims < 0 || dims > h->m.enc.cfg.hidden) {
        char msg[160];
        snprintf(msg, sizeof msg, "squint_embed_dims: dimensions %d is outside [1, %d]", dims,
                 h->m.enc.cfg.hidden);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    o.dimensions = dims;
    if (n == 0) {
        ok(err);
        return SQUINT_OK;
    }
    if (n > (size_t)INT64_MAX / sizeof(float) / (size_t)h->m.enc.cfg.hidden)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: too many texts");
    size_t *own_lens = NULL;
    if (!lens) {
        if (!(own_lens = malloc(n * sizeof *own_lens)))
            return fail(err, SQUINT_ERR_MEMORY, "squint_embed: out of memory");
        for (size_t i = 0; i < n; i++)
            own_lens[i] = texts[i] ? strlen(texts[i]) : 0;
        lens = own_lens;
    }
    char msg[160];
    for (size_t i = 0; i < n; i++) {
        if (!texts[i]) {
            snprintf(msg, sizeof msg, "squint_embed: text %zu is NULL", i);
            free(own_lens);
            return fail(err, SQUINT_ERR_ARGUMENT, msg);
        }
        size_t good = sq_utf8_valid_prefix(texts[i], lens[i]);
        if (good != lens[i]) {
            snprintf(msg, sizeof msg, "squint_embed: text %zu: invalid UTF-8 at byte %zu", i,
                     good + 1);
            free(own_lens);
            return fail(err, SQUINT_ERR_INPUT, msg);
        }
    }
    /* The thread count is an ICV of the calling thread: set it for this call
     * and give the caller's back. Unset, it is squint's default (affinity,
     * cgroup CPU quota, OMP_NUM_THREADS), not the calling thread's ICV. */
    int prev_threads = omp_get_max_threads();
    omp_set_num_threads(opts && opts->threads > 0 ? opts->threads : sq_threads_default());
    sq_embed_result res;
    sq_err e = {0};
    /* The runtime only reads the model (workspaces are per call); its
     * signature predates the const-correct public API. */
    int rc = sq_embed_texts((sq_embed_model *)&h->m, texts, lens, (int64_t)n, &o, &res, &e);
    omp_set_num_threads(prev_threads);
    free(own_lens);
    /* Arguments, texts and the CPU were checked above: what can still fail
     * is an allocation. */
    if (rc != 0)
        return fail(err, SQUINT_ERR_MEMORY, e.msg);
    memcpy(out, res.emb, n * (size_t)res.dim * sizeof *out);
    sq_embed_result_free(&res);
    ok(err);
    return SQUINT_OK;
}

squint_status squint_embed(const squint_model *h, const char *const *texts, const size_t *lens,
                           size_t n, const squint_embed_options *opts, float *out,
                           squint_error *err)
{
    return embed(h, texts, lens, n, opts, 0, out, err);
}

_Static_assert((int)SQUINT_PRECISION_INT8 == (int)SQ_PREC_INT8 &&
                   (int)SQUINT_PRECISION_UBINARY == (int)SQ_PREC_UBINARY,
               "squint_precision mirrors sq_emb_precision");

int squint_precision_row_bytes(squint_precision p, int dimensions)
{
    if ((unsigned)p > SQUINT_PRECISION_UBINARY || dimensions < 1)
        return -1;
    return p == SQUINT_PRECISION_FLOAT32 ? 4 * dimensions
                                         : sq_emb_precision_width((sq_emb_precision)p, dimensions);
}

squint_status squint_embed_codes(const squint_model *h, const char *const *texts,
                                 const size_t *lens, size_t n, const squint_embed_options *opts,
                                 int dimensions, squint_precision p, const float *ranges,
                                 void *out, squint_error *err)
{
    if ((unsigned)p > SQUINT_PRECISION_UBINARY)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed_codes: unknown precision");
    if (!h || (n && (!texts || !out)))
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed_codes: model, texts or out is NULL");
    const int D = dimensions ? dimensions : h->m.enc.cfg.hidden;
    if (D < 1 || D > h->m.enc.cfg.hidden) {
        char msg[160];
        snprintf(msg, sizeof msg, "squint_embed_codes: dimensions %d is outside [1, %d]", D,
                 h->m.enc.cfg.hidden);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    const sq_emb_precision ep = (sq_emb_precision)p;
    if (sq_emb_precision_needs_ranges(ep)) {
        if (!ranges)
            return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed_codes: int8 / uint8 need ranges");
        for (int d = 0; d < D; d++)
            if (!(ranges[d] <= ranges[D + d]) || !isfinite(ranges[d]) || !isfinite(ranges[D + d]))
                return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed_codes: ranges need finite "
                                                      "min <= max in every dimension");
    }
    if (p == SQUINT_PRECISION_FLOAT32)
        return embed(h, texts, lens, n, opts, dimensions, out, err);
    if (n == 0) {
        ok(err);
        return SQUINT_OK;
    }
    if (n > (size_t)INT64_MAX / sizeof(float) / (size_t)D)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed_codes: too many texts");
    float *emb = malloc(n * (size_t)D * sizeof *emb);
    if (!emb)
        return fail(err, SQUINT_ERR_MEMORY, "squint_embed_codes: out of memory");
    squint_status st = embed(h, texts, lens, n, opts, dimensions, emb, err);
    if (st == SQUINT_OK)
        sq_emb_quantize(ep, emb, (int64_t)n, D, ranges, out);
    free(emb);
    return st;
}

squint_status squint_embed_dims(const squint_model *h, const char *const *texts,
                                const size_t *lens, size_t n, const squint_embed_options *opts,
                                int dimensions, float *out, squint_error *err)
{
    if (dimensions < 1)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed_dims: dimensions must be >= 1");
    return embed(h, texts, lens, n, opts, dimensions, out, err);
}

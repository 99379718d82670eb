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
#include "ranker.h"
#include "seq_classify.h"
#include "sqm_model.h"
#include "emb_precision.h"
#include "embedder.h"
#include "linear.h"
#include "threads.h"
#include "squint_version.h"
#include "utf8.h"

/* Any model that embeds or scores pairs (ranker.h); r.em is the embedding
 * model when kind is SQ_RANKER_EMBEDDING. */
struct squint_model {
    sq_ranker r;
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
    if (sq_ranker_open(path, NULL, 0, &h->r, &e) != 0) {
        sq_isa isa;
        sq_err isa_err = {0};
        bool cpu = sq_sqm_sniff(path) && sq_linear_isa(&isa, &isa_err) != 0;
        /* A language model that cannot judge is most likely one opened to
         * generate: say that the library does not, and what does. */
        if (!cpu && sq_ranker_is_lm(path))
            sq_err_prefix(&e, "libsquint embeds and scores pairs; it does not generate text "
                              "(squint generate and squint serve do)");
        fail(err, cpu ? SQUINT_ERR_CPU : SQUINT_ERR_MODEL, e.msg);
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
    sq_ranker_close(&h->r);
    free(h);
}

squint_model_kind squint_model_kind_of(const squint_model *h)
{
    return h ? (squint_model_kind)h->r.kind : SQUINT_KIND_EMBEDDING;
}

_Static_assert((int)SQUINT_KIND_CROSS_ENCODER == (int)SQ_RANKER_CROSS_ENCODER &&
                   (int)SQUINT_KIND_JUDGE == (int)SQ_RANKER_JUDGE,
               "squint_model_kind mirrors sq_ranker_kind");

static bool embeds(const squint_model *h)
{
    return h && h->r.kind == SQ_RANKER_EMBEDDING;
}

int squint_model_dim(const squint_model *h)
{
    return embeds(h) ? h->r.em.enc.cfg.hidden : 0;
}

int squint_model_max_seq(const squint_model *h)
{
    if (!h)
        return 0;
    return h->r.kind == SQ_RANKER_JUDGE ? h->r.j.max_seq : h->r.em.max_seq;
}

int squint_model_is_quantized(const squint_model *h)
{
    if (!h)
        return 0;
    return h->r.kind == SQ_RANKER_JUDGE ? h->r.lm.sqm != NULL : sq_embed_model_is_packed(&h->r.em);
}

/* squint_embed* on a model that does not embed: its kind, and what to call. */
static squint_status not_embedding(const squint_model *h, const char *fn, squint_error *err)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s: the model is a %s: it scores pairs (squint_score_pairs), "
                              "it does not embed", fn,
             h->r.kind == SQ_RANKER_JUDGE ? "causal LM judge (Qwen3-Reranker)"
                                          : "cross-encoder (a sequence classifier)");
    return fail(err, SQUINT_ERR_MODEL, msg);
}

void squint_embed_options_init(squint_embed_options *o)
{
    if (o)
        *o = (squint_embed_options){.normalize = -1, .pooling = SQUINT_POOLING_MODEL};
}

/* The options every call has: threads and batch within the CLI's limits. */
static squint_status check_counts(const char *fn, int threads, int batch, squint_error *err)
{
    char msg[160];
    if (threads < 0 || threads > SQ_THREADS_MAX) {
        snprintf(msg, sizeof msg, "%s: threads must be in [0, %d]", fn, SQ_THREADS_MAX);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    if (batch < 0 || batch > SQ_BATCH_MAX) {
        snprintf(msg, sizeof msg, "%s: batch must be in [0, %d]", fn, SQ_BATCH_MAX);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    return SQUINT_OK;
}

/* Each of n texts not NULL and valid UTF-8 (side names them in messages:
 * "text", "query"); lens NULL: NUL-terminated, *own gets the lengths (free
 * it) and *out points at the lengths to use. */
static squint_status check_texts(const char *fn, const char *side, const char *const *t,
                                 const size_t *lens, size_t n, const size_t **out,
                                 size_t **own, squint_error *err)
{
    char msg[200];
    *own = NULL;
    if (!lens) {
        if (!(*own = malloc(n * sizeof **own))) {
            snprintf(msg, sizeof msg, "%s: out of memory", fn);
            return fail(err, SQUINT_ERR_MEMORY, msg);
        }
        for (size_t i = 0; i < n; i++)
            (*own)[i] = t[i] ? strlen(t[i]) : 0;
        lens = *own;
    }
    for (size_t i = 0; i < n; i++) {
        squint_status code = SQUINT_OK;
        if (!t[i]) {
            snprintf(msg, sizeof msg, "%s: %s %zu is NULL", fn, side, i);
            code = SQUINT_ERR_ARGUMENT;
        } else {
            size_t good = sq_utf8_valid_prefix(t[i], lens[i]);
            if (good != lens[i]) {
                snprintf(msg, sizeof msg, "%s: %s %zu: invalid UTF-8 at byte %zu", fn, side, i,
                         good + 1);
                code = SQUINT_ERR_INPUT;
            }
        }
        if (code != SQUINT_OK) {
            free(*own), *own = NULL;
            return fail(err, code, msg);
        }
    }
    *out = lens;
    return SQUINT_OK;
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
    squint_status st = check_counts("squint_embed", in->threads, in->batch, err);
    if (st != SQUINT_OK)
        return st;
    if (in->normalize < -1 || in->normalize > 1)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: normalize must be -1, 0 or 1");
    if (in->max_seq != 0 && (in->max_seq < 3 || in->max_seq > sq_bert_max_tokens(&h->r.em.enc.cfg))) {
        snprintf(msg, sizeof msg, "squint_embed: max_seq %d is outside [3, %d] (0: the model's %d)",
                 in->max_seq, sq_bert_max_tokens(&h->r.em.enc.cfg), h->r.em.max_seq);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    sq_pooling pooling = h->r.em.pool.pooling;
    switch (in->pooling) {
    case SQUINT_POOLING_MODEL: break;
    case SQUINT_POOLING_CLS: pooling = SQ_POOL_CLS; break;
    case SQUINT_POOLING_MEAN: pooling = SQ_POOL_MEAN; break;
    default: return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: unknown pooling");
    }
    *o = (sq_embed_opts){
        .batch = in->batch ? in->batch : 32,
        .max_seq = in->max_seq ? in->max_seq : h->r.em.max_seq,
        .pooling = pooling,
        .normalize = in->normalize >= 0 ? in->normalize == 1 : h->r.em.pool.normalize,
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
    if (!embeds(h))
        return not_embedding(h, "squint_embed", err);
    sq_embed_opts o;
    squint_status st = resolve_options(h, opts, &o, err);
    if (st != SQUINT_OK)
        return st;
    if (dims < 0 || dims > h->r.em.enc.cfg.hidden) {
        char msg[160];
        snprintf(msg, sizeof msg, "squint_embed_dims: dimensions %d is outside [1, %d]", dims,
                 h->r.em.enc.cfg.hidden);
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    o.dimensions = dims;
    if (n == 0) {
        ok(err);
        return SQUINT_OK;
    }
    if (n > (size_t)INT64_MAX / sizeof(float) / (size_t)h->r.em.enc.cfg.hidden)
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_embed: too many texts");
    size_t *own_lens;
    st = check_texts("squint_embed", "text", texts, lens, n, &lens, &own_lens, err);
    if (st != SQUINT_OK)
        return st;
    /* The thread count is an ICV of the calling thread: set it for this call
     * and give the caller's back. Unset, it is squint's default (affinity,
     * cgroup CPU quota, OMP_NUM_THREADS), not the calling thread's ICV. */
    int prev_threads = omp_get_max_threads();
    omp_set_num_threads(opts && opts->threads > 0 ? opts->threads : sq_threads_default());
    sq_embed_result res;
    sq_err e = {0};
    /* The runtime only reads the model (workspaces are per call); its
     * signature predates the const-correct public API. */
    int rc = sq_embed_texts((sq_embed_model *)&h->r.em, texts, lens, (int64_t)n, &o, &res, &e);
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
    if (!embeds(h))
        return not_embedding(h, "squint_embed_codes", err);
    const int D = dimensions ? dimensions : h->r.em.enc.cfg.hidden;
    if (D < 1 || D > h->r.em.enc.cfg.hidden) {
        char msg[160];
        snprintf(msg, sizeof msg, "squint_embed_codes: dimensions %d is outside [1, %d]", D,
                 h->r.em.enc.cfg.hidden);
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

void squint_score_options_init(squint_score_options *o)
{
    if (o)
        *o = (squint_score_options){0};
}

squint_status squint_score_pairs(const squint_model *h, const char *const *queries,
                                 const size_t *qlens, const char *const *docs,
                                 const size_t *dlens, size_t n, const squint_score_options *opts,
                                 double *scores, float *logits, squint_error *err)
{
    static const char fn[] = "squint_score_pairs";
    if (!h || (n && (!queries || !docs || !scores)))
        return fail(err, SQUINT_ERR_ARGUMENT,
                    "squint_score_pairs: model, queries, docs or scores is NULL");
    squint_score_options d;
    squint_score_options_init(&d);
    if (!opts)
        opts = &d;
    char msg[200];
    squint_status st = check_counts(fn, opts->threads, opts->batch, err);
    if (st != SQUINT_OK)
        return st;
    const int limit = h->r.kind == SQ_RANKER_JUDGE ? h->r.lm.dec.cfg.max_pos
                                                   : sq_bert_max_tokens(&h->r.em.enc.cfg);
    /* A judge's prompt needs its fixed ids and a token of the pair. */
    const int lowest = h->r.kind == SQ_RANKER_EMBEDDING ? 3
                       : h->r.kind == SQ_RANKER_CROSS_ENCODER
                           ? SQ_PAIR_MIN_SEQ
                           : h->r.j.n_prefix + h->r.j.n_suffix + 1;
    if (opts->max_seq != 0 && (opts->max_seq < lowest || opts->max_seq > limit)) {
        snprintf(msg, sizeof msg, "%s: max_seq %d is outside [%d, %d] (0: the model's %d)", fn,
                 opts->max_seq, lowest, limit, squint_model_max_seq(h));
        return fail(err, SQUINT_ERR_ARGUMENT, msg);
    }
    if (opts->instruction && h->r.kind != SQ_RANKER_JUDGE)
        return fail(err, SQUINT_ERR_ARGUMENT,
                    "squint_score_pairs: an instruction is for a causal LM judge "
                    "(Qwen3-Reranker); this model is an embedding model or a cross-encoder");
    if (n == 0) {
        ok(err);
        return SQUINT_OK;
    }
    if (n > (size_t)INT64_MAX / 2 / sizeof(void *))
        return fail(err, SQUINT_ERR_ARGUMENT, "squint_score_pairs: too many pairs");
    size_t *own_q, *own_d;
    const size_t *ql, *dl;
    if ((st = check_texts(fn, "query", queries, qlens, n, &ql, &own_q, err)) != SQUINT_OK)
        return st;
    if ((st = check_texts(fn, "document", docs, dlens, n, &dl, &own_d, err)) != SQUINT_OK) {
        free(own_q);
        return st;
    }
    sq_embed_opts o = {.batch = opts->batch ? opts->batch : 32, .max_seq = opts->max_seq};
    int prev_threads = omp_get_max_threads();
    omp_set_num_threads(opts->threads > 0 ? opts->threads : sq_threads_default());
    sq_err e = {0};
    int rc = sq_ranker_score(&h->r, opts->instruction, queries, ql, docs, dl, (int64_t)n, &o,
                             scores, logits, &e);
    omp_set_num_threads(prev_threads);
    free(own_q);
    free(own_d);
    /* Arguments and texts were checked above; what is left is the model
     * (a classifier with several labels, a judge's prompt that does not fit)
     * or memory. */
    if (rc != 0)
        return fail(err, strstr(e.msg, "out of memory") ? SQUINT_ERR_MEMORY : SQUINT_ERR_MODEL,
                    e.msg);
    if (logits && h->r.kind == SQ_RANKER_EMBEDDING)
        for (size_t i = 0; i < n; i++)
            logits[i] = NAN;
    ok(err);
    return SQUINT_OK;
}

/* libsquint: squint's embedding runtime as a library.
 *
 * Open a model once, embed texts from any number of threads:
 *
 *     squint_error err;
 *     squint_model *m = squint_model_open("model.sqm", &err);
 *     if (!m) { fprintf(stderr, "%s\n", err.message); return 1; }
 *     int dim = squint_model_dim(m);
 *     float *out = malloc(n * dim * sizeof *out);
 *     if (squint_embed(m, texts, NULL, n, NULL, out, &err) != SQUINT_OK) ...
 *     squint_model_close(m);
 *
 * A model is a packed .sqm from `squint quantize` (int8/int4 runtime; the
 * weights are used in place from the mapped file) or a Hugging Face
 * checkpoint directory / archive (fp32), exactly as the `squint` command
 * takes it: the same bytes come out as `squint embed` writes, the same
 * scores as `squint rerank` (squint_score_pairs, for embedding models,
 * cross-encoders and causal LM judges such as Qwen3-Reranker).
 *
 * Threads. An open model is read-only: squint_embed may be called on one
 * model from many threads at once, each call with its own output buffer.
 * Each call runs its own OpenMP team of options.threads workers (0: OpenMP's
 * default for the calling thread, i.e. OMP_NUM_THREADS, else the CPUs the
 * process may run on); results do not depend on the thread count. Calls
 * from several threads each start their team: size them so that their
 * sum fits the cores. squint_model_close must not race with a call on the
 * same model.
 *
 * Errors. Functions that can fail take a squint_error * (may be NULL) and
 * return a status; the message is one line naming the file and the problem.
 *
 * Link with `pkg-config --cflags --libs squint` (shared) or
 * `pkg-config --static --cflags --libs squint` (static). */
#ifndef SQUINT_H
#define SQUINT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SQUINT_API __attribute__((visibility("default")))
#else
#define SQUINT_API
#endif

typedef enum squint_status {
    SQUINT_OK = 0,
    SQUINT_ERR_ARGUMENT = 1, /* a NULL pointer or an option out of range */
    SQUINT_ERR_MODEL = 2,    /* the model cannot be opened: missing, damaged, unsupported */
    SQUINT_ERR_INPUT = 3,    /* a text squint cannot take (not UTF-8) */
    SQUINT_ERR_MEMORY = 4,   /* out of memory */
    SQUINT_ERR_CPU = 5,      /* this CPU cannot run the model (or SQUINT_ISA asks for an ISA it lacks) */
} squint_status;

typedef struct squint_error {
    squint_status code;
    char message[1024]; /* one line, NUL-terminated; "" on success */
} squint_error;

/* "0.1.0": the library's version (the soname follows its major number). */
SQUINT_API const char *squint_version(void);
/* A short name of a status: "ok", "argument", "model", "input", "memory", "cpu". */
SQUINT_API const char *squint_status_name(squint_status s);

typedef struct squint_model squint_model;

/* Open a .sqm file or a checkpoint directory / archive. NULL on failure
 * (err says why). The model holds its file mapped until closed. */
SQUINT_API squint_model *squint_model_open(const char *path, squint_error *err);
SQUINT_API void squint_model_close(squint_model *m);

/* What an open model does: an embedding model embeds (squint_embed*) and
 * scores pairs by cosine; a cross-encoder and a judge only score pairs
 * (squint_score_pairs), and squint_embed* refuse them (SQUINT_ERR_MODEL). */
typedef enum squint_model_kind {
    SQUINT_KIND_EMBEDDING = 0,     /* a bi-encoder: BERT family, USE Lite, Qwen3-Embedding */
    SQUINT_KIND_CROSS_ENCODER = 1, /* a sequence classifier (bge-reranker, ms-marco MiniLM) */
    SQUINT_KIND_JUDGE = 2,         /* a causal LM asked yes or no (Qwen3-Reranker) */
} squint_model_kind;
SQUINT_API squint_model_kind squint_model_kind_of(const squint_model *m);

/* Embedding width (floats per text); 0 for a model that does not embed. */
SQUINT_API int squint_model_dim(const squint_model *m);
/* Default truncation length in tokens, special tokens included (a judge:
 * of its whole prompt). */
SQUINT_API int squint_model_max_seq(const squint_model *m);
/* 1 for a quantized .sqm, 0 for an fp32 checkpoint. */
SQUINT_API int squint_model_is_quantized(const squint_model *m);

typedef enum squint_pooling {
    SQUINT_POOLING_MODEL = 0, /* what the model says */
    SQUINT_POOLING_CLS = 1,
    SQUINT_POOLING_MEAN = 2,
} squint_pooling;

typedef struct squint_embed_options {
    int threads;    /* workers for this call; 0: OpenMP's default (see above) */
    int max_seq;    /* truncate to this many tokens; 0: the model's default */
    int batch;      /* sequences per forward pass; 0: 32 */
    int normalize;  /* -1: as the model says; 0: no; 1: L2-normalize */
    squint_pooling pooling;
} squint_embed_options;

/* The defaults: {0, 0, 0, -1, SQUINT_POOLING_MODEL}. */
SQUINT_API void squint_embed_options_init(squint_embed_options *o);

/* Embed n texts into out[n][squint_model_dim(m)], row i for texts[i].
 * lens[i] is the byte length of texts[i] (lens NULL: NUL-terminated texts).
 * Texts must be UTF-8; n == 0 is a no-op. opts NULL: the defaults. On
 * failure nothing is promised about out. */
SQUINT_API squint_status squint_embed(const squint_model *m, const char *const *texts,
                                      const size_t *lens, size_t n,
                                      const squint_embed_options *opts, float *out,
                                      squint_error *err);

/* Matryoshka embeddings: the first `dimensions` values of each embedding
 * (1 .. squint_model_dim(m)), normalized again when the embeddings are
 * (truncate, then normalize), into out[n][dimensions]. The same bytes as
 * `squint embed --dimensions` and serve's "dimensions". */
SQUINT_API squint_status squint_embed_dims(const squint_model *m, const char *const *texts,
                                           const size_t *lens, size_t n,
                                           const squint_embed_options *opts, int dimensions,
                                           float *out, squint_error *err);

/* Embeddings for vector stores, as sentence-transformers' quantize_embeddings
 * makes them (formats: docs/commands.md "--precision"): int8 / uint8 codes
 * per dimension from calibration ranges [2][dimensions] (min row, max row:
 * `squint embed --ranges-out`), or binary / ubinary sign bits, 8 to a byte. */
typedef enum squint_precision {
    SQUINT_PRECISION_FLOAT32 = 0,
    SQUINT_PRECISION_INT8 = 1,
    SQUINT_PRECISION_UINT8 = 2,
    SQUINT_PRECISION_BINARY = 3,
    SQUINT_PRECISION_UBINARY = 4,
} squint_precision;

/* Bytes per embedding of precision p at width dimensions (float32: 4 x
 * dimensions; binary, ubinary: ceil(dimensions / 8)); -1 for an unknown p. */
SQUINT_API int squint_precision_row_bytes(squint_precision p, int dimensions);

/* Embed n texts into out[n][squint_precision_row_bytes(p, D)] bytes, D =
 * dimensions (0: the model's width; else as squint_embed_dims). ranges:
 * [2][D] floats for int8 / uint8 (min <= max per dimension), else NULL.
 * The same bytes as `squint embed --precision`. */
SQUINT_API squint_status squint_embed_codes(const squint_model *m, const char *const *texts,
                                            const size_t *lens, size_t n,
                                            const squint_embed_options *opts, int dimensions,
                                            squint_precision p, const float *ranges, void *out,
                                            squint_error *err);

/* Relevance of (query, document) pairs, as `squint rerank --pairs` gives
 * them (the same bits, whatever the thread count):
 *   an embedding model: the cosine of the two embeddings (no logit);
 *   a cross-encoder with one label: its logit through the activation its
 *     config names (sigmoid by default), the pair read as [CLS] query [SEP]
 *     document [SEP], the longer text cut first past max_seq;
 *   a judge: P("yes") against "no" after Qwen3-Reranker's prompt, the logit
 *     being logit(yes) - logit(no); the document cut first.
 * threads, max_seq (0: the model's; a judge: min(8192, its context)) and
 * batch as in squint_embed_options; instruction: a judge's <Instruct> line
 * (NULL: Qwen3-Reranker's web-search one), refused for other models. */
typedef struct squint_score_options {
    int threads;
    int max_seq;
    int batch;
    const char *instruction;
} squint_score_options;

/* The defaults: all zero, instruction NULL. */
SQUINT_API void squint_score_options_init(squint_score_options *o);

/* Score n pairs (queries[i], docs[i]) into scores[n] and, for a
 * cross-encoder or a judge, logits[n] (NULL: not wanted; an embedding
 * model's are NaN). qlens, dlens: byte lengths (NULL: NUL-terminated). The
 * same text pointer given several times is embedded once by an embedding
 * model. Texts must be UTF-8; n == 0 is a no-op. A classifier with several
 * labels gives SQUINT_ERR_MODEL. */
SQUINT_API squint_status squint_score_pairs(const squint_model *m, const char *const *queries,
                                            const size_t *qlens, const char *const *docs,
                                            const size_t *dlens, size_t n,
                                            const squint_score_options *opts, double *scores,
                                            float *logits, squint_error *err);

#ifdef __cplusplus
}
#endif

#endif

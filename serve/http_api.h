/* The request and response bodies of squint serve's embedding endpoints:
 *   POST /v1/embeddings  OpenAI: {"input": "text" | ["text", ...],
 *                        "encoding_format": "float" | "base64", "model",
 *                        "dimensions" (must be the model's), "user"} ->
 *                        {"object": "list", "data": [{"object": "embedding",
 *                        "index": i, "embedding": [...] | "base64"}],
 *                        "model": NAME, "usage": {"prompt_tokens": T,
 *                        "total_tokens": T}}
 *   POST /embed          text-embeddings-inference: {"inputs": "text" |
 *                        ["text", ...], "normalize": true, "truncate": true}
 *                        -> [[...], ...]
 * Texts longer than the model's limit are truncated, as sentence-transformers
 * does (OpenAI refuses them; TEI only with "truncate": true). Floats are
 * printed with 9 significant digits: they read back as the same float32.
 * base64 is of the little-endian float32 bytes, as OpenAI's clients decode. */
#ifndef SQ_SERVE_HTTP_API_H
#define SQ_SERVE_HTTP_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emb_precision.h"
#include "strbuf.h"

typedef enum sq_api_kind { SQ_API_OPENAI, SQ_API_TEI } sq_api_kind;

typedef struct sq_embed_request {
    int64_t n;
    const char **texts; /* borrowed from the parsed JSON (kept in `doc`) */
    size_t *lens;
    bool base64;        /* OpenAI encoding_format base64 */
    int normalize;      /* -1: as the model says; 0 / 1 */
    int dimensions;     /* Matryoshka: the first N values, then normalized; 0: all */
    sq_emb_precision precision; /* "precision": float32 rows or byte codes */
    const char *instruction; /* /rerank's "instruction" (a causal LM judge's); NULL: none */
    void *doc;          /* the parsed body (json_t *) */
} sq_embed_request;

/* A request body as a JSON object (duplicate keys, invalid UTF-8 and
 * \u0000 refused), stored in *doc (json_t *; the caller frees it, also on
 * failure when set): 0, or 400 with msg. */
int sq_api_load_object(const char *body, size_t len, void **doc, char *msg, size_t msgn);

/* Parse a request body of kind k. dim: the model's width ("dimensions",
 * OpenAI's and TEI's, 1 .. dim); max_inputs: the most texts a request may carry. Returns 0,
 * or the HTTP status to answer (400, or 413 for too many inputs) with msg. */
int sq_api_parse_embed(sq_api_kind k, const char *body, size_t len, int dim, int64_t max_inputs,
                       sq_embed_request *req, char *msg, size_t msgn);
void sq_api_request_free(sq_embed_request *req);

/* The response body for n rows of emb [n][dim]; tokens for OpenAI's usage.
 * With req->precision other than float32, codes [n][width] (emb_precision.h)
 * are the rows: integers, or their bytes in base64. */
void sq_api_embed_response(sq_api_kind k, const sq_embed_request *req, const float *emb, int dim,
                           const uint8_t *codes, int width, int64_t tokens, const char *model,
                           sq_strbuf *sb);

/* POST /rerank: {"query": "text", "texts": ["text", ...]} (TEI's rerank
 * body), and squint's "instruction": "text" for a causal LM judge
 * (Qwen3-Reranker's <Instruct> line). On success req holds n + 1 texts, the
 * query first. Same statuses. */
int sq_api_parse_rerank(const char *body, size_t len, int64_t max_inputs, sq_embed_request *req,
                        char *msg, size_t msgn);
/* [{"index": i, "score": s}, ...] for n documents in `order` (from
 * sq_rank_by_cosine: highest score first). */
void sq_api_rerank_response(const double *scores, const int64_t *order, int64_t n,
                            sq_strbuf *sb);
/* [[{"label": l, "score": p}, ...], ...] per text, by probability, highest
 * first (TEI's /predict), probs [n][classes]. */
void sq_api_classify_response(const double *probs, int64_t n, int classes,
                              const char *const *labels, sq_strbuf *sb);

/* An error body in the endpoint's style: OpenAI {"error": {"message", "type",
 * "param", "code"}}, TEI {"error", "error_type"}; other endpoints use the
 * OpenAI form. */
void sq_api_error(sq_api_kind k, int status, const char *msg, sq_strbuf *sb);

/* base64 (RFC 4648, padded) of n bytes appended to sb. */
void sq_api_base64(const unsigned char *p, size_t n, sq_strbuf *sb);

#endif

/* The request and response bodies of squint serve's text generation
 * (OpenAI's legacy completions API):
 *   POST /v1/completions  {"prompt": "text", "max_tokens": 16, "temperature": 0,
 *                         "top_p": 1, "seed": S, "stream": false,
 *                         "stop": "s" | ["s", ... up to 4]} ->
 *                         {"id": "cmpl-N", "object": "text_completion",
 *                         "created": T, "model": NAME, "choices": [{"index": 0,
 *                         "text": ..., "finish_reason": "stop" | "length"}],
 *                         "usage": {"prompt_tokens", "completion_tokens",
 *                         "total_tokens"}}
 * streamed ("stream": true) as Server-Sent Events: one `data: {chunk}` per
 * piece of text (choices[0].text the piece, finish_reason null), a last
 * chunk with "text": "", the finish_reason and the usage, then
 * `data: [DONE]`. Unknown fields are ignored (as on the embedding
 * endpoints); the OpenAI fields squint does not implement are refused
 * unless they hold their defaults (n, best_of, echo, logprobs, suffix,
 * presence_penalty, frequency_penalty, logit_bias). */
#ifndef SQ_SERVE_COMPLETION_API_H
#define SQ_SERVE_COMPLETION_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stop_text.h"
#include "strbuf.h"

enum { SQ_CMPL_DEFAULT_MAX_TOKENS = 16, SQ_CMPL_STOP_BYTES = 256 };
/* A prompt for a tokenizer with no bytes-per-token bound (fused unknown
 * characters) is refused above this many bytes per context token, before it
 * is tokenized (a generous cap: English runs ~4 bytes per token). */
enum { SQ_CMPL_BYTES_PER_TOKEN = 64 };
#define SQ_CMPL_MAX_TEMPERATURE 2.0

typedef struct sq_cmpl_request {
    const char *prompt; /* borrowed from doc, prompt_len bytes (no NUL inside) */
    size_t prompt_len;
    int64_t max_tokens; /* 0 .. context */
    double temperature; /* [0, 2]; 0: greedy */
    double top_p;       /* (0, 1] */
    bool has_seed;
    uint64_t seed;
    bool stream;
    const char *stops[SQ_STOP_MAX]; /* borrowed; 1 .. SQ_CMPL_STOP_BYTES bytes each */
    size_t stop_lens[SQ_STOP_MAX];
    int n_stops;
    void *doc; /* the parsed body (json_t *) */
} sq_cmpl_request;

/* Parse a body; context: the model's positions (max_tokens' bound). Returns
 * 0, or 400 with msg. req is to be freed either way. */
int sq_api_parse_completion(const char *body, size_t len, int context, sq_cmpl_request *req,
                            char *msg, size_t msgn);
void sq_cmpl_request_free(sq_cmpl_request *req);

/* What every body and chunk of one completion repeats. */
typedef struct sq_cmpl_meta {
    uint64_t id;     /* "cmpl-ID" */
    int64_t created; /* unix seconds */
    const char *model;
} sq_cmpl_meta;

/* The non-streamed body. finish: "stop" or "length". */
void sq_api_completion_response(const sq_cmpl_meta *m, const char *text, size_t n,
                                const char *finish, int64_t prompt_tokens,
                                int64_t completion_tokens, sq_strbuf *sb);
/* One event `data: {...}\n\n`: a piece (finish NULL: "finish_reason": null),
 * or the last chunk (finish set, with the usage). */
void sq_api_completion_chunk(const sq_cmpl_meta *m, const char *text, size_t n,
                             const char *finish, int64_t prompt_tokens,
                             int64_t completion_tokens, sq_strbuf *sb);

#endif

/* Text generation with a KV cache: the prompt's tokens in one batched
 * prefill, then one token per forward, each handed to a callback as soon as
 * it is sampled (streaming); or assisted by a draft model (speculative.c:
 * the draft proposes K tokens, the target checks them in one forward). Stops at EOS (id 2), at BOS (id 1: llama2.c's
 * models delimit their training texts with BOS, and llama2.c's run.c stops
 * there too), after max_tokens, at the end of the context, or when the
 * callback asks. */
#ifndef SQ_GENERATE_H
#define SQ_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "llama_model.h"
#include "sampler.h"

typedef enum sq_gen_stop {
    SQ_GEN_STOP_MAX = 0, /* max_tokens generated */
    SQ_GEN_STOP_EOS,     /* EOS or BOS sampled (not emitted) */
    SQ_GEN_STOP_CONTEXT, /* the context is full */
    SQ_GEN_STOP_CALLER,  /* the callback returned nonzero */
} sq_gen_stop;

const char *sq_gen_stop_name(sq_gen_stop s);

typedef struct sq_gen_opts {
    int max_tokens;
    float temperature; /* 0: greedy */
    float top_p;       /* 1: off */
    uint64_t seed;
    int prefill_rows;  /* rows per prefill step (0: 64) */
    /* Assisted generation: a draft model with the target's tokenizer
     * (sq_gen_check_draft) proposes draft_tokens (1 .. SQ_GEN_MAX_DRAFT;
     * 0: 4) tokens, the target verifies them in one forward. Greedy: the
     * same tokens as the target alone, bit for bit; sampling: speculative
     * sampling (the target's distribution, other draws). NULL: none. */
    const struct sq_llama_model *draft;
    int draft_tokens;
} sq_gen_opts;

/* A verify pass is draft_tokens + 1 rows: at most SQ_F32_ROWS_MAX, so that
 * f32 linears compute each row alone (libquant/kernels/f32_rows.h). */
#define SQ_GEN_MAX_DRAFT 15

typedef struct sq_gen_stats {
    int prompt_tokens, generated;
    double ttft_s;   /* prefill start to the first token sampled */
    double decode_s; /* the first token sampled to the last one sampled */
    sq_gen_stop stop;
    /* Assisted generation (0 without a draft): target forwards after the
     * prefill (verify passes), draft tokens proposed and accepted. */
    int verify_passes;
    int64_t drafted, accepted;
} sq_gen_stats;

/* Called with each token and its text (decoded after the token before it). */
typedef int (*sq_gen_token_fn)(void *ctx, int32_t id, const char *piece, size_t len);

/* prompt: n_prompt >= 1 ids (BOS first, as sq_tokenizer_encode_all gives them). */
int sq_generate(const sq_llama_model *m, const int32_t *prompt, int n_prompt,
                const sq_gen_opts *o, sq_gen_token_fn cb, void *ctx, sq_gen_stats *stats,
                sq_err *err);

/* -1 with err unless draft can propose for target: the same vocabulary
 * (every id decodes to the same text), BOS and EOS. */
int sq_gen_check_draft(const sq_llama_model *target, const sq_llama_model *draft, sq_err *err);

#endif

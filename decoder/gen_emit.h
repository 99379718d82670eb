/* Inside generation (generate.c, speculative.c): what happens to each
 * token chosen, in one place for the plain and the assisted loop, so both
 * stop for the same reasons after the same tokens. */
#ifndef SQ_GEN_EMIT_H
#define SQ_GEN_EMIT_H

#include "generate.h"

typedef struct sq_gen_emit {
    const sq_llama_model *m;
    int max_tokens;
    sq_gen_token_fn cb;
    void *ctx;
    sq_gen_stats *stats;
    int32_t prev;           /* the token before (its text decides the next piece's) */
    double t0, t_first, t_last;
    bool chosen;            /* a token was chosen (t_first is set) */
} sq_gen_emit;

double sq_gen_now(void);

/* Token id was chosen: EOS / BOS end generation (not emitted); else its
 * piece goes to the callback. 1 when generation ends here (stats->stop
 * set), 0 to go on. */
int sq_gen_emit_token(sq_gen_emit *e, int32_t id);

/* The assisted loop (speculative.c), after sq_generate's checks; sm is the
 * target's sampler. */
int sq_gen_assisted(const sq_llama_model *m, const int32_t *prompt, int n_prompt,
                    const sq_gen_opts *o, sq_sampler *sm, sq_gen_emit *e, sq_err *err);

#endif

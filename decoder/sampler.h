/* Choosing the next token from logits: greedy at temperature 0 (the lowest
 * id among equal maxima), else softmax(logits / T) with an optional top-p
 * nucleus (the most probable tokens, ties by lower id, whose cumulative
 * probability first exceeds p) and one draw from the project's seeded
 * generator (base/seeded_rng.h): the same seed gives the same tokens on
 * every run and thread count. Probabilities are computed in double. */
#ifndef SQ_SAMPLER_H
#define SQ_SAMPLER_H

#include <stdint.h>

struct sq_prob_id;

typedef struct sq_sampler {
    int vocab;
    float temperature; /* 0: greedy */
    float top_p;       /* in (0, 1]; 1: no nucleus */
    uint64_t rng;      /* splitmix64 state */
    double *prob;      /* [vocab] scratch */
    struct sq_prob_id *order; /* [vocab] scratch */
} sq_sampler;

int sq_sampler_init(sq_sampler *s, int vocab, float temperature, float top_p, uint64_t seed);
void sq_sampler_free(sq_sampler *s);
int32_t sq_sample_argmax(const float *logits, int vocab);
int32_t sq_sample(sq_sampler *s, const float *logits);

/* For speculative sampling (speculative.h); temperature > 0.
 * prob[vocab] = the distribution sq_sample draws from: softmax(logits / T),
 * with top-p < 1 zero outside the nucleus and the nucleus renormalized. */
void sq_sampler_dist(sq_sampler *s, const float *logits, double *prob);
/* The next uniform double in [0, 1) of the seeded generator. */
double sq_sampler_uniform(sq_sampler *s);
/* One draw from prob[vocab] (nonnegative, not necessarily normalized), by
 * the cumulative sum in id order (id 0 when all of it is 0). */
int32_t sq_sampler_draw(sq_sampler *s, const double *prob);

#endif

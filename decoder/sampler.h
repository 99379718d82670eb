/* Choosing the next token from logits: greedy at temperature 0 (the lowest
 * id among equal maxima), else softmax(logits / T) with an optional top-p
 * nucleus (the most probable tokens, ties by lower id, whose cumulative
 * probability first exceeds p) and one draw from the project's seeded
 * generator (calib/seeded_rng.h): the same seed gives the same tokens on
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

#endif

/* The project's one seeded generator: corpus sampling (corpus_sample.c) and
 * the few-shot draw of train-head (heads/few_shot.c). Integer arithmetic
 * only, so a seed gives the same draws on every platform. */
#ifndef SQ_SEEDED_RNG_H
#define SQ_SEEDED_RNG_H

#include <stdint.h>

/* splitmix64 (Steele, Lea, Flood 2014): the next 64 random bits; full
 * period 2^64. */
uint64_t sq_splitmix64(uint64_t *state);
/* Uniform in [0, bound), bound > 0, without modulo bias (Lemire 2019). */
uint64_t sq_rand_below(uint64_t *state, uint64_t bound);

#endif

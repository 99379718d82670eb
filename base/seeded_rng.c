/* The seeded generator (seeded_rng.h). */
#include "seeded_rng.h"

uint64_t sq_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t sq_rand_below(uint64_t *state, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)sq_splitmix64(state) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            m = (unsigned __int128)sq_splitmix64(state) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

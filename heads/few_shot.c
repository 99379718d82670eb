#include "few_shot.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64 (Steele, Lea, Flood 2014), as calib/corpus_sample.c. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound) without modulo bias (Lemire 2019). */
static uint64_t below(uint64_t *state, uint64_t bound)
{
    unsigned __int128 m = (unsigned __int128)splitmix64(state) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            m = (unsigned __int128)splitmix64(state) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

int sq_few_shot_pick(const int *label, int64_t n, int classes, char *const *class_name,
                     int64_t per_class, uint64_t seed, unsigned char *use, sq_err *err)
{
    if (per_class < 1)
        return sq_err_set(err, "the number of examples per class must be at least 1");
    memset(use, 0, (size_t)n);
    int64_t *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
    if (!rows)
        return sq_err_set(err, "out of memory");
    uint64_t state = seed;
    for (int c = 0; c < classes; c++) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (label[i] == c)
                rows[k++] = i;
        if (k < per_class) {
            free(rows);
            return sq_err_set(err, "class '%s' has %lld example%s, fewer than the %lld asked "
                                   "per class",
                              class_name ? class_name[c] : "?", (long long)k, k == 1 ? "" : "s",
                              (long long)per_class);
        }
        for (int64_t i = k - 1; i >= 1; i--) {
            int64_t j = (int64_t)below(&state, (uint64_t)i + 1);
            int64_t t = rows[i];
            rows[i] = rows[j];
            rows[j] = t;
        }
        for (int64_t i = 0; i < per_class; i++)
            use[rows[i]] = 1;
    }
    free(rows);
    return 0;
}

#include "few_shot.h"

#include <stdlib.h>
#include <string.h>

#include "seeded_rng.h"

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
            int64_t j = (int64_t)sq_rand_below(&state, (uint64_t)i + 1);
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

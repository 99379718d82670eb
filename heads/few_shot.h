/* Few-shot sampling of a labelled set (squint train-head --per-class N
 * --seed S, SetFit's 8/16/64-shot setups). The rule, deterministic and
 * integer-only: a splitmix64 generator seeded with S; for each class in
 * class order, its rows in file order are shuffled by Fisher-Yates (for
 * i = count - 1 down to 1, swap row i with row j, j uniform in [0, i] by
 * Lemire's unbiased bounded draw) and the first N are taken. The picked rows
 * are used in file order. */
#ifndef SQ_FEW_SHOT_H
#define SQ_FEW_SHOT_H

#include <stdint.h>

#include "sq_error.h"

/* label[n] in [0, classes). Sets use[i] = 1 for the picked rows, 0 else.
 * Fails (naming the class, given class_name) when a class has fewer than
 * per_class rows. */
int sq_few_shot_pick(const int *label, int64_t n, int classes, char *const *class_name,
                     int64_t per_class, uint64_t seed, unsigned char *use, sq_err *err);

#endif

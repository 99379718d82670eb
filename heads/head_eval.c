/* A head's accuracy on labelled embeddings (squint embed-run --task sst2):
 * the label of the most probable class against the gold label's text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "head.h"
#include "softmax.h"

int sq_head_accuracy(const sq_head *h, const char *head_name, const float *emb, int64_t n,
                     const int *gold, double *acc, sq_err *err)
{
    /* gold label g is the head's class whose label reads "g" */
    int cls_of[2] = {-1, -1};
    for (int g = 0; g < 2; g++) {
        char t[8];
        snprintf(t, sizeof t, "%d", g);
        for (int c = 0; c < h->classes; c++)
            if (strcmp(h->labels[c], t) == 0)
                cls_of[g] = c;
    }
    for (int64_t i = 0; i < n; i++)
        if (gold[i] < 0 || gold[i] > 1 || cls_of[gold[i]] < 0)
            return sq_err_set(err, "%s: the head has no label '%d' (SST-2's labels are '0' and "
                                   "'1'; train the head on an SST-2 layout file)",
                              head_name, gold[i]);
    double *p = malloc((size_t)(n > 0 ? n : 1) * (size_t)h->classes * sizeof *p);
    if (!p)
        return sq_err_set(err, "out of memory");
    sq_head_apply(h, emb, n, p);
    int64_t right = 0;
    for (int64_t i = 0; i < n; i++)
        right += sq_argmax(p + (size_t)i * h->classes, h->classes) == cls_of[gold[i]];
    free(p);
    *acc = n > 0 ? (double)right / (double)n : 0.0 / 0.0;
    return 0;
}

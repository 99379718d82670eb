/* The head of a model: the one path classify, serve and embed-run take to
 * find a classification head (a head file, else the .sqm's own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "head.h"
#include "sqm_class_head.h"
#include "sqm_model.h"

/* A stored head copied into h. */
static int from_sqm(const sq_sqm_class_head *ch, sq_head *h, sq_err *err)
{
    if (sq_head_alloc(h, ch->classes, ch->dim, err) != 0)
        return -1;
    h->normalized = ch->normalized;
    memcpy(h->W, ch->W, (size_t)ch->classes * (size_t)ch->dim * sizeof *h->W);
    memcpy(h->b, ch->b, (size_t)ch->classes * sizeof *h->b);
    for (int c = 0; c < ch->classes; c++)
        if (!(h->labels[c] = strdup(ch->labels[c]))) {
            sq_head_free(h);
            return sq_err_set(err, "out of memory");
        }
    return 0;
}

static int stored_head(const char *model_path, const sq_container *sqm, sq_head *h, sq_err *err)
{
    sq_container own;
    const sq_container *c = sqm;
    if (!c) {
        if (!sq_sqm_sniff(model_path))
            return sq_err_set(err, "%s is not a .sqm, so it carries no classification head: give "
                                   "--head HEAD (from `squint train-head`)",
                              model_path);
        if (sq_container_open(model_path, SQ_KIND_SQM, &own, err) != 0)
            return -1;
        if (sq_container_verify(&own, err) != 0) {
            sq_container_close(&own);
            return -1;
        }
        c = &own;
    }
    sq_sqm_class_head ch;
    int rc = sq_sqm_class_head_read(c, &ch, err);
    if (rc == 0)
        sq_err_set(err, "%s has no classification head stored: give --head HEAD (from `squint "
                        "train-head`), or store one with `squint quantize ... --head HEAD`",
                   model_path);
    else if (rc > 0)
        rc = from_sqm(&ch, h, err) == 0 ? 1 : -1;
    sq_sqm_class_head_free(&ch);
    if (c == &own)
        sq_container_close(&own);
    return rc > 0 ? 0 : -1;
}

bool sq_head_stored_in(const char *model_path)
{
    sq_container c;
    sq_err err;
    if (!sq_sqm_sniff(model_path) || sq_container_open(model_path, SQ_KIND_SQM, &c, &err) != 0)
        return false;
    bool has = sq_sqm_has_class_head(&c);
    sq_container_close(&c);
    return has;
}

int sq_head_for_model(const char *model_path, const sq_container *sqm, const char *head_path,
                      int dim, sq_head *h, sq_err *err)
{
    memset(h, 0, sizeof *h);
    if ((head_path ? sq_head_read(head_path, h, err) : stored_head(model_path, sqm, h, err)) != 0)
        return -1;
    if (dim > 0 && h->dim != dim) {
        sq_err_set(err, "%s: the head is for %d-dimensional embeddings, but %s gives %d (a head "
                        "works only with the model it was trained on)",
                   head_path ? head_path : model_path, h->dim, model_path, dim);
        sq_head_free(h);
        return -1;
    }
    return 0;
}

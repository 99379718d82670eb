#include "eval_input.h"

#include <stdlib.h>
#include <string.h>

void sq_eval_input_free(sq_eval_input *in)
{
    free(in->text);
    free(in->len);
    sq_texts_free(&in->plain);
    sq_stsb_free(&in->stsb);
    sq_sst2_free(&in->sst2);
    sq_beir_free(&in->beir);
}

static int flatten(sq_eval_input *in, int64_t n, char **a, int64_t na, char **b)
{
    in->n = n;
    in->text = malloc((size_t)(n ? n : 1) * sizeof *in->text);
    in->len = malloc((size_t)(n ? n : 1) * sizeof *in->len);
    if (!in->text || !in->len)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        in->text[i] = i < na ? a[i] : b[i - na];
        in->len[i] = strlen(in->text[i]);
    }
    return 0;
}

int sq_eval_input_load(const char *path, const char *field, sq_eval_task task, int64_t limit,
                       sq_eval_input *in, sq_err *err)
{
    memset(in, 0, sizeof *in);
    in->task = task;
    if (in->task == SQ_TASK_AUTO && sq_eval_task_detect(path, &in->task, err) != 0)
        return -1;
    int rc = 0;
    switch (in->task) {
    case SQ_TASK_STSB:
        if (sq_stsb_read(path, limit, &in->stsb, err) != 0)
            return -1;
        rc = flatten(in, 2 * in->stsb.n, in->stsb.s1, in->stsb.n, in->stsb.s2);
        break;
    case SQ_TASK_SST2:
        if (sq_sst2_read(path, limit, &in->sst2, err) != 0)
            return -1;
        rc = flatten(in, in->sst2.n, in->sst2.text, in->sst2.n, NULL);
        break;
    case SQ_TASK_SCIFACT:
        if (sq_beir_read(path, "test", limit, &in->beir, err) != 0)
            return -1;
        rc = flatten(in, in->beir.n_queries + in->beir.n_docs, in->beir.query_text,
                     in->beir.n_queries, in->beir.doc_text);
        break;
    default:
        if (sq_texts_read(path, field, &in->plain, err) != 0)
            return -1;
        if (in->plain.n == 0)
            return sq_err_set(err, "%s: no texts", path);
        rc = flatten(in, limit > 0 && limit < in->plain.n ? limit : in->plain.n,
                     in->plain.text, in->plain.n, NULL);
        break;
    }
    return rc == 0 ? 0 : sq_err_set(err, "out of memory");
}

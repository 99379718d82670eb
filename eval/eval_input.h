/* The inputs of an evaluation (squint embed-run): a labelled set (STS-B
 * pairs, SST-2 sentences, a BEIR retrieval set) or plain texts, flattened
 * into one list of texts in a fixed order, with the task's labels kept. */
#ifndef SQ_EVAL_INPUT_H
#define SQ_EVAL_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "eval_data.h"
#include "sq_error.h"
#include "text_input.h"

typedef struct sq_eval_input {
    sq_eval_task task; /* never SQ_TASK_AUTO once loaded */
    int64_t n;
    const char **text; /* [n], pointing into the sets below */
    size_t *len;
    sq_texts plain;
    sq_stsb stsb; /* texts: s1[0..n), then s2[0..n) */
    sq_sst2 sst2;
    sq_beir beir; /* texts: queries, then documents */
} sq_eval_input;

/* Read path as task (SQ_TASK_AUTO: detected from the file). field: the JSONL
 * field of plain texts (NULL: as sq_texts_read). limit > 0 keeps the first
 * limit items (pairs, sentences, queries / texts). */
int sq_eval_input_load(const char *path, const char *field, sq_eval_task task, int64_t limit,
                       sq_eval_input *in, sq_err *err);
void sq_eval_input_free(sq_eval_input *in);

#endif

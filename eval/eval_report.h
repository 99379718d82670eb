/* The JSON report of an evaluation (embed-run --report): everything a run
 * measured, the gates and the timings, in a fixed key order. */
#ifndef SQ_EVAL_REPORT_H
#define SQ_EVAL_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "eval_gates.h"
#include "eval_rerank.h"

typedef struct sq_eval_report_info {
    const char *input; /* the input path as given */
    int64_t limit;
    const char *isa;   /* the GEMM instruction set used */
    int threads;
    double input_s, total_s;
} sq_eval_report_info;

/* A new reference (json_decref it), or NULL when out of memory. */
json_t *sq_eval_report_json(const sq_eval_report_info *info, const sq_eval_input *in,
                            const sq_eval_model *m, const sq_eval_model *ref,
                            const sq_eval_metrics *mt, const sq_eval_gate *gr, int ng, bool pass);
/* The report of a pair scoring run (eval_rerank.h), a new reference. */
json_t *sq_eval_rerank_report_json(const sq_eval_report_info *info, const sq_eval_input *in,
                                   const sq_eval_rerank_opts *o, const sq_eval_rerank *r,
                                   const sq_eval_gate *gr, int ng, bool pass);
/* Write r to path atomically (indented, key order kept); r NULL (a failed
 * build) is an error. */
int sq_eval_report_write(const char *path, json_t *r, sq_err *err);
/* "embeddings" (a .npy reference), "sqm" or "checkpoint". */
const char *sq_eval_model_kind(const sq_eval_model *m);

#endif

/* The accuracy gates of an evaluation: each gate the recipe (or --gate)
 * sets, measured on a run and compared with its threshold. The gate table
 * itself (names, min or max) is quantize/recipe.h's. */
#ifndef SQ_EVAL_GATES_H
#define SQ_EVAL_GATES_H

#include <stdbool.h>

#include "eval_input.h"
#include "eval_run.h"
#include "recipe.h"

typedef struct sq_eval_gate {
    sq_gate_id id;
    double threshold, measured;
    bool measurable, pass;
    const char *why; /* when not measurable */
} sq_eval_gate;

/* The measured value of gate id on this run; false with *why when the input
 * cannot give it (a gate that cannot be measured fails). */
bool sq_eval_gate_value(sq_gate_id id, const sq_eval_input *in, const sq_eval_metrics *mt,
                        double *v, const char **why);
/* Evaluate every gate g sets, in table order, into out[SQ_GATE_COUNT];
 * returns how many. */
int sq_eval_gates(const sq_recipe_gates *g, const sq_eval_input *in, const sq_eval_metrics *mt,
                  sq_eval_gate *out);
/* All n gates pass (true when n == 0). */
bool sq_eval_gates_pass(const sq_eval_gate *gr, int n);

#endif

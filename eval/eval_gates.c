#include "eval_gates.h"

#include <math.h>
#include <string.h>

/* The measured value of a gate on this run; false with *why when the input
 * cannot give it. */
bool sq_eval_gate_value(sq_gate_id id, const sq_eval_input *in, const sq_eval_metrics *mt, double *v,
                       const char **why)
{
    *why = NULL;
    if (mt->pairs && id != SQ_GATE_SCORE_SPEARMAN && id != SQ_GATE_STSB_SPEARMAN_DROP &&
        id != SQ_GATE_NDCG10_DROP) {
        *why = "not defined when scoring pairs (a cross-encoder or --retriever run)";
        return false;
    }
    switch (id) {
    case SQ_GATE_COS_MEAN: *v = mt->cos.mean; return true;
    case SQ_GATE_COS_MIN: *v = mt->cos.min; return true;
    case SQ_GATE_CENTRED_COS_MEAN:
        *v = mt->cos.centred_mean;
        *why = isnan(*v) ? "needs at least 2 texts" : NULL;
        return !isnan(*v);
    case SQ_GATE_TOPK_OVERLAP:
        *v = mt->topk;
        *why = isnan(*v) ? "needs at least 2 texts" : NULL;
        return !isnan(*v);
    case SQ_GATE_STSB_SPEARMAN_DROP:
        if (in->task != SQ_TASK_STSB) {
            *why = "needs an STS-B input (--task stsb)";
            return false;
        }
        *v = mt->task[0].reference - mt->task[0].model;
        *why = isnan(*v) ? "Spearman undefined (constant scores or similarities)" : NULL;
        return !isnan(*v);
    case SQ_GATE_NDCG10_DROP:
        if (in->task != SQ_TASK_SCIFACT) {
            *why = "needs a BEIR retrieval input (--task scifact)";
            return false;
        }
        *v = mt->task[0].reference - mt->task[0].model;
        return !isnan(*v);
    case SQ_GATE_SCORE_SPEARMAN:
        if (!mt->pairs) {
            *why = "needs pair scores (a cross-encoder, or --retriever reranking)";
            return false;
        }
        *v = mt->score_spearman;
        *why = isnan(*v) ? "Spearman undefined (constant scores)" : NULL;
        return !isnan(*v);
    case SQ_GATE_MAX_ACCURACY_DROP:
        /* The head's accuracy, put into the metrics by embed-run (heads/). */
        for (int i = 0; i < mt->n_task; i++)
            if (strcmp(mt->task[i].name, "head_accuracy") == 0) {
                *v = 100.0 * (mt->task[i].reference - mt->task[i].model);
                return !isnan(*v);
            }
        *why = "needs a classification head (--head, or one stored in MODEL) and an SST-2 input "
               "(--task sst2)";
        return false;
    default: *why = "unknown gate"; return false;
    }
}

int sq_eval_gates(const sq_recipe_gates *g, const sq_eval_input *in, const sq_eval_metrics *mt,
                      sq_eval_gate *out)
{
    int n = 0;
    for (int i = 0; i < SQ_GATE_COUNT; i++) {
        if (!g->set[i])
            continue;
        sq_eval_gate *r = &out[n++];
        r->id = (sq_gate_id)i;
        r->threshold = g->threshold[i];
        r->measured = NAN;
        r->measurable = sq_eval_gate_value(r->id, in, mt, &r->measured, &r->why);
        r->pass = r->measurable && sq_gate_pass(r->id, r->threshold, r->measured);
    }
    return n;
}

bool sq_eval_gates_pass(const sq_eval_gate *gr, int n)
{
    bool pass = true;
    for (int i = 0; i < n; i++)
        pass &= gr[i].pass;
    return pass;
}

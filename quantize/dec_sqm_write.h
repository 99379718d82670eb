/* A causal LM's .sqm writer (formats/SQM.md section 10): the fp32 model, the
 * quantizer's per-linear plans and the provenance -> one verified file. */
#ifndef SQ_DEC_SQM_WRITE_H
#define SQ_DEC_SQM_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "calib_stats.h"
#include "llama_model.h"
#include "quant_plan.h"
#include "quantizer.h"

typedef struct sq_dec_sqm_src {
    const sq_llama_model *m;          /* the fp32 model */
    const sq_plan_linear *plans;      /* [n_layers * SQ_DEC_LIN_KINDS] */
    const sq_plan_linear *cls_plan;   /* the packed classifier (SQM.md 10.6); NULL: fp32 */
    const sq_quantize_report *rep;
    const sq_calib_stats *st;
    uint64_t st_hash, model_digest;
    const char *model_arg;
    const sq_recipe *recipe;
    const sq_scale_params *scale;
    bool dynamic_acts;
} sq_dec_sqm_src;

int sq_dec_sqm_write(const sq_dec_sqm_src *s, int zstd_level, const char *path, sq_err *err);

#endif

/* A causal LM's .sqm (formats/SQM.md section 10): the fp32 model, the
 * quantizer's per-linear plans and the provenance -> one verified file,
 * through the one writer (sqm_write.h). */
#ifndef SQ_DEC_SQM_WRITE_H
#define SQ_DEC_SQM_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "llama_model.h"
#include "quantizer.h"

/* m: the fp32 model; res->plans holds a packed classifier's plan after the
 * layers' when res->rep has one more linear (SQM.md 10.6); dynamic_acts:
 * act_scale 0 in the file (SQM.md 10.4). */
int sq_dec_sqm_write(const sq_llama_model *m, bool dynamic_acts, const sq_quant_result *res,
                     int zstd_level, const char *path, sq_err *err);

#endif

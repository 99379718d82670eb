/* Quantization of a causal LM (llama2.c checkpoint + decoder .sqc + recipe)
 * into a .sqm (formats/SQM.md section 10), with the encoder's per-linear
 * machinery (quantize/quant_plan.h): outlier channels, SmoothQuant factors
 * (alpha fixed or searched on replayed calibration rows), the activation
 * clip from the (smoothed) histogram, int8 per-channel or int4-g128 RTN
 * weights in panels. Every decoder linear keeps 1/s as a runtime multiplier
 * (the quantize step applies it for free), so nothing is folded; the
 * embeddings and RMSNorm weights stay fp32, the classifier too unless the
 * recipe's classifier.type is int8 (per-channel weights, dynamic per-token
 * activations whatever dynamic_acts says, no smoothing; SQM.md 10.6).
 * dynamic_acts: no static range; act_scale 0 in the file, each row of the
 * input quantized with its own int8 step at run time (per token). */
#ifndef SQ_DEC_QUANTIZE_H
#define SQ_DEC_QUANTIZE_H

#include "llama_model.h"
#include "quantizer.h"

int sq_dec_quantize(sq_llama_model *m, const char *model_arg, const sq_calib_stats *st,
                    const char *st_path, const sq_quantize_opts *o, bool dynamic_acts,
                    const char *out_path, sq_quantize_report *rep, sq_err *err);

#endif

/* An encoder's .sqm (formats/SQM.md sections 2-9): the fp32 model, the
 * quantizer's per-linear plans and the provenance -> one verified file,
 * through the one writer (sqm_write.h). The decoder's is dec_sqm_write.h. */
#ifndef SQ_ENCODER_SQM_WRITE_H
#define SQ_ENCODER_SQM_WRITE_H

#include "embed_model.h"
#include "quantizer.h"
#include "sqm_class_head.h"
#include "strbuf.h"

/* m: the fp32 model with the SmoothQuant folds applied; ch: a
 * classification head to store (NULL: none). */
int sq_enc_sqm_write(const sq_embed_model *m, const sq_sqm_class_head *ch,
                     const sq_quant_result *res, int zstd_level, const char *path, sq_err *err);

/* The metadata `tokenizer:` section of spec (SQM.md 2.4), appended to sb. */
void sq_enc_sqm_tokenizer_yaml(sq_strbuf *sb, const sq_wordpiece_spec *t);

#endif

/* A causal LM as a .sqm (formats/SQM.md section 10): the loader (every
 * weight a view into the mapped file, the llama2.c tokenizer rebuilt from
 * tokenizer.vocab and tokenizer.scores). The writer is quantize/dec_sqm_write.h. */
#ifndef SQ_DEC_SQM_H
#define SQ_DEC_SQM_H

#include <stdbool.h>
#include <stdint.h>

#include "llama_model.h"

/* True when path is a squint model whose metadata says architecture: llama. */
bool sq_dec_sqm_is_decoder(const char *path);

/* Open a decoder .sqm into m (m->sqm keeps the mapping). Checksums, the
 * schema and the values are proven; every failure names the file. */
int sq_dec_sqm_open(const char *path, sq_llama_model *m, sq_err *err);

#endif

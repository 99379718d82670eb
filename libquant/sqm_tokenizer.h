/* The tokenizer a .sqm carries: its metadata `tokenizer:` section plus the
 * `tokenizer.vocab` tensor (token strings in id order, each NUL-terminated;
 * formats/SQM.md) back into a WordPiece tokenizer, so a .sqm alone is enough
 * to turn text into ids. */
#ifndef SQ_SQM_TOKENIZER_H
#define SQ_SQM_TOKENIZER_H

#include "container.h"
#include "hf_tokenizer.h"
#include "tokenizer.h"

/* Fill spec from an open .sqm (validating every field and the vocabulary
 * tensor: count, NUL terminators, no empty tokens). */
int sq_sqm_tokenizer_spec(const sq_container *c, sq_wordpiece_spec *spec, sq_err *err);
/* sq_sqm_tokenizer_spec + sq_tokenizer_new. */
sq_tokenizer *sq_sqm_tokenizer_load(const sq_container *c, sq_err *err);

#endif

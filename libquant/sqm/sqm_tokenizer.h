/* The tokenizer a .sqm carries: its metadata `tokenizer:` section plus the
 * `tokenizer.vocab` tensor (token strings in id order, each NUL-terminated;
 * formats/SQM.md) and, per kind, tokenizer.scores / tokenizer.merges, back
 * into a tokenizer (tokenizer.h), so a .sqm alone is enough to turn text
 * into ids. */
#ifndef SQ_SQM_TOKENIZER_H
#define SQ_SQM_TOKENIZER_H

#include "container.h"
#include "hf_tokenizer.h"
#include "sqm_schema.h"
#include "tokenizer.h"

/* Fill spec from an open .sqm (validating every field and the vocabulary
 * tensor: count, NUL terminators, no empty tokens). */
int sq_sqm_tokenizer_spec(const sq_container *c, sq_wordpiece_spec *spec, sq_err *err);
/* sq_sqm_tokenizer_spec + sq_tokenizer_new. */
sq_tokenizer *sq_sqm_tokenizer_load(const sq_container *c, sq_err *err);

/* A decoder's tokenizer (SQM.md 10.5: llama2c-bpe, hf-bpe or hf-bytelevel)
 * from an open .sqm whose metadata sq_sqm_read_meta proved into ctx and
 * whose tensors sq_sqm_check_schema checked; vocab is config.vocab_size
 * (hf-bytelevel: tokenizer.vocab_size, at most that). Every failure names
 * the file and the tensor. */
sq_tokenizer *sq_sqm_tokenizer_load_bpe(const sq_container *c, const sq_sqm_schema_ctx *ctx,
                                        int vocab, sq_err *err);

#endif

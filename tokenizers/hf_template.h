/* What a Hugging Face tokenizer.json's post-processor adds around a single
 * text, for models whose tokenizer reader leaves the post-processor to its
 * caller (the byte-level BPE of a causal LM). A causal embedding model such
 * as Qwen3-Embedding appends its end-of-text token this way (a
 * TemplateProcessing "$A <|endoftext|>"), and pools that last token. */
#ifndef SQ_HF_TEMPLATE_H
#define SQ_HF_TEMPLATE_H

#include <jansson.h>
#include <stdint.h>

#include "sq_error.h"

#define SQ_TEMPLATE_MAX 4

typedef struct sq_hf_single_template {
    int n_prefix, n_suffix;
    int32_t prefix[SQ_TEMPLATE_MAX]; /* special-token ids before the text */
    int32_t suffix[SQ_TEMPLATE_MAX]; /* and after it */
} sq_hf_single_template;

/* The id a TemplateProcessing SpecialToken piece (post_processor.which[k])
 * names through the post-processor's special_tokens: exactly one id, in
 * [0, vocab); its type_id (0 when absent) into *type_id. -1 with err naming
 * path and the piece. The one reading of a template's special tokens. */
int32_t sq_hf_template_special(const json_t *post, const json_t *piece, int32_t vocab,
                               int32_t *type_id, const char *path, const char *which, size_t k,
                               sq_err *err);

/* The post_processor of the tokenizer.json at path: null or ByteLevel add
 * nothing; TemplateProcessing's `single` is SpecialTokens, one Sequence A,
 * SpecialTokens, each SpecialToken resolved through its special_tokens
 * entry (exactly one id, in [0, vocab)); a Sequence of processors combines
 * its ByteLevel and at most one TemplateProcessing. Anything else (Bert /
 * RobertaProcessing, a Sequence B in `single`, more than SQ_TEMPLATE_MAX
 * tokens on a side) is refused naming the file and the part. */
int sq_hf_single_template_load(const char *path, int32_t vocab, sq_hf_single_template *t,
                               sq_err *err);

#endif

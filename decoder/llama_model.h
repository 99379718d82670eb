/* A causal LM ready to run: the decoder and its tokenizer, opened from a
 * llama2.c checkpoint (.bin) and a llama2.c tokenizer file. Without an
 * explicit tokenizer the files tokenizer.bin then tok512.bin next to the
 * checkpoint are tried, and the first that exists with the model's
 * vocabulary size is taken. */
#ifndef SQ_LLAMA_MODEL_H
#define SQ_LLAMA_MODEL_H

#include "decoder.h"
#include "tokenizer_bpe.h"

typedef struct sq_llama_model {
    sq_decoder dec;
    sq_bpe *tok;
    char *tokenizer_path; /* the tokenizer file used (malloc'd); a .sqm's own path */
    struct sq_container *sqm; /* a packed model's mapping (dec_sqm.h), NULL for a checkpoint */
} sq_llama_model;

/* True when path names a llama2.c checkpoint: a regular file that is not a
 * squint container (the commands' dispatch between encoders and decoders;
 * the reader itself proves the rest). */
bool sq_llama_is_checkpoint(const char *path);

/* A llama2.c checkpoint, or a decoder .sqm (dec_sqm.h: tokenizer must be
 * NULL, the file holds it). tokenizer NULL: look next to the checkpoint. */
int sq_llama_model_open(const char *path, const char *tokenizer, sq_llama_model *m, sq_err *err);
void sq_llama_model_close(sq_llama_model *m);

#endif

/* Token-level perplexity of a causal LM over documents.
 *
 * Splitting (sq_ppl_split): SQ_DOCS_BLANK cuts the text at blank lines and
 * at the TinyStories separator <|endoftext|>; SQ_DOCS_LINES makes every line
 * a document (one story per line, as tinystories-sample is laid out). Each
 * document is trimmed of surrounding whitespace and skipped when empty.
 *
 * Scoring (sq_ppl_doc): the document is encoded as the model was trained,
 * BOS + the dummy-prefixed text, and every token after BOS is predicted from
 * the ones before it. A document longer than ctx tokens is scored in
 * consecutive non-overlapping windows of ctx inputs, each from an empty
 * cache at position 0 (its first token is context only). perplexity =
 * exp(sum of -log p(token) / tokens scored), the log-softmax in double. */
#ifndef SQ_PERPLEXITY_H
#define SQ_PERPLEXITY_H

#include <stddef.h>
#include <stdint.h>

#include "llama_model.h"

typedef enum sq_ppl_docs { SQ_DOCS_BLANK = 0, SQ_DOCS_LINES } sq_ppl_docs;

/* Call fn on each document (start, length) of text, in order; stops at the
 * first nonzero return and returns it. */
int sq_ppl_split(const char *text, size_t len, sq_ppl_docs mode,
                 int (*fn)(void *ctx, const char *doc, size_t n), void *ctx);

typedef struct sq_ppl_acc {
    int64_t docs, tokens, windows;
    double nll; /* sum of -log p over the scored tokens */
} sq_ppl_acc;

/* Score one document's ids (ids[0] BOS) into acc. st must hold ctx
 * positions; logits holds st->max_rows rows of the vocabulary. */
int sq_ppl_doc(const sq_decoder *d, sq_decoder_state *st, const int32_t *ids, int64_t n, int ctx,
               float *logits, sq_ppl_acc *acc, sq_err *err);

#endif

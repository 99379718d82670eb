/* A second, deliberately naive encoder for the llama2.c tokenizer: run.c's
 * quadratic loop (scan every adjacent pair, merge the best, repeat) over the
 * same character grouping, used to check the heap-based sq_bpe_encode in the
 * unit tests and the fuzzer. Test code only. */
#ifndef SQ_BPE_NAIVE_H
#define SQ_BPE_NAIVE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer_bpe.h"

/* ids (cap >= len + 3) get the encoding of text with BOS; returns the count. */
int64_t bpe_naive_encode(const sq_bpe *t, const char *text, size_t len, int32_t *ids);

#endif

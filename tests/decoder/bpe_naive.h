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

/* The same for the HF kind (tokenizer_bpe.h 2.): its normalization, then
 * the tokenizers library's loop spelled out: scan every adjacent pair, look
 * its rank up by a linear search of the merges, merge the lowest (leftmost
 * on a tie), repeat. ids: cap >= 3 * len + 4 (with BOS when the tokenizer
 * has one). */
int64_t bpe_naive_encode_hf(const sq_bpe *t, const char *text, size_t len, int32_t *ids);

#endif

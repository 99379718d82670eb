/* The llama2.c tokenizer (tokenizer.bin, tok512.bin): the vocabulary of a
 * SentencePiece BPE model as llama2.c's tokenizer.py exports it,
 *   int32 max_token_length, then per token: float32 score, int32 len, bytes
 * (little-endian; U+2581 already turned into ' '; the file ends after the
 * last token, so the vocabulary size is what the file holds), and the
 * encoding llama2.c's run.c applies to it:
 *   - BOS (id 1) first when asked; a non-empty text gets the dummy-prefix
 *     space in front;
 *   - the text is cut into UTF-8 characters (a byte and up to three
 *     continuation bytes after it, validated by nothing, as run.c does); a
 *     character in the vocabulary is its token, else each of its bytes is
 *     its byte-fallback token <0xXX> (id 0, <unk>, if the vocabulary has no
 *     such token), and byte tokens never merge;
 *   - then, repeatedly, the adjacent pair whose concatenation is a token with
 *     the highest score (leftmost on a tie; scores <= -1e10 never merge) is
 *     merged, until no pair merges. Done with a heap, O(n log n), with the
 *     same result as run.c's quadratic scan.
 * Decoding a token: BOS and EOS give nothing, <0xXX> gives the byte, and the
 * leading space of a piece right after BOS is dropped.
 * Hostile input: a bad max_token_length, a length out of range, a token with
 * a NUL byte, a non-finite score, a truncated record or fewer than 3 tokens
 * are refused with a message naming the file. Immutable after loading: any
 * number of threads may use one tokenizer. */
#ifndef SQ_TOKENIZER_BPE_H
#define SQ_TOKENIZER_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

#define SQ_BPE_UNK 0
#define SQ_BPE_BOS 1
#define SQ_BPE_EOS 2
#define SQ_BPE_MAX_FILE (256u << 20)
#define SQ_BPE_MAX_TOKEN_LEN 4096

typedef struct sq_bpe sq_bpe;

/* Read a tokenizer file (a regular file: a FIFO is refused). */
sq_bpe *sq_bpe_load(const char *path, sq_err *err);
/* The same from bytes in memory; name is used in messages. */
sq_bpe *sq_bpe_from_memory(const uint8_t *data, size_t size, const char *name, sq_err *err);
void sq_bpe_free(sq_bpe *t);

int32_t sq_bpe_vocab_size(const sq_bpe *t);
/* The raw piece of id (NUL-terminated, *len bytes), NULL when out of range. */
const char *sq_bpe_token(const sq_bpe *t, int32_t id, size_t *len);
float sq_bpe_score(const sq_bpe *t, int32_t id);
/* The id of an exact piece, -1 when absent (the lowest id on duplicates). */
int32_t sq_bpe_lookup(const sq_bpe *t, const char *s, size_t len);

/* Encode len bytes of text; *ids is malloc'd (free it). Returns the count,
 * or -1 on allocation failure (or a text over 2^30 bytes). */
int64_t sq_bpe_encode(const sq_bpe *t, const char *text, size_t len, bool bos, bool eos,
                      int32_t **ids);

/* The bytes token id decodes to after token prev (-1: none); *len gets their
 * count (0 for BOS / EOS / an id out of range). The pointer stays valid while
 * t lives. */
const char *sq_bpe_decode_piece(const sq_bpe *t, int32_t prev, int32_t id, size_t *len);

/* Decode n ids (prev: the token before ids[0], -1 for none) into a
 * malloc'd NUL-terminated string (*len bytes). NULL on allocation failure. */
char *sq_bpe_decode(const sq_bpe *t, int32_t prev, const int32_t *ids, int64_t n, size_t *len);

#endif

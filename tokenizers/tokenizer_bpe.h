/* The byte-fallback BPE tokenizers of Llama models, two kinds behind one
 * interface (generate, perplexity and calibrate use either unchanged):
 *
 * 1. The llama2.c tokenizer (tokenizer.bin, tok512.bin): the vocabulary of a
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
 * are refused with a message naming the file.
 *
 * 2. A Hugging Face tokenizer.json of model.type BPE (tokenizer_hf_json.c
 *    reads it; sq_bpe_from_hf builds it): pieces by id (U+2581 "▁" kept as
 *    it is), merges ranked by their order, and the SentencePiece-style
 *    normalization: every ' ' becomes "▁" and, with a dummy prefix, "▁"
 *    goes in front of a non-empty text. The text is cut into UTF-8
 *    characters as above; a character in the vocabulary is its piece, else
 *    (byte_fallback) each byte its <0xXX> piece, or <unk> when one of them is
 *    missing (consecutive <unk>s fused into one with fuse_unk). Then the
 *    adjacent pair of lowest merge rank is merged (leftmost on a tie), until
 *    no adjacent pair is a merge: the tokenizers library's BPE, with a heap
 *    (O(n log n)). With split (Metaspace split: true) no merge crosses the
 *    start of a "▁"-word. Special tokens written in the text are plain text
 *    (as SentencePiece and llama.cpp read it; the Python tokenizer would
 *    match "<s>" in raw text). Decoding: special tokens give nothing, <0xXX>
 *    its byte, a piece its bytes with "▁" as ' ', and the leading space of
 *    the piece right after BOS is dropped (the Strip / Metaspace decoder).
 *
 * Immutable after loading: any number of threads may use one tokenizer. */
#ifndef SQ_TOKENIZER_BPE_H
#define SQ_TOKENIZER_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

/* llama2.c's special ids (the HF kind takes them from the model's config). */
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

/* The HF kind: the vocabulary, the merges and the normalization. */
typedef struct sq_bpe_hf {
    const char *const *pieces; /* [n_pieces], UTF-8 without NUL bytes, distinct */
    int32_t n_pieces;
    const int32_t *merges;     /* [n_merges][2] ids (left, right) in rank order; the
                                  concatenation of each pair must be a piece */
    int32_t n_merges;
    bool add_prefix;           /* "▁" in front of a non-empty text */
    bool split;                /* no merge across the start of a "▁"-word */
    bool byte_fallback;
    bool fuse_unk;
    int32_t unk, bos, eos;     /* -1: none (unk: the byte-fallback failure gives it) */
    const int32_t *special;    /* ids that decode to nothing (BOS, EOS and the like) */
    int32_t n_special;
} sq_bpe_hf;

#define SQ_BPE_MAX_MERGES (1 << 24)

/* Build (and check: ids in range, merges that make pieces, no duplicate
 * merge) the HF kind; name is used in messages. */
sq_bpe *sq_bpe_from_hf(const sq_bpe_hf *spec, const char *name, sq_err *err);
/* A tokenizer.json (tokenizer_hf_json.c). bos / eos: the model's ids (-1:
 * none). */
sq_bpe *sq_bpe_load_hf_json(const char *path, int32_t bos, int32_t eos, sq_err *err);
/* The same from a buffer (no NUL needed); name is used in messages. */
sq_bpe *sq_bpe_parse_hf_json(const char *buf, size_t len, const char *name, int32_t bos,
                             int32_t eos, sq_err *err);
/* Row r of the HF kind's merges (rank r): the pair's ids. */
void sq_bpe_merge_pair(const sq_bpe *t, int32_t r, int32_t *a, int32_t *b);

/* true: the HF kind. Its settings (pieces and special ids NULL: use
 * sq_bpe_token; merges point into t). */
bool sq_bpe_is_hf(const sq_bpe *t);
void sq_bpe_hf_settings(const sq_bpe *t, sq_bpe_hf *out);
/* 1 when id decodes to nothing (special), else 0. */
bool sq_bpe_is_special(const sq_bpe *t, int32_t id);
int32_t sq_bpe_bos(const sq_bpe *t);
int32_t sq_bpe_eos(const sq_bpe *t);

int32_t sq_bpe_vocab_size(const sq_bpe *t);
/* The raw piece of id (NUL-terminated, *len bytes), NULL when out of range. */
const char *sq_bpe_token(const sq_bpe *t, int32_t id, size_t *len);
float sq_bpe_score(const sq_bpe *t, int32_t id); /* 0 for the HF kind */
/* The id of an exact piece, -1 when absent (the lowest id on duplicates). */
int32_t sq_bpe_lookup(const sq_bpe *t, const char *s, size_t len);

/* Encode len bytes of text (BOS / EOS: the tokenizer's ids, when it has
 * them); *ids is malloc'd (free it). Returns the count, or -1 on allocation
 * failure (or a text over 2^28 bytes). */
int64_t sq_bpe_encode(const sq_bpe *t, const char *text, size_t len, bool bos, bool eos,
                      int32_t **ids);

/* The bytes token id decodes to after token prev (-1: none); *len gets their
 * count (0 for a special token / an id out of range). The pointer stays valid while
 * t lives. */
const char *sq_bpe_decode_piece(const sq_bpe *t, int32_t prev, int32_t id, size_t *len);

/* Decode n ids (prev: the token before ids[0], -1 for none) into a
 * malloc'd NUL-terminated string (*len bytes). NULL on allocation failure. */
char *sq_bpe_decode(const sq_bpe *t, int32_t prev, const int32_t *ids, int64_t n, size_t *len);

#endif

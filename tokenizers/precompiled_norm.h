/* SentencePiece's precompiled normalizer ("precompiled_charsmap": the
 * Hugging Face tokenizer.json normalizer of type Precompiled, e.g.
 * XLM-RoBERTa's nmt_nfkc), applied as the Rust tokenizers library applies it.
 *
 * The blob (sentencepiece normalizer.cc, "CharsMap"): a little-endian
 * uint32 T, then T bytes of double-array trie units (uint32 each, the
 * darts-clone layout), then the replacement strings, each NUL-terminated.
 * A key is a byte string; its trie value is the offset of its replacement.
 *
 * Application (the Rust crate's Precompiled::normalize, not sentencepiece's
 * own longest-prefix loop; they differ only in rare clusters): the text is
 * cut into extended grapheme clusters (utf8proc); a cluster of fewer than 6
 * bytes that has a key as a prefix becomes the replacement of its SHORTEST
 * such key (the rest of the cluster is dropped); otherwise each character
 * that has a key as a prefix of its bytes becomes that key's replacement,
 * and any other character is copied. A trie walk stops at a NUL byte.
 *
 * The blob is hostile: sq_pcnorm_new checks its layout (sizes, the strings
 * region valid UTF-8 ending in NUL) and every trie step is bounds-checked;
 * a value that points outside the strings or into the middle of a UTF-8
 * character counts as no match. */
#ifndef SQ_PRECOMPILED_NORM_H
#define SQ_PRECOMPILED_NORM_H

#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

/* Refusal limit for the blob (nmt_nfkc is 237,561 bytes). */
#define SQ_PCNORM_MAX_BLOB (16u << 20)

typedef struct sq_pcnorm sq_pcnorm;

/* Copies the blob. what names it in errors ("tokenizer.json: ..."). */
sq_pcnorm *sq_pcnorm_new(const uint8_t *blob, size_t len, const char *what, sq_err *err);
void sq_pcnorm_free(sq_pcnorm *p);

/* The blob as given (for writing it into a .sqm). */
const uint8_t *sq_pcnorm_blob(const sq_pcnorm *p, size_t *len);

/* Normalize text (len bytes of valid UTF-8): *out is malloc'd (NUL-terminated,
 * *out_len bytes, valid UTF-8). Returns 0, or -1 on allocation failure. */
int sq_pcnorm_apply(const sq_pcnorm *p, const char *text, size_t len, char **out,
                    size_t *out_len);

/* The replacement of the shortest key that is a prefix of s[0, n) (stopping
 * at a NUL byte), or NULL; *rlen its length. Exposed for tests. */
const char *sq_pcnorm_lookup(const sq_pcnorm *p, const uint8_t *s, size_t n, size_t *rlen);

#endif

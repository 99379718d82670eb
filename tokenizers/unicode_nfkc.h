/* Unicode Normalization Forms KC and C over code point arrays, with tables
 * generated from the Unicode 17.0 Character Database
 * (scripts/unicode/gen_nfkc.mjs -> unicode_nfkc_data.h), the version that
 * node 20's ICU implements: the generator checks the tables against node's
 * String.prototype.normalize('NFKC') and ('NFC') for every code point. NFKC
 * is the SentencePiece-unigram tokenizer's (tokenizer_unigram.c), NFC the
 * byte-level BPE's (tokenizer_bytelevel.c). */
#ifndef SQ_UNICODE_NFKC_H
#define SQ_UNICODE_NFKC_H

#include <stddef.h>
#include <stdint.h>

/* A growable code point buffer; zero-initialise, free v when done. */
typedef struct sq_u32buf {
    uint32_t *v;
    size_t n, cap;
} sq_u32buf;

/* Make room for `extra` more code points. Returns 0, or -1 when out of memory. */
int sq_u32buf_reserve(sq_u32buf *b, size_t extra);

/* The Unicode version of the tables, e.g. "17.0.0". */
const char *sq_nfkc_unicode_version(void);

/* Canonical combining class of a code point (0 for starters). */
int sq_nfkc_ccc(uint32_t cp);

/* Replace out's contents with NFKC(in[0..n)): full compatibility
 * decomposition, canonical reordering (stable, O(n log n) for hostile runs of
 * combining marks), canonical composition. in must be scalar values and must
 * not alias out->v. Returns 0, or -1 when out of memory. */
int sq_nfkc(const uint32_t *in, size_t n, sq_u32buf *out);

/* Replace out's contents with NFC(in[0..n)): full canonical decomposition,
 * canonical reordering, canonical composition (same contract as sq_nfkc). */
int sq_nfc(const uint32_t *in, size_t n, sq_u32buf *out);

#endif

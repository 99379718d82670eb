/* A small builder of SentencePiece precompiled charsmaps (the blob
 * tokenizers/precompiled_norm.h reads), for tests and fuzz seeds: our own
 * double-array construction from the format's description. */
#ifndef TK_CHARSMAP_BUILD_H
#define TK_CHARSMAP_BUILD_H

#include <stddef.h>
#include <stdint.h>

/* n keys (non-empty byte strings without NUL) and their replacements; a
 * malloc'd blob (*len bytes), or NULL when it does not fit 65536 units. */
uint8_t *tk_charsmap_build(const char *const *keys, const char *const *repl, int n, size_t *len);

/* Base64 (padded) of p[0, n), malloc'd and NUL-terminated. */
char *tk_base64(const uint8_t *p, size_t n);

#endif

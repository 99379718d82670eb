/* UTF-8 validation of input text (corpora, texts to embed, library input). */
#ifndef SQ_UTF8_H
#define SQ_UTF8_H

#include <stddef.h>

/* Length of the longest valid UTF-8 prefix of s[0, n): equals n when valid.
 * Overlongs, surrogates and code points above U+10FFFF are invalid. */
size_t sq_utf8_valid_prefix(const char *s, size_t n);

#endif

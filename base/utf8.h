/* UTF-8 validation: of input text (corpora, texts to embed, library input)
 * and of generated text, whose pieces may cut a character (serve). */
#ifndef SQ_UTF8_H
#define SQ_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the longest valid UTF-8 prefix of s[0, n): equals n when valid.
 * Overlongs, surrogates and code points above U+10FFFF are invalid. */
size_t sq_utf8_valid_prefix(const char *s, size_t n);

/* The sequence at p[0 .. n), n >= 1: returns its length when valid (1..4);
 * else *bad is set and the return is the bytes to replace by one U+FFFD
 * (>= 1); *cut is set (with *bad) when the bytes end inside a sequence
 * that is valid so far. */
size_t sq_utf8_seq(const unsigned char *p, size_t n, bool *bad, bool *cut);

/* The length of the longest prefix of p[0 .. n) that does not end inside a
 * sequence valid so far (n minus the bytes of such a cut sequence, 0..3). */
size_t sq_utf8_whole(const char *p, size_t n);

#endif

/* Generated text as JSON: the decoder's pieces are bytes (a byte-fallback
 * token may be one byte of a multi-byte character), so text is checked as
 * UTF-8 here. Invalid bytes become U+FFFD, one per maximal subpart (the
 * Unicode "substitution of maximal subparts" practice); a sequence cut short
 * at the end of the bytes is reported so a stream can wait for the rest. */
#ifndef SQ_SERVE_UTF8_TEXT_H
#define SQ_SERVE_UTF8_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"

/* The sequence at p[0 .. n), n >= 1: returns its length when valid (1..4);
 * else *bad is set and the return is the bytes to replace by one U+FFFD
 * (>= 1); *cut is set (with *bad) when the bytes end inside a sequence
 * that is valid so far. */
size_t sq_utf8_seq(const unsigned char *p, size_t n, bool *bad, bool *cut);

/* The length of the longest prefix of p[0 .. n) that does not end inside a
 * sequence valid so far (n minus the bytes of such a cut sequence, 0..3). */
size_t sq_utf8_whole(const char *p, size_t n);

/* Append p[0 .. n) as a JSON string literal ("..." with escapes), invalid
 * UTF-8 replaced by U+FFFD. */
void sq_json_text(sq_strbuf *sb, const char *p, size_t n);

#endif

/* Generated text as JSON: the decoder's pieces are bytes (a byte-fallback
 * token may be one byte of a multi-byte character), so text is checked as
 * UTF-8 here (base/utf8.h: sq_utf8_seq, and sq_utf8_whole for a stream
 * that waits for the rest of a cut character). Invalid bytes become U+FFFD,
 * one per maximal subpart (the Unicode "substitution of maximal subparts"
 * practice). */
#ifndef SQ_SERVE_UTF8_TEXT_H
#define SQ_SERVE_UTF8_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"
#include "utf8.h"

/* Append p[0 .. n) as a JSON string literal ("..." with escapes), invalid
 * UTF-8 replaced by U+FFFD. */
void sq_json_text(sq_strbuf *sb, const char *p, size_t n);

#endif

/* Character classes and per-code-point Unicode operations exactly as the
 * Hugging Face BERT tokenizers (tokenizers' BertNormalizer/BertPreTokenizer,
 * transformers.js) define them, plus a strict UTF-8 decoder. Category data
 * comes from utf8proc. */
#ifndef SQ_UNICODE_PROPS_H
#define SQ_UNICODE_PROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQ_UNI_REPLACEMENT 0xFFFDu

/* HF whitespace: '\t', '\n', '\r' and every White_Space code point
 * (Rust char::is_whitespace: U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). */
bool sq_uni_is_whitespace(uint32_t cp);

/* HF control: general category Cc, Cf or Co, except '\t', '\n', '\r' (which
 * count as whitespace). Unassigned code points (Cn) are NOT control, as in
 * tokenizers (unicode_categories' is_other) and transformers.js. */
bool sq_uni_is_control(uint32_t cp);

/* HF punctuation: ASCII 33-47, 58-64, 91-96, 123-126 (which includes symbols
 * such as '$', '+', '^') or any Unicode P* category. */
bool sq_uni_is_punctuation(uint32_t cp);

/* HF "Chinese character": the CJK ideograph ranges of tokenizers'
 * is_chinese_char (note 0x2B920..0x2CEAF there, not Python's 0x2B820). */
bool sq_uni_is_cjk(uint32_t cp);

/* \p{L} (general category Lu, Ll, Lt, Lm, Lo) and \p{N} (Nd, Nl, No), as the
 * regular expressions of tokenizers' pre-tokenizers (Oniguruma) read them.
 * The data is utf8proc's (Debian 12: 2.8, Unicode 15.0, the version of the
 * Oniguruma 6.9.8 that tokenizers bundles); a code point assigned later is
 * neither. */
bool sq_uni_is_letter(uint32_t cp);
bool sq_uni_is_number(uint32_t cp);

/* General category Mn (nonspacing mark): dropped when stripping accents. */
bool sq_uni_is_nonspacing_mark(uint32_t cp);

/* Canonical combining class (0 for starters). */
int sq_uni_combining_class(uint32_t cp);

/* Full lowercase mapping of one code point without context: the simple
 * mapping, except U+0130 -> U+0069 U+0307 (the only unconditional
 * one-to-many lowercase mapping). U+03A3 always gives U+03C3, as in tokenizers'
 * Rust code (no Final_Sigma). Writes 1 or 2 code points to out and returns how many. */
int sq_uni_tolower(uint32_t cp, uint32_t out[2]);

/* Canonical (NFD) decomposition of one code point, including Hangul
 * syllables, without reordering. Writes up to cap code points; returns the
 * number the decomposition has (which may exceed cap: then retry larger). */
int sq_uni_decompose(uint32_t cp, uint32_t *out, int cap);

/* Decode one code point from s[0..len) (len >= 1). Invalid or truncated
 * sequences decode to U+FFFD consuming the maximal subpart of an
 * ill-formed sequence (at least one byte), the Unicode "best practice" that
 * Python, Rust's from_utf8_lossy and WHATWG decoders use. Surrogates and
 * overlong forms are invalid. Returns the number of bytes consumed. */
size_t sq_utf8_decode(const uint8_t *s, size_t len, uint32_t *cp);

/* Encode a scalar value as UTF-8 into out (4 bytes room). Returns the length. */
int sq_utf8_encode(uint32_t cp, uint8_t out[4]);

/* True if s[0..len) is well-formed UTF-8. */
bool sq_utf8_valid(const uint8_t *s, size_t len);

#endif

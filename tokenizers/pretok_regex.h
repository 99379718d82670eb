/* The regular-expression splits of byte-level BPE pre-tokenizers, written by
 * hand for the two patterns real tokenizer.json files use (no regex engine):
 *
 * GPT-2 (ByteLevel use_regex true; GPT-2, RoBERTa, ModernBERT-style files):
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Qwen2 / Qwen3 (a Split pre-tokenizer, behavior Isolated):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * Matching follows the backtracking engines tokenizers uses (Oniguruma):
 * leftmost match, alternatives tried in order, greedy quantifiers. Every
 * code point is a letter, a number, White_Space or none of these, and each
 * pattern has an alternative that matches a lone one of each, so the matches
 * cover the text back to back and each is one piece. Classes: \p{L}, \p{N}
 * (sq_uni_is_letter, sq_uni_is_number) and \s = White_Space
 * (sq_uni_is_whitespace: it includes U+0085 and not U+FEFF, as Oniguruma;
 * JavaScript's \s is the other way round). (?i:...) folds case as
 * Oniguruma does: 's also matches U+017F LATIN SMALL LETTER LONG S. */
#ifndef SQ_PRETOK_REGEX_H
#define SQ_PRETOK_REGEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum sq_pretok_pattern {
    SQ_PRETOK_GPT2 = 1,
    SQ_PRETOK_QWEN2 = 2,
} sq_pretok_pattern;

/* The GPT-2 pattern's exact text (what ByteLevel use_regex applies). */
extern const char SQ_PRETOK_GPT2_REGEX[];
extern const char SQ_PRETOK_QWEN2_REGEX[];

/* The pattern whose text is exactly s[0..len), 0 when it is neither. */
sq_pretok_pattern sq_pretok_recognise(const char *s, size_t len);

/* The end of the match that starts at cp[i] (i < n): > i. */
size_t sq_pretok_match(sq_pretok_pattern p, const uint32_t *cp, size_t n, size_t i);

#endif

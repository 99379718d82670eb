/* Byte-level BPE (GPT-2, RoBERTa, Qwen2 / Qwen3) as the Hugging Face
 * tokenizers library runs it from a tokenizer.json
 * (tokenizer_bytelevel_json.c reads the file):
 *
 *  0. invalid UTF-8 in the text is read as U+FFFD per maximal ill-formed
 *     subpart (what String::from_utf8_lossy and Python's
 *     decode(errors="replace") give; tokenizers itself only takes valid
 *     strings), so encode(bytes) == encode(lossy(bytes));
 *  1. added tokens with normalized false are cut out of the raw text,
 *     leftmost-longest (tokenizers' AddedVocabulary); an lstrip token also
 *     takes the whitespace before it (back to the previous cut), an rstrip
 *     token the whitespace after it;
 *  2. each remaining segment is normalized (NFC, or left as it is), then
 *     the added tokens with normalized true are cut out of it the same way;
 *  3. each remaining piece is split by the pre-tokenizer pattern
 *     (pretok_regex.h; none: the piece whole), with add_prefix_space a
 *     space put in front of a non-empty piece that does not start with one
 *     (ByteLevel alone, before its split);
 *  4. each split's bytes become the pieces of the GPT-2 byte alphabet
 *     (printable Latin-1 bytes stand for themselves, the 68 others for
 *     U+0100..U+0143 in byte order); with ignore_merges a split that is a
 *     piece of the vocabulary is that piece; else the adjacent pair of
 *     lowest merge rank is merged (leftmost on a tie) until none is a merge
 *     (the BPE loop of tokenizer_bpe.c, a heap, O(n log n)).
 * Decoding (the ByteLevel decoder): a piece whose every character is in the
 * byte alphabet gives those bytes, any other piece its own UTF-8 text (as
 * tokenizers does per token); special tokens give nothing (the contract of
 * sq_tokenizer_decode_piece: Hugging Face's skip_special_tokens=True);
 * added tokens that are not special give their text.
 *
 * Immutable after creation: any number of threads may use one at once. */
#ifndef SQ_TOKENIZER_BYTELEVEL_H
#define SQ_TOKENIZER_BYTELEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pretok_regex.h"
#include "sq_error.h"

typedef struct sq_bl sq_bl;

typedef struct sq_bl_added {
    int32_t id;      /* its piece is pieces[id] */
    bool normalized; /* matched after the normalizer (else in the raw text) */
    bool special;    /* decodes to nothing */
    /* whitespace (White_Space, Rust's char::is_whitespace) to the left /
     * right of a match belongs to the token and gives no ids (ModernBERT's
     * [MASK] has lstrip) */
    bool lstrip, rstrip;
} sq_bl_added;

typedef struct sq_bl_spec {
    const char *const *pieces;  /* [n_pieces] by id: the byte-alphabet pieces of
                                   the model, the added tokens' text */
    int32_t n_pieces;
    const int32_t *merges;      /* [n_merges][2] ids (left, right) in rank order */
    int32_t n_merges;
    bool nfc;                   /* normalizer NFC (else none) */
    sq_pretok_pattern pattern;  /* 0: no split */
    bool add_prefix_space;
    bool ignore_merges;
    const sq_bl_added *added;
    int32_t n_added;
    int32_t bos, eos;           /* -1: none; both decode to nothing */
} sq_bl_spec;

/* Build and check (every byte's piece present, merges making pieces, ids in
 * range, no duplicate piece or merge); name is used in messages. */
sq_bl *sq_bl_new(const sq_bl_spec *spec, const char *name, sq_err *err);
/* A tokenizer.json whose pre-tokenizer or decoder is ByteLevel
 * (tokenizer_bytelevel_json.c). bos / eos: the model's ids, -1 none. */
sq_bl *sq_bl_load_json(const char *path, int32_t bos, int32_t eos, sq_err *err);
sq_bl *sq_bl_parse_json(const char *buf, size_t len, const char *name, int32_t bos, int32_t eos,
                        sq_err *err);
void sq_bl_free(sq_bl *t);

/* Encode len bytes of text ([BOS] / [EOS] when asked and the tokenizer has
 * them); *ids is malloc'd (free it). Returns the count, or -1 on allocation
 * failure (or a text over 2^28 bytes). */
int64_t sq_bl_encode(const sq_bl *t, const char *text, size_t len, bool bos, bool eos,
                     int32_t **ids);
/* The bytes of id (see above; "" for a special id or one out of range). */
const char *sq_bl_decode_piece(const sq_bl *t, int32_t id, size_t *len);

int32_t sq_bl_vocab_size(const sq_bl *t);
int32_t sq_bl_bos(const sq_bl *t);
int32_t sq_bl_eos(const sq_bl *t);
bool sq_bl_is_special(const sq_bl *t, int32_t id);
/* The raw piece of id (the byte-alphabet spelling; an added token's text). */
const char *sq_bl_token(const sq_bl *t, int32_t id);
int32_t sq_bl_lookup(const sq_bl *t, const char *s, size_t len);
/* The most input bytes one token can stand for (sq_tokenizer_max_piece_bytes). */
size_t sq_bl_max_piece_bytes(const sq_bl *t);
/* What built t, for writing it into a .sqm (SQM.md 10.5, hf-bytelevel):
 * pieces and merges NULL (sq_bl_token, sq_bl_merge_pair), added pointing
 * into t. */
void sq_bl_settings(const sq_bl *t, sq_bl_spec *out);
/* Merge r (rank order) as (left id, right id). */
void sq_bl_merge_pair(const sq_bl *t, int32_t r, int32_t *a, int32_t *b);

#endif

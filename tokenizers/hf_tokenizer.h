/* Reading Hugging Face tokenizer files for WordPiece (BERT) tokenizers:
 * tokenizer.json (model.type WordPiece + BertNormalizer / Lowercase /
 * BertPreTokenizer settings), vocab.txt and tokenizer_config.json.
 * Produces a plain description; tokenizers/tokenizer.h builds the
 * runnable tokenizer from it. */
#ifndef SQ_HF_TOKENIZER_H
#define SQ_HF_TOKENIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"

/* Refusal limits for hostile files. */
#define SQ_WORDPIECE_MAX_VOCAB (1 << 22)
#define SQ_WORDPIECE_MAX_TOKEN_BYTES 1024
#define SQ_WORDPIECE_MAX_PREFIX_BYTES 64
#define SQ_WORDPIECE_MAX_WORD_CHARS (1 << 20)

/* A token matched verbatim in the raw text before normalization and never
 * split (HF "added tokens": [CLS], [SEP], [UNK], [PAD], [MASK], ...).
 * lstrip/rstrip are not kept: with BertPreTokenizer whitespace next to an
 * added token separates words anyway, so stripping it changes no id. */
typedef struct sq_added_token {
    char *content; /* == vocab[id] */
    int32_t id;
    /* SQ_TOK_HF_UNIGRAM and SQ_TOK_HF_BYTELEVEL only (XLM-R's <mask>,
     * ModernBERT's [MASK] have lstrip): whitespace to the left / right of a
     * match belongs to the token. */
    bool lstrip, rstrip;
    /* SQ_TOK_HF_BYTELEVEL only: matched after the normalizer; decodes to
     * nothing (tokenizer_bytelevel.h sq_bl_added). */
    bool normalized, special;
} sq_added_token;

/* The spec describes one of four tokenizer kinds (the name is historical;
 * the fourth, an encoder's byte-level BPE, at SQ_TOK_HF_BYTELEVEL):
 * WordPiece (BERT); SentencePiece unigram (Universal Sentence Encoder
 * Lite; then only vocab, scores, unk_id = 0 and model_max_length are used,
 * cls/sep/pad/mask are -1 and no [CLS]/[SEP] wrap the sequences); or a
 * Hugging Face Unigram tokenizer.json (XLM-RoBERTa: vocab, scores, unk_id,
 * charsmap, collapse_spaces, the Metaspace settings, added tokens with
 * lstrip/rstrip, cls/sep from the post_processor, pairs <s> A </s></s> B
 * </s>; tokenizer_hf_unigram.h). */
typedef enum sq_tokenizer_type {
    SQ_TOK_WORDPIECE = 0,
    SQ_TOK_UNIGRAM = 1,
    SQ_TOK_HF_UNIGRAM = 2,
    /* an encoder's byte-level BPE tokenizer.json (ModernBERT): vocab (the
     * byte-alphabet pieces, added tokens included), merges, added tokens
     * with their flags, the bl_* settings (tokenizer_bytelevel.h), cls / sep
     * from the post_processor, pair_double_sep */
    SQ_TOK_HF_BYTELEVEL = 3,
} sq_tokenizer_type;

/* Metaspace prepend_scheme: when U+2581 is put before a segment of text
 * that does not start with one (first: only the segment at offset 0). */
typedef enum sq_prepend_scheme {
    SQ_PREPEND_ALWAYS = 0,
    SQ_PREPEND_FIRST = 1,
    SQ_PREPEND_NEVER = 2,
} sq_prepend_scheme;

typedef struct sq_wordpiece_spec {
    sq_tokenizer_type type;
    char **vocab;           /* vocab[id] = token string (UTF-8, NUL-terminated) */
    int32_t vocab_size;
    double *scores;         /* unigram: [vocab_size] piece log-probabilities */
    bool clean_text;        /* drop control chars, map whitespace to ' ' */
    bool handle_chinese_chars;
    bool lowercase;
    int strip_accents;      /* -1: follow lowercase (HF default), 0: no, 1: yes */
    char *continuing_subword_prefix;  /* "##" */
    int32_t max_input_chars_per_word; /* 100 */
    int32_t unk_id, cls_id, sep_id, pad_id, mask_id; /* -1 when absent */
    int32_t model_max_length; /* from tokenizer_config.json, 0 if unknown */
    /* A pair is [CLS] A [SEP] [SEP] B [SEP] with token types all 0
     * (RobertaProcessing), not BERT's [CLS] A [SEP] B [SEP] with types 0/1. */
    bool pair_double_sep;
    /* Added tokens; when n_added is 0, sq_tokenizer_new uses the tokens of the
     * unk/cls/sep/pad/mask ids (what BertTokenizer does for vocab.txt). */
    sq_added_token *added;
    int32_t n_added;
    /* SQ_TOK_HF_UNIGRAM: the Precompiled normalizer's blob (NULL: no such
     * step), the Replace " {2,}" -> " " step after it, Metaspace. */
    uint8_t *charsmap;
    size_t charsmap_len;
    bool collapse_spaces;
    sq_prepend_scheme prepend_scheme;
    bool metaspace_split;
    /* SQ_TOK_HF_BYTELEVEL: merges [n_merges][2] (left id, right id) in rank
     * order; normalizer NFC; pre-tokenizer pattern (sq_pretok_pattern, 0
     * none); ByteLevel add_prefix_space; model.ignore_merges. */
    int32_t *merges;
    int32_t n_merges;
    bool bl_nfc, bl_add_prefix_space, bl_ignore_merges;
    int bl_pattern;
} sq_wordpiece_spec;

/* All loaders fill *spec completely (zeroing it first) and return 0, or
 * return -1 with err naming the file and the problem, leaving *spec empty
 * (safe to free). Tokens are checked for length and uniqueness here; UTF-8
 * validity is checked by sq_tokenizer_new. */

/* Load from a checkpoint directory: tokenizer.json if present (plus
 * model_max_length and pad/mask token names from tokenizer_config.json), else
 * vocab.txt with tokenizer_config.json for the BertTokenizer settings. */
int sq_wordpiece_spec_load_dir(const char *dir, sq_wordpiece_spec *spec, sq_err *err);

/* tokenizer.json: model WordPiece; normalizer BertNormalizer, Lowercase, a
 * Sequence of those, or null; pre_tokenizer BertPreTokenizer; post_processor
 * TemplateProcessing "[CLS] $A [SEP]", BertProcessing, RobertaProcessing
 * (MPNet) or null. Anything else
 * is refused with a message. Vocab ids must be exactly 0..N-1. A file of
 * model.type Unigram goes to sq_hf_unigram_spec_from_json, one of model.type
 * BPE with a ByteLevel pre-tokenizer or decoder to
 * sq_hf_bytelevel_spec_from_json. */
int sq_wordpiece_spec_load_tokenizer_json(const char *path, sq_wordpiece_spec *spec, sq_err *err);

/* A Hugging Face tokenizer.json of model.type Unigram (hf_unigram_json.c):
 * model {vocab [[piece, score]...], unk_id, byte_fallback false};
 * normalizer null, Precompiled, or a Sequence of Precompiled then
 * Replace {"Regex": " {2,}"} -> " " (each step at most once, in that order);
 * pre_tokenizer Metaspace (replacement U+2581; prepend_scheme always / first /
 * never or add_prefix_space; split) or a Sequence holding only it;
 * post_processor RobertaProcessing or TemplateProcessing "<s> $A </s>";
 * decoder null or Metaspace; added tokens that are vocab entries with their
 * lstrip / rstrip. root is the parsed file; anything else is refused with a
 * message naming path and the setting. */
struct json_t;
int sq_hf_unigram_spec_from_json(const struct json_t *root, const char *path,
                                 sq_wordpiece_spec *spec, sq_err *err);

/* A Hugging Face byte-level BPE tokenizer.json of an encoder (ModernBERT;
 * tokenizer_bytelevel_json.c): what sq_bl_load_json reads, plus the
 * post_processor (TemplateProcessing "[CLS]:0 $A:0 [SEP]:0" with pair
 * "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1" or RoBERTa's, BertProcessing,
 * RobertaProcessing) for cls / sep and the pair layout; unk / pad / mask by
 * the names [UNK] / [PAD] / [MASK]. The whole tokenizer is built once to
 * check it; every message names path. */
int sq_hf_bytelevel_spec_from_json(struct json_t *root, const char *path,
                                   sq_wordpiece_spec *spec, sq_err *err);

/* vocab.txt: one token per line, id = line number (0-based). Lines end in
 * "\n", "\r\n" or "\r" (Python's universal newlines, as HF load_vocab reads
 * it); a final newline is optional. Empty lines and duplicate tokens are
 * refused. Settings are BertTokenizer's defaults (lowercase, strip accents
 * with lowercase, split CJK, clean text, "##", 100 chars); special tokens by
 * their default names [UNK] (required), [CLS], [SEP], [PAD], [MASK]. */
int sq_wordpiece_spec_load_vocab_txt(const char *path, sq_wordpiece_spec *spec, sq_err *err);

/* Apply a tokenizer_config.json to a spec loaded from vocab.txt:
 * do_lower_case, strip_accents, tokenize_chinese_chars, model_max_length and
 * the unk/cls/sep/pad/mask token names (string or {"content": ...}).
 * do_basic_tokenize false or a non-empty never_split are refused. */
int sq_wordpiece_spec_apply_config(const char *path, sq_wordpiece_spec *spec, sq_err *err);

/* A SentencePiece unigram spec from USE Lite's vocab.json
 * (tokenizers/use_vocab.h); model_max_length is left 0 for the caller. */
int sq_unigram_spec_load_use_vocab(const char *path, sq_wordpiece_spec *spec, sq_err *err);

/* Release everything the spec owns and zero it. */
void sq_wordpiece_spec_free(sq_wordpiece_spec *spec);

#endif

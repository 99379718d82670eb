/* Deterministic extraction of test sentences from the shared data files,
 * mirrored line for line by js/gen_golden.mjs so that golden ids line up:
 *  - *.inp (llama.cpp vocab tests): the file split on "\n__ggml_vocab_test__\n";
 *    the piece after the last separator must be empty and is dropped.
 *  - GLUE *.tsv with a header row: lines split on '\n' (one trailing '\r'
 *    removed), empty lines skipped, fields split on '\t' (quotes are not
 *    special); the named columns of each row, in column-list order.
 *  - STS-B original/ TSVs (no header): fields 5 and 6 of each row.
 *  - *.json: an array of strings (tests/tokenizer/edge_strings.json, named
 *    "squint:edge_strings.json" in the golden file).
 *  - *.jsonl (SciFact, BEIR format): one object per non-empty line (one
 *    trailing '\r' removed); the named string members of each, in order
 *    (corpus: title, text of its first 1000
 *    objects; queries: text of all).
 * Each source is a table row in sentences.c (and SOURCES in gen_golden.mjs). */
#ifndef TK_SENTENCES_H
#define TK_SENTENCES_H

#include <stddef.h>

typedef struct tk_sentences {
    char *buf;      /* the file contents; sentences point into it */
    const char **s; /* NUL-terminated sentences */
    size_t *len;
    size_t n;
} tk_sentences;

/* The relative paths (under the shared data dir) of every golden source, NULL-terminated. */
extern const char *const tk_sources[];
/* The same for the byte-level BPE (Qwen3) golden. */
extern const char *const tk_qwen3_sources[];
/* The same for the XLM-RoBERTa (HF Unigram) golden. */
extern const char *const tk_xlmr_sources[];
/* The same for the ModernBERT-shaped byte-level fixture's golden. */
extern const char *const tk_modernbert_sources[];

/* Load the sentences of source `rel` under data_dir. Returns 0, or -1 with a
 * message in errbuf. */
int tk_sentences_load(const char *data_dir, const char *rel, tk_sentences *out, char *errbuf,
                      size_t errlen);
void tk_sentences_free(tk_sentences *s);

/* Read a whole file (NUL-terminated); NULL on failure. */
char *tk_read_file(const char *path, size_t *len);

#endif

/* Internal interface between calib/corpus.c and the per-format readers
 * (corpus_text.c, corpus_jsonl.c, corpus_qasper.c): each turns the lines of
 * one file or archive member into samples. */
#ifndef SQ_CORPUS_READER_H
#define SQ_CORPUS_READER_H

#include <jansson.h>
#include <stddef.h>

#include "line_source.h"
#include "sq_error.h"

typedef struct sq_corpus_reader sq_corpus_reader;
struct sq_corpus_reader {
    /* 1: a sample (*text NUL-terminated, valid until the next call);
     * 0: end of the member; -1: error. */
    int (*next)(sq_corpus_reader *r, const char **text, size_t *len, sq_err *err);
    /* Where the last sample came from ("name:LINE", "name: paper ID"). */
    const char *(*where)(sq_corpus_reader *r);
    void (*free)(sq_corpus_reader *r);
};

/* Readers borrow the line source; it must outlive them. */
sq_corpus_reader *sq_corpus_text_reader(sq_line_source *ls, sq_err *err);
/* pair_field NULL: single texts; else pairs (sq_corpus_opts.pair_field). */
sq_corpus_reader *sq_corpus_jsonl_reader(sq_line_source *ls, const char *field,
                                         const char *pair_field, sq_err *err);
/* document: the stream is one original-schema JSON document (else JSONL). */
sq_corpus_reader *sq_corpus_qasper_reader(sq_line_source *ls, unsigned parts, int document,
                                          sq_err *err);

/* QASPER JSONL layout of one parsed line (0 when none matches). Used by
 * format auto to recognise QASPER in .jsonl files. */
int sq_corpus_qasper_jsonl_layout(json_t *obj);

/* True when s[0, n) has only ASCII whitespace (such samples are skipped). */
int sq_corpus_blank(const char *s, size_t n);

/* A set of 64-bit hashes (deduplication of texts by xxh64). */
typedef struct sq_hash_set {
    unsigned long long *slot; /* 0 marks empty; a zero hash is stored as 1 */
    size_t cap, count;
} sq_hash_set;
/* Insert; returns 1 if newly added, 0 if present, -1 out of memory. */
int sq_hash_set_add(sq_hash_set *s, unsigned long long h);
void sq_hash_set_free(sq_hash_set *s);

/* "name:LINE" into buf. */
const char *sq_corpus_fmt_where(char *buf, size_t size, const char *name, unsigned long long line);

#endif

/* Calibration corpora: streaming readers and deterministic sampling.
 *
 * A corpus is one or more files read in the order given. Each file is a plain
 * file, a single compressed stream (.gz .zst .xz .bz2) or an archive (.tar
 * .tar.gz .tgz .tar.zst .tar.xz .tar.bz2 .zip, every regular member in archive
 * order). Each file or member holds samples in one format:
 *
 *   text    one sample per line. "\r\n" is accepted; empty and
 *           whitespace-only lines are skipped (they carry nothing to
 *           calibrate on); a leading UTF-8 byte-order mark is dropped.
 *   jsonl   one JSON object per line, the sample at the dotted field path
 *           opts.field ("text" by default; "a.b.c" walks nested objects).
 *           Blank lines are skipped; a line that is not a JSON object, or
 *           whose field is missing or not a string, is an error naming
 *           file:line; an empty or whitespace-only string is skipped.
 *   qasper  QASPER (Dasigi et al., NAACL 2021) in any of four layouts,
 *           detected per file: the original JSON document (an object keyed
 *           by paper id with title, abstract, full_text, qas; read whole,
 *           at most SQ_CORPUS_MAX_JSON_DOC bytes), or JSONL with one paper
 *           (paper_id, title, abstract), one question (question, evidence[])
 *           or one full-text paragraph (paper_id, section_name, text) per
 *           line. opts.qasper_parts chooses what becomes samples; see
 *           sq_qasper_parts_parse. Within a record samples come in its own
 *           order (title, abstract, paragraphs, then each question followed
 *           by its evidence). Evidence paragraphs are deduplicated within a
 *           file (annotators cite the same paragraph many times); in the
 *           paragraph layout title and abstract come once per paper.
 *
 * With format auto the format is chosen per file or member by its name (the
 * compression suffix removed): .jsonl/.ndjson -> jsonl, except that when
 * opts.field is unset and the first object has a QASPER JSONL layout it is
 * read as qasper; .json -> qasper (the original document); anything else ->
 * text.
 *
 * Every format refuses lines longer than opts.max_line (16 MiB by default),
 * NUL bytes and invalid UTF-8, naming file and line; corrupt archives and
 * corrupt or truncated compressed streams are errors naming the file. */
#ifndef SQ_CORPUS_H
#define SQ_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

/* Largest original-schema QASPER JSON document read whole. */
#define SQ_CORPUS_MAX_JSON_DOC ((size_t)512 << 20)

typedef enum sq_corpus_format {
    SQ_CORPUS_AUTO = 0,
    SQ_CORPUS_TEXT,
    SQ_CORPUS_JSONL,
    SQ_CORPUS_QASPER,
} sq_corpus_format;

/* QASPER parts (bit mask). */
enum {
    SQ_QASPER_TITLE = 1u << 0,
    SQ_QASPER_ABSTRACT = 1u << 1,
    SQ_QASPER_PARAGRAPHS = 1u << 2,
    SQ_QASPER_QUESTIONS = 1u << 3,
    SQ_QASPER_EVIDENCE = 1u << 4,
    SQ_QASPER_ALL = (1u << 5) - 1,
};

/* The parts used when opts.qasper_parts is NULL. */
#define SQ_QASPER_DEFAULT_PARTS "abstract,paragraphs,questions,evidence"

typedef struct sq_corpus_opts {
    sq_corpus_format format; /* AUTO by default (zeroed struct) */
    const char *field;       /* jsonl: dotted field path; NULL = "text" */
    /* jsonl: a second dotted field path: each sample is a pair (a text pair
     * for a cross-encoder), returned as field's text, one NUL byte, then
     * pair_field's text (NUL never occurs in a text: it is refused), skipped
     * when either text is blank. Other formats refuse it. */
    const char *pair_field;
    const char *qasper_parts;/* qasper: comma list; NULL = SQ_QASPER_DEFAULT_PARTS */
    size_t max_line;         /* longest line in bytes; 0 = 16 MiB */
} sq_corpus_opts;

/* Provenance of one input file: its path, size and the xxh64 (seed 0) of its
 * raw bytes as stored on disk (the compressed bytes for .zst, the archive for
 * .tar.gz). */
typedef struct sq_corpus_file_info {
    char *path;
    uint64_t size;
    uint64_t xxh64;
} sq_corpus_file_info;

typedef struct sq_corpus sq_corpus;

/* Split a pair sample (sq_corpus_opts.pair_field) at its NUL: *b and *nb
 * get the second text, *na the first's length. False when s has no NUL. */
bool sq_corpus_split_pair(const char *s, size_t n, size_t *na, const char **b, size_t *nb);

/* "auto", "text", "jsonl" or "qasper" -> format. */
int sq_corpus_parse_format(const char *name, sq_corpus_format *out, sq_err *err);
/* The name of a format ("auto", "text", ...). */
const char *sq_corpus_format_name(sq_corpus_format f);

/* Parse a QASPER part list: a comma list of title, abstract, paragraphs,
 * questions, evidence (or "all"); spaces around names are ignored. An empty
 * list or an unknown name is an error. */
int sq_qasper_parts_parse(const char *list, unsigned *mask, sq_err *err);

/* Open a corpus of one file. Equivalent to sq_corpus_open_many(&path, 1, ...). */
sq_corpus *sq_corpus_open(const char *path, const sq_corpus_opts *o, sq_err *err);

/* Open a corpus made of several files read one after the other. Options are
 * validated and every file is hashed (xxh64 of its bytes) here, so a missing
 * or unreadable file fails before any sample is read. o may be NULL. */
sq_corpus *sq_corpus_open_many(const char *const *paths, size_t n_paths, const sq_corpus_opts *o,
                               sq_err *err);

/* The next sample. Returns 1 with *text (NUL-terminated, valid until the next
 * call or close) and *len; 0 at the end of the corpus; -1 on error, after
 * which the corpus can only be closed. A corpus with no samples simply ends:
 * callers that need samples report that (sq_corpus_sample does). */
int sq_corpus_next(sq_corpus *c, const char **text, size_t *len, sq_err *err);

/* Where the last sample came from, for messages: "file:LINE" or
 * "archive.tar.gz:member.jsonl:LINE" (the paper id for QASPER documents). */
const char *sq_corpus_where(sq_corpus *c);

/* The corpus files with their sizes and hashes, in the order given. */
size_t sq_corpus_n_files(const sq_corpus *c);
const sq_corpus_file_info *sq_corpus_files(const sq_corpus *c);

void sq_corpus_close(sq_corpus *c);

/* ---- deterministic sampling ---- */

typedef struct sq_corpus_samples {
    size_t count;          /* samples kept */
    char **text;           /* NUL-terminated copies, in corpus order */
    size_t *len;
    uint64_t *index;       /* each sample's 0-based position in the whole corpus */
    uint64_t n_seen;       /* samples in the corpus */
    size_t n_files;
    sq_corpus_file_info *files; /* the inputs, as sq_corpus_files */
} sq_corpus_samples;

/* Draw n_samples samples uniformly without replacement from the corpus made
 * of paths[0..n_paths) by reservoir sampling (Algorithm R driven by a
 * splitmix64 generator seeded with `seed`, integer arithmetic only). Memory
 * is bounded by the n_samples texts kept. The result lists the chosen
 * samples in corpus order (by index); the same files, options and seed give
 * the same samples on every machine and thread count (reading is
 * sequential). n_samples == 0, or a corpus with at most n_samples samples,
 * keeps every sample in order. A corpus without samples is an error
 * "no samples in corpus FILES". out must be freed with sq_corpus_samples_free. */
int sq_corpus_sample(const char *const *paths, size_t n_paths, const sq_corpus_opts *o,
                     size_t n_samples, uint64_t seed, sq_corpus_samples *out, sq_err *err);
void sq_corpus_samples_free(sq_corpus_samples *s);

#endif

/* Readers of the labelled evaluation sets `squint embed-run` scores models
 * on: STS-B sentence pairs with gold similarity (the GLUE TSV with a header,
 * or the original headerless sts-*.tsv), SST-2 labelled sentences (GLUE TSV)
 * and a BEIR retrieval set (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).
 * Whole files are loaded; every error names file:line and the problem. */
#ifndef SQ_EVAL_DATA_H
#define SQ_EVAL_DATA_H

#include <stdint.h>

#include "sq_error.h"

/* Largest evaluation file read (bytes). */
#define SQ_EVAL_MAX_FILE ((size_t)1 << 30)

typedef enum sq_eval_task {
    SQ_TASK_AUTO = -1,
    SQ_TASK_PLAIN = 0, /* texts only: cosine and top-k overlap */
    SQ_TASK_STSB,
    SQ_TASK_SCIFACT,   /* any BEIR-layout directory */
    SQ_TASK_SST2,
} sq_eval_task;

/* "plain", "stsb", "scifact", "sst2" ("auto" for SQ_TASK_AUTO). */
const char *sq_eval_task_name(sq_eval_task t);
/* Parse a task name (including "auto"); -1 when unknown. */
int sq_eval_task_parse(const char *name, sq_eval_task *out);
/* The task an --input implies: a directory with corpus.jsonl and
 * queries.jsonl -> scifact; a .tsv whose header has sentence1, sentence2 and
 * score, or a headerless original STS-B file (a number in column 5) -> stsb;
 * a .tsv whose header has sentence and label -> sst2; anything else plain.
 * -1 only when the input cannot be read. */
int sq_eval_task_detect(const char *input, sq_eval_task *out, sq_err *err);

/* STS-B pairs. */
typedef struct sq_stsb {
    int64_t n;
    char **s1, **s2;
    double *score;
} sq_stsb;

/* limit > 0 keeps the first `limit` pairs. */
int sq_stsb_read(const char *path, int64_t limit, sq_stsb *out, sq_err *err);
void sq_stsb_free(sq_stsb *s);

/* SST-2 sentences with labels 0 / 1. */
typedef struct sq_sst2 {
    int64_t n;
    char **text;
    int *label;
} sq_sst2;

int sq_sst2_read(const char *path, int64_t limit, sq_sst2 *out, sq_err *err);
void sq_sst2_free(sq_sst2 *s);

/* A labelled training set (squint train-head): texts with class labels.
 * Layouts, chosen by the extension:
 *   .tsv    a header row naming the columns, then one row per text (fields
 *           separated by tabs, no quoting); text_field / label_field name
 *           the columns (default "sentence" / "label": GLUE SST-2).
 *   .jsonl  one object per line; the text (a string) and the label (a string
 *           or an integer) at dotted paths (default "text" / "label").
 * Empty lines are skipped. Texts and labels must be valid UTF-8; a label is
 * 1 to SQ_LABEL_MAX bytes; at most SQ_CLASSES_MAX distinct labels.
 * Classes are numbered in label order: numeric when every label is an
 * integer ("-1", "0", "12": no sign '+', no leading zeros), else by bytes
 * (strcmp). Errors name file:line. */
#define SQ_LABEL_MAX 256
#define SQ_CLASSES_MAX 1024
typedef struct sq_labelled {
    int64_t n;
    char **text;
    int *label;       /* class of each text, in [0, n_classes) */
    int64_t *line;    /* the line each text came from */
    int n_classes;
    char **class_name; /* labels in class order */
} sq_labelled;

/* NULL fields take the layout's defaults. */
int sq_labelled_read(const char *path, const char *text_field, const char *label_field,
                     sq_labelled *out, sq_err *err);
void sq_labelled_free(sq_labelled *s);

/* A BEIR retrieval set restricted to the queries judged in one qrels split.
 * Query q's judgements are qrel_doc/qrel_grade[qrel_off[q] .. qrel_off[q+1]),
 * documents as indices into doc_text. */
typedef struct sq_beir {
    int64_t n_docs;
    char **doc_id;
    char **doc_text;    /* title + " " + text, trimmed (as BEIR embeds it) */
    int64_t n_queries;
    char **query_id;
    char **query_text;
    int64_t *qrel_off;  /* n_queries + 1 */
    int64_t *qrel_doc;
    double *qrel_grade;
} sq_beir;

/* Read dir/corpus.jsonl, dir/queries.jsonl and dir/qrels/<split>.tsv. The
 * queries kept are those of queries.jsonl (in file order) with a judgement in
 * the split. limit_docs > 0 caps the corpus for quick runs: queries are kept
 * in order while their relevant documents together stay within half the cap
 * (at least one query), the corpus then holds those relevant documents plus
 * the first other documents in file order up to the cap. */
int sq_beir_read(const char *dir, const char *split, int64_t limit_docs, sq_beir *out,
                 sq_err *err);
void sq_beir_free(sq_beir *b);

#endif

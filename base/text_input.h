/* Reading input texts for embedding: plain text (one text per line) or JSONL
 * (one object per line, the text at a dotted field path such as
 * "text" or "doc.title"). The whole file is loaded; corpora for calibration
 * get streaming readers of their own. */
#ifndef SQ_TEXT_INPUT_H
#define SQ_TEXT_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

#define SQ_INPUT_MAX_FILE ((size_t)4 << 30)

typedef struct sq_texts {
    int64_t n;
    char **text;  /* NUL-terminated copies */
    size_t *len;
} sq_texts;

/* path "-" reads standard input. field == NULL: plain text, unless the path
 * ends in .jsonl, in which case field defaults to "text". */
int sq_texts_read(const char *path, const char *field, sq_texts *out, sq_err *err);
void sq_texts_free(sq_texts *t);

#endif

/* Golden id files of the tokenizer parity tests (zstd of text): '#' lines,
 * then per source "@ <rel> <count>" and <count> lines of space-separated
 * ids; the texts are extracted again from the sources (sentences.h;
 * "squint:" sources are in tests/tokenizer). */
#ifndef TK_GOLDEN_IDS_H
#define TK_GOLDEN_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "sentences.h"

typedef struct gold {
    const char *rel;
    tk_sentences s;
    int32_t **ids; /* per sentence */
    int64_t *n;
} gold;

/* The decompressed golden file (NUL-terminated, malloc'd), NULL with a message printed. */
char *tk_golden_load(const char *path);
/* Space-separated ids of one line [p, end) into a fresh array; -1 if malformed. */
int64_t tk_golden_parse_ids(const char *p, const char *end, int32_t **out);
/* Parse the golden text; sources under data (or source_dir for "squint:"). 0 or -1 (printed). */
int tk_golden_parse(char *text, const char *data, const char *source_dir, gold **out, size_t *nout);
void tk_golden_free(gold *g, size_t n);

#endif

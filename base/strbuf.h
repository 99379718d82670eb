/* A growable string for building text (YAML metadata, reports). Allocation
 * failure is sticky: check sb.failed once at the end. */
#ifndef SQ_STRBUF_H
#define SQ_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "sq_error.h"

typedef struct sq_strbuf {
    char *s;
    size_t len, cap;
    bool failed;
} sq_strbuf;

void sq_sb_printf(sq_strbuf *sb, const char *fmt, ...) SQ_PRINTF(2, 3);
/* Append n bytes (NULs included; the buffer stays NUL-terminated). */
void sq_sb_append(sq_strbuf *sb, const char *p, size_t n);
void sq_sb_free(sq_strbuf *sb);

#endif

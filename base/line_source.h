/* A bounded, streaming line reader over any byte stream (a plain file, a
 * libarchive member, a decompressed stream). It hands out one line at a time
 * without loading the stream, strips "\n" / "\r\n", counts lines for error
 * messages, and refuses lines longer than a bound, NUL bytes and invalid UTF-8
 * (calibration text must be text: a NUL almost always means binary data, and
 * the tokenizer needs valid UTF-8). */
#ifndef SQ_LINE_SOURCE_H
#define SQ_LINE_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sq_error.h"

/* Default longest line (bytes, without the newline). */
#define SQ_LINE_MAX_DEFAULT ((size_t)16 << 20)

/* Reads up to n bytes into buf: returns the count, 0 at end of stream, or -1
 * with err set (the message should name the stream). */
typedef ssize_t (*sq_byte_read_fn)(void *ctx, void *buf, size_t n, sq_err *err);

typedef struct sq_line_source {
    sq_byte_read_fn read;
    void *ctx;
    char *name;       /* for messages: "file.txt" or "corpus.tar.gz:member.jsonl" */
    size_t max_line;  /* longest accepted line */
    char *buf;
    size_t cap, start, end; /* unread data is buf[start, end) */
    size_t prev_start;      /* start of the line last returned (for push back) */
    uint64_t line_no;       /* 1-based number of the line last returned */
    int eof, repeat, at_bom_check;
} sq_line_source;

/* Set up a line source reading through `read(ctx, ...)`. name is copied.
 * max_line == 0 selects SQ_LINE_MAX_DEFAULT. */
int sq_line_source_init(sq_line_source *ls, sq_byte_read_fn read, void *ctx, const char *name,
                        size_t max_line, sq_err *err);
void sq_line_source_free(sq_line_source *ls);

/* Next line, without its line terminator and not NUL-terminated; *line stays
 * valid until the next call. A UTF-8 byte-order mark at the start of the
 * stream is dropped. Returns 1 (a line), 0 (end of stream) or -1: read error,
 * line longer than max_line, a NUL byte or invalid UTF-8, each reported as
 * "name:LINE: problem". */
int sq_line_next(sq_line_source *ls, const char **line, size_t *len, sq_err *err);

/* Make the next sq_line_next return the line just returned again (one level:
 * used to sniff a stream's first line before choosing its parser). */
void sq_line_push_back(sq_line_source *ls);

/* Read everything not yet consumed (including a pushed-back line) into a
 * malloc'd NUL-terminated buffer; refuses more than max_bytes with a message
 * naming the stream and the limit. NUL bytes are refused with their line. */
int sq_line_read_rest(sq_line_source *ls, size_t max_bytes, char **out, size_t *out_len,
                      sq_err *err);


#endif

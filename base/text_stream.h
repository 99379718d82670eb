/* Texts to embed, read as a stream: plain lines or JSONL (the text at a
 * dotted field path, optionally an id carried to the output), handed out in
 * chunks so memory is bounded by the chunk, not the input. A chunk ends
 * early when the input has nothing more ready and some texts are waiting,
 * so a pipe fed one line at a time gets each answer at once. The rules are
 * sq_texts_read's (text_input.h): UTF-8 only, no NUL bytes, "\r\n" ends a
 * line, empty JSONL lines are skipped, a plain empty line is the empty
 * text. */
#ifndef SQ_TEXT_STREAM_H
#define SQ_TEXT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "line_source.h"
#include "sq_error.h"

typedef struct sq_text_stream {
    int fd;
    bool own_fd;
    const char *field;    /* JSONL text field (dotted), NULL for plain lines */
    const char *id_field; /* JSONL id field (dotted) or NULL */
    const char *pair_field; /* JSONL second text field (dotted) or NULL: text pairs */
    sq_line_source ls;
    int64_t count;        /* texts handed out so far */
} sq_text_stream;

/* One chunk: n texts (NUL-terminated copies) and, with an id field, each
 * text's id as compact JSON ("\"doc-7\"", "42"). */
typedef struct sq_text_chunk {
    int64_t n, cap;
    char **text;
    size_t *len;
    char **id_json; /* NULL without an id field */
    char **text2;   /* text pairs (a pair field): each text's second text; else NULL */
    size_t *len2;
} sq_text_chunk;

/* path "-" is standard input. field NULL: plain text unless path ends in
 * .jsonl (then "text"). id_field requires JSONL. */
int sq_text_stream_open(const char *path, const char *field, const char *id_field,
                        sq_text_stream *s, sq_err *err);
void sq_text_stream_close(sq_text_stream *s);
/* Read text pairs: each JSONL line also holds a second text at the dotted
 * path pair_field (chunk.text2). Requires JSONL input. */
int sq_text_stream_pairs(sq_text_stream *s, const char *pair_field, sq_err *err);

/* Replace c's content with up to max texts. Returns the count (0: end of
 * input) or -1 with err as "name:LINE: problem". */
int64_t sq_text_stream_next(sq_text_stream *s, int64_t max, sq_text_chunk *c, sq_err *err);
void sq_text_chunk_clear(sq_text_chunk *c);
/* Put prefix before every text of c (a prompt); 0 or -1 out of memory. */
int sq_text_chunk_prefix(sq_text_chunk *c, const char *prefix);
void sq_text_chunk_free(sq_text_chunk *c);

#endif

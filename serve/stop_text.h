/* The text of a completion as it is generated, with OpenAI's "stop"
 * strings: generation ends when the text contains one, and the text sent
 * is what comes before it. While streaming, bytes that may be the start of
 * a stop string, or of a UTF-8 character cut between two tokens, are held
 * back until the next piece decides; so the pieces sent, joined, are always
 * the final text, and every piece sent is whole UTF-8 (where the model's
 * bytes are valid UTF-8). */
#ifndef SQ_SERVE_STOP_TEXT_H
#define SQ_SERVE_STOP_TEXT_H

#include <stdbool.h>
#include <stddef.h>

enum { SQ_STOP_MAX = 4 };

typedef struct sq_stop_text {
    const char *stops[SQ_STOP_MAX]; /* borrowed; each non-empty */
    size_t stop_lens[SQ_STOP_MAX];
    int n_stops;
    char *buf;      /* the text so far (ends at the stop string once found) */
    size_t len, cap;
    size_t emitted; /* bytes handed out */
    bool stopped;   /* a stop string was found */
} sq_stop_text;

/* t zeroed, then the stop strings set (sq_stop_text_init). */
void sq_stop_text_init(sq_stop_text *t, const char *const *stops, const size_t *lens, int n);
/* Add a piece. *out, *out_len: the bytes that may be sent now (pointing into
 * t, valid until the next call). Returns 1 when a stop string is complete
 * (the bytes before it are out; generation should end), 0 to go on, -1 when
 * out of memory. After a stop, further pieces are ignored. */
int sq_stop_text_feed(sq_stop_text *t, const char *piece, size_t n, const char **out,
                      size_t *out_len);
/* Generation ended: the bytes still held back. */
void sq_stop_text_flush(sq_stop_text *t, const char **out, size_t *out_len);
void sq_stop_text_free(sq_stop_text *t);

#endif

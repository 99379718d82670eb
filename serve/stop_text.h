/* The text of a completion as it is generated, with OpenAI's "stop"
 * strings: generation ends when the text contains one, and the text sent
 * is what comes before it. While streaming, bytes that may be the start of
 * a stop string, or of a UTF-8 character cut between two tokens, are held
 * back until the next piece decides; so the pieces sent, joined, are always
 * the final text. The model's bytes are made UTF-8 as they come: invalid
 * ones become U+FFFD (one per maximal subpart, as utf8_text.h writes them)
 * before the stop strings look at them, so a stop string may hold U+FFFD;
 * every piece sent is whole, valid UTF-8. */
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
    unsigned char pend[4]; /* the start of a character cut between two pieces */
    size_t npend;
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
/* Generation ended: the bytes still held back (a character left cut
 * becomes U+FFFD, and a stop string it completes still ends the text).
 * Returns 1 when that completed a stop string, else 0; -1 out of memory. */
int sq_stop_text_flush(sq_stop_text *t, const char **out, size_t *out_len);
void sq_stop_text_free(sq_stop_text *t);

#endif

/* Error reporting shared by every layer: a function that fails fills an
 * sq_err with one human-readable line (naming the file and the problem) and
 * returns -1. Callers add context with sq_err_prefix. */
#ifndef SQ_ERROR_H
#define SQ_ERROR_H

#include <stddef.h>

/* Exit status of a command or of a check: 0 success, 1 the thing checked
 * failed (damaged, a gate not met), 2 bad input (unreadable, not the kind of
 * file asked for, bad arguments). */
enum { SQ_EXIT_OK = 0, SQ_EXIT_FAIL = 1, SQ_EXIT_BADINPUT = 2 };

typedef struct sq_err {
    char msg[1024];
    /* What the problem is in, when a check can name it (a tensor of a .sqm
     * such as "layer.0.qkv.wsum"), else "". sq_err_set clears it,
     * sq_err_set_at sets it, sq_err_prefix keeps it. */
    char subject[160];
} sq_err;

#if defined(__GNUC__)
#define SQ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SQ_PRINTF(a, b)
#endif

/* Set the message (printf-style). Returns -1 so callers can `return sq_err_set(...)`. */
int sq_err_set(sq_err *err, const char *fmt, ...) SQ_PRINTF(2, 3);
/* sq_err_set, naming the subject (a tensor) the problem is in. */
int sq_err_set_at(sq_err *err, const char *subject, const char *fmt, ...) SQ_PRINTF(3, 4);
/* Prepend "prefix: " to the existing message. Returns -1. */
int sq_err_prefix(sq_err *err, const char *fmt, ...) SQ_PRINTF(2, 3);

#endif

/* Shared helpers for the libFuzzer harnesses: a private temporary directory
 * (created on first use, removed at exit) for parsers that only read paths,
 * and splitting one fuzz input into several NUL-separated parts. */
#ifndef SQ_FUZZ_UTIL_H
#define SQ_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* The private directory (absolute path); aborts if it cannot be made. */
const char *fuzz_tmpdir(void);

/* fuzz_tmpdir()/rel, malloc'd. */
char *fuzz_path(const char *rel);

/* Write len bytes to fuzz_tmpdir()/rel (replacing it); returns the full path
 * (malloc'd). Aborts on I/O failure: that is a harness problem, not a find. */
char *fuzz_write(const char *rel, const void *data, size_t len);

/* Remove fuzz_tmpdir()/rel if it exists. */
void fuzz_remove(const char *rel);

/* Split data at NUL bytes into at most max parts (the last part keeps any
 * further NULs). Returns the number of parts (>= 1); part i is
 * [ptr[i], ptr[i] + len[i]). JSON and YAML never contain NUL, so a NUL is a
 * natural separator between the files of one input. */
size_t fuzz_split(const uint8_t *data, size_t size, size_t max, const uint8_t **ptr,
                  size_t *len);

#endif

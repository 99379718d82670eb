/* Helpers shared by the Check unit tests: temp directories and files, and
 * a seeded random generator. */
#ifndef SQ_TEST_UTIL_H
#define SQ_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A fresh temp directory (removed by tu_rmtree). */
char *tu_mkdtemp(void);
void tu_rmtree(const char *dir);
/* Write bytes to dir/name, making name's folders; returns the malloc'd
 * full path. */
char *tu_write(const char *dir, const char *name, const void *data, size_t len);
char *tu_write_str(const char *dir, const char *name, const char *s);
int tu_count_files(const char *dir);

/* xorshift64 on *state (never 0): the next float, uniform in [-1, 1), 53
 * random bits rounded to float. The same sequence for the same seed. */
float tu_frand(uint64_t *state);

#endif

/* Helpers shared by the Check unit tests: temp directories and files. */
#ifndef SQ_TEST_UTIL_H
#define SQ_TEST_UTIL_H

#include <stddef.h>

/* A fresh temp directory (removed by tu_rmtree). */
char *tu_mkdtemp(void);
void tu_rmtree(const char *dir);
/* Write bytes to dir/name; returns the malloc'd full path. */
char *tu_write(const char *dir, const char *name, const void *data, size_t len);
char *tu_write_str(const char *dir, const char *name, const char *s);
int tu_count_files(const char *dir);

#endif

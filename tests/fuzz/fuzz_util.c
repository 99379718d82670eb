/* Private temp directory and input splitting for the harnesses. */
#include "fuzz_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[4096];

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void cleanup(void)
{
    /* Only the process that made the directory removes it (libFuzzer's
     * -fork/-jobs children inherit atexit handlers but not the directory). */
    if (g_dir[0])
        nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_tmpdir(void)
{
    if (g_dir[0])
        return g_dir;
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/squint-fuzz-XXXXXX", base);
    if (!mkdtemp(g_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(cleanup);
    return g_dir;
}

char *fuzz_path(const char *rel)
{
    const char *dir = fuzz_tmpdir();
    size_t n = strlen(dir) + 1 + strlen(rel) + 1;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

char *fuzz_write(const char *rel, const void *data, size_t len)
{
    char *p = fuzz_path(rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(p);
        abort();
    }
    const char *b = data;
    while (len > 0) {
        ssize_t w = write(fd, b, len);
        if (w <= 0) {
            perror(p);
            abort();
        }
        b += w;
        len -= (size_t)w;
    }
    close(fd);
    return p;
}

void fuzz_remove(const char *rel)
{
    char *p = fuzz_path(rel);
    unlink(p);
    free(p);
}

size_t fuzz_split(const uint8_t *data, size_t size, size_t max, const uint8_t **ptr,
                  size_t *len)
{
    size_t n = 0, start = 0;
    for (size_t i = 0; i < size && n + 1 < max; i++) {
        if (data[i] == 0) {
            ptr[n] = data + start;
            len[n] = i - start;
            n++;
            start = i + 1;
        }
    }
    ptr[n] = data + start;
    len[n] = size - start;
    return n + 1;
}

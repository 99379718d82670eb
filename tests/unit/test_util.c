#include "test_util.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *tu_mkdtemp(void)
{
    char *t = strdup("/tmp/squint-test-XXXXXX");
    if (!t || !mkdtemp(t)) {
        perror("mkdtemp");
        exit(99);
    }
    return t;
}

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s;
    (void)f;
    (void)w;
    return remove(p);
}

void tu_rmtree(const char *dir)
{
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

char *tu_write(const char *dir, const char *name, const void *data, size_t len)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    /* every missing folder of name ("a/b/c.json": a and a/b) */
    for (char *slash = p + strlen(dir) + 1; (slash = strchr(slash, '/')); slash++) {
        *slash = '\0';
        mkdir(p, 0755);
        *slash = '/';
    }
    FILE *fp = fopen(p, "wb");
    if (!fp || fwrite(data, 1, len, fp) != len) {
        perror(p);
        exit(99);
    }
    fclose(fp);
    return p;
}

char *tu_write_str(const char *dir, const char *name, const char *s)
{
    return tu_write(dir, name, s, strlen(s));
}

int tu_count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

float tu_frand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

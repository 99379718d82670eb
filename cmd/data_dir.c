#include "data_dir.h"

#include "calibrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SQ_REL_DATADIR
#define SQ_REL_DATADIR "../share/squint"
#endif

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory of the running executable, or "" when unknown. */
static void exe_dir(char *out, size_t cap)
{
    out[0] = '\0';
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0 || (size_t)n >= sizeof buf - 1)
        return;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(out, cap, "%s", buf[0] ? buf : "/");
}

int sq_data_file(const char *name, char *out, size_t cap, sq_err *err)
{
    char dir[4096];
    exe_dir(dir, sizeof dir);
    const char *env = getenv("SQUINT_DATA");
    char tried[3][4200];
    int nt = 0;
    if (env && *env)
        snprintf(tried[nt++], sizeof tried[0], "%s/%s", env, name);
    if (dir[0]) {
        snprintf(tried[nt++], sizeof tried[0], "%s/%s/%s", dir, SQ_REL_DATADIR, name);
        snprintf(tried[nt++], sizeof tried[0], "%s/calib/data/%s", dir, name);
    }
    for (int i = 0; i < nt; i++) {
        if (is_file(tried[i])) {
            if (strlen(tried[i]) >= cap)
                return sq_err_set(err, "%s: path too long", tried[i]);
            memcpy(out, tried[i], strlen(tried[i]) + 1);
            return 0;
        }
    }
    if (nt == 0)
        return sq_err_set(err, "%s: cannot find the executable's directory (/proc/self/exe) "
                               "and SQUINT_DATA is not set",
                          name);
    return sq_err_set(err, "%s not found (looked in %s%s%s%s%s); set SQUINT_DATA to the folder "
                           "holding it, or pass the data explicitly",
                      name, tried[0], nt > 1 ? ", " : "", nt > 1 ? tried[1] : "",
                      nt > 2 ? ", " : "", nt > 2 ? tried[2] : "");
}

const char *cli_bundled_corpus(bool pairs, char *buf, size_t cap)
{
    const char *env = getenv(pairs ? "SQUINT_BUNDLED_PAIR_CORPUS" : "SQUINT_BUNDLED_CORPUS");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return buf;
    }
    sq_err err = {0};
    return sq_data_file(pairs ? SQ_BUNDLED_PAIR_CORPUS : SQ_BUNDLED_CORPUS, buf, cap, &err) == 0
               ? buf
               : NULL;
}

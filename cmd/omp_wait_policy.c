/* The OpenMP wait policy of the squint program: a waiting thread spins
 * briefly, then sleeps.
 *
 * libgomp reads GOMP_SPINCOUNT / OMP_WAIT_POLICY once, in its constructor,
 * before main runs: a waiting thread spins 300,000 times by default (3-15 ms
 * by CPU) before it sleeps on a futex. On a busy or CPU-limited machine
 * that spin takes the CPU from the threads that have work (the README's
 * test command ran past its timeouts beside a CPU hog). A setenv in main is
 * too late, and so is one in .preinit_array (libc's own initialization
 * resets the environment after it).
 *
 * So the program defines getenv: the dynamic linker binds libgomp's getenv
 * to this one (an executable's definitions come first in symbol lookup),
 * which answers GOMP_SPINCOUNT with SQ_SPIN_COUNT when the environment sets
 * neither it nor any OMP_WAIT_POLICY*; the user's own settings always win.
 * Every other name reads the environment as libc's getenv does. libc's
 * internal lookups do not come here (they use hidden aliases), nor do child
 * processes see the value. Only the squint executable links this file; the
 * Python binding sets the variable only while it loads libsquint, and programs
 * linking libsquint choose their own (docs/threads.md). */
#include <stdlib.h>
#include <string.h>

#include "threads.h"

extern char **environ;

static char *lookup(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || strchr(name, '='))
        return NULL;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* Whether any OMP_WAIT_POLICY* is set (GCC 13's libgomp also reads
 * OMP_WAIT_POLICY_ALL, _DEV and _DEV_n, where a GOMP_SPINCOUNT would win). */
static int wait_policy_set(void)
{
    static const char prefix[] = "OMP_WAIT_POLICY";
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, prefix, sizeof prefix - 1) == 0)
            return 1;
    return 0;
}

/* Exported whatever the build's default visibility: libgomp must bind here. */
__attribute__((visibility("default"), used)) char *getenv(const char *name)
{
    char *v = lookup(name);
    if (!v && strcmp(name, "GOMP_SPINCOUNT") == 0 && !wait_policy_set())
        return (char *)SQ_SPIN_COUNT;
    return v;
}

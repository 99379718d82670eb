#include "cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Temporary outputs and trees in slots 0 .. SLOTS-1; mapped files in
 * SLOTS .. SLOTS + MAPPED_SLOTS - 1, so many mapped shards never take the
 * slots a temporary file needs. */
enum { SLOTS = 32, MAPPED_SLOTS = 64, PATH_CAP = 4096, TREE_DEPTH = 24 };
enum { FREE = 0, CLAIMED = 1, FILE_LIVE = 2, TREE_LIVE = 3, MAPPED = 4 };

static struct {
    int state; /* atomics only */
    char path[PATH_CAP];
} slots[SLOTS + MAPPED_SLOTS];

static int add(const char *path, int kind)
{
    size_t n = strlen(path);
    if (n >= PATH_CAP)
        return -1;
    const int lo = kind == MAPPED ? SLOTS : 0, hi = kind == MAPPED ? SLOTS + MAPPED_SLOTS : SLOTS;
    for (int i = lo; i < hi; i++) {
        int expect = FREE;
        if (__atomic_compare_exchange_n(&slots[i].state, &expect, CLAIMED, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            memcpy(slots[i].path, path, n + 1);
            __atomic_store_n(&slots[i].state, kind, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

int sq_cleanup_add_file(const char *path)
{
    return add(path, FILE_LIVE);
}

int sq_cleanup_add_tree(const char *path)
{
    return add(path, TREE_LIVE);
}

int sq_cleanup_add_mapped(const char *path)
{
    return add(path, MAPPED);
}

void sq_cleanup_forget(int id)
{
    if (id >= 0 && id < SLOTS + MAPPED_SLOTS)
        __atomic_store_n(&slots[id].state, FREE, __ATOMIC_RELEASE);
}

/* Remove everything under the open directory dfd, then close it. Only
 * syscalls (getdents64, unlinkat, openat): safe inside a signal handler. */
struct linux_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void empty_dir(int dfd, int depth)
{
    char buf[4096] __attribute__((aligned(8)));
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (n <= 0)
            break;
        int removed = 0;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            const char *name = d->d_name;
            if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
                continue;
            if (d->d_type == DT_DIR && depth < TREE_DEPTH) {
                int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                    empty_dir(sub, depth + 1);
                if (unlinkat(dfd, name, AT_REMOVEDIR) == 0)
                    removed++;
            } else if (unlinkat(dfd, name, 0) == 0) {
                removed++;
            }
        }
        if (removed) /* entries moved: read the directory again from the start */
            lseek(dfd, 0, SEEK_SET);
    }
    close(dfd);
}

static void say(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w, n -= (size_t)w;
    }
}

/* SIGBUS: a mapped file changed under the process (a page past a truncated
 * end, or a file rewritten in place); name the mapped files. */
static void say_bus(void)
{
    say("squint: bus error (SIGBUS) reading a mapped file: a file it reads was truncated or "
        "rewritten in place while in use. Mapped now:");
    for (int i = SLOTS; i < SLOTS + MAPPED_SLOTS; i++)
        if (__atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE) == MAPPED) {
            say(" ");
            say(slots[i].path);
        }
    say(". Replace a model file by writing a new file and renaming it over the old one "
        "(squint's own writers do; cp onto it does not): docs/limits.md\n");
}

static void on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGBUS)
        say_bus();
    for (int i = 0; i < SLOTS; i++) {
        int st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
        if (st == FILE_LIVE) {
            unlink(slots[i].path);
        } else if (st == TREE_LIVE) {
            int dfd = open(slots[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd >= 0)
                empty_dir(dfd, 0);
            rmdir(slots[i].path);
        }
    }
    errno = saved;
    /* End the way the signal would have: default action, raised again. */
    signal(sig, SIG_DFL);
    raise(sig);
}

void sq_cleanup_install_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGBUS};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask); /* one handler at a time */
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* Keep a signal the parent chose to ignore (nohup, SIGPIPE under
         * some shells) ignored. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

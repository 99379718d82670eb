/* cgroup CPU quota (cpu_quota.h): v2 cpu.max and v1 cfs_quota_us, found
 * through /proc/self/mountinfo so that a cgroup namespace (a container whose
 * /proc/self/cgroup says "/") and a host path ("/docker/abc" mounted as the
 * hierarchy's root) both resolve to the right directory. */
#include "cpu_quota.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "threads.h"

/* Whole CPUs for quota/period, rounded up and capped at SQ_THREADS_MAX;
 * 0 when either is not a positive count. */
static int cpus_of(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = quota / period + (quota % period != 0);
    return n > SQ_THREADS_MAX ? SQ_THREADS_MAX : (int)n;
}

/* A decimal count alone on its text (surrounding blanks and one newline
 * allowed); -1 when it is anything else. */
static long long parse_count(const char *s, const char **rest)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return -1;
    if (rest)
        *rest = end;
    return v;
}

static bool only_blanks(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n')
            return false;
    return true;
}

int sq_cpu_quota_v2_text(const char *cpu_max)
{
    const char *s = cpu_max, *rest;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "max", 3) == 0)
        return 0;
    long long quota = parse_count(s, &rest);
    if (quota < 0 || (*rest != ' ' && *rest != '\t'))
        return 0;
    long long period = parse_count(rest, &rest);
    if (period < 0 || !only_blanks(rest))
        return 0;
    return cpus_of(quota, period);
}

int sq_cpu_quota_v1_text(const char *quota_us, const char *period_us)
{
    const char *rest;
    /* -1 (no limit) and anything else that is not a count give 0 */
    long long quota = parse_count(quota_us, &rest);
    if (quota < 0 || !only_blanks(rest))
        return 0;
    long long period = parse_count(period_us, &rest);
    if (period < 0 || !only_blanks(rest))
        return 0;
    return cpus_of(quota, period);
}

/* A descriptor on path when it is a regular file (sq_open_regular: a FIFO
 * planted in a test tree must not block), else -1. */
static int open_regular(const char *path)
{
    uint64_t size;
    sq_err err = {0};
    return sq_open_regular(path, &size, &err);
}

/* A stream on it, or NULL. */
static FILE *stream_regular(const char *path)
{
    int fd = open_regular(path);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f && fd >= 0)
        close(fd);
    return f;
}

/* A small control file into buf; false when it is missing, not a regular
 * file (a FIFO planted in a test tree must not block), or longer than buf. */
static bool read_small(const char *path, char *buf, size_t cap)
{
    int fd = open_regular(path);
    if (fd < 0)
        return false;
    bool ok = true;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            ok = r == 0;
            break;
        }
        n += (size_t)r;
    }
    if (ok && n + 1 >= cap)
        ok = false; /* longer than any real control file */
    close(fd);
    buf[ok ? n : 0] = '\0';
    return ok;
}

/* The limit set in one cgroup directory, 0 for none. */
static int quota_in_dir(const char *dir, bool v2)
{
    char path[PATH_MAX + 32], a[128], b[128];
    if (v2) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        return read_small(path, a, sizeof a) ? sq_cpu_quota_v2_text(a) : 0;
    }
    snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
    if (!read_small(path, a, sizeof a))
        return 0;
    snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
    if (!read_small(path, b, sizeof b))
        return 0;
    return sq_cpu_quota_v1_text(a, b);
}

/* The smallest limit from dir up to (and including) the mount point. */
static int quota_along(const char *mountpoint, const char *dir, bool v2)
{
    char cur[PATH_MAX];
    if (strlen(dir) >= sizeof cur)
        return 0;
    strcpy(cur, dir);
    const size_t top = strlen(mountpoint);
    int best = 0;
    for (;;) {
        int q = quota_in_dir(cur, v2);
        if (q > 0 && (best == 0 || q < best))
            best = q;
        size_t len = strlen(cur);
        if (len <= top)
            break;
        char *slash = strrchr(cur, '/');
        if (!slash || (size_t)(slash - cur) < top)
            break;
        *slash = '\0';
    }
    return best;
}

/* mountinfo escapes blanks and backslashes as \ooo; decoded in place. */
static void unescape_octal(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* Whether the comma-separated list holds the element name. */
static bool list_has(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

/* Whether an absolute cgroup path has a "." or ".." component (a cgroup
 * outside this namespace shows as /../x): never followed. */
static bool has_dot_component(const char *p)
{
    for (const char *c = p; (c = strchr(c, '/'));) {
        c++;
        const size_t dots = c[0] != '.' ? 0 : c[1] != '.' ? 1 : 2;
        if (dots && (c[dots] == '/' || c[dots] == '\0'))
            return true;
    }
    return false;
}

typedef struct {
    char v2[PATH_MAX];    /* "0::PATH" */
    char v1cpu[PATH_MAX]; /* "N:...,cpu,...:PATH" */
    bool has_v2, has_v1;
} membership;

static void read_membership(const char *path, membership *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = stream_regular(path);
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || strlen(c2 + 1) >= PATH_MAX || c2[1] != '/' || has_dot_component(c2 + 1))
            continue;
        *c2 = '\0';
        const char *ctrl = c1 + 1, *cg = c2 + 1;
        if (strncmp(line, "0:", 2) == 0 && *ctrl == '\0') {
            strcpy(m->v2, cg);
            m->has_v2 = true;
        } else if (list_has(ctrl, "cpu")) {
            strcpy(m->v1cpu, cg);
            m->has_v1 = true;
        }
    }
    free(line);
    fclose(f);
}

/* The length of root when cgroup path cg lies at or under it (the mount
 * shows cg's subtree), else -1. */
static long contains(const char *root, const char *cg)
{
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0)
        return 1;
    if (strncmp(cg, root, rl) == 0 && (cg[rl] == '/' || cg[rl] == '\0'))
        return (long)rl;
    return -1;
}

/* The directory of cgroup path cg in a hierarchy mounted at mountpoint
 * with the given root (contains(root, cg) >= 0), into out; false when it
 * does not fit. */
static bool cgroup_dir(const char *mountpoint, const char *root, const char *cg, char *out,
                       size_t cap)
{
    const char *rel = strcmp(root, "/") == 0 ? cg : cg + strlen(root);
    if (strcmp(rel, "/") == 0)
        rel = "";
    int n = snprintf(out, cap, "%s%s", strcmp(mountpoint, "/") == 0 && *rel ? "" : mountpoint,
                     rel);
    return n > 0 && (size_t)n < cap;
}

/* The mount of one hierarchy that shows the process's cgroup: the one
 * whose root is the longest prefix of its path. */
typedef struct {
    long root_len; /* -1: none yet */
    char root[PATH_MAX], mnt[PATH_MAX];
} best_mount;

static void consider(best_mount *b, const char *root, const char *mnt, const char *cg)
{
    long len = contains(root, cg);
    if (len > b->root_len && strlen(root) < sizeof b->root && strlen(mnt) < sizeof b->mnt) {
        b->root_len = len;
        strcpy(b->root, root);
        strcpy(b->mnt, mnt);
    }
}

static int quota_of_mount(const best_mount *b, const char *cg, bool v2)
{
    char dir[PATH_MAX];
    if (b->root_len < 0 || !cgroup_dir(b->mnt, b->root, cg, dir, sizeof dir))
        return 0;
    return quota_along(b->mnt, dir, v2);
}

int sq_cpu_quota_from(const char *mountinfo_path, const char *cgroup_path)
{
    /* five PATH_MAX strings: on the heap, not a worker thread's stack */
    struct {
        membership m;
        best_mount b2, b1;
    } *c = malloc(sizeof *c);
    if (!c)
        return 0;
    membership *m = &c->m;
    best_mount *b2 = &c->b2, *b1 = &c->b1;
    read_membership(cgroup_path, m);
    FILE *f = m->has_v2 || m->has_v1 ? stream_regular(mountinfo_path) : NULL;
    if (!f) {
        free(c);
        return 0;
    }
    b2->root_len = b1->root_len = -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        /* id parent major:minor root mountpoint options [optional...] - fstype source super */
        char *field[8] = {0}, *save = NULL;
        int nf = 0;
        char *dash = strstr(line, " - ");
        if (!dash)
            continue;
        *dash = '\0';
        for (char *t = strtok_r(line, " ", &save); t && nf < 5; t = strtok_r(NULL, " ", &save))
            field[nf++] = t;
        char *tail_save = NULL;
        char *fstype = strtok_r(dash + 3, " \n", &tail_save);
        (void)strtok_r(NULL, " \n", &tail_save); /* source */
        char *super = strtok_r(NULL, " \n", &tail_save);
        if (nf < 5 || !fstype)
            continue;
        bool v2 = strcmp(fstype, "cgroup2") == 0;
        bool v1 = strcmp(fstype, "cgroup") == 0 && super && list_has(super, "cpu");
        if ((v2 && !m->has_v2) || (v1 && !m->has_v1) || (!v1 && !v2))
            continue;
        unescape_octal(field[3]);
        unescape_octal(field[4]);
        consider(v2 ? b2 : b1, field[3], field[4], v2 ? m->v2 : m->v1cpu);
    }
    free(line);
    fclose(f);
    int q2 = m->has_v2 ? quota_of_mount(b2, m->v2, true) : 0;
    int q1 = m->has_v1 ? quota_of_mount(b1, m->v1cpu, false) : 0;
    free(c);
    return q2 > 0 && (q1 == 0 || q2 < q1) ? q2 : q1;
}

int sq_cpu_quota(void)
{
    static int cached = -1;
    int q = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (q < 0) {
        q = sq_cpu_quota_from("/proc/self/mountinfo", "/proc/self/cgroup");
        __atomic_store_n(&cached, q, __ATOMIC_RELAXED);
    }
    return q;
}

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* ---- the files this process read: an output must not replace one ----
 * (quantize m --calib c.sqc -o c.sqc, embed --input x.jsonl --output
 * x.jsonl.) Recorded by device and inode where the readers open them. */
#define MAX_INPUTS 4096
static struct {
    dev_t dev;
    ino_t ino;
} g_inputs[MAX_INPUTS];
static int g_n_inputs;
static int g_inputs_on; /* set by sq_inputs_guard_begin (the CLI, per command) */
static pthread_mutex_t g_inputs_lock = PTHREAD_MUTEX_INITIALIZER;

void sq_inputs_guard_begin(void)
{
    pthread_mutex_lock(&g_inputs_lock);
    g_inputs_on = 1;
    g_n_inputs = 0;
    pthread_mutex_unlock(&g_inputs_lock);
}

static void note_stat(const struct stat *st)
{
    if (!S_ISREG(st->st_mode) || !__atomic_load_n(&g_inputs_on, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&g_inputs_lock);
    int known = 0;
    for (int i = 0; i < g_n_inputs && !known; i++)
        known = g_inputs[i].dev == st->st_dev && g_inputs[i].ino == st->st_ino;
    if (!known && g_n_inputs < MAX_INPUTS) {
        g_inputs[g_n_inputs].dev = st->st_dev;
        g_inputs[g_n_inputs].ino = st->st_ino;
        g_n_inputs++;
    }
    pthread_mutex_unlock(&g_inputs_lock);
}

void sq_note_input_fd(int fd)
{
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0)
        note_stat(&st);
}

void sq_note_input_path(const char *path)
{
    struct stat st;
    if (path && stat(path, &st) == 0)
        note_stat(&st);
}

int sq_refuse_input_as_output(const char *path, sq_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    pthread_mutex_lock(&g_inputs_lock);
    int hit = 0;
    for (int i = 0; i < g_n_inputs && !hit; i++)
        hit = g_inputs[i].dev == st.st_dev && g_inputs[i].ino == st.st_ino;
    pthread_mutex_unlock(&g_inputs_lock);
    return hit ? sq_err_set(err, "%s: is also an input of this command; refusing to overwrite it "
                                 "(write the output elsewhere)", path)
               : 0;
}

int sq_open_regular(const char *path, uint64_t *size, sq_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return sq_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sq_err_set(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sq_err_set(err, "%s: not a regular file", path);
    }
    *size = (uint64_t)st.st_size;
    note_stat(&st);
    return fd;
}

int sq_map_file(const char *path, sq_mapped_file *mf, sq_err *err)
{
    memset(mf, 0, sizeof *mf);
    uint64_t fsize;
    int fd = sq_open_regular(path, &fsize, err);
    if (fd < 0)
        return -1;
    mf->size = (size_t)fsize;
    if (mf->size > 0) {
        void *p = mmap(NULL, mf->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return sq_err_set(err, "%s: cannot map: %s", path, strerror(e));
        }
        mf->data = p;
    }
    close(fd);
    mf->path = strdup(path);
    mf->watch = mf->data ? sq_cleanup_add_mapped(path) : -1;
    return 0;
}

void sq_unmap_file(sq_mapped_file *mf)
{
    if (mf->data) {
        sq_cleanup_forget(mf->watch);
        munmap((void *)mf->data, mf->size);
    }
    free(mf->path);
    memset(mf, 0, sizeof *mf);
}

static int read_stream(FILE *fp, const char *path, size_t max_size, char **out, size_t *out_len,
                       sq_err *err);

int sq_read_file(const char *path, size_t max_size, char **out, size_t *out_len, sq_err *err)
{
    *out = NULL;
    if (out_len)
        *out_len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return sq_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    sq_note_input_fd(fileno(fp));
    return read_stream(fp, path, max_size, out, out_len, err);
}

int sq_read_regular_file(const char *path, size_t max_size, char **out, size_t *out_len,
                         sq_err *err)
{
    *out = NULL;
    if (out_len)
        *out_len = 0;
    uint64_t size;
    int fd = sq_open_regular(path, &size, err);
    if (fd < 0)
        return -1;
    if (size > max_size) {
        close(fd);
        return sq_err_set(err, "%s: file larger than the %zu-byte limit", path, max_size);
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return sq_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    }
    return read_stream(fp, path, max_size, out, out_len, err);
}

/* Read fp to its end (at most max_size bytes) and close it. */
static int read_stream(FILE *fp, const char *path, size_t max_size, char **out, size_t *out_len,
                       sq_err *err)
{
    size_t cap = max_size < 4096 ? max_size : 4096, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(fp);
        return sq_err_set(err, "%s: out of memory", path);
    }
    for (;;) {
        if (len == cap) {
            if (cap >= max_size) {
                if (fgetc(fp) == EOF)
                    break;
                free(buf);
                fclose(fp);
                return sq_err_set(err, "%s: file larger than the %zu-byte limit", path, max_size);
            }
            size_t ncap = cap * 2 > max_size ? max_size : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                fclose(fp);
                return sq_err_set(err, "%s: out of memory", path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, fp);
        len += n;
        if (n == 0) {
            if (ferror(fp)) {
                free(buf);
                fclose(fp);
                return sq_err_set(err, "%s: read error", path);
            }
            break;
        }
    }
    fclose(fp);
    buf[len] = '\0';
    *out = buf;
    if (out_len)
        *out_len = len;
    return 0;
}

int sq_atomic_open(sq_atomic_file *af, const char *path, sq_err *err)
{
    memset(af, 0, sizeof *af);
    if (!path || !*path)
        return sq_err_set(err, "the output path is empty");
    if (sq_refuse_input_as_output(path, err) != 0)
        return -1;
    /* An existing non-regular file (a pipe, /dev/stdout, /dev/full) is written
     * in place: renaming over a device node would replace it. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            return sq_err_set(err, "%s: is a directory", path);
        af->fp = fopen(path, "wb");
        if (!af->fp)
            return sq_err_set(err, "%s: cannot open output: %s", path, strerror(errno));
        af->path = strdup(path);
        return 0;
    }
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return sq_err_set(err, "%s: out of memory", path);
    /* The temp file lives in the same directory so rename() is atomic. */
    snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return sq_err_set(err, "%s: cannot create output: %s", path, strerror(e));
    }
    fchmod(fd, 0644);
    af->fp = fdopen(fd, "wb");
    if (!af->fp) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return sq_err_set(err, "%s: cannot open output: %s", path, strerror(e));
    }
    af->tmp_path = tmp;
    af->path = strdup(path);
    af->cleanup_slot = sq_cleanup_add_file(tmp) + 1;
    return 0;
}

static void atomic_reset(sq_atomic_file *af)
{
    sq_cleanup_forget(af->cleanup_slot - 1);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}

int sq_atomic_commit(sq_atomic_file *af, sq_err *err)
{
    int rc = 0;
    if (!af->tmp_path) { /* written in place (not a regular file) */
        if (fflush(af->fp) != 0 || ferror(af->fp))
            rc = sq_err_write_failed(err, af->path);
        if (fclose(af->fp) != 0 && rc == 0)
            rc = sq_err_set(err, "%s: close failed: %s", af->path, strerror(errno));
        af->fp = NULL;
        atomic_reset(af);
        return rc;
    }
    if (fflush(af->fp) != 0 || ferror(af->fp))
        rc = sq_err_write_failed(err, af->path);
    else if (fsync(fileno(af->fp)) != 0)
        rc = sq_err_set(err, "%s: fsync failed: %s", af->path, strerror(errno));
    if (fclose(af->fp) != 0 && rc == 0)
        rc = sq_err_set(err, "%s: close failed: %s", af->path, strerror(errno));
    af->fp = NULL;
    /* again: an input may have been read after the output was opened */
    if (rc == 0)
        rc = sq_refuse_input_as_output(af->path, err);
    if (rc == 0 && rename(af->tmp_path, af->path) != 0)
        rc = sq_err_set(err, "%s: cannot rename output into place: %s", af->path, strerror(errno));
    if (rc != 0) {
        unlink(af->tmp_path);
    } else {
        char *dcopy = strdup(af->path);
        if (dcopy) {
            int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                fsync(dfd);
                close(dfd);
            }
            free(dcopy);
        }
    }
    atomic_reset(af);
    return rc;
}

int sq_err_write_failed(sq_err *err, const char *what)
{
    const int e = errno;
    return sq_err_set(err, "%s: write failed: %s", what, e ? strerror(e) : "I/O error");
}

void sq_atomic_abort(sq_atomic_file *af)
{
    if (af->fp)
        fclose(af->fp);
    if (af->tmp_path)
        unlink(af->tmp_path);
    atomic_reset(af);
}

char *sq_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

int sq_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int sq_dir_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

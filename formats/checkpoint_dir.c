#include "checkpoint_dir.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "json_util.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *root)
{
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Accept only relative paths made of ordinary components. */
static int safe_member_path(const char *p)
{
    if (!p[0] || p[0] == '/' || strlen(p) > 1024)
        return 0;
    const char *s = p;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if ((n == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        s += n;
        if (*s == '/')
            s++;
    }
    return 1;
}

/* Members squint never reads (other frameworks' weights: PyTorch, TF,
 * Flax, ONNX, GGUF...) are not extracted: a Hugging Face repository packed
 * whole often carries several copies of the weights. */
static int unused_member(const char *path)
{
    static const char *const dirs[] = {"onnx/", "openvino/", "coreml/", NULL};
    static const char *const prefixes[] = {"pytorch_model", "tf_model", "flax_model",
                                           "rust_model", "model.onnx", NULL};
    static const char *const suffixes[] = {".h5",  ".msgpack", ".onnx", ".onnx_data", ".ot",
                                           ".pt",  ".pth",     ".ckpt", ".gguf",      ".mlmodel",
                                           NULL};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (int i = 0; dirs[i]; i++) { /* a component anywhere in the path */
        for (const char *p = path; (p = strstr(p, dirs[i])) != NULL; p++)
            if (p == path || p[-1] == '/')
                return 1;
    }
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    size_t n = strlen(base);
    for (int i = 0; suffixes[i]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strcmp(base + n - k, suffixes[i]) == 0)
            return 1;
    }
    return 0;
}

/* A member squint parses as JSON or text: bounded like the files it
 * becomes (SQ_JSON_MAX_FILE), checked from the archive header before a
 * byte is extracted. */
static int text_member(const char *path)
{
    size_t n = strlen(path);
    return (n >= 5 && strcmp(path + n - 5, ".json") == 0) ||
           (n >= 4 && strcmp(path + n - 4, ".txt") == 0);
}

static int mkdirs(const char *path)
{
    char *tmp = strdup(path);
    if (!tmp)
        return -1;
    for (char *s = tmp + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
                free(tmp);
                return -1;
            }
            *s = '/';
        }
    }
    int rc = (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
    free(tmp);
    return rc;
}

static int extract(const char *arc_path, const char *root, sq_err *err)
{
    struct archive *a = archive_read_new();
    if (!a)
        return sq_err_set(err, "%s: out of memory", arc_path);
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_zip(a);
    int rc = -1;
    sq_note_input_path(arc_path);
    if (archive_read_open_filename(a, arc_path, 1 << 16) != ARCHIVE_OK) {
        /* a file that is no archive: say what a model argument may be (a
         * llama2.c checkpoint lands here too) */
        if (archive_errno(a) == EILSEQ) /* libarchive's ARCHIVE_ERRNO_FILE_FORMAT */
            sq_err_set(err, "%s: not a model squint embeds with: neither a .sqm, a checkpoint "
                            "folder nor a .tar / .zip of one (a llama2.c .bin is a causal LM: "
                            "run it with squint generate, perplexity or serve)",
                       arc_path);
        else
            sq_err_set(err, "%s: cannot read archive: %s", arc_path, archive_error_string(a));
        goto out;
    }
    struct archive_entry *ent;
    uint64_t total = 0;
    int count = 0;
    char buf[1 << 16];
    for (;;) {
        int r = archive_read_next_header(a, &ent);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            sq_err_set(err, "%s: corrupt archive: %s", arc_path, archive_error_string(a));
            goto out;
        }
        if (++count > SQ_ARCHIVE_MAX_ENTRIES) {
            sq_err_set(err, "%s: more than %d archive entries", arc_path, SQ_ARCHIVE_MAX_ENTRIES);
            goto out;
        }
        const char *name = archive_entry_pathname(ent);
        if (!name || !safe_member_path(name)) {
            sq_err_set(err, "%s: archive member \"%s\" has an unsafe path", arc_path,
                       name ? name : "(null)");
            goto out;
        }
        mode_t type = archive_entry_filetype(ent);
        if (unused_member(name))
            continue;
        char *dst = sq_path_join(root, name);
        if (!dst) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        if (type == AE_IFDIR) {
            int m = mkdirs(dst);
            free(dst);
            if (m != 0) {
                sq_err_set(err, "%s: cannot create directory for \"%s\"", arc_path, name);
                goto out;
            }
            continue;
        }
        if (type != AE_IFREG) {
            free(dst); /* links, devices etc. are skipped, never followed */
            continue;
        }
        if (text_member(name) && archive_entry_size_is_set(ent) &&
            archive_entry_size(ent) > (la_int64_t)SQ_JSON_MAX_FILE) {
            free(dst);
            sq_err_set(err, "%s: archive member \"%s\" is %lld bytes, over the %u-byte limit of "
                            "the files squint reads as text",
                       arc_path, name, (long long)archive_entry_size(ent), SQ_JSON_MAX_FILE);
            goto out;
        }
        char *slash = strrchr(dst, '/');
        *slash = '\0';
        int m = mkdirs(dst);
        *slash = '/';
        int fd = m == 0 ? open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
        if (fd < 0) {
            sq_err_set(err, "%s: cannot extract \"%s\": %s", arc_path, name, strerror(errno));
            free(dst);
            goto out;
        }
        free(dst);
        for (;;) {
            la_ssize_t n = archive_read_data(a, buf, sizeof buf);
            if (n == 0)
                break;
            if (n < 0) {
                close(fd);
                sq_err_set(err, "%s: corrupt data in \"%s\": %s", arc_path, name,
                           archive_error_string(a));
                goto out;
            }
            total += (uint64_t)n;
            if (total > SQ_ARCHIVE_MAX_TOTAL) {
                close(fd);
                sq_err_set(err, "%s: archive expands beyond %llu bytes", arc_path,
                           (unsigned long long)SQ_ARCHIVE_MAX_TOTAL);
                goto out;
            }
            if (write(fd, buf, (size_t)n) != n) {
                close(fd);
                sq_err_set(err, "%s: cannot write extracted \"%s\": %s", arc_path, name,
                           strerror(errno));
                goto out;
            }
        }
        close(fd);
    }
    rc = 0;
out:
    archive_read_free(a);
    return rc;
}

/* The checkpoint is the root itself or its single top-level directory. */
static char *find_config_dir(const char *root)
{
    char *cfg = sq_path_join(root, "config.json");
    int here = cfg && sq_file_exists(cfg);
    free(cfg);
    if (here)
        return strdup(root);
    DIR *d = opendir(root);
    if (!d)
        return NULL;
    char *found = NULL;
    int ndirs = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        char *sub = sq_path_join(root, e->d_name);
        if (sub && sq_dir_exists(sub)) {
            ndirs++;
            free(found);
            found = sub;
        } else {
            free(sub);
        }
    }
    closedir(d);
    if (ndirs != 1) {
        free(found);
        return NULL;
    }
    char *c2 = sq_path_join(found, "config.json");
    int ok = c2 && sq_file_exists(c2);
    free(c2);
    if (!ok) {
        free(found);
        return NULL;
    }
    return found;
}

int sq_checkpoint_open(const char *arg, sq_checkpoint_dir *cd, sq_err *err)
{
    memset(cd, 0, sizeof *cd);
    struct stat st;
    if (stat(arg, &st) != 0)
        return sq_err_set(err, "%s: %s", arg, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        cd->dir = strdup(arg);
        return cd->dir ? 0 : sq_err_set(err, "out of memory");
    }
    if (!S_ISREG(st.st_mode))
        return sq_err_set(err, "%s: not a directory or an archive file", arg);
    const char *tmpdir = getenv("TMPDIR");
    char *tmpl = sq_path_join(tmpdir && *tmpdir ? tmpdir : "/tmp", "squint-model-XXXXXX");
    if (!tmpl || !mkdtemp(tmpl)) {
        free(tmpl);
        return sq_err_set(err, "cannot create a temporary directory to extract %s", arg);
    }
    cd->tmp_root = tmpl;
    cd->cleanup_slot = sq_cleanup_add_tree(tmpl) + 1; /* removed on a signal too */
    if (extract(arg, tmpl, err) != 0) {
        sq_checkpoint_close(cd);
        return -1;
    }
    cd->dir = find_config_dir(tmpl);
    if (!cd->dir) {
        sq_checkpoint_close(cd);
        return sq_err_set(err, "%s: archive holds no config.json at its top level or in a single top-level directory", arg);
    }
    return 0;
}

void sq_checkpoint_close(sq_checkpoint_dir *cd)
{
    if (cd->tmp_root)
        remove_tree(cd->tmp_root);
    sq_cleanup_forget(cd->cleanup_slot - 1);
    free(cd->tmp_root);
    free(cd->dir);
    memset(cd, 0, sizeof *cd);
}

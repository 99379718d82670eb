#include "corpus_input.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fileio.h"

#define INPUT_BLOCK ((size_t)64 << 10)

struct sq_corpus_input {
    sq_container_kind kind;
    char *path;
    int fd;                /* plain files */
    struct archive *ar;    /* compressed files and archives */
    int members_given;     /* plain and compressed: the single member was handed out */
    char *member_name;
    char *display_name;
};

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcasecmp(s + n - m, suffix) == 0;
}

static const char *const archive_suffixes[] = {
    ".tar", ".tar.gz", ".tgz", ".tar.zst", ".tzst", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".zip",
};
static const char *const compression_suffixes[] = {".gz", ".zst", ".xz", ".bz2"};

sq_container_kind sq_corpus_container_of(const char *name)
{
    for (size_t i = 0; i < sizeof archive_suffixes / sizeof *archive_suffixes; i++)
        if (ends_with(name, archive_suffixes[i]))
            return SQ_CONTAINER_ARCHIVE;
    for (size_t i = 0; i < sizeof compression_suffixes / sizeof *compression_suffixes; i++)
        if (ends_with(name, compression_suffixes[i]))
            return SQ_CONTAINER_COMPRESSED;
    return SQ_CONTAINER_PLAIN;
}

/* "dir/a.jsonl.zst" -> "a.jsonl" (the name that decides the format). */
static char *inner_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *s = strdup(base);
    if (!s)
        return NULL;
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

static const char *ar_msg(struct archive *ar)
{
    const char *m = archive_error_string(ar);
    return m ? m : "truncated or corrupt data";
}

sq_corpus_input *sq_corpus_input_open(const char *path, sq_err *err)
{
    sq_corpus_input *in = calloc(1, sizeof *in);
    if (!in || !(in->path = strdup(path))) {
        free(in);
        sq_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    in->fd = -1;
    in->kind = sq_corpus_container_of(path);
    if (in->kind == SQ_CONTAINER_PLAIN) {
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0) {
            sq_err_set(err, "%s: cannot open: %s", path, strerror(errno));
            sq_corpus_input_close(in);
            return NULL;
        }
        sq_note_input_fd(in->fd);
        return in;
    }
    in->ar = archive_read_new();
    if (!in->ar) {
        sq_err_set(err, "%s: out of memory", path);
        sq_corpus_input_close(in);
        return NULL;
    }
    archive_read_support_filter_all(in->ar);
    if (in->kind == SQ_CONTAINER_ARCHIVE)
        archive_read_support_format_all(in->ar);
    else
        archive_read_support_format_raw(in->ar);
    sq_note_input_path(path);
    if (archive_read_open_filename(in->ar, path, INPUT_BLOCK) != ARCHIVE_OK) {
        sq_err_set(err, "%s: cannot open %s: %s", path,
                   in->kind == SQ_CONTAINER_ARCHIVE ? "archive" : "compressed file",
                   ar_msg(in->ar));
        sq_corpus_input_close(in);
        return NULL;
    }
    return in;
}

static int set_names(sq_corpus_input *in, char *member, const char *display_sep, sq_err *err)
{
    free(in->member_name);
    free(in->display_name);
    in->member_name = member;
    in->display_name = NULL;
    if (!member)
        return sq_err_set(err, "%s: out of memory", in->path);
    if (display_sep) {
        size_t n = strlen(in->path) + strlen(member) + 2;
        in->display_name = malloc(n);
        if (in->display_name)
            snprintf(in->display_name, n, "%s%s%s", in->path, display_sep, member);
    } else {
        in->display_name = strdup(in->path);
    }
    if (!in->display_name)
        return sq_err_set(err, "%s: out of memory", in->path);
    return 0;
}

static int next_archive_member(sq_corpus_input *in, sq_err *err)
{
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(in->ar, &e);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r < ARCHIVE_WARN)
            return sq_err_set(err, "%s: corrupt or unsupported archive: %s", in->path,
                              ar_msg(in->ar));
        if (archive_entry_filetype(e) != AE_IFREG)
            continue; /* directories, links, devices carry no text */
        const char *name = archive_entry_pathname(e);
        if (!name || !*name)
            return sq_err_set(err, "%s: archive member without a name", in->path);
        if (sq_corpus_container_of(name) != SQ_CONTAINER_PLAIN)
            return sq_err_set(err, "%s:%s: compressed or archive members inside an archive are "
                              "not supported; extract it first", in->path, name);
        return set_names(in, strdup(name), ":", err) == 0 ? 1 : -1;
    }
}

static int next_compressed_member(sq_corpus_input *in, sq_err *err)
{
    struct archive_entry *e;
    int r = archive_read_next_header(in->ar, &e);
    if (r == ARCHIVE_EOF)
        return sq_err_set(err, "%s: empty compressed stream", in->path);
    if (r < ARCHIVE_WARN)
        return sq_err_set(err, "%s: corrupt compressed file: %s", in->path, ar_msg(in->ar));
    /* The raw format also accepts uncompressed bytes; a name that promises
     * compression must hold a compressed stream. */
    if (archive_filter_count(in->ar) < 2 || archive_filter_code(in->ar, 0) == ARCHIVE_FILTER_NONE)
        return sq_err_set(err, "%s: not a compressed stream (the name ends in a compression "
                          "suffix)", in->path);
    return set_names(in, inner_name(in->path), NULL, err) == 0 ? 1 : -1;
}

int sq_corpus_input_next_member(sq_corpus_input *in, const char **member_name,
                                const char **display_name, sq_err *err)
{
    int r;
    if (in->kind == SQ_CONTAINER_ARCHIVE) {
        r = next_archive_member(in, err);
    } else if (in->members_given) {
        r = 0;
    } else {
        in->members_given = 1;
        if (in->kind == SQ_CONTAINER_COMPRESSED) {
            r = next_compressed_member(in, err);
        } else {
            const char *base = strrchr(in->path, '/');
            r = set_names(in, strdup(base ? base + 1 : in->path), NULL, err) == 0 ? 1 : -1;
        }
    }
    if (r == 1) {
        *member_name = in->member_name;
        *display_name = in->display_name;
    }
    return r;
}

ssize_t sq_corpus_input_read(void *ctx, void *buf, size_t n, sq_err *err)
{
    sq_corpus_input *in = ctx;
    if (in->kind == SQ_CONTAINER_PLAIN) {
        for (;;) {
            ssize_t r = read(in->fd, buf, n);
            if (r >= 0)
                return r;
            if (errno != EINTR)
                return sq_err_set(err, "%s: read error: %s", in->path, strerror(errno));
        }
    }
    la_ssize_t r = archive_read_data(in->ar, buf, n);
    if (r < 0)
        return sq_err_set(err, "%s: corrupt %s: %s", in->display_name ? in->display_name : in->path,
                          in->kind == SQ_CONTAINER_ARCHIVE ? "archive member" : "compressed stream",
                          ar_msg(in->ar));
    return r;
}

void sq_corpus_input_close(sq_corpus_input *in)
{
    if (!in)
        return;
    if (in->fd >= 0)
        close(in->fd);
    if (in->ar)
        archive_read_free(in->ar);
    free(in->member_name);
    free(in->display_name);
    free(in->path);
    free(in);
}

/* File helpers: read-only mappings, bounded whole-file reads, and atomic
 * writes (temp file in the target directory, fsync, rename) so a crash or a
 * failed write never leaves a partial file at the output path. */
#ifndef SQ_FILEIO_H
#define SQ_FILEIO_H

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

#include "sq_error.h"

typedef struct sq_mapped_file {
    const uint8_t *data;
    size_t size;
    char *path;
    int watch; /* its cleanup.h slot (named if the mapping faults), -1: none */
} sq_mapped_file;

/* Open a regular file read-only (symlinks to one are fine; O_NONBLOCK keeps
 * a FIFO from blocking the open before fstat refuses it). Returns the fd and
 * *size, or -1 with err naming the file. */
int sq_open_regular(const char *path, uint64_t *size, sq_err *err);

/* Inputs and outputs of one command: after sq_inputs_guard_begin (the CLI
 * calls it once per command; a library user who wants the rule calls it per
 * job) every reader records the regular files it opens (sq_open_regular,
 * sq_read_file, and the corpus, archive and hash readers through these
 * two), and sq_atomic_open / sq_atomic_commit refuse an output path that is
 * one of them (same device and inode: hard links and symlinks included), so
 * no command can replace its own input. Without it nothing is recorded. */
void sq_inputs_guard_begin(void);
void sq_note_input_fd(int fd);
void sq_note_input_path(const char *path);
/* -1 with err when path is a regular file this process has read. */
int sq_refuse_input_as_output(const char *path, sq_err *err);

/* mmap a whole file read-only. Empty files map to data == NULL, size 0. */
int sq_map_file(const char *path, sq_mapped_file *mf, sq_err *err);
void sq_unmap_file(sq_mapped_file *mf);

/* Read a whole file into a NUL-terminated heap buffer; refuses files larger
 * than max_size bytes. Any file that can be read, pipes included (text
 * inputs: `--input <(cmd)`). */
int sq_read_file(const char *path, size_t max_size, char **out, size_t *out_len, sq_err *err);

/* The same for regular files only (sq_open_regular): what a model, config,
 * tokenizer or recipe file must be. A FIFO is refused at once instead of
 * blocking the open forever. */
int sq_read_regular_file(const char *path, size_t max_size, char **out, size_t *out_len,
                         sq_err *err);

/* Atomic output. sq_atomic_open creates a temp file next to `path`;
 * sq_atomic_commit flushes, fsyncs and renames it over `path` (and fsyncs the
 * directory); sq_atomic_abort removes the temp file. After commit or abort the
 * struct is reset. */
typedef struct sq_atomic_file {
    FILE *fp;
    char *path;
    char *tmp_path;
    int cleanup_slot; /* sq_cleanup_add_file id + 1 (removed on a signal); 0: none */
} sq_atomic_file;

int sq_atomic_open(sq_atomic_file *af, const char *path, sq_err *err);
int sq_atomic_commit(sq_atomic_file *af, sq_err *err);
void sq_atomic_abort(sq_atomic_file *af);
/* "<what>: write failed: <the reason>" from errno as the failed write left
 * it (call before anything else can change errno); returns -1. */
int sq_err_write_failed(sq_err *err, const char *what);

/* Path helpers. */
char *sq_path_join(const char *dir, const char *name); /* malloc'd */
int sq_file_exists(const char *path);
int sq_dir_exists(const char *path);

#endif

/* The container layer of corpus reading: one path on disk becomes a sequence
 * of members, each a byte stream. A plain file is one member; a single
 * compressed file (.gz, .zst, .xz, .bz2) is one member, decompressed on the
 * fly; an archive (.tar, .tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2, .zip)
 * yields its regular members in archive order. Everything streams through
 * libarchive or read(2); no container is loaded whole. */
#ifndef SQ_CORPUS_INPUT_H
#define SQ_CORPUS_INPUT_H

#include <stddef.h>
#include <sys/types.h>

#include "sq_error.h"

typedef enum sq_container_kind {
    SQ_CONTAINER_PLAIN,
    SQ_CONTAINER_COMPRESSED,
    SQ_CONTAINER_ARCHIVE,
} sq_container_kind;

typedef struct sq_corpus_input sq_corpus_input;

/* Which container a file name denotes (by its extensions, case-insensitive). */
sq_container_kind sq_corpus_container_of(const char *name);

/* Open a path; its container is chosen by name. */
sq_corpus_input *sq_corpus_input_open(const char *path, sq_err *err);

/* Advance to the next member. Returns 1 with *member_name (the name that
 * decides the member's format: "a.jsonl" for "a.jsonl.zst", the entry name
 * inside an archive) and *display_name (for messages: "dir/a.jsonl.zst",
 * "corpus.tar.gz:a.jsonl"), both valid until the next call; 0 when there are
 * no more members; -1 on a corrupt container, or a member that is itself
 * compressed or an archive (nesting is not supported). */
int sq_corpus_input_next_member(sq_corpus_input *in, const char **member_name,
                                const char **display_name, sq_err *err);

/* Read bytes of the current member (an sq_byte_read_fn: ctx is the input).
 * Returns the count, 0 at the member's end, -1 on corrupt data. */
ssize_t sq_corpus_input_read(void *in, void *buf, size_t n, sq_err *err);

void sq_corpus_input_close(sq_corpus_input *in);

#endif

/* Fuzz the calibration corpus readers (calib/corpus.h): the input is written
 * to temp files whose extensions choose the reader: text, JSONL (default
 * field, a dotted field, text pairs, forced QASPER), the QASPER JSON document, and the
 * compressed / archive containers its magic bytes suggest (plus .tar.gz
 * always, so libarchive also sees arbitrary bytes). Every sample is read. */
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "fuzz_util.h"

#define MAX_SAMPLES 20000      /* bound the work per input */
#define MAX_LINE (64u << 10)   /* smaller than the 16 MiB default: speed */

static void read_all(const char *path, const sq_corpus_opts *o)
{
    sq_err err;
    sq_corpus *c = sq_corpus_open(path, o, &err);
    if (!c)
        return;
    const char *text;
    size_t len;
    for (int i = 0; i < MAX_SAMPLES; i++) {
        int rc = sq_corpus_next(c, &text, &len, &err);
        if (rc != 1)
            break;
        if (o->pair_field) { /* a pair: "a NUL b", each side NUL-free */
            size_t na, nb;
            const char *b;
            if (!sq_corpus_split_pair(text, len, &na, &b, &nb) || strlen(text) != na ||
                strlen(b) != nb)
                abort();
        } else if (strlen(text) != len) {
            abort(); /* samples are NUL-free and NUL-terminated */
        }
        sq_corpus_where(c);
    }
    if (sq_corpus_n_files(c) != 1 || !sq_corpus_files(c))
        abort();
    sq_corpus_close(c);
}

static void try_ext(const char *ext, const uint8_t *data, size_t size, const sq_corpus_opts *o)
{
    char rel[64] = "in";
    strcat(rel, ext);
    char *path = fuzz_write(rel, data, size);
    read_all(path, o);
    fuzz_remove(rel);
    free(path);
}

static int starts(const uint8_t *d, size_t n, const char *magic, size_t m)
{
    return n >= m && memcmp(d, magic, m) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sq_corpus_opts plain = {.format = SQ_CORPUS_AUTO, .max_line = MAX_LINE};
    sq_corpus_opts field = {.format = SQ_CORPUS_JSONL, .field = "meta.text", .max_line = MAX_LINE};
    sq_corpus_opts qasper = {.format = SQ_CORPUS_QASPER, .qasper_parts = "all", .max_line = MAX_LINE};
    sq_corpus_opts pairs = {.format = SQ_CORPUS_JSONL, .field = "query", .pair_field = "document",
                            .max_line = MAX_LINE};

    try_ext(".txt", data, size, &plain);
    try_ext(".jsonl", data, size, &plain);
    try_ext(".jsonl", data, size, &field);
    try_ext(".jsonl", data, size, &pairs);
    try_ext(".jsonl", data, size, &qasper);
    try_ext(".json", data, size, &plain);
    try_ext(".tar.gz", data, size, &plain);

    if (starts(data, size, "\x1f\x8b", 2))
        try_ext(".jsonl.gz", data, size, &plain);
    if (starts(data, size, "\x28\xb5\x2f\xfd", 4)) {
        try_ext(".jsonl.zst", data, size, &plain);
        try_ext(".tar.zst", data, size, &plain);
    }
    if (starts(data, size, "\xfd" "7zXZ", 5)) {
        try_ext(".txt.xz", data, size, &plain);
        try_ext(".tar.xz", data, size, &plain);
    }
    if (starts(data, size, "BZh", 3)) {
        try_ext(".txt.bz2", data, size, &plain);
        try_ext(".tar.bz2", data, size, &plain);
    }
    if (starts(data, size, "PK", 2))
        try_ext(".zip", data, size, &plain);
    if (size >= 262 && memcmp(data + 257, "ustar", 5) == 0)
        try_ext(".tar", data, size, &plain);
    return 0;
}

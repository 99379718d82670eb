/* Content hashes for provenance: xxh64 of files, and of the set of files that
 * define a checkpoint (config, weights, tokenizer, pooling). */
#ifndef SQ_FILE_HASH_H
#define SQ_FILE_HASH_H

#include <stdint.h>

#include "sq_error.h"

typedef struct sq_file_digest {
    char *name;    /* path relative to the hashed directory, or as given */
    uint64_t size;
    uint64_t xxh64;
} sq_file_digest;

/* xxh64 (seed 0) of a whole file, streamed. */
int sq_hash_file(const char *path, uint64_t *size, uint64_t *xxh64, sq_err *err);

typedef struct sq_model_digest {
    sq_file_digest *files; /* in a fixed order */
    int n_files;
    uint64_t combined;     /* xxh64 over (name, size, xxh64) of every file, in order */
} sq_model_digest;

/* Hash the files of a Hugging Face checkpoint directory that decide its
 * outputs: config.json, the safetensors weights (single file, or the index and
 * its shards sorted by name), tokenizer.json, vocab.txt, tokenizer_config.json,
 * modules.json and the pooling config, whichever exist. */
int sq_model_digest_dir(const char *dir, sq_model_digest *d, sq_err *err);
/* The same over the given files (a llama2.c checkpoint and its tokenizer),
 * each recorded by its base name, in the order given; a missing one fails. */
int sq_model_digest_files(const char *const *paths, int n, sq_model_digest *d, sq_err *err);
void sq_model_digest_free(sq_model_digest *d);

#endif

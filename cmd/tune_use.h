/* Using a tune file (formats/tune_file.h) from `squint serve` / `bench`:
 * the model's identity, the default location next to the model, and the
 * checks that the file was made for this model on this CPU. */
#ifndef SQ_TUNE_USE_H
#define SQ_TUNE_USE_H

#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"
#include "tune_file.h"

/* Size and xxh64 of a model: a file's bytes, or for a checkpoint directory
 * the sum of its files' sizes and the combined digest (file_hash.h). */
int tune_model_identity(const char *model, uint64_t *size, uint64_t *xxh64, sq_err *err);

/* MODEL.tune.json (a directory's trailing slashes dropped); malloc'd. */
char *tune_default_path(const char *model);

/* The tune file for a command on `model`: `explicit_path` when given (a
 * file for another model or CPU, or one that does not fit this process's
 * cores, is refused: -1 with err), else the default location when it
 * exists (the same mismatches are warned about on stderr, by name, and the
 * file ignored). Returns 1 with *t filled and a line on stderr saying which
 * file was used, 0 when none applies, -1 on error. */
int tune_load_for(const char *cmd, const char *model, const char *explicit_path, sq_tune_file *t,
                  sq_err *err);

#endif

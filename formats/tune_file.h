/* The tune file (`squint tune -o FILE`, read by `serve` / `bench --tune`):
 * small JSON naming the model (path, size, xxh64), the CPU (model name,
 * usable cores), the objective and the chosen instances / threads / batch
 * with their measured figures. docs/commands.md "squint tune" documents the fields.
 * The reader treats the file as hostile: bounded size, every field typed
 * and range-checked, strings bounded and without NUL. */
#ifndef SQ_TUNE_FILE_H
#define SQ_TUNE_FILE_H

#include <stdint.h>

#include "sq_error.h"

#define SQ_TUNE_FORMAT "squint-tune"
#define SQ_TUNE_VERSION 1
#define SQ_TUNE_MAX_FILE (64u << 10)
#define SQ_TUNE_MAX_CORES 1024

typedef enum sq_tune_objective { SQ_TUNE_THROUGHPUT = 0, SQ_TUNE_LATENCY } sq_tune_objective;

typedef struct sq_tune_file {
    char squint_version[32];
    char model_path[4096];
    uint64_t model_size, model_xxh64;
    char cpu_name[128];
    int usable_cores;
    sq_tune_objective objective;
    int seq;                               /* tokens per sequence measured */
    int instances, threads, batch;         /* the choice */
    double seq_per_s, p50_ms, p95_ms;      /* its measured figures */
    char method[16];                       /* "search" or "exhaustive" */
    int points_measured, grid_points;
    double budget_s;
} sq_tune_file;

const char *sq_tune_objective_name(sq_tune_objective o);
/* "throughput" / "latency" -> 0, else -1. */
int sq_tune_objective_parse(const char *s, sq_tune_objective *out);

/* Write atomically (temp + fsync + rename). */
int sq_tune_file_write(const char *path, const sq_tune_file *t, sq_err *err);
/* Read and validate; -1 with err naming the file and the field. */
int sq_tune_file_read(const char *path, sq_tune_file *t, sq_err *err);
/* The same from a buffer (the fuzzer); `what` names it in errors. */
int sq_tune_file_parse(const char *buf, size_t len, const char *what, sq_tune_file *t, sq_err *err);

#endif

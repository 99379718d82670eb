/* Thread count policy. squint threads with OpenMP itself and keeps OpenBLAS
 * single-threaded, so every row of every result is computed the same way
 * whatever the thread count (deterministic output). */
#ifndef SQ_THREADS_H
#define SQ_THREADS_H

/* The most worker threads squint runs (the CLI's --threads, libsquint's option). */
#define SQ_THREADS_MAX 1024

/* Set the number of worker threads (<= 0: sq_threads_default()). Returns the count. */
int sq_threads_init(int n);
int sq_threads_count(void);
/* OMP_NUM_THREADS when set to a positive integer, else the CPUs in this
 * process's affinity mask (at most 1024). */
int sq_threads_default(void);

#endif

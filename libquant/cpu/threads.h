/* Thread count policy. squint threads with OpenMP itself and keeps OpenBLAS
 * single-threaded, so every row of every result is computed the same way
 * whatever the thread count (deterministic output).
 *
 * Three rules keep threads from hurting on a busy or CPU-limited machine:
 * - the default count follows OMP_NUM_THREADS, else the affinity mask and
 *   the cgroup CPU quota (cpu_quota.h), whichever is smaller;
 * - each parallel operation asks sq_par_threads (par_threads.h) how many
 *   threads its work is worth: a decode step of a small model or one short
 *   text runs on the calling thread alone;
 * - a waiting OpenMP thread spins briefly, then sleeps (SQ_SPIN_COUNT). */
#ifndef SQ_THREADS_H
#define SQ_THREADS_H

/* The most worker threads squint runs (the CLI's --threads, libsquint's option). */
#define SQ_THREADS_MAX 1024

/* Set the number of worker threads (<= 0: sq_threads_default()). Returns the count. */
int sq_threads_init(int n);
int sq_threads_count(void);
/* OMP_NUM_THREADS when set to a positive integer, else the CPUs in this
 * process's affinity mask, at most the cgroup CPU quota rounded up (at
 * most 1024). */
int sq_threads_default(void);

/* The OpenMP spin count squint's program runs with when the user sets
 * neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT (cmd/omp_wait_policy.c; the
 * Python binding sets the same): a waiting thread spins ~0.1-0.3 ms, then
 * sleeps, instead of libgomp's 300,000 spins (3-15 ms by CPU). */
#define SQ_SPIN_COUNT "10000"

#endif

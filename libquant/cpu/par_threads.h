/* The one rule every parallel loop in squint follows: how many threads an
 * operation's work is worth (threads.h has the default count). OpenMP only,
 * no OpenBLAS: the kernel sources build with it alone (tests/device). */
#ifndef SQ_PAR_THREADS_H
#define SQ_PAR_THREADS_H

#include <stdint.h>

/* What one unit of work is, for sq_par_threads. Each kind has its cost per
 * unit in one table (par_threads.c), so a call site states what it does and how
 * much, never a threshold of its own. */
typedef enum {
    /* one multiply-add of a packed integer GEMM, by kernel (their rates
     * differ tenfold: kernel_bench GOP/s per ISA, par_threads.c) */
    SQ_WORK_MAC_S8_AVX2,
    SQ_WORK_MAC_S8_AVXVNNI,
    SQ_WORK_MAC_S8_AVX512VNNI,
    SQ_WORK_MAC_S8_AMX,
    SQ_WORK_MAC_S4,    /* int4 on a VNNI or AMX kernel: the nibble unpack bounds it */
    SQ_WORK_MAC_F32,   /* one f32 multiply-add of vector code (attention, f32 rows) */
    SQ_WORK_ELEM,      /* one element of a vector pass: add, LayerNorm, quantize, copy */
    SQ_WORK_ELEM_MATH, /* one element through exp / erf / tanh: GELU, softmax, SiLU */
    SQ_WORK_SCALAR,    /* one step of scalar code: histograms, reference loops, sorts */
    SQ_WORK_KINDS
} sq_work;

/* The threads one parallel operation uses: as many as give each of them at
 * least the minimum in force (sq_thread_min_ns) of estimated work, at most `tasks` (the loop's
 * independent pieces) and the calling thread's OpenMP limit
 * (omp_get_max_threads: --threads, a serve worker's count), at least 1.
 * For the loop's num_threads clause. */
int sq_par_threads(sq_work kind, double units, int64_t tasks);
/* The same for an operation of mixed kinds: its estimated single-thread
 * nanoseconds, a sum of sq_work_ns terms. */
int sq_par_threads_ns(double ns, int64_t tasks);
double sq_work_ns(sq_work kind, double units);

/* Scalar steps per byte of text through a tokenizer (normalization,
 * pre-tokenization, vocabulary lookups): tokenizing is SQ_WORK_SCALAR work. */
#define SQ_TOKENIZE_STEPS_PER_BYTE 20.0

/* The estimated work per thread below which a thread is not worth adding.
 * Measured on the Xeon (2 vCPUs, a VM): a fork and join costs ~5 us while
 * the team's workers still spin (SQ_SPIN_COUNT: ~0.1 ms after their last
 * team) and 50-150 us once they sleep (a futex wake across vCPUs, longer
 * the longer they slept). So the bar is 10 us per thread while the workers
 * are taken to spin (the calling thread's last team began less than twice
 * its estimate plus SQ_WORKERS_HOT_NS ago) and 200 us when they sleep: a
 * split then pays the wake once, and the operations after it find them
 * spinning. Tuned on bge-small 1 x 128 latency (10.9 ms, the build before
 * 10.9-11.2; every op split: 10.0) and USE Lite batch-1 embedding with the
 * AMX and AVX2 kernels (as fast as 1 thread; a 10-40 us flat bar: 1.1-1.7x
 * slower). */
#define SQ_THREAD_MIN_NS 10000.0
#define SQ_THREAD_MIN_NS_COLD 200000.0
#define SQ_WORKERS_HOT_NS 150000.0
#define SQ_TEAM_END_MAX_NS 1e6
/* On a busy machine (the calling thread waited for a CPU more than
 * SQ_CONTENTION_SHARE of its last SQ_CONTENTION_WINDOW_S), a thread is worth
 * adding only for a scheduler slice of work: the join waits for a preempted
 * thread about that long. */
#define SQ_THREAD_MIN_NS_BUSY 4e6
#define SQ_CONTENTION_SHARE 0.1
#define SQ_CONTENTION_WINDOW_S 0.1
/* SQUINT_THREAD_MIN_NS=<ns> in the environment replaces every bar (0: every
 * parallel operation uses every thread; the tests' determinism checks). */

/* The minimum in force for the calling thread now: SQUINT_THREAD_MIN_NS if
 * set, else the busy bar, else the hot or the cold one. */
double sq_thread_min_ns(void);

#endif

/* The cores a process may use and disjoint sets of them for pinned worker
 * processes (`squint serve --instances`, `bench --instances`, `tune`).
 * Usable cores are those of the affinity mask (taskset, cgroup cpusets),
 * not the online count. */
#ifndef SQ_CPU_SETS_H
#define SQ_CPU_SETS_H

#include <stddef.h>

#include "sq_error.h"

/* The most cores squint plans for (the size of a cpu_set_t). */
#define SQ_CPUS_MAX 1024

/* The ids of the CPUs in this process's affinity mask, ascending, into
 * cpus[cap], at most the cgroup CPU quota's count (cpu_quota.h); returns
 * their count (>= 1; the online count 0..n-1 when the mask cannot be read). */
int sq_cpus_usable(int *cpus, int cap);

/* The CPUs instance i of a plan (planned: its `threads` CPUs out of
 * sq_cpus_usable) is pinned to, into out[cap]; returns their count. The
 * planned ones, except under a cgroup CPU quota smaller than the affinity
 * mask (a container limit without a cpuset): then the whole mask, since
 * the quota bounds the time, not the CPUs, and pinning to the first q would
 * crowd every such process on the host onto the same CPUs. */
int sq_cpus_for_instance(const int *planned, int threads, int *out, int cap);

/* In a fresh worker process of a plan: pin to instance's CPUs
 * (sq_cpus_for_instance of its planned `threads` CPUs) and check that an
 * OpenMP team of `threads` stays inside them (sq_cpus_check_omp). -1 with
 * err. */
int sq_cpus_pin_instance(const int *planned, int threads, sq_err *err);

/* Pin the calling thread (in a fresh worker process: the process, and the
 * OpenMP threads it creates afterwards, which inherit the mask) to the n
 * CPUs listed. -1 with err when the kernel refuses. */
int sq_cpus_pin(const int *cpus, int n, sq_err *err);

/* Run one OpenMP parallel region of `threads` threads and check that every
 * thread's affinity mask lies inside cpus[n] (OMP_PROC_BIND / OMP_PLACES /
 * GOMP_CPU_AFFINITY bind threads to places computed at program start, which
 * can lie outside an instance's cores). -1 with err naming the variable. */
int sq_cpus_check_omp(const int *cpus, int n, int threads, sq_err *err);

/* "0-3,8,10-11" into out[cap]. */
void sq_cpus_format(const int *cpus, int n, char *out, size_t cap);

#endif

#include "threads.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>

#include "cpu_sets.h"

static int g_threads = 1;

/* The default worker count: OMP_NUM_THREADS (its first entry) when it is a
 * positive integer, else the CPUs of this process's affinity mask (taskset,
 * cgroup cpusets), so `parallel -j N taskset ...` and containers do not
 * oversubscribe, at most the cgroup CPU quota rounded up (docker --cpus,
 * Kubernetes limits); the online CPU count only when the mask cannot be
 * read. */
int sq_threads_default(void)
{
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (end != env && (*end == '\0' || *end == ',') && v > 0)
            return v > SQ_THREADS_MAX ? SQ_THREADS_MAX : (int)v;
    }
    _Static_assert(SQ_CPUS_MAX == SQ_THREADS_MAX, "the usable count is the thread cap");
    int cpus[SQ_CPUS_MAX];
    return sq_cpus_usable(cpus, SQ_CPUS_MAX);
}

int sq_threads_init(int n)
{
    if (n <= 0)
        n = sq_threads_default();
    if (n > SQ_THREADS_MAX)
        n = SQ_THREADS_MAX;
    g_threads = n;
    omp_set_num_threads(n);
    openblas_set_num_threads(1);
    return n;
}

int sq_threads_count(void)
{
    return g_threads;
}

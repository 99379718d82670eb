/* Usable cores, pinning, and the check that OpenMP threads stay inside a set. */
#include "cpu_sets.h"

#include <omp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_quota.h"

/* The affinity mask's CPUs, ascending; 0 when it cannot be read. */
static int mask_cpus(int *cpus, int cap)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    return n;
}

int sq_cpus_usable(int *cpus, int cap)
{
    /* a cgroup quota of q CPUs: only q of them can be busy at once, so
     * worker plans (serve --instances, tune) count the first q of the mask
     * (sq_cpus_for_instance then pins to the whole mask) */
    const int quota = sq_cpu_quota();
    if (quota > 0 && quota < cap)
        cap = quota;
    int n = mask_cpus(cpus, cap);
    if (n > 0)
        return n;
    long on = sysconf(_SC_NPROCESSORS_ONLN);
    for (n = 0; n < (on > 0 ? on : 1) && n < cap; n++)
        cpus[n] = n;
    return n;
}

int sq_cpus_for_instance(const int *planned, int threads, int *out, int cap)
{
    const int quota = sq_cpu_quota();
    if (quota > 0) {
        int n = mask_cpus(out, cap);
        if (n > quota)
            return n;
    }
    int n = threads < cap ? threads : cap;
    memcpy(out, planned, (size_t)n * sizeof *out);
    return n;
}

int sq_cpus_pin_instance(const int *planned, int threads, sq_err *err)
{
    int mine[SQ_CPUS_MAX];
    const int n = sq_cpus_for_instance(planned, threads, mine, SQ_CPUS_MAX);
    if (sq_cpus_pin(mine, n, err) != 0)
        return -1;
    return sq_cpus_check_omp(mine, n, threads, err);
}

int sq_cpus_pin(const int *cpus, int n, sq_err *err)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE)
            return sq_err_set(err, "CPU %d is out of range", cpus[i]);
        CPU_SET(cpus[i], &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        char list[256];
        sq_cpus_format(cpus, n, list, sizeof list);
        return sq_err_set(err, "cannot pin to CPUs %s (sched_setaffinity refused)", list);
    }
    return 0;
}

int sq_cpus_check_omp(const int *cpus, int n, int threads, sq_err *err)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], &allowed);
    int outside = -1;
#pragma omp parallel num_threads(threads)
    {
        cpu_set_t mine;
        if (sched_getaffinity(0, sizeof mine, &mine) == 0) {
            for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &mine) && !CPU_ISSET(c, &allowed)) {
#pragma omp critical
                    outside = c;
                    break;
                }
        }
    }
    if (outside < 0)
        return 0;
    const char *why = getenv("GOMP_CPU_AFFINITY") ? "GOMP_CPU_AFFINITY"
                      : getenv("OMP_PLACES")      ? "OMP_PLACES"
                      : getenv("OMP_PROC_BIND")   ? "OMP_PROC_BIND"
                                                  : "the OpenMP runtime";
    char list[256];
    sq_cpus_format(cpus, n, list, sizeof list);
    return sq_err_set(err, "an OpenMP thread may run on CPU %d, outside this instance's CPUs %s "
                           "(%s binds threads itself: unset it for --instances)",
                      outside, list, why);
}

void sq_cpus_format(const int *cpus, int n, char *out, size_t cap)
{
    size_t len = 0;
    if (cap)
        out[0] = '\0';
    for (int i = 0; i < n && len < cap;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        int w = j > i ? snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "", cpus[i], cpus[j])
                      : snprintf(out + len, cap - len, "%s%d", len ? "," : "", cpus[i]);
        if (w < 0)
            break;
        len += (size_t)w;
        i = j + 1;
    }
}

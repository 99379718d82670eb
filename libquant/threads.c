#include "threads.h"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

static int g_threads = 1;

int sq_threads_init(int n)
{
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 0 ? (int)c : 1;
    }
    if (n > 1024)
        n = 1024;
    g_threads = n;
    omp_set_num_threads(n);
    openblas_set_num_threads(1);
    return n;
}

int sq_threads_count(void)
{
    return g_threads;
}

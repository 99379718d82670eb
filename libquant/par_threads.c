/* The thread rule (par_threads.h): a cost table and one threshold. */
#include "par_threads.h"

#include <fcntl.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Single-thread nanoseconds per unit of each kind of work: rounded figures
 * from one core's rates (README "Benchmarks": int8 GEMM GOP/s per ISA on
 * Zen 4 and on a Sapphire Rapids-class Xeon, two ops per multiply-add:
 * AVX2 41-50, AVX-VNNI 93-134, AVX512-VNNI 326-600, AMX 628-2,300; int4
 * 93-116), leaning slow. Only their order of magnitude matters. */
static const double ns_per_unit[SQ_WORK_KINDS] = {
    [SQ_WORK_MAC_S8_AVX2] = 0.045,
    [SQ_WORK_MAC_S8_AVXVNNI] = 0.018,
    [SQ_WORK_MAC_S8_AVX512VNNI] = 0.005,
    [SQ_WORK_MAC_S8_AMX] = 0.002,
    [SQ_WORK_MAC_S4] = 0.02,
    [SQ_WORK_MAC_F32] = 0.03,
    [SQ_WORK_ELEM] = 0.25,
    [SQ_WORK_ELEM_MATH] = 1.0,
    [SQ_WORK_SCALAR] = 1.0,
};

double sq_work_ns(sq_work kind, double units)
{
    return kind >= 0 && kind < SQ_WORK_KINDS && units > 0 ? units * ns_per_unit[kind] : 0.0;
}

int sq_par_threads(sq_work kind, double units, int64_t tasks)
{
    return sq_par_threads_ns(sq_work_ns(kind, units), tasks);
}

/* SQ_THREAD_MIN_NS, or SQUINT_THREAD_MIN_NS when it is a number >= 0: the
 * tests set 0 so that their small fixtures still take every parallel path
 * at --threads 2 and compare the bits with 1 thread. */
static double thread_min_ns(void)
{
    static double cached = -1.0;
    double v;
    __atomic_load(&cached, &v, __ATOMIC_RELAXED);
    if (v < 0) {
        v = SQ_THREAD_MIN_NS;
        const char *env = getenv("SQUINT_THREAD_MIN_NS");
        if (env && *env) {
            char *end;
            double e = strtod(env, &end);
            if (*end == '\0' && e >= 0 && e <= 1e12)
                v = e;
        }
        __atomic_store(&cached, &v, __ATOMIC_RELAXED);
    }
    return v;
}

/* Whether the calling thread has lately waited for a CPU while runnable:
 * its run-queue delay over its run + delay time in the last window of at
 * least SQ_CONTENTION_WINDOW_S (/proc/thread-self/schedstat: run ns, delay
 * ns, slices), more than SQ_CONTENTION_SHARE. Then the machine is busy: a
 * team's other threads are preempted too, and every join waits for the
 * last of them a scheduler slice at a time. Per thread (serve workers,
 * library callers each have their own); false where the file is missing. */
static bool contended(void)
{
    static __thread struct {
        double t;
        unsigned long long run, delay;
        bool busy, dead;
    } st;
    if (st.dead)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    const double now = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    if (st.t > 0 && now - st.t < SQ_CONTENTION_WINDOW_S)
        return st.busy;
    char buf[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    unsigned long long run, delay;
    if (n <= 0 || (buf[n] = '\0', sscanf(buf, "%llu %llu", &run, &delay) != 2)) {
        st.dead = true; /* no schedstat (CONFIG_SCHED_INFO off): the idle rule */
        return false;
    }
    if (st.t > 0 && run >= st.run && delay >= st.delay) {
        const double dr = (double)(run - st.run), dd = (double)(delay - st.delay);
        st.busy = dr + dd > 1e6 && dd > SQ_CONTENTION_SHARE * (dr + dd);
    }
    st.t = now, st.run = run, st.delay = delay;
    return st.busy;
}

double sq_thread_min_ns(void)
{
    const double fixed = thread_min_ns();
    if (fixed != SQ_THREAD_MIN_NS)
        return fixed; /* SQUINT_THREAD_MIN_NS: as set, whatever the load */
    return contended() ? SQ_THREAD_MIN_NS_BUSY : SQ_THREAD_MIN_NS;
}

int sq_par_threads_ns(double ns, int64_t tasks)
{
    if (tasks <= 1 || !(ns > 0))
        return 1;
    const double min_ns = sq_thread_min_ns();
    if (min_ns <= 0) {
        int n = omp_get_max_threads();
        return (int64_t)n > tasks ? (int)tasks : n;
    }
    const double worth = ns / min_ns;
    if (!(worth >= 2.0))
        return 1;
    int n = omp_get_max_threads();
    if ((double)n > worth)
        n = (int)worth;
    if ((int64_t)n > tasks)
        n = (int)tasks;
    return n < 1 ? 1 : n;
}

/* The thread rule (par_threads.h): a cost table and one threshold. */
#include "par_threads.h"

#include <fcntl.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Single-thread nanoseconds per unit of each kind of work, leaning slow;
 * only their order of magnitude matters. The integer GEMMs' from
 * `kernel_bench --threads 1 --m 16,128 --model small` on a Sapphire
 * Rapids-class Xeon, 2026-12-06 (GOP/s, two ops per multiply-add): int8
 * AVX2 ~110, AVX-VNNI 175-215, AVX512-VNNI 325-430, AMX 410-1,200; int4
 * 155-520 on the VNNI and AMX kernels. */
static const double ns_per_unit[SQ_WORK_KINDS] = {
    [SQ_WORK_MAC_S8_AVX2] = 0.02,
    [SQ_WORK_MAC_S8_AVXVNNI] = 0.011,
    [SQ_WORK_MAC_S8_AVX512VNNI] = 0.005,
    [SQ_WORK_MAC_S8_AMX] = 0.003,
    [SQ_WORK_MAC_S4] = 0.01,
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

/* SQUINT_THREAD_MIN_NS when it is a number >= 0 (the tests set 0 so that
 * their small fixtures still take every parallel path at --threads 2 and
 * compare the bits with 1 thread), else -1: the bars below. */
static double thread_min_ns(void)
{
    static double cached = -2.0; /* -2: not read yet */
    double v;
    __atomic_load(&cached, &v, __ATOMIC_RELAXED);
    if (v < -1.5) {
        v = -1.0;
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

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Whether the calling thread has lately waited for a CPU while runnable:
 * its run-queue delay over its run + delay time in the last window of at
 * least SQ_CONTENTION_WINDOW_S (/proc/thread-self/schedstat: run ns, delay
 * ns, slices), more than SQ_CONTENTION_SHARE. Then the machine is busy: a
 * team's other threads are preempted too, and every join waits for the
 * last of them a scheduler slice at a time. Per thread (serve workers,
 * library callers each have their own); false where the file is missing. */
static bool contended(double t_ns)
{
    static __thread struct {
        double t;
        unsigned long long run, delay;
        bool busy, dead;
    } st;
    if (st.dead)
        return false;
    const double now = t_ns * 1e-9;
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

/* The calling thread's last team: when it started (0: none yet) and its
 * estimated time per thread. Per calling thread: each has its own OpenMP
 * team (serve workers, library callers). */
static __thread double team_start_ns, team_est_ns;

static double min_ns_at(double now)
{
    const double fixed = thread_min_ns();
    if (fixed >= 0)
        return fixed; /* SQUINT_THREAD_MIN_NS: as set, whatever the state */
    if (contended(now))
        return SQ_THREAD_MIN_NS_BUSY;
    /* the workers spin SQ_WORKERS_HOT_NS after the team ends, which may be
     * up to twice its estimate after it began; at most SQ_TEAM_END_MAX_NS
     * after, so an estimate far too high does not keep calling sleeping
     * workers hot */
    const double end =
        team_est_ns < SQ_TEAM_END_MAX_NS / 2 ? 2.0 * team_est_ns : SQ_TEAM_END_MAX_NS;
    const bool hot = team_start_ns > 0 && now - team_start_ns < end + SQ_WORKERS_HOT_NS;
    return hot ? SQ_THREAD_MIN_NS : SQ_THREAD_MIN_NS_COLD;
}

double sq_thread_min_ns(void)
{
    return min_ns_at(now_ns());
}

int sq_par_threads_ns(double ns, int64_t tasks)
{
    if (tasks <= 1 || !(ns > 0))
        return 1;
    const double now = now_ns();
    const double min_ns = min_ns_at(now);
    int n = omp_get_max_threads();
    if (min_ns > 0) {
        const double worth = ns / min_ns;
        if (!(worth >= 2.0))
            return 1;
        if ((double)n > worth)
            n = (int)worth;
    }
    if ((int64_t)n > tasks)
        n = (int)tasks;
    if (n > 1) { /* the caller runs this team now: its workers spin after it */
        team_start_ns = now;
        team_est_ns = ns / n;
    }
    return n < 1 ? 1 : n;
}

/* The thread rule (par_threads.h): a cost table and one threshold. */
#include "par_threads.h"

#include <omp.h>
#include <stdlib.h>

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

int sq_par_threads_ns(double ns, int64_t tasks)
{
    if (tasks <= 1 || !(ns > 0))
        return 1;
    const double min_ns = thread_min_ns();
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

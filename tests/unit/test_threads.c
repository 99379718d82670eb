/* The thread rule (libquant/cpu/threads.h: sq_par_threads) and the cgroup CPU
 * quota reader (libquant/cpu/cpu_quota.h): what a decode step, a short query and
 * a 32 x 256 batch of a bge-small-size model get; cpu.max and
 * cfs_quota_us texts, good and hostile; whole trees of mountinfo, cgroup
 * membership and control files built in a temporary folder (nested limits,
 * a cgroup namespace, escaped mount points, a FIFO where a control file
 * should be). The real cgroup is tested end to end in cli-threads. */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cpu_quota.h"
#include "par_threads.h"
#include "threads.h"
#include "test_util.h"

/* ---- the rule ---- */

START_TEST(small_work_runs_on_one_thread)
{
    omp_set_num_threads(4);
    /* one short query through a bge-small linear: 10 tokens x 384 x 384 */
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 10.0 * 384 * 384, 1000), 1);
    /* a USE Lite FFN linear of a 12-token text, 512 x 1536, on AMX, VNNI and
     * AVX2, workers asleep (no team yet in this process) */
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AMX, 12.0 * 1536 * 512, 1000), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX512VNNI, 12.0 * 1536 * 512, 1000), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 12.0 * 1536 * 512, 1000), 1);
    /* a stories260K decode step's widest linear: 1 x 64 x 172 */
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 64.0 * 172, 100), 1);
    /* its attention over 256 positions, 8 heads of 8 */
    ck_assert_int_eq(sq_par_threads(SQ_WORK_SCALAR, 2.0 * 8 * 256 * 8, 8), 1);
    /* LayerNorm of a 10-token batch */
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 3.0 * 10 * 384, 10), 1);
}
END_TEST

START_TEST(big_work_uses_every_thread)
{
    omp_set_num_threads(4);
    /* a 32 x 256 batch through bge-small's QKV (384 -> 1152) and FFN up on
     * the AVX2 kernel: past the busy machine's bar too */
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 8192.0 * 1152 * 384, 4096), 4);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 8192.0 * 1536 * 384, 4096), 4);
    if (sq_thread_min_ns() == SQ_THREAD_MIN_NS) { /* this machine is not busy now */
        ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AMX, 8192.0 * 1152 * 384, 4096), 4);
        ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 3.0 * 8192 * 384, 8192), 4);
    }
    /* the calling thread's OpenMP limit caps it (--threads, a serve worker) */
    omp_set_num_threads(2);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 8192.0 * 1152 * 384, 4096), 2);
    omp_set_num_threads(1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_MAC_S8_AVX2, 8192.0 * 1152 * 384, 4096), 1);
}
END_TEST

START_TEST(spinning_workers_lower_the_bar)
{
    omp_set_num_threads(4);
    if (sq_thread_min_ns() == SQ_THREAD_MIN_NS_BUSY) {
        printf("SKIPPED: this machine is busy now (the busy bar is in force)\n");
        return;
    }
    /* no team yet: 100 us of work does not pay a wake */
    ck_assert_int_eq(sq_par_threads_ns(100e3, 100), 1);
    /* a team of 4 for 10 ms of work: its workers spin after it */
    ck_assert_int_eq(sq_par_threads_ns(10e6, 100), 4);
    ck_assert(sq_thread_min_ns() == SQ_THREAD_MIN_NS);
    ck_assert_int_eq(sq_par_threads_ns(100e3, 100), 4);
    ck_assert_int_eq(sq_par_threads_ns(15e3, 100), 1); /* below 2 x 10 us */
    /* long after it (twice its 2.5 ms per thread, plus the spin): asleep */
    usleep(20000);
    ck_assert(sq_thread_min_ns() == SQ_THREAD_MIN_NS_COLD);
    ck_assert_int_eq(sq_par_threads_ns(100e3, 100), 1);
}
END_TEST

/* Spinners sharing the test thread's one CPU: it waits for that CPU at
 * least half of the time, which the rule must see as a busy machine. */
static volatile int spin_stop;

static void *spinner(void *arg)
{
    (void)arg;
    while (!spin_stop)
        ;
    return NULL;
}

START_TEST(a_busy_cpu_raises_the_bar)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0); /* this thread only */
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_create(&th[i], NULL, spinner, NULL), 0);
        ck_assert_int_eq(pthread_setaffinity_np(th[i], sizeof one, &one), 0);
    }
    /* two windows of run-queue delay, seen through this thread's schedstat */
    double min_ns = 0;
    for (int w = 0; w < 16 && min_ns != SQ_THREAD_MIN_NS_BUSY; w++) { /* < 4 s: Check's timeout */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do
            clock_gettime(CLOCK_MONOTONIC, &t);
        while ((t.tv_sec - t0.tv_sec) * 1e9 + (t.tv_nsec - t0.tv_nsec) < 150e6);
        min_ns = sq_thread_min_ns();
    }
    spin_stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    if (access("/proc/thread-self/schedstat", R_OK) != 0) {
        printf("SKIPPED: no /proc/thread-self/schedstat (CONFIG_SCHED_INFO): the busy bar "
               "cannot be seen here\n");
        return;
    }
    ck_assert_msg(min_ns == SQ_THREAD_MIN_NS_BUSY, "bar %g ns with two spinners on this CPU",
                  min_ns);
    /* 1 ms of work: worth two threads on an idle machine, not on this one */
    omp_set_num_threads(4);
    ck_assert_int_eq(sq_par_threads_ns(1e6, 100), 1);
}
END_TEST

START_TEST(threads_grow_with_work_and_stop_at_tasks)
{
    omp_set_num_threads(8);
    int prev = 1;
    for (double units = 1; units < 1e12; units *= 1.5) {
        int n = sq_par_threads(SQ_WORK_ELEM, units, 1 << 20);
        ck_assert_int_ge(n, prev); /* never fewer threads for more work */
        ck_assert_int_le(n, 8);
        /* each thread gets at least the minimum */
        if (n > 1)
            ck_assert(sq_work_ns(SQ_WORK_ELEM, units) / n >= SQ_THREAD_MIN_NS);
        prev = n;
    }
    ck_assert_int_eq(prev, 8);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 1e12, 3), 3);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 1e12, 1), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 1e12, 0), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 1e12, -5), 1);
}
END_TEST

START_TEST(bad_estimates_give_one_thread)
{
    omp_set_num_threads(4);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, 0, 100), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, -1e9, 100), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_ELEM, NAN, 100), 1);
    ck_assert_int_eq(sq_par_threads(SQ_WORK_KINDS, 1e12, 100), 1);
    ck_assert_int_eq(sq_par_threads((sq_work)-1, 1e12, 100), 1);
    ck_assert_int_eq(sq_par_threads_ns(NAN, 100), 1);
    ck_assert_int_eq(sq_par_threads_ns(-1, 100), 1);
    ck_assert(sq_work_ns(SQ_WORK_KINDS, 5) == 0);
    /* mixed work is the sum of its parts */
    double a = sq_work_ns(SQ_WORK_MAC_F32, 1e6), b = sq_work_ns(SQ_WORK_ELEM_MATH, 1e5);
    ck_assert(a > 0 && b > 0);
    ck_assert_int_eq(sq_par_threads_ns(a + b, 1 << 20),
                     sq_par_threads_ns(sq_work_ns(SQ_WORK_MAC_F32, 1e6) + b, 1 << 20));
}
END_TEST

/* ---- quota texts ---- */

START_TEST(cpu_max_texts)
{
    ck_assert_int_eq(sq_cpu_quota_v2_text("max 100000\n"), 0);
    ck_assert_int_eq(sq_cpu_quota_v2_text("100000 100000\n"), 1);
    ck_assert_int_eq(sq_cpu_quota_v2_text("150000 100000\n"), 2); /* --cpus=1.5: rounded up */
    ck_assert_int_eq(sq_cpu_quota_v2_text("50000 100000"), 1);
    ck_assert_int_eq(sq_cpu_quota_v2_text("1 100000"), 1);
    ck_assert_int_eq(sq_cpu_quota_v2_text("400000 100000"), 4);
    ck_assert_int_eq(sq_cpu_quota_v2_text("1000000000000 1"), SQ_THREADS_MAX);
    const char *bad[] = {"", "\n", "max", "abc 100000", "-1 100000", "100000 0", "100000 -5",
                         "100000", "100000 100000 7", "100000 100000x", "1e5 100000",
                         "99999999999999999999999 100000", "100000 99999999999999999999999",
                         " +5 100000"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(sq_cpu_quota_v2_text(bad[i]) == 0, "'%s'", bad[i]);
}
END_TEST

START_TEST(cfs_quota_texts)
{
    ck_assert_int_eq(sq_cpu_quota_v1_text("-1\n", "100000\n"), 0);
    ck_assert_int_eq(sq_cpu_quota_v1_text("100000\n", "100000\n"), 1);
    ck_assert_int_eq(sq_cpu_quota_v1_text("250000\n", "100000\n"), 3);
    ck_assert_int_eq(sq_cpu_quota_v1_text("20000", "100000"), 1);
    ck_assert_int_eq(sq_cpu_quota_v1_text("x", "100000"), 0);
    ck_assert_int_eq(sq_cpu_quota_v1_text("100000", "0"), 0);
    ck_assert_int_eq(sq_cpu_quota_v1_text("100000", ""), 0);
    ck_assert_int_eq(sq_cpu_quota_v1_text("100000 5", "100000"), 0);
}
END_TEST

/* ---- trees ---- */

static void put(const char *dir, const char *rel, const char *text)
{
    free(tu_write_str(dir, rel, text));
}

static char *T; /* the test's tree, removed after each test */

static void remove_tree(void)
{
    if (T) {
        tu_rmtree(T);
        free(T);
        T = NULL;
    }
}

static int quota_of(const char *mountinfo, const char *cgroup)
{
    char mi[4096], cg[4096];
    snprintf(mi, sizeof mi, "%s/mountinfo", T);
    snprintf(cg, sizeof cg, "%s/cgroup", T);
    put(T, "mountinfo", mountinfo);
    put(T, "cgroup", cgroup);
    return sq_cpu_quota_from(mi, cg);
}

START_TEST(v2_nested_limits)
{
    T = tu_mkdtemp();
    char mi[8192];
    snprintf(mi, sizeof mi,
             "22 1 8:1 / / rw,relatime - ext4 /dev/root rw\n"
             "30 22 0:26 / %s/cg2 rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n",
             T);
    put(T, "cg2/cgroup.controllers", "cpu memory\n");
    put(T, "cg2/a/cpu.max", "300000 100000\n");
    put(T, "cg2/a/b/cpu.max", "max 100000\n");
    ck_assert_int_eq(quota_of(mi, "0::/a/b\n"), 3); /* the parent's limit holds */
    put(T, "cg2/a/b/cpu.max", "150000 100000\n");
    ck_assert_int_eq(quota_of(mi, "0::/a/b\n"), 2); /* the tighter one */
    ck_assert_int_eq(quota_of(mi, "0::/a\n"), 3);
    ck_assert_int_eq(quota_of(mi, "0::/\n"), 0);     /* the root has none */
    ck_assert_int_eq(quota_of(mi, "0::/zz/y\n"), 0); /* no such cgroup */
    ck_assert_int_eq(quota_of(mi, ""), 0);           /* no membership */
    ck_assert_int_eq(quota_of("", "0::/a/b\n"), 0);  /* no mount */
}
END_TEST

START_TEST(v1_cpu_controller)
{
    T = tu_mkdtemp();
    char mi[8192];
    snprintf(mi, sizeof mi,
             "40 25 0:30 / %s/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
             "41 25 0:31 / %s/memory rw,nosuid - cgroup cgroup rw,memory\n",
             T, T);
    put(T, "cpu,cpuacct/x/cpu.cfs_quota_us", "100000\n");
    put(T, "cpu,cpuacct/x/cpu.cfs_period_us", "100000\n");
    put(T, "cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put(T, "cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    /* the cpuacct-only and memory lines must not be taken for cpu */
    ck_assert_int_eq(quota_of(mi, "5:memory:/x\n4:cpuacct:/\n3:cpu,cpuacct:/x\n"), 1);
    ck_assert_int_eq(quota_of(mi, "3:cpu,cpuacct:/\n"), 0);
    ck_assert_int_eq(quota_of(mi, "5:memory:/x\n"), 0);
    /* a missing period is no limit */
    put(T, "cpu,cpuacct/y/cpu.cfs_quota_us", "100000\n");
    ck_assert_int_eq(quota_of(mi, "3:cpu,cpuacct:/y\n"), 0);
}
END_TEST

START_TEST(namespaced_and_escaped_mounts)
{
    T = tu_mkdtemp();
    char mi[8192];
    /* a container: its cgroup mounted with root /docker/abc; a mount point
     * with a blank, written \040 */
    snprintf(mi, sizeof mi, "30 22 0:26 /docker/abc %s/cg\\0402 rw - cgroup2 cgroup2 rw\n", T);
    put(T, "cg 2/cpu.max", "200000 100000\n");
    ck_assert_int_eq(quota_of(mi, "0::/docker/abc\n"), 2);
    put(T, "cg 2/sub/cpu.max", "100000 100000\n");
    ck_assert_int_eq(quota_of(mi, "0::/docker/abc/sub\n"), 1);
    /* a cgroup outside the mounted subtree (a sibling's bind mount): not
     * this process's limit */
    ck_assert_int_eq(quota_of(mi, "0::/elsewhere\n"), 0);
    ck_assert_int_eq(quota_of(mi, "0::/docker/abcd\n"), 0);
    /* a cgroup outside the namespace shows as /../x: never followed */
    ck_assert_int_eq(quota_of(mi, "0::/../x\n"), 0);
    ck_assert_int_eq(quota_of(mi, "0::/docker/abc/../abc\n"), 0);
    /* two mounts of the hierarchy: the one whose root is the longest prefix */
    char two[8192];
    snprintf(two, sizeof two,
             "30 22 0:26 / %s/all rw - cgroup2 cgroup2 rw\n"
             "31 22 0:26 /docker/abc %s/cg\\0402 rw - cgroup2 cgroup2 rw\n",
             T, T);
    put(T, "all/docker/abc/sub/cpu.max", "300000 100000\n"); /* not the mount shown first */
    ck_assert_int_eq(quota_of(two, "0::/docker/abc/sub\n"), 1);
    /* a namespace: /proc/self/cgroup says "/" and the mount root is "/" */
    snprintf(mi, sizeof mi, "30 22 0:26 / %s/cg\\0402 rw - cgroup2 cgroup2 rw\n", T);
    ck_assert_int_eq(quota_of(mi, "0::/\n"), 2);
}
END_TEST

START_TEST(hostile_trees)
{
    T = tu_mkdtemp();
    char mi[8192], fifo[4096];
    snprintf(mi, sizeof mi, "30 22 0:26 / %s/cg rw - cgroup2 cgroup2 rw\n", T);
    /* a FIFO where cpu.max should be: skipped, not waited on */
    put(T, "cg/f/keep", "");
    snprintf(fifo, sizeof fifo, "%s/cg/f/cpu.max", T);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(quota_of(mi, "0::/f\n"), 0);
    /* a directory where cpu.max should be, an oversized file, garbage */
    put(T, "cg/d/cpu.max/x", "");
    ck_assert_int_eq(quota_of(mi, "0::/d\n"), 0);
    char big[5000];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    put(T, "cg/big/cpu.max", big);
    ck_assert_int_eq(quota_of(mi, "0::/big\n"), 0);
    put(T, "cg/g/cpu.max", "\x01\x02\xff garbage");
    ck_assert_int_eq(quota_of(mi, "0::/g\n"), 0);
    /* malformed mountinfo and membership lines are skipped */
    ck_assert_int_eq(quota_of("garbage\n - \n1 2 3\n\n - cgroup2\n", "0::/f\n"), 0);
    ck_assert_int_eq(quota_of(mi, "0::relative\n::\n:\n0:\n"), 0);
    char longpath[6000];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '0', longpath[1] = ':', longpath[2] = ':', longpath[3] = '/';
    longpath[sizeof longpath - 2] = '\n';
    longpath[sizeof longpath - 1] = '\0';
    ck_assert_int_eq(quota_of(mi, longpath), 0);
    /* FIFOs as mountinfo and membership files */
    char mfifo[4096], cfifo[4096];
    snprintf(mfifo, sizeof mfifo, "%s/mi.fifo", T);
    snprintf(cfifo, sizeof cfifo, "%s/cg.fifo", T);
    ck_assert_int_eq(mkfifo(mfifo, 0600), 0);
    ck_assert_int_eq(mkfifo(cfifo, 0600), 0);
    put(T, "cgroup", "0::/f\n");
    char cgfile[4096];
    snprintf(cgfile, sizeof cgfile, "%s/cgroup", T);
    ck_assert_int_eq(sq_cpu_quota_from(mfifo, cgfile), 0);
    ck_assert_int_eq(sq_cpu_quota_from(mfifo, cfifo), 0);
    /* missing files */
    ck_assert_int_eq(sq_cpu_quota_from("/nonexistent/mountinfo", "/nonexistent/cgroup"), 0);
    /* this process's own (whatever the machine has): a count, or 0 */
    int q = sq_cpu_quota();
    ck_assert_int_ge(q, 0);
    ck_assert_int_le(q, SQ_THREADS_MAX);
}
END_TEST

START_TEST(default_threads_follow_the_quota_rule)
{
    /* OMP_NUM_THREADS wins; else the affinity count, at most the quota */
    setenv("OMP_NUM_THREADS", "3", 1);
    ck_assert_int_eq(sq_threads_default(), 3);
    unsetenv("OMP_NUM_THREADS");
    int n = sq_threads_default(), q = sq_cpu_quota();
    ck_assert_int_ge(n, 1);
    if (q > 0)
        ck_assert_int_le(n, q);
}
END_TEST

int main(void)
{
    /* the unit suite forces every thread (meson's unit_env); the rule itself
     * is tested here, so take the default before anything reads it */
    unsetenv("SQUINT_THREAD_MIN_NS");
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, NULL, remove_tree);
    tcase_add_test(tc, small_work_runs_on_one_thread);
    tcase_add_test(tc, big_work_uses_every_thread);
    tcase_add_test(tc, a_busy_cpu_raises_the_bar);
    tcase_add_test(tc, spinning_workers_lower_the_bar);
    tcase_add_test(tc, threads_grow_with_work_and_stop_at_tasks);
    tcase_add_test(tc, bad_estimates_give_one_thread);
    tcase_add_test(tc, cpu_max_texts);
    tcase_add_test(tc, cfs_quota_texts);
    tcase_add_test(tc, v2_nested_limits);
    tcase_add_test(tc, v1_cpu_controller);
    tcase_add_test(tc, namespaced_and_escaped_mounts);
    tcase_add_test(tc, hostile_trees);
    tcase_add_test(tc, default_threads_follow_the_quota_rule);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

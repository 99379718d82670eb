/* The CPU bandwidth limit of this process's cgroup: what `docker run
 * --cpus=1.5`, a Kubernetes CPU limit or systemd's CPUQuota= set. The
 * process still sees every CPU of its affinity mask, so without this squint
 * would start as many busy threads as the host has and the kernel would
 * throttle them in turn.
 *
 * cgroup v2: cpu.max, "QUOTA PERIOD" or "max PERIOD". cgroup v1:
 * cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. The limit that holds is
 * the smallest along the path from the process's cgroup up to the root of
 * the mounted hierarchy; it is returned as whole CPUs, rounded up (1.5 -> 2). */
#ifndef SQ_CPU_QUOTA_H
#define SQ_CPU_QUOTA_H

/* This process's limit in whole CPUs, or 0 when there is none (or it
 * cannot be read: no /proc, no cgroup mount, unreadable files). Read once
 * and cached. */
int sq_cpu_quota(void);

/* The same from a given mountinfo and cgroup membership file (normally
 * /proc/self/mountinfo and /proc/self/cgroup); the tests point them at a
 * tree of their own. Every file is read as untrusted: bad lines are
 * skipped, a value that does not parse counts as no limit. */
int sq_cpu_quota_from(const char *mountinfo_path, const char *cgroup_path);

/* One cgroup v2 cpu.max text, or one v1 quota / period pair, as whole CPUs
 * rounded up; 0 for no limit or text that does not parse. */
int sq_cpu_quota_v2_text(const char *cpu_max);
int sq_cpu_quota_v1_text(const char *quota_us, const char *period_us);

#endif

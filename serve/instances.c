/* squint serve --instances (instances.h): the supervising parent and its
 * pinned workers. The parent never runs the model (nor an OpenMP region),
 * so forking a worker, at start or to restart one, is always safe. */
#include "instances.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_sets.h"
#include "threads.h"

typedef struct worker_slot {
    pid_t pid;      /* 0: not running */
    int ready_rd;   /* -1 once read to the end */
    bool ready;     /* this incarnation said "R" */
    int restarts;
    char cpus[256];
    char msg[1024]; /* "E" + the error a worker sent before it was ready */
    size_t msg_len;
} worker_slot;

typedef struct supervisor {
    const sq_serve_opts *o;
    int n, threads, listen_fd, sig_fd;
    const int *cpus;
    worker_slot *w;
    sigset_t old_mask;
} supervisor;

static void describe_status(int st, char *out, size_t cap)
{
    if (WIFSIGNALED(st))
        snprintf(out, cap, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(out, cap, "exited with status %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The worker process: never returns. */
static void worker_main(supervisor *sv, int i, int ready_wr, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* the server stops with its parent */
    if (getppid() != parent)
        _exit(1);
    close(sv->sig_fd);
    for (int j = 0; j < sv->n; j++)
        if (sv->w[j].ready_rd >= 0)
            close(sv->w[j].ready_rd);
    /* SIGTERM / SIGINT stay blocked: sq_serve_run waits for them. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    sq_err err = {0};
    sq_serve_worker me = {.index = i, .listen_fd = sv->listen_fd, .ready_fd = ready_wr,
                          .cpus = sv->w[i].cpus};
    sq_serve_opts o = *sv->o;
    o.worker = &me;
    int rc = -1;
    if (sq_cpus_pin_instance(sv->cpus + (size_t)i * sv->threads, sv->threads, &err) == 0) {
        o.threads = sq_threads_init(sv->threads);
        rc = sq_serve_run(&o, &err);
    }
    if (rc != 0 && me.ready_fd >= 0) { /* the parent reports it */
        char buf[sizeof err.msg + 1];
        int len = snprintf(buf, sizeof buf, "E%s", err.msg);
        (void)!write(me.ready_fd, buf, (size_t)len);
    } else if (rc != 0) {
        fprintf(stderr, "squint serve: worker %d: error: %s\n", i, err.msg);
    }
    fflush(stderr);
    _exit(rc == 0 ? 0 : 1);
}

static int spawn(supervisor *sv, int i, sq_err *err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return sq_err_set(err, "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]), close(p[1]);
        return sq_err_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(p[0]);
        worker_main(sv, i, p[1], parent);
    }
    close(p[1]);
    worker_slot *w = &sv->w[i];
    w->pid = pid;
    w->ready_rd = p[0];
    w->ready = false;
    w->msg_len = 0;
    return 0;
}

/* Read what a worker says on its ready pipe: "R", or "E" + its error. */
static void read_ready(worker_slot *w)
{
    char buf[512];
    ssize_t r = read(w->ready_rd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
        return;
    if (r <= 0) {
        close(w->ready_rd);
        w->ready_rd = -1;
        return;
    }
    if (w->msg_len == 0 && buf[0] == 'R') {
        w->ready = true;
        return;
    }
    size_t room = sizeof w->msg - 1 - w->msg_len, n = (size_t)r < room ? (size_t)r : room;
    memcpy(w->msg + w->msg_len, buf, n);
    w->msg_len += n;
    w->msg[w->msg_len] = '\0';
}

/* SIGTERM to every running worker, then reap them all. Returns the number
 * that did not exit 0. */
static int stop_all(supervisor *sv)
{
    for (int i = 0; i < sv->n; i++)
        if (sv->w[i].pid > 0)
            kill(sv->w[i].pid, SIGTERM);
    int bad = 0;
    for (int i = 0; i < sv->n; i++) {
        if (sv->w[i].pid <= 0)
            continue;
        int st;
        while (waitpid(sv->w[i].pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            char why[128];
            describe_status(st, why, sizeof why);
            fprintf(stderr, "squint serve: worker %d (pid %d) %s while stopping\n", i,
                    (int)sv->w[i].pid, why);
            bad++;
        }
        sv->w[i].pid = 0;
        if (sv->w[i].ready_rd >= 0)
            close(sv->w[i].ready_rd), sv->w[i].ready_rd = -1;
    }
    return bad;
}

static int open_listener(const sq_serve_opts *o, int *port, bool *v6, sq_err *err)
{
    struct sockaddr_storage ss;
    if (sq_serve_bind_addr(o->host, o->port, &ss, v6, err) != 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    socklen_t len = *v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, SOMAXCONN) != 0 ||
        /* non-blocking: every worker polls it, the losers of an accept get EAGAIN */
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        sq_err_set(err, "cannot listen on %s port %d (%s)", o->host, o->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port = ntohs(*v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                      : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int sq_serve_instances_run(const sq_serve_opts *o, int instances, int threads, sq_err *err)
{
    static int cpus[SQ_CPUS_MAX];
    const int n_cpus = sq_cpus_usable(cpus, SQ_CPUS_MAX);
    if (threads <= 0)
        threads = n_cpus / instances;
    if (threads < 1 || (long)instances * threads > n_cpus)
        return sq_err_set(err, "--instances %d x --threads %d need %ld cores; this process may "
                               "use %d (its affinity mask: taskset, cpusets; at most its "
                               "cgroup CPU quota)",
                          instances, threads < 1 ? 1 : threads,
                          (long)instances * (threads < 1 ? 1 : threads), n_cpus);
    supervisor sv = {.o = o, .n = instances, .threads = threads, .cpus = cpus, .sig_fd = -1};
    sv.w = calloc((size_t)instances, sizeof *sv.w);
    if (!sv.w)
        return sq_err_set(err, "out of memory");
    int port = 0, rc = -1;
    bool v6 = false;
    sv.listen_fd = open_listener(o, &port, &v6, err);
    if (sv.listen_fd < 0) {
        free(sv.w);
        return -1;
    }
    for (int i = 0; i < instances; i++) {
        sv.w[i].ready_rd = -1;
        static int pin[SQ_CPUS_MAX]; /* what the worker will pin to */
        const int n_pin =
            sq_cpus_for_instance(cpus + (size_t)i * threads, threads, pin, SQ_CPUS_MAX);
        sq_cpus_format(pin, n_pin, sv.w[i].cpus, sizeof sv.w[i].cpus);
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, &sv.old_mask);
    signal(SIGPIPE, SIG_IGN);
    sv.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sv.sig_fd < 0) {
        sq_err_set(err, "signalfd: %s", strerror(errno));
        goto out;
    }
    for (int i = 0; i < instances; i++)
        if (spawn(&sv, i, err) != 0) {
            stop_all(&sv);
            goto out;
        }
    bool announced = false;
    int stop_sig = 0;
    while (!stop_sig) {
        struct pollfd pf[1 + SQ_CPUS_MAX];
        int who[1 + SQ_CPUS_MAX], np = 0;
        pf[np] = (struct pollfd){.fd = sv.sig_fd, .events = POLLIN}, who[np++] = -1;
        for (int i = 0; i < instances; i++)
            if (sv.w[i].ready_rd >= 0 && !sv.w[i].ready)
                pf[np] = (struct pollfd){.fd = sv.w[i].ready_rd, .events = POLLIN}, who[np++] = i;
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            sq_err_set(err, "poll: %s", strerror(errno));
            stop_all(&sv);
            goto out;
        }
        for (int k = 1; k < np; k++)
            if (pf[k].revents)
                read_ready(&sv.w[who[k]]);
        if (!announced) {
            int ready = 0;
            for (int i = 0; i < instances; i++)
                ready += sv.w[i].ready;
            if (ready == instances) {
                char sets[1024] = "";
                for (int i = 0; i < instances; i++) {
                    size_t len = strlen(sets);
                    snprintf(sets + len, sizeof sets - len, "%s%s", i ? " | " : "", sv.w[i].cpus);
                }
                fprintf(stderr,
                        "squint serve: %s listening on http://%s%s%s:%d (%d instances x %d "
                        "encoder threads, CPUs %s; up to %d texts per batch, queue %d, per "
                        "instance%s)\n",
                        o->model_path, v6 ? "[" : "", o->host, v6 ? "]" : "", port, instances,
                        threads, sets, o->max_batch, o->queue,
                        o->api_key ? "; API key required" : "");
                fflush(stderr);
                announced = true;
            }
        }
        if (!(pf[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sv.sig_fd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            stop_sig = (int)si.ssi_signo;
            break;
        }
        /* SIGCHLD: reap every worker that ended */
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            int i = 0;
            while (i < instances && sv.w[i].pid != pid)
                i++;
            if (i == instances)
                continue;
            worker_slot *w = &sv.w[i];
            while (w->ready_rd >= 0 && !w->ready) /* what it said before it ended */
                read_ready(w);
            w->pid = 0;
            char why[128];
            describe_status(st, why, sizeof why);
            if (!w->ready) {
                if (w->msg_len > 1 && w->msg[0] == 'E')
                    sq_err_set(err, "%s%s", w->restarts ? "a restarted worker: " : "", w->msg + 1);
                else
                    sq_err_set(err, "worker %d (CPUs %s) %s before it was ready%s", i, w->cpus,
                               why, w->restarts ? " (after a restart)" : "");
                stop_all(&sv);
                goto out;
            }
            w->restarts++;
            fprintf(stderr, "squint serve: worker %d (pid %d, CPUs %s) %s: restarting it (restart %d)\n",
                    i, (int)pid, w->cpus, why, w->restarts);
            if (w->ready_rd >= 0)
                close(w->ready_rd), w->ready_rd = -1;
            if (spawn(&sv, i, err) != 0) {
                stop_all(&sv);
                goto out;
            }
        }
    }
    fprintf(stderr, "squint serve: %s: stopping %d workers (each finishes its requests in flight)\n",
            stop_sig == SIGTERM ? "SIGTERM" : "SIGINT", instances);
    close(sv.listen_fd); /* the workers hold it until they have quiesced */
    sv.listen_fd = -1;
    int bad = stop_all(&sv);
    if (bad)
        sq_err_set(err, "%d of %d workers did not stop cleanly", bad, instances);
    else
        fprintf(stderr, "squint serve: all %d workers stopped\n", instances);
    rc = bad ? -1 : 0;
out:
    if (sv.listen_fd >= 0)
        close(sv.listen_fd);
    if (sv.sig_fd >= 0)
        close(sv.sig_fd);
    sigprocmask(SIG_SETMASK, &sv.old_mask, NULL);
    free(sv.w);
    return rc;
}

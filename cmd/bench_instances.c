/* bench_instances.h: N pinned worker processes measured over one window.
 * Each worker talks to the parent over two pipes: it sends a "ready"
 * message (or its error), waits for the common start and end times, runs
 * passes, then sends the (start, end) time of every pass. */
#include "bench_instances.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cpu_sets.h"
#include "linear.h"
#include "qtype.h"
#include "threads.h"

int bench_batch_make(const sq_embed_model *m, int n_seq, int len, bench_batch *bb, sq_err *err)
{
    memset(bb, 0, sizeof *bb);
    size_t T = (size_t)n_seq * (size_t)len;
    bb->ids = malloc(T * sizeof *bb->ids);
    bb->off = malloc(((size_t)n_seq + 1) * sizeof *bb->off);
    if (!bb->ids || !bb->off) {
        bench_batch_free(bb);
        return sq_err_set(err, "out of memory for %d x %d tokens", n_seq, len);
    }
    uint32_t x = 12345;
    int V = m->enc.cfg.vocab_size;
    for (int s = 0; s <= n_seq; s++)
        bb->off[s] = s * len;
    for (size_t t = 0; t < T; t++) {
        x = x * 1664525u + 1013904223u;
        bb->ids[t] = V > 2000 ? 1000 + (int)(x % (uint32_t)(V - 1000)) : (int)(x % (uint32_t)V);
    }
    bb->b = (sq_batch){.n_seq = n_seq, .offsets = bb->off, .ids = bb->ids, .type_ids = NULL};
    return 0;
}

void bench_batch_free(bench_batch *bb)
{
    free(bb->ids);
    free(bb->off);
    memset(bb, 0, sizeof *bb);
}

void bench_precision(const sq_embed_model *m, const char **prec, const char **gemm)
{
    const sq_bert_config *cfg = &m->enc.cfg;
    int count[SQ_QT_COUNT] = {0}, n_lin = 0;
    for (int l = 0; l < cfg->layers; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++)
            if (m->enc.layers[l].lin[k].out > 0) {
                count[m->enc.layers[l].lin[k].qtype]++;
                n_lin++;
            }
    *prec = "mixed";
    for (int q = 0; q < SQ_QT_COUNT; q++)
        if (count[q] == n_lin) {
            *prec = sq_qtype_get((sq_qtype)q)->label;
            break;
        }
    sq_isa isa = SQ_ISA_SCALAR;
    sq_linear_isa(&isa, NULL);
    *gemm = count[SQ_QT_F32] == n_lin ? "openblas-sgemm" : sq_isa_name(isa);
}

/* ---- the pipe protocol ---- */

typedef struct ready_msg {
    int ok;
    char prec[16];
    char text[1000]; /* the info line, or the error */
} ready_msg;

typedef struct go_msg {
    double t0, t_end;
} go_msg;

/* Passes recorded per worker at most (then it stops early; the window ends
 * at the earliest last pass). */
#define MAX_PASSES (1 << 21)

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r, n -= (size_t)r;
    }
    return 0;
}

static void sleep_until(double t)
{
    for (;;) {
        double d = t - cli_now();
        if (d <= 0)
            return;
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* One worker: never returns. */
static void worker(const sq_inst_plan *p, int idx, int to_parent, int from_parent, pid_t parent)
{
    /* A worker outlives no parent (killed, or crashed while measuring). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    ready_msg rm = {0};
    sq_err err = {0};
    sq_embed_model m;
    bench_batch bb = {0};
    sq_workspace ws = {0};
    float *hid = NULL;
    if (sq_cpus_pin_instance(p->cpus + (size_t)idx * p->threads, p->threads, &err) != 0)
        goto fail;
    sq_threads_init(p->threads);
    if (sq_embed_model_open(p->model_path, &m, &err) != 0)
        goto fail;
    const sq_bert_config *cfg = &m.enc.cfg;
    if (p->seq > sq_bert_max_tokens(cfg)) {
        sq_err_set(&err, "--seq %d exceeds the model's %d positions", p->seq, sq_bert_max_tokens(cfg));
        goto fail;
    }
    if (bench_batch_make(&m, p->batch, p->seq, &bb, &err) != 0)
        goto fail;
    hid = malloc((size_t)p->batch * p->seq * cfg->hidden * sizeof *hid);
    if (!hid) {
        sq_err_set(&err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < p->warmup; i++)
        if (sq_encoder_forward(&m.enc, &ws, &bb.b, hid, NULL, &err) != 0)
            goto fail;
    const char *prec, *gemm;
    bench_precision(&m, &prec, &gemm);
    rm.ok = 1;
    snprintf(rm.prec, sizeof rm.prec, "%s", prec);
    snprintf(rm.text, sizeof rm.text, "layers=%d hidden=%d heads=%d ffn=%d  linears=%s gemm=%s",
             cfg->layers, cfg->hidden, cfg->heads, cfg->ffn, prec, gemm);
    if (write_all(to_parent, &rm, sizeof rm) != 0)
        _exit(1);
    go_msg go;
    if (read_all(from_parent, &go, sizeof go) != 0)
        _exit(1); /* the parent gave up */
    double *t = malloc(2 * sizeof *t * 1024);
    int n = 0, cap = 1024;
    if (!t)
        _exit(1);
    sleep_until(go.t0);
    double e;
    do {
        double s = cli_now();
        if (sq_encoder_forward(&m.enc, &ws, &bb.b, hid, NULL, &err) != 0)
            _exit(1);
        e = cli_now();
        if (n == cap) {
            double *g = realloc(t, 4 * sizeof *t * (size_t)cap);
            if (!g)
                break;
            t = g, cap *= 2;
        }
        t[2 * n] = s, t[2 * n + 1] = e, n++;
    } while (e < go.t_end && n < MAX_PASSES);
    if (write_all(to_parent, &n, sizeof n) != 0 ||
        write_all(to_parent, t, 2 * sizeof *t * (size_t)n) != 0)
        _exit(1);
    _exit(0);
fail:
    rm.ok = 0;
    snprintf(rm.text, sizeof rm.text, "%.999s", err.msg);
    write_all(to_parent, &rm, sizeof rm);
    _exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int sq_instances_measure(const sq_inst_plan *p, sq_inst_result *r, sq_err *err)
{
    memset(r, 0, sizeof *r);
    const int N = p->instances;
    if (N < 1 || p->threads < 1 || (int64_t)N * p->threads > p->n_cpus)
        return sq_err_set(err, "%d instances x %d threads need %lld cores; this process may use %d",
                          N, p->threads, (long long)N * p->threads, p->n_cpus);
    pid_t *pid = calloc((size_t)N, sizeof *pid);
    int *up = malloc((size_t)N * sizeof *up), *down = malloc((size_t)N * sizeof *down);
    double **t = calloc((size_t)N, sizeof *t);
    int *n = calloc((size_t)N, sizeof *n);
    if (!pid || !up || !down || !t || !n) {
        free(pid), free(up), free(down), free(t), free(n);
        return sq_err_set(err, "out of memory");
    }
    for (int i = 0; i < N; i++)
        up[i] = down[i] = -1;
    int rc = -1, started = 0;
    const pid_t self = getpid();
    fflush(stdout);
    fflush(stderr);
    for (; started < N; started++) {
        int a[2], b[2];
        if (pipe(a) != 0 || (pipe(b) != 0 && (close(a[0]), close(a[1]), 1))) {
            sq_err_set(err, "pipe: %s", strerror(errno));
            goto out;
        }
        pid_t c = fork();
        if (c < 0) {
            close(a[0]), close(a[1]), close(b[0]), close(b[1]);
            sq_err_set(err, "fork: %s", strerror(errno));
            goto out;
        }
        if (c == 0) {
            for (int j = 0; j < started; j++)
                close(up[j]), close(down[j]);
            close(a[0]), close(b[1]);
            worker(p, started, a[1], b[0], self);
        }
        close(a[1]), close(b[0]);
        pid[started] = c, up[started] = a[0], down[started] = b[1];
    }
    for (int i = 0; i < N; i++) {
        ready_msg rm = {0};
        char cpus[256];
        const bool got = read_all(up[i], &rm, sizeof rm) == 0;
        if (!got || !rm.ok) {
            static int pin[SQ_CPUS_MAX]; /* what the worker pinned to */
            const int n_pin = sq_cpus_for_instance(p->cpus + (size_t)i * p->threads, p->threads,
                                                   pin, SQ_CPUS_MAX);
            sq_cpus_format(pin, n_pin, cpus, sizeof cpus);
            rm.text[sizeof rm.text - 1] = '\0';
            sq_err_set(err, "instance %d (CPUs %s): %s", i, cpus,
                       got && rm.text[0] ? rm.text : "exited before it was ready");
            goto out;
        }
        if (i == 0) {
            snprintf(r->info, sizeof r->info, "%.255s", rm.text);
            snprintf(r->prec, sizeof r->prec, "%s", rm.prec);
        }
    }
    /* A common start a little ahead, so every worker is waiting for it. */
    go_msg go = {.t0 = cli_now() + 0.02};
    go.t_end = go.t0 + p->window_s;
    for (int i = 0; i < N; i++)
        if (write_all(down[i], &go, sizeof go) != 0) {
            sq_err_set(err, "instance %d exited before the window", i);
            goto out;
        }
    double w_end = go.t_end;
    for (int i = 0; i < N; i++) {
        if (read_all(up[i], &n[i], sizeof n[i]) != 0 || n[i] < 1 || n[i] > MAX_PASSES ||
            !(t[i] = malloc(2 * sizeof(double) * (size_t)n[i])) ||
            read_all(up[i], t[i], 2 * sizeof(double) * (size_t)n[i]) != 0) {
            sq_err_set(err, "instance %d failed while measuring", i);
            goto out;
        }
        if (t[i][2 * n[i] - 1] < w_end) /* stopped early (MAX_PASSES) */
            w_end = t[i][2 * n[i] - 1];
    }
    /* Each pass is credited batch x (its overlap with the window) / its length. */
    double W = w_end - go.t0, seqs = 0;
    double *lat = NULL;
    int n_lat = 0, total = 0;
    for (int i = 0; i < N; i++)
        total += n[i];
    if (W <= 0 || !(lat = malloc((size_t)total * sizeof *lat))) {
        sq_err_set(err, W <= 0 ? "an empty measuring window" : "out of memory");
        goto out;
    }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < n[i]; k++) {
            double s = t[i][2 * k], e = t[i][2 * k + 1];
            double lo = s > go.t0 ? s : go.t0, hi = e < w_end ? e : w_end;
            if (hi > lo && e > s)
                seqs += p->batch * (hi - lo) / (e - s);
            if (s < w_end)
                lat[n_lat++] = e - s;
        }
    qsort(lat, (size_t)n_lat, sizeof *lat, cmp_double);
    r->seq_per_s = seqs / W;
    r->window_s = W;
    r->passes = n_lat;
    /* nearest rank */
    r->p50_ms = 1e3 * lat[(n_lat - 1) / 2];
    int k95 = (int)(0.95 * n_lat + 0.999999) - 1;
    r->p95_ms = 1e3 * lat[k95 < 0 ? 0 : (k95 >= n_lat ? n_lat - 1 : k95)];
    free(lat);
    rc = 0;
out:
    for (int i = 0; i < started; i++) {
        if (rc != 0)
            kill(pid[i], SIGKILL);
        close(up[i]), close(down[i]);
    }
    for (int i = 0; i < started; i++) {
        int st;
        while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR)
            ;
        if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            sq_err_set(err, "instance %d exited with an error after measuring", i);
            rc = -1;
        }
    }
    for (int i = 0; i < N; i++)
        free(t[i]);
    free(pid), free(up), free(down), free(t), free(n);
    return rc;
}

#include "conn_deadline.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "op_profile.h"

/* How often the watchdog looks: a late client is cut within this of its
 * deadline. */
#define SQ_DEADLINE_TICK_MS 200

/* A kept-alive connection's next request gets this much more: an idle one
 * is then closed by libmicrohttpd's idle timeout (the same --timeout) first,
 * and only a trickling one is cut here and counted. */
#define SQ_DEADLINE_KEEPALIVE_GRACE_S 1.0

typedef struct conn_entry {
    int fd;
    double start;   /* the receiving phase's start (monotonic seconds) */
    double limit;   /* seconds it may last */
    bool receiving;
    struct conn_entry *prev, *next;
} conn_entry;

struct sq_deadline {
    double deadline_s;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stop;
    pthread_t thread;
    conn_entry *head;
    sq_serve_metrics *metrics;
};

static void *watch(void *arg)
{
    sq_deadline *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += SQ_DEADLINE_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&d->wake, &d->mu, &until);
        const double t = sq_op_now();
        for (conn_entry *e = d->head; e; e = e->next)
            if (e->receiving && t - e->start > e->limit) {
                /* under the lock: the connection has not been closed (its
                 * CLOSED notification would have removed it first) */
                shutdown(e->fd, SHUT_RDWR);
                e->receiving = false;
                sq_metrics_deadline_cut(d->metrics);
            }
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

sq_deadline *sq_deadline_start(double deadline_s, sq_serve_metrics *m, sq_err *err)
{
    sq_deadline *d = calloc(1, sizeof *d);
    if (!d) {
        sq_err_set(err, "out of memory");
        return NULL;
    }
    d->deadline_s = deadline_s;
    d->metrics = m;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    const bool mu_ok = pthread_mutex_init(&d->mu, NULL) == 0;
    const bool cond_ok = mu_ok && pthread_cond_init(&d->wake, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!cond_ok || pthread_create(&d->thread, NULL, watch, d) != 0) {
        if (cond_ok)
            pthread_cond_destroy(&d->wake);
        if (mu_ok)
            pthread_mutex_destroy(&d->mu);
        sq_err_set(err, "cannot start the request-deadline watchdog");
        free(d);
        return NULL;
    }
    return d;
}

void sq_deadline_stop(sq_deadline *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    while (d->head) { /* connections the daemon never reported closed */
        conn_entry *e = d->head;
        d->head = e->next;
        free(e);
    }
    pthread_cond_destroy(&d->wake);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void sq_deadline_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    sq_deadline *d = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_entry *e = ci ? calloc(1, sizeof *e) : NULL;
        if (!e) /* without an entry the connection has the idle timeout only */
            return;
        e->fd = ci->connect_fd;
        e->start = sq_op_now();
        e->limit = d->deadline_s;
        e->receiving = true;
        pthread_mutex_lock(&d->mu);
        e->next = d->head;
        if (d->head)
            d->head->prev = e;
        d->head = e;
        pthread_mutex_unlock(&d->mu);
        *socket_context = e;
        return;
    }
    conn_entry *e = *socket_context; /* MHD_CONNECTION_NOTIFY_CLOSED */
    if (!e)
        return;
    pthread_mutex_lock(&d->mu);
    if (e->prev)
        e->prev->next = e->next;
    else
        d->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    pthread_mutex_unlock(&d->mu);
    free(e);
    *socket_context = NULL;
}

static conn_entry *entry_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void set_phase(sq_deadline *d, struct MHD_Connection *c, bool receiving, double limit)
{
    conn_entry *e = d ? entry_of(c) : NULL;
    if (!e)
        return;
    pthread_mutex_lock(&d->mu);
    e->receiving = receiving;
    e->start = sq_op_now();
    e->limit = limit;
    pthread_mutex_unlock(&d->mu);
}

void sq_deadline_received(sq_deadline *d, struct MHD_Connection *c)
{
    set_phase(d, c, false, 0.0);
}

void sq_deadline_rearm(sq_deadline *d, struct MHD_Connection *c)
{
    if (d)
        set_phase(d, c, true, d->deadline_s + SQ_DEADLINE_KEEPALIVE_GRACE_S);
}

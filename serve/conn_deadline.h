/* A whole-request deadline for serve's connections. libmicrohttpd's
 * --timeout counts idle time only, so a client that sends one header byte
 * or one body byte per second never times out and holds its connection
 * (and with --max-connections slow clients, the whole server) for as long
 * as it likes. Here every connection has a receiving phase: from its
 * accept, and again from the end of each response (a keep-alive client's
 * next request, given one second more so that an idle connection is closed
 * by the idle timeout, not counted here), until its request (headers and
 * body) has been read. A
 * watchdog thread shuts down (shutdown(2), SHUT_RDWR) a connection still
 * receiving after the deadline; libmicrohttpd then sees the peer gone and
 * closes it as usual.
 *
 * The fd is safe to shut down: libmicrohttpd 0.9.75 (daemon.c,
 * MHD_cleanup_connections and the failed-start path) calls the
 * MHD_CONNECTION_NOTIFY_CLOSED notification before it closes the socket,
 * and that notification takes the same lock as the watchdog, so a fd the
 * watchdog sees is still this connection's (never a reused number). */
#ifndef SQ_CONN_DEADLINE_H
#define SQ_CONN_DEADLINE_H

#include <microhttpd.h>
#include <stdint.h>

#include "metrics.h"
#include "sq_error.h"

typedef struct sq_deadline sq_deadline;

/* Start the watchdog: a request must be received within deadline_s
 * seconds of its phase's start; each connection cut is counted in m
 * (sq_metrics_deadline_cut). NULL with err set on failure. */
sq_deadline *sq_deadline_start(double deadline_s, sq_serve_metrics *m, sq_err *err);
/* Stop the watchdog and free (after the daemon has stopped). NULL is ignored. */
void sq_deadline_stop(sq_deadline *d);

/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the sq_deadline). */
void sq_deadline_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* The request on c has been read whole: its phase ends. */
void sq_deadline_received(sq_deadline *d, struct MHD_Connection *c);
/* The response on c is done: the next request's phase starts now. */
void sq_deadline_rearm(sq_deadline *d, struct MHD_Connection *c);

#endif

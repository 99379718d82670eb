/* squint serve --instances N: N worker processes behind one listening
 * address. The parent binds and listens once (so --port 0 gives one port
 * for all) and forks the workers, which inherit the socket and accept on
 * it (the kernel hands each connection to one of them); each worker is
 * pinned to its own cores (libquant/cpu/cpu_sets.h) and runs the whole server
 * (server.h) with its own model mapping (shared through the page cache),
 * batcher and metrics. The parent then only supervises:
 *   - "listening on ..." is printed once every worker is ready; a worker that
 *     fails before it is ready (a bad model, a bad option) stops the server
 *     with that worker's message;
 *   - a ready worker that dies (a crash, SIGKILL) is restarted on the same
 *     cores and says so on stderr; if the restarted one fails before it is
 *     ready the server stops with a message;
 *   - SIGTERM / SIGINT: the listening socket closed, SIGTERM to every
 *     worker (each finishes its requests in flight), all reaped, exit 0;
 *   - workers die with the parent (PR_SET_PDEATHSIG): no orphans even when
 *     the parent is killed.
 * /metrics, /health and /info answer for the worker that accepted the
 * connection. */
#ifndef SQ_SERVE_INSTANCES_H
#define SQ_SERVE_INSTANCES_H

#include "server.h"

/* What sq_serve_run needs to know when it runs as one of the workers. */
typedef struct sq_serve_worker {
    int index;      /* 0 .. instances - 1 */
    int listen_fd;  /* the inherited listening socket */
    int ready_fd;   /* written "R" once serving (then closed, set to -1) */
    const char *cpus; /* its cores, for the log */
} sq_serve_worker;

/* Serve with `instances` workers of `threads` encoder threads each
 * (threads <= 0: the usable cores / instances). Returns 0 after a clean
 * shutdown, -1 with err when it cannot start or a worker cannot be kept
 * running. */
int sq_serve_instances_run(const sq_serve_opts *o, int instances, int threads, sq_err *err);

#endif

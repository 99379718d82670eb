/* What a signal must not leave behind: the temporary output files of
 * sq_atomic_open and the folders archives are extracted into. Each is
 * registered while it exists; on SIGINT, SIGTERM, SIGHUP, SIGPIPE or SIGBUS the
 * handler (installed by the squint binary, never by the library) removes
 * every registered path with async-signal-safe calls, then lets the signal
 * end the process as it would have (the exit status still says which).
 *
 * Registration is lock-free over fixed slots, so the handler may run on any
 * thread at any moment: a slot becomes visible only once its path is
 * complete, and removing a path twice (a signal right after a commit) is
 * harmless since every temporary name is unique. */
#ifndef SQ_CLEANUP_H
#define SQ_CLEANUP_H

/* Install the handlers (idempotent). */
void sq_cleanup_install_signals(void);

/* Register a temporary file or folder (a folder is removed with all it
 * holds). Returns a slot id >= 0, or -1 when all slots are taken or the
 * path is too long (the path then simply is not cleaned on a signal). */
int sq_cleanup_add_file(const char *path);
int sq_cleanup_add_tree(const char *path);
/* Register a file mapped for reading (fileio.h sq_map_file): never removed,
 * but named when the process takes SIGBUS, which is what touching a mapped
 * page of a file truncated or rewritten in place gives; the handler says so
 * and how to replace a file safely (by rename), then lets the signal end
 * the process. */
int sq_cleanup_add_mapped(const char *path);
/* Forget slot id (after commit, abort or normal removal); -1 is ignored. */
void sq_cleanup_forget(int id);

#endif

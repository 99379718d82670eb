/* Resolve a MODEL argument to a checkpoint directory. A directory is used as
 * it is; a .tar / .tar.gz / .tgz / .tar.zst / .zip archive is extracted
 * (regular files and directories only, no absolute or ".." paths, bounded
 * sizes) into a private temporary directory that sq_checkpoint_close removes. */
#ifndef SQ_CHECKPOINT_DIR_H
#define SQ_CHECKPOINT_DIR_H

#include <stdint.h>

#include "sq_error.h"

#define SQ_ARCHIVE_MAX_ENTRIES 10000
#define SQ_ARCHIVE_MAX_TOTAL ((uint64_t)64 << 30)

typedef struct sq_checkpoint_dir {
    char *dir;      /* the directory holding config.json */
    char *tmp_root; /* extraction root to delete, or NULL */
    int cleanup_slot; /* sq_cleanup_add_tree id + 1 (removed on a signal); 0: none */
} sq_checkpoint_dir;

int sq_checkpoint_open(const char *arg, sq_checkpoint_dir *cd, sq_err *err);
void sq_checkpoint_close(sq_checkpoint_dir *cd);

#endif

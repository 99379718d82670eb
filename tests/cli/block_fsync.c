/* LD_PRELOAD shim for tests/cli/test_signals.sh: fsync() (which
 * sq_atomic_commit calls once the temporary output is fully written, just
 * before the rename) touches $SQ_TEST_FSYNC_MARKER and then waits for a
 * signal forever. The test then knows, without timing, that the temp file
 * (and an archive's extraction folder) exist, and sends its signal. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int fsync(int fd)
{
    (void)fd;
    const char *marker = getenv("SQ_TEST_FSYNC_MARKER");
    if (marker) {
        int m = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (m >= 0)
            close(m);
    }
    for (;;)
        pause();
}

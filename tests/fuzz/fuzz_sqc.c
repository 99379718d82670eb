/* Fuzz the calibration statistics loader (calib/calib_stats.h): the .sqc
 * metadata YAML and tensor layout behind the container. Checksums are
 * repaired first, or almost every mutation would stop at verification. */
#include <stdlib.h>
#include <string.h>

#include "calib_stats.h"
#include "container_fixup.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = container_fixed_copy(data, size);
    char *path = fuzz_write("stats.sqc", copy, size);
    free(copy);

    sq_calib_stats st;
    sq_err err;
    if (sq_calib_stats_load(path, &st, &err) == 0) {
        sq_calib_stats_check(&st, &err);
        for (int l = 0; l < st.cfg.layers; l++)
            for (int k = 0; k < SQ_LIN_KINDS; k++)
                if (!sq_calib_stats_at(&st, l, (sq_linear_kind)k))
                    abort();
    }
    sq_calib_stats_free(&st);
    free(path);
    return 0;
}

/* Fuzz the tune file reader (formats/tune_file.h): a tune file is hostile
 * input. An accepted file must be consistent (instances x threads within
 * its usable cores, figures finite and >= 0, strings NUL-terminated in
 * their fields) and survive a write and a read back unchanged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tune_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sq_tune_file t, u;
    sq_err err;
    if (sq_tune_file_parse((const char *)data, size, "fuzz.json", &t, &err) != 0)
        return 0;
    if (t.instances < 1 || t.threads < 1 || (long)t.instances * t.threads > t.usable_cores ||
        t.batch < 1 || t.seq < 2 || !isfinite(t.seq_per_s) || t.seq_per_s < 0 ||
        !isfinite(t.p50_ms) || !isfinite(t.p95_ms) || !isfinite(t.budget_s) ||
        !memchr(t.model_path, 0, sizeof t.model_path) || !memchr(t.cpu_name, 0, sizeof t.cpu_name) ||
        !t.model_path[0] || !t.cpu_name[0])
        abort();
    char *path = fuzz_path("tune.json");
    if (sq_tune_file_write(path, &t, &err) != 0 || sq_tune_file_read(path, &u, &err) != 0)
        abort();
    /* Figures go through %.6g: equal to 6 significant digits. */
    if (u.instances != t.instances || u.threads != t.threads || u.batch != t.batch ||
        u.model_xxh64 != t.model_xxh64 || u.model_size != t.model_size ||
        strcmp(u.model_path, t.model_path) || strcmp(u.cpu_name, t.cpu_name) ||
        fabs(u.seq_per_s - t.seq_per_s) > 1e-5 * (t.seq_per_s + 1e-300) + 1e-300)
        abort();
    free(path);
    return 0;
}

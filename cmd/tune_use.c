/* tune_use.h */
#include "tune_use.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_features.h"
#include "cpu_sets.h"
#include "file_hash.h"
#include "fileio.h"

int tune_model_identity(const char *model, uint64_t *size, uint64_t *xxh64, sq_err *err)
{
    if (!sq_dir_exists(model))
        return sq_hash_file(model, size, xxh64, err);
    sq_model_digest d;
    if (sq_model_digest_dir(model, &d, err) != 0)
        return -1;
    *size = 0;
    for (int i = 0; i < d.n_files; i++)
        *size += d.files[i].size;
    *xxh64 = d.combined;
    sq_model_digest_free(&d);
    return 0;
}

char *tune_default_path(const char *model)
{
    size_t n = strlen(model);
    while (n > 1 && model[n - 1] == '/')
        n--;
    char *p = malloc(n + sizeof ".tune.json");
    if (p)
        snprintf(p, n + sizeof ".tune.json", "%.*s.tune.json", (int)n, model);
    return p;
}

/* Why t does not apply here, or 0. */
static int mismatch(const sq_tune_file *t, const char *path, const char *model, sq_err *err)
{
    uint64_t size, h;
    if (tune_model_identity(model, &size, &h, err) != 0)
        return -1;
    if (size != t->model_size || h != t->model_xxh64)
        return sq_err_set(err,
                          "%s was tuned for another model (%s: %" PRIu64 " bytes, xxh64 %016" PRIx64
                          "; %s is %" PRIu64 " bytes, xxh64 %016" PRIx64 "): run squint tune again",
                          path, t->model_path, t->model_size, t->model_xxh64, model, size, h);
    char cpu[128];
    sq_cpu_name(cpu, sizeof cpu);
    if (strcmp(cpu, t->cpu_name) != 0)
        return sq_err_set(err, "%s was tuned on another CPU (\"%s\"; this one is \"%s\"): run "
                               "squint tune again",
                          path, t->cpu_name, cpu);
    static int cpus[SQ_CPUS_MAX];
    int n = sq_cpus_usable(cpus, SQ_CPUS_MAX);
    if (n != t->usable_cores)
        return sq_err_set(err, "%s was tuned with %d usable cores; this process may use %d "
                               "(taskset / cgroup): run squint tune again",
                          path, t->usable_cores, n);
    return 0;
}

int tune_load_for(const char *cmd, const char *model, const char *explicit_path, sq_tune_file *t,
                  sq_err *err)
{
    if (explicit_path) {
        if (sq_tune_file_read(explicit_path, t, err) != 0 ||
            mismatch(t, explicit_path, model, err) != 0)
            return -1;
        fprintf(stderr, "squint %s: using %s (%s: %d instance%s x %d thread%s, batch %d)\n", cmd,
                explicit_path, sq_tune_objective_name(t->objective), t->instances,
                t->instances == 1 ? "" : "s", t->threads, t->threads == 1 ? "" : "s", t->batch);
        return 1;
    }
    char *path = tune_default_path(model);
    if (!path)
        return sq_err_set(err, "out of memory");
    int rc = 0;
    if (sq_file_exists(path)) {
        sq_err e = {0};
        if (sq_tune_file_read(path, t, &e) != 0 || mismatch(t, path, model, &e) != 0) {
            fprintf(stderr, "squint %s: warning: ignoring the tune file next to the model: %s\n",
                    cmd, e.msg);
        } else {
            fprintf(stderr,
                    "squint %s: using %s (%s: %d instance%s x %d thread%s, batch %d; --no-tune "
                    "ignores it)\n",
                    cmd, path, sq_tune_objective_name(t->objective), t->instances,
                    t->instances == 1 ? "" : "s", t->threads, t->threads == 1 ? "" : "s",
                    t->batch);
            rc = 1;
        }
    }
    free(path);
    return rc;
}

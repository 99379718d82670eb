/* load_bench: what opening a .sqm costs, and the share of it spent proving
 * the packed linears consistent (libquant/weights/qweight_check.h: one pass over
 * every panel byte). Runs the whole load (container open with its xxh64
 * checks, the encoder loader, tokenizer) and then the qweight checks alone,
 * each REPS times, and prints medians.
 *   load_bench MODEL.sqm [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "embed_model.h"
#include "qweight_check.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: load_bench MODEL.sqm [REPS]\n"), 2;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (reps < 1 || reps > 1000)
        reps = 7;
    double *open_t = calloc((size_t)reps, sizeof *open_t);
    double *check_t = calloc((size_t)reps, sizeof *check_t);
    unsigned long long bytes = 0;
    for (int r = 0; r < reps; r++) {
        sq_embed_model m;
        sq_err err;
        double t0 = now();
        if (sq_embed_model_open(argv[1], &m, &err) != 0)
            return fprintf(stderr, "load_bench: %s\n", err.msg), 2;
        double t1 = now();
        bytes = 0;
        for (int l = 0; l < m.enc.cfg.layers; l++)
            for (int k = 0; k < SQ_LIN_KINDS; k++) {
                const sq_linear *lin = &m.enc.layers[l].lin[k];
                if (lin->out > 0 && lin->qtype != SQ_QT_F32) {
                    if (sq_qweight_check(&lin->qw, NULL, 0) != SQ_QW_OK)
                        return fprintf(stderr, "load_bench: check failed\n"), 1;
                    bytes += lin->qw.data_size;
                }
            }
        double t2 = now();
        open_t[r] = t1 - t0;
        check_t[r] = t2 - t1;
        sq_embed_model_close(&m);
    }
    qsort(open_t, (size_t)reps, sizeof *open_t, cmp);
    qsort(check_t, (size_t)reps, sizeof *check_t, cmp);
    double o = open_t[reps / 2], c = check_t[reps / 2];
    printf("%s: load (open + every check) %.1f ms median of %d; qweight checks alone %.1f ms "
           "(%.0f%% of the load) over %.1f MB of panels, %.2f GB/s\n",
           argv[1], o * 1e3, reps, c * 1e3, 100 * c / o, (double)bytes / 1e6,
           (double)bytes / c / 1e9);
    free(open_t);
    free(check_t);
    return 0;
}

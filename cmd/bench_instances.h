/* The measuring engine of `squint bench` and `squint tune`: synthetic
 * batches, and N worker processes each pinned to its own cores running the
 * encoder on the same work over one common time window. */
#ifndef SQ_BENCH_INSTANCES_H
#define SQ_BENCH_INSTANCES_H

#include <stdint.h>

#include "embed_model.h"
#include "encoder.h"

/* n_seq sequences of exactly len deterministic token ids spread over the
 * vocabulary (avoiding the first 1000, the special tokens). */
typedef struct bench_batch {
    int32_t *ids;
    int *off;
    sq_batch b;
} bench_batch;
int bench_batch_make(const sq_embed_model *m, int n_seq, int len, bench_batch *bb, sq_err *err);
void bench_batch_free(bench_batch *bb);

/* The precision of the linears ("int8", "fp32", "mixed", ...) and the GEMM
 * that runs them ("avx512vnni", "openblas-sgemm", ...). */
void bench_precision(const sq_embed_model *m, const char **prec, const char **gemm);

typedef struct sq_inst_plan {
    const char *model_path;
    int instances, threads; /* instance i runs on cpus[i * threads .. + threads - 1] */
    int batch, seq;         /* each instance's forward pass: batch x seq tokens */
    int warmup;             /* passes before the window */
    double window_s;        /* the common measuring window */
    const int *cpus;        /* usable cores (sq_cpus_usable), at least instances x threads */
    int n_cpus;
} sq_inst_plan;

typedef struct sq_inst_result {
    double seq_per_s;      /* all instances, over the common window */
    double p50_ms, p95_ms; /* one forward pass (a request of batch x seq) under that load */
    int passes;            /* passes started in the window, all instances */
    double window_s;       /* the window measured (<= the planned one) */
    char info[256];        /* instance 0: "layers=.. hidden=.. heads=.. ffn=..  linears=.. gemm=.." */
    char prec[16];         /* the precision label of the linears */
} sq_inst_result;

/* Fork plan->instances processes (the caller must not have run an OpenMP
 * region yet: libgomp's thread pool does not survive fork), each pinned to
 * its cores with plan->threads OpenMP threads, opening the model (the
 * mapped file is shared through the page cache), warming up, then running
 * forward passes from one common start until the window ends. Aggregate
 * throughput credits each pass with its overlap with the window. Every
 * worker is reaped before this returns. */
int sq_instances_measure(const sq_inst_plan *plan, sq_inst_result *r, sq_err *err);

#endif

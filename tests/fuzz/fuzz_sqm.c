/* Fuzz the packed-model loader: a .sqm opened as a runnable model
 * (libquant/run/embed_model.h -> sqm_model.c and sqm_tokenizer.c: metadata,
 * tokenizer vocabulary, every tensor's dtype, shape and value rules), then
 * one short text embedded with it, and every packed linear of an accepted
 * file run through the GEMM of every ISA this CPU has (the embedding only
 * reaches the best one): each must give the scalar path's bits, the fused
 * epilogue and the out-of-range guard's rows included. Checksums are
 * repaired first, or almost every mutation would stop at verification. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container_fixup.h"
#include "embedder.h"
#include "fuzz_util.h"
#include "gemm_s8.h"

/* One linear on a fixed pseudo-random 11-row input on every ISA; abort when
 * a path differs from scalar (a kernel computing something the panels do
 * not say). */
static void every_isa(const sq_linear *l)
{
    enum { ROWS = 11 }; /* >= 8 reaches the AVX2 widened kernels, plus a tail */
    const int kp = l->qw.k_pad, N = l->out;
    int8_t *qa = calloc((size_t)ROWS * kp, 1);
    float *x = malloc(sizeof(float) * ROWS * l->in);
    float *ref = malloc(sizeof(float) * ROWS * N), *y = malloc(sizeof(float) * ROWS * N);
    int32_t *scratch = malloc(sizeof(int32_t) * ROWS * N);
    if (!qa || !x || !ref || !y || !scratch)
        abort();
    uint32_t r = 12345;
    for (int i = 0; i < ROWS * l->in; i++) {
        r = r * 1103515245u + 12345u;
        x[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * 8.0f / l->act_mult[i % l->in] / 127.0f *
               (i % 7 == 0 ? 200.0f : 1.0f); /* some codes clip at +-127 */
    }
    /* The guarded step: the x200 values put some rows beyond the range. */
    float rs[ROWS];
    int guarded = sq_gemm_quantize_acts_guard(x, ROWS, l->in, (size_t)l->in, l->act_mult,
                                              l->act_zero, qa, kp, (size_t)kp, rs);
    for (int isa = 0; isa < SQ_ISA_COUNT; isa++) {
        if (!sq_isa_supported((sq_isa)isa, NULL))
            continue;
        sq_gemm_epilogue ep = {.out_scale = l->out_scale, .acc_off = l->acc_off,
                               .act_scale = l->act_scale, .bias = l->b,
                               .y = isa ? y : ref, .ldy = (size_t)N,
                               .row_scale = guarded ? rs : NULL};
        int rc = l->qtype == SQ_QT_S8
                     ? sq_gemm_s8_fused((sq_isa)isa, qa, ROWS, (size_t)kp, &l->qw, &ep, scratch)
                     : sq_gemm_s4_fused((sq_isa)isa, qa, ROWS, (size_t)kp, &l->qw, &ep,
                                        (float *)scratch);
        if (rc != 0 || (isa && memcmp(ref, y, sizeof(float) * ROWS * N) != 0)) {
            fprintf(stderr, "fuzz_sqm: %s differs from scalar on an accepted file\n",
                    sq_isa_name((sq_isa)isa));
            abort();
        }
    }
    free(qa);
    free(x);
    free(ref);
    free(y);
    free(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = container_fixed_copy(data, size);
    char *path = fuzz_write("model.sqm", copy, size);
    free(copy);

    sq_embed_model m;
    sq_err err;
    if (sq_embed_model_open(path, &m, &err) == 0) {
        static const char *const texts[] = {"hello world, [MASK] and unknown tokens"};
        size_t lens[1] = {strlen(texts[0])};
        sq_embed_opts o = {.batch = 1, .max_seq = m.max_seq < 16 ? m.max_seq : 16,
                           .pooling = m.pool.pooling, .normalize = m.pool.normalize};
        sq_embed_result res;
        if (sq_embed_texts(&m, texts, lens, 1, &o, &res, &err) == 0)
            sq_embed_result_free(&res);
        for (int l = 0; l < m.enc.cfg.layers; l++)
            for (int k = 0; k < SQ_LIN_KINDS; k++) {
                const sq_linear *lin = &m.enc.layers[l].lin[k];
                if (lin->out > 0 && lin->qtype != SQ_QT_F32)
                    every_isa(lin);
            }
        sq_embed_model_close(&m);
    }
    free(path);
    return 0;
}

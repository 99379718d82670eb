#include "linear.h"

#include "ops.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "f32_rows.h"
#include "outlier_side.h"
#include "gemm_s8.h"
#include "par_threads.h"

/* The output is cut into fixed tiles of ROW_BLOCK x COL_BLOCK, one sgemm
 * each, shared among threads. Tile sizes never depend on the thread count, so
 * every output element is computed by the same call sequence: results are
 * bitwise identical at any thread count. The tiles are big enough that
 * sgemm's packing of A and B stays a small fraction of the work, and small
 * enough that a single 128-token sequence still splits across threads. */
#define ROW_BLOCK 128
#define COL_BLOCK 192

static void f32_tile(const sq_linear *l, const float *x, int r0, int r1, int c0, int c1, float *y)
{
    for (int r = r0; r < r1; r++)
        memcpy(y + (size_t)r * l->out + c0, l->b + c0, (size_t)(c1 - c0) * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, c1 - c0, l->in, 1.0f,
                x + (size_t)r0 * l->in, l->in, l->w + (size_t)c0 * l->in, l->in, 1.0f,
                y + (size_t)r0 * l->out + c0, l->out);
}

static void f32_forward(const sq_linear *l, const float *x, int rows, float *y)
{
    /* A few rows (a decoder step, a verify pass of draft tokens, a short
     * query): each row on its own, the same bits for any row count. */
    if (rows <= SQ_F32_ROWS_MAX) {
        sq_f32_rows(x, rows, l->in, l->w, l->b, l->out, y);
        return;
    }
    int nr = (rows + ROW_BLOCK - 1) / ROW_BLOCK, nc = (l->out + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(sq_par_threads(SQ_WORK_MAC_F32, (double)rows * l->in * l->out, nr * nc))
    for (int t = 0; t < nr * nc; t++) {
        int r0 = (t / nc) * ROW_BLOCK, c0 = (t % nc) * COL_BLOCK;
        int r1 = r0 + ROW_BLOCK < rows ? r0 + ROW_BLOCK : rows;
        int c1 = c0 + COL_BLOCK < l->out ? c0 + COL_BLOCK : l->out;
        f32_tile(l, x, r0, r1, c0, c1, y);
    }
}

/* The ISA is chosen once per process (SQUINT_ISA or the best the CPU has);
 * pthread_once makes the first call safe from any number of threads (a
 * library user may embed from several threads at once). */
static sq_isa g_isa;
static int g_isa_rc;
static sq_err g_isa_err;
static pthread_once_t g_isa_once = PTHREAD_ONCE_INIT;

static void select_isa_once(void)
{
    g_isa_rc = sq_isa_select(&g_isa, &g_isa_err);
}

int sq_linear_isa(sq_isa *isa, sq_err *err)
{
    pthread_once(&g_isa_once, select_isa_once);
    if (g_isa_rc != 0) {
        if (err)
            *err = g_isa_err;
        return -1;
    }
    *isa = g_isa;
    return 0;
}

int sq_linear_prepare_quant(sq_linear *l, const float *s, float act_scale, int act_zero)
{
    l->act_scale = act_scale;
    l->act_zero = act_zero;
    if (act_zero != 0) {
        if (!(l->acc_off = malloc((size_t)l->out * sizeof *l->acc_off)))
            return -1;
        for (int n = 0; n < l->out; n++)
            l->acc_off[n] = act_zero * l->qw.wsum[n];
    }
    l->act_mult = malloc((size_t)l->in * sizeof *l->act_mult);
    l->out_scale = malloc((size_t)l->out * sizeof *l->out_scale);
    if (!l->act_mult || !l->out_scale)
        return -1;
    /* The same float operations as the reference (qlinear_ref.h). */
    for (int j = 0; j < l->in; j++)
        l->act_mult[j] = 1.0f / ((s ? s[j] : 1.0f) * act_scale);
    for (int o = 0; o < l->n_outliers; o++)
        l->act_mult[l->outlier_idx[o]] = 0.0f;
    if (sq_qtype_get(l->qtype)->acc == SQ_ACC_S32) /* the scales go in the epilogue */
        for (int n = 0; n < l->out; n++)
            l->out_scale[n] = act_scale * l->qw.scale[n];
    return 0;
}

/* The quantize step of l on x into sc->qa (sc->row_scale for the guarded
 * rows); map (NULL: none) first applied to each row of x [rows][ldx].
 * With map, keep [rows][n_outliers] gets the mapped outlier channels.
 * Returns the guarded rows, -1 when a mapped step could not get its
 * buffers (nothing written). */
static int quantize_input(const sq_linear *l, const float *x, size_t ldx, sq_row_map map,
                          int rows, const sq_linear_scratch *sc, float *keep)
{
    const int kp = l->qw.k_pad;
    if (map)
        return sq_gemm_quantize_acts_mapped(x, rows, l->in, ldx, map, l->act_mult, l->act_zero,
                                            l->dynamic ? SQ_QA_ROWS
                                            : l->guard ? SQ_QA_GUARD
                                                       : SQ_QA_STATIC,
                                            sc->qa, kp, (size_t)kp, sc->row_scale,
                                            l->outlier_idx, l->n_outliers, keep);
    if (l->dynamic)
        return sq_gemm_quantize_acts_rows(x, rows, l->in, ldx, l->act_mult, sc->qa, kp,
                                          (size_t)kp, sc->row_scale);
    if (l->guard)
        return sq_gemm_quantize_acts_guard(x, rows, l->in, ldx, l->act_mult, l->act_zero, sc->qa,
                                           kp, (size_t)kp, sc->row_scale);
    sq_gemm_quantize_acts_zp(x, rows, l->in, ldx, l->act_mult, l->act_zero, sc->qa, kp,
                             (size_t)kp);
    return 0;
}

/* GEMM and epilogue in one pass on the quantized rows in sc->qa: y =
 * (float)(acc + acc_off[n]) * out_scale[n] + b[n] (int4: acc_f32 *
 * act_scale + b[n]), product rounded before the add, and the outlier
 * channels' exact part from x (the linear's input as fp32, [rows][in]; or
 * with xo, their values alone [rows][n_outliers]), written tile by tile while the tile is in cache; sc->acc
 * is only used by the scalar ISA (no fused tile driver). t: the profile
 * clock. */
static void quant_gemm(const sq_linear *l, const float *x, const float *xo, int rows,
                       int guarded, float *y, const sq_linear_scratch *sc, double t)
{
    sq_isa isa = SQ_ISA_SCALAR;
    sq_linear_isa(&isa, NULL); /* refused ISAs are reported when the model is opened */
    /* the outlier channels, added in the epilogue row by row (outlier_side.h):
     * from x, or from xo, their values alone */
    const sq_outlier_side side = {
        .n = l->n_outliers, .idx = xo ? NULL : l->outlier_idx,
        .w = l->outlier_w, .ldw = l->out, .x = xo ? xo : x,
        .ldx = xo ? (size_t)l->n_outliers : (size_t)l->in};
    sq_gemm_epilogue ep = {.out_scale = l->out_scale, .acc_off = l->acc_off,
                           .act_scale = l->act_scale, .bias = l->b, .y = y,
                           .ldy = (size_t)l->out, .row_scale = guarded ? sc->row_scale : NULL,
                           .side = l->n_outliers > 0 ? &side : NULL};
    sq_qtype_get(l->qtype)->gemm(isa, sc->qa, rows, (size_t)l->qw.k_pad, &l->qw, &ep, sc->acc);
    if (sc->prof)
        sq_op_add(sc->prof, sc->gemm_op, t);
}

static void quant_forward(const sq_linear *l, const float *x, int rows, float *y,
                          const sq_linear_scratch *sc)
{
    double t = sc->prof ? sq_op_now() : 0;
    const int guarded = quantize_input(l, x, (size_t)l->in, NULL, rows, sc, NULL);
    if (sc->prof)
        t = sq_op_add(sc->prof, SQ_OP_QUANTIZE, t);
    quant_gemm(l, x, NULL, rows, guarded, y, sc, t);
}

void sq_linear_forward(const sq_linear *l, const float *x, int rows, float *y,
                       const sq_linear_scratch *scratch)
{
    if (!sq_qtype_get(l->qtype)->gemm) {
        double t = scratch && scratch->prof ? sq_op_now() : 0;
        f32_forward(l, x, rows, y);
        if (scratch && scratch->prof)
            sq_op_add(scratch->prof, scratch->gemm_op, t);
    } else
        quant_forward(l, x, rows, y, scratch);
}

/* SQUINT_FUSE=0 turns the fused path off (bench: the profile before and
 * after; tests: fused against unfused, bit for bit). */
static bool fusion_on = true;
static pthread_once_t fusion_once = PTHREAD_ONCE_INIT;
static void fusion_init(void)
{
    const char *e = getenv("SQUINT_FUSE");
    fusion_on = !(e && strcmp(e, "0") == 0);
}

bool sq_linear_fusion(void)
{
    pthread_once(&fusion_once, fusion_init);
    return fusion_on;
}

void sq_linear_forward_mapped(const sq_linear *l, const float *x, size_t ldx, int rows,
                              sq_row_map map, float *mapped, float *y,
                              const sq_linear_scratch *scratch)
{
    const bool quant = sq_qtype_get(l->qtype)->gemm != NULL;
    sq_op_profile *prof = scratch ? scratch->prof : NULL;
    double t = prof ? sq_op_now() : 0;
    if (quant && sq_linear_fusion()) {
        /* the outlier channels' mapped values [rows][n] */
        const size_t no = (size_t)l->n_outliers;
        float *xo = no ? malloc((size_t)rows * no * sizeof *xo) : NULL;
        if (xo || !no) {
            const int guarded = quantize_input(l, x, ldx, map, rows, scratch, xo);
            if (guarded >= 0) {
                if (prof)
                    t = sq_op_add(prof, SQ_OP_ACT_QUANTIZE, t);
                quant_gemm(l, NULL, xo, rows, guarded, y, scratch, t);
                free(xo);
                return;
            }
            free(xo);
        }
    }
    /* The op as its own pass into mapped, then the linear. */
#pragma omp parallel for schedule(static) \
    num_threads(sq_par_threads(SQ_WORK_ELEM_MATH, (double)rows * l->in, rows))
    for (int r = 0; r < rows; r++)
        map(x + (size_t)r * ldx, mapped + (size_t)r * l->in, l->in);
    if (prof)
        sq_op_add(prof, SQ_OP_ACTIVATION, t);
    sq_linear_forward(l, mapped, rows, y, scratch);
}

void sq_linear_free(sq_linear *l)
{
    if (!l->borrowed) {
        free(l->w);
        free(l->b);
    }
    sq_qweight_free(&l->qw);
    free(l->act_mult);
    free(l->out_scale);
    free(l->acc_off);
    free(l->scale_pad);
    memset(l, 0, sizeof *l);
}

int64_t sq_linear_count_clipped(const sq_linear *l, const float *x, int rows,
                                int64_t *rows_beyond)
{
    int64_t n = 0, nr = 0;
    if (l->qtype != SQ_QT_F32 && l->act_mult) {
        const float lo = -127.0f + (float)l->act_zero, hi = 127.0f + (float)l->act_zero;
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * l->in;
            int64_t before = n;
            for (int j = 0; j < l->in; j++) {
                float v = roundf(xr[j] * l->act_mult[j]); /* half away from zero, as the step */
                n += v < lo || v > hi;
            }
            nr += n > before;
        }
    }
    if (rows_beyond)
        *rows_beyond = nr;
    return n;
}

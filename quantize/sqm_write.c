#include "sqm_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "sqm_model.h"

/* A linear row's values from the linear and its plan (SQM.md 3.3): f32
 * weight and bias, or the packed weight, scales, sums, bias, SmoothQuant
 * factors unless folded, activation step and zero point, outliers. */
static int linear_row(enum sq_sqm_row row, const sq_linear *lin, const sq_plan_linear *p,
                      sq_keep *kp, sq_sqm_data *out, sq_err *err)
{
    const bool packed = p && p->res.qtype != SQ_QT_F32;
    *out = (sq_sqm_data){NULL, 0};
    switch (row) {
    case SQ_ROW_LIN_WEIGHT: out->p = packed ? (const void *)p->qw.data : lin->w; break;
    case SQ_ROW_LIN_SCALE: out->p = packed ? p->qw.scale : NULL; break;
    case SQ_ROW_LIN_WSUM: out->p = packed ? p->qw.wsum : NULL; break;
    case SQ_ROW_LIN_BIAS: out->p = lin->b; break;
    case SQ_ROW_LIN_SMOOTH: out->p = packed && p->s && !p->folded ? p->s : NULL; break;
    case SQ_ROW_LIN_ACT_SCALE: out->p = packed ? &p->act_scale : NULL; break;
    case SQ_ROW_LIN_ACT_ZERO:
        if (packed && p->act_zero != 0) {
            int32_t *z = sq_keep_add(kp, malloc(sizeof *z));
            if (!z)
                return sq_err_set(err, "out of memory");
            *z = p->act_zero;
            out->p = z;
        }
        break;
    case SQ_ROW_LIN_OUTLIER_INDEX:
    case SQ_ROW_LIN_OUTLIER_WEIGHT:
        if (packed && p->n_outl > 0) {
            out->p = row == SQ_ROW_LIN_OUTLIER_INDEX ? (const void *)p->outl_idx : p->outl_w;
            out->n = (uint64_t)p->n_outl;
        }
        break;
    default: break;
    }
    return 0;
}

/* Add row `row`'s tensor (layer l, linear k of qtype lin_qt) when it
 * applies to the model: values from the linear (lin non-NULL) or the
 * family's source. */
static int add_row(sq_container_writer *w, sq_keep *kp, const sq_sqm_schema_ctx *sc,
                   enum sq_sqm_row row, int l, sq_linear_kind k, const sq_linear *lin,
                   const sq_plan_linear *p, const sq_sqm_source *src, sq_err *err)
{
    const sq_qtype lin_qt = p ? p->res.qtype : SQ_QT_F32;
    sq_sqm_expect ex;
    int rc = sq_sqm_expect_tensor(&sq_sqm_tensor_rules[row], sc, l, k, lin_qt, &ex, err);
    if (rc <= 0 || !ex.applies)
        return rc < 0 ? -1 : 0;
    sq_sqm_data d;
    if ((lin ? linear_row(row, lin, p, kp, &d, err) : src->tensor(src->ctx, row, l, kp, &d, err)) != 0)
        return -1;
    if (!d.p) {
        if (ex.optional)
            return 0;
        return sq_err_set_at(err, ex.name, "internal error: the model has no values for tensor \"%s\"",
                             ex.name);
    }
    if (ex.any_len || ex.any_rows)
        ex.dims[0] = d.n;
    uint64_t size;
    if (sq_cdtype_size(ex.dtype, ex.ndim, ex.dims, &size, err) != 0)
        return sq_err_prefix(err, "tensor \"%s\"", ex.name);
    sq_container_writer_add(w, ex.name, ex.dtype, ex.ndim, ex.dims, d.p, size);
    return 0;
}

/* Every linear row of linear (l, k), when the model has the linear. */
static int add_linear(sq_container_writer *w, sq_keep *kp, const sq_sqm_schema_ctx *sc, int l,
                      sq_linear_kind k, const sq_sqm_source *src, sq_err *err)
{
    const sq_plan_linear *p = NULL;
    const sq_linear *lin = src->linear(src->ctx, l, k, &p);
    if (!lin)
        return 0;
    for (size_t r = 0; r < sq_sqm_n_tensor_rules; r++)
        if (sq_sqm_tensor_rules[r].scope == SQ_SCOPE_LINEAR &&
            add_row(w, kp, sc, (enum sq_sqm_row)r, l, k, lin, p, src, err) != 0)
            return -1;
    return 0;
}

static int add_tensors(sq_container_writer *w, sq_keep *kp, const sq_sqm_schema_ctx *sc,
                       const sq_sqm_source *src, sq_err *err)
{
    const size_t n = sq_sqm_n_tensor_rules;
    size_t first_layer = 0;
    while (first_layer < n && sq_sqm_tensor_rules[first_layer].scope == SQ_SCOPE_MODEL)
        first_layer++;
    for (size_t r = 0; r < first_layer; r++)
        if (add_row(w, kp, sc, (enum sq_sqm_row)r, 0, 0, NULL, NULL, src, err) != 0)
            return -1;
    for (int l = 0; l < sc->cfg.layers; l++) {
        for (size_t r = first_layer; r < n; r++)
            if (sq_sqm_tensor_rules[r].scope == SQ_SCOPE_LAYER &&
                add_row(w, kp, sc, (enum sq_sqm_row)r, l, 0, NULL, NULL, src, err) != 0)
                return -1;
        for (int k = 0; k < SQ_LIN_KINDS; k++)
            if (add_linear(w, kp, sc, l, (sq_linear_kind)k, src, err) != 0)
                return -1;
    }
    for (size_t r = first_layer; r < n; r++)
        if (sq_sqm_tensor_rules[r].scope == SQ_SCOPE_MODEL &&
            add_row(w, kp, sc, (enum sq_sqm_row)r, 0, 0, NULL, NULL, src, err) != 0)
            return -1;
    if (sc->decoder && sc->cls_qt != SQ_QT_F32) /* the packed classifier (SQM.md 10.6) */
        return add_linear(w, kp, sc, SQ_SQM_CLASSIFIER, (sq_linear_kind)0, src, err);
    return 0;
}

int sq_sqm_write(const char *meta, const sq_sqm_source *src, int zstd_level, const char *path,
                 sq_err *err)
{
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    sq_keep kp = {0};
    int rc = -1;
    if (!w || !meta) {
        sq_err_set(err, "%s: out of memory", path);
        goto out;
    }
    /* the schema's context from the metadata, as the loader reads it */
    sq_container mc;
    memset(&mc, 0, sizeof mc);
    mc.path = (char *)path;
    mc.metadata = (char *)meta;
    mc.metadata_len = strlen(meta);
    sq_sqm_schema_ctx sc;
    sq_sqm_info info;
    if (sq_sqm_read_meta(&mc, &sc, &info, err) != 0) {
        sq_err_prefix(err, "internal error: the metadata being written");
        goto out;
    }
    if (sq_container_writer_set_metadata(w, meta, strlen(meta), err) != 0 ||
        add_tensors(w, &kp, &sc, src, err) != 0) {
        sq_err_prefix(err, "%s", path);
        goto out;
    }
    sq_container_writer_set_zstd(w, zstd_level);
    if (sq_container_writer_write(w, path, err) != 0 || sq_sqm_check_written(path, err) != 0)
        goto out;
    rc = 0;
out:
    sq_container_writer_free(w);
    sq_keep_free(&kp);
    return rc;
}

int sq_sqm_check_written(const char *path, sq_err *err)
{
#ifdef NDEBUG
    const char *env = getenv("SQUINT_WRITE_CHECK");
    if (!env || !*env || strcmp(env, "0") == 0)
        return 0;
#endif
    sq_container c;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    int rc = sq_container_open(path, SQ_KIND_SQM, &c, err);
    if (rc == 0) {
        rc = sq_sqm_read_meta(&c, &ctx, &info, err) != 0 ||
                     sq_sqm_check_schema(&c, &ctx, SQ_SQM_STRICT, err) != 0
                 ? -1
                 : 0;
        sq_container_close(&c);
    }
    if (rc != 0) {
        sq_err_prefix(err, "internal error: the written file fails the .sqm schema");
        remove(path);
    }
    return rc;
}

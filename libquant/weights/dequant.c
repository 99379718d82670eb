/* Tensors of a squint container back to float values (dequant.h). */
#include "dequant.h"

#include <stdlib.h>
#include <string.h>

#include "qweight.h"
#include "safetensors.h" /* sq_f16_to_f32, sq_bf16_to_f32 */

bool sq_dequant_supported(unsigned code)
{
    return sq_cdtype_elem_size(code) > 0 || sq_qtype_from_cdtype(code) >= 0;
}

const sq_container_tensor *sq_dequant_scale_of(const sq_container *c,
                                               const sq_container_tensor *t)
{
    static const char suffix[] = ".weight";
    size_t len = strlen(t->name), sl = sizeof suffix - 1;
    char *name = malloc(len + sizeof ".scale");
    if (!name)
        return NULL;
    memcpy(name, t->name, len + 1);
    if (len > sl && strcmp(name + len - sl, suffix) == 0)
        len -= sl;
    strcpy(name + len, ".scale");
    const sq_container_tensor *s = sq_container_find(c, name);
    free(name);
    return s;
}

static uint64_t element_count(int ndim, const uint64_t *dims)
{
    uint64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= dims[i]; /* cannot overflow: the container checked the byte size */
    return n;
}

int sq_dequant_shape(const sq_container_tensor *t, int *ndim, uint64_t *dims, sq_err *err)
{
    if (sq_cdtype_elem_size(t->dtype) > 0) {
        *ndim = t->ndim;
        memcpy(dims, t->dims, sizeof t->dims);
        return 0;
    }
    const char *dn = sq_cdtype_name(t->dtype);
    if (sq_qtype_from_cdtype(t->dtype) < 0)
        return sq_err_set(err, "tensor \"%s\": dtype %s cannot be dequantized", t->name,
                          dn ? dn : "?");
    if (t->ndim != 2)
        return sq_err_set(err, "tensor \"%s\": packed %s weight has %d dimensions, expected 2",
                          t->name, dn, t->ndim);
    *ndim = 2;
    memset(dims, 0, sizeof t->dims);
    dims[0] = t->dims[0];
    dims[1] = t->dims[1];
    return 0;
}

/* One plain element i of t as a float (little-endian host, as on x86). */
static float plain_at(const sq_container_tensor *t, size_t i)
{
    const uint8_t *p = (const uint8_t *)t->data + i * sq_cdtype_elem_size(t->dtype);
    union {
        float f;
        double d;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        uint16_t u16;
    } v;
    memcpy(&v, p, sq_cdtype_elem_size(t->dtype));
    switch ((sq_cdtype)t->dtype) {
    case SQ_CDT_F32: return v.f;
    case SQ_CDT_F64: return (float)v.d;
    case SQ_CDT_I32: return (float)v.i32;
    case SQ_CDT_U32: return (float)v.u32;
    case SQ_CDT_I64: return (float)v.i64;
    case SQ_CDT_U64: return (float)v.u64;
    case SQ_CDT_I8: return (float)(int8_t)p[0];
    case SQ_CDT_U8: return (float)p[0];
    case SQ_CDT_F16: return sq_f16_to_f32(v.u16);
    case SQ_CDT_BF16: return sq_bf16_to_f32(v.u16);
    default: return 0;
    }
}

/* A scale companion must be f32 holding `want` entries (or `alt` entries:
 * scales may be stored for the padded channel count too). */
static int check_scale(const sq_container_tensor *t, const sq_container_tensor *s, uint64_t want,
                       uint64_t alt, sq_err *err)
{
    if (s->dtype != SQ_CDT_F32)
        return sq_err_set(err, "tensor \"%s\": scale \"%s\" is %s, expected f32", t->name,
                          s->name, sq_cdtype_name(s->dtype));
    uint64_t n = s->size / sizeof(float);
    if (n != want && n != alt)
        return sq_err_set(err, "tensor \"%s\": scale \"%s\" has %llu entries, expected %llu",
                          t->name, s->name, (unsigned long long)n, (unsigned long long)want);
    return 0;
}

static int dequant_plain(const sq_container *c, const sq_container_tensor *t, float *dst,
                         size_t count, sq_err *err)
{
    const sq_container_tensor *s = t->dtype == SQ_CDT_I8 ? sq_dequant_scale_of(c, t) : NULL;
    uint64_t rows = t->ndim > 0 ? t->dims[0] : 1;
    if (s && check_scale(t, s, rows, rows, err) != 0)
        return -1;
    size_t row_len = rows ? count / rows : 0;
    for (size_t i = 0; i < count; i++) {
        float v = plain_at(t, i);
        if (s) {
            float sc;
            memcpy(&sc, (const float *)s->data + i / row_len, sizeof sc);
            v *= sc;
        }
        dst[i] = v;
    }
    return 0;
}

static int dequant_packed(const sq_container *c, const sq_container_tensor *t, sq_qtype qt,
                          float *dst, sq_err *err)
{
    if (t->dims[0] > SQ_QWEIGHT_MAX_DIM || t->dims[1] > SQ_QWEIGHT_MAX_DIM)
        return sq_err_set(err, "tensor \"%s\": packed weight shape too large", t->name);
    sq_qweight q;
    if (sq_qweight_shape(&q, qt, (int)t->dims[0], (int)t->dims[1], err) != 0)
        return sq_err_prefix(err, "tensor \"%s\"", t->name);
    if (t->size != q.data_size)
        return sq_err_set(err, "tensor \"%s\": %llu bytes, a packed [%d, %d] weight needs %llu",
                          t->name, (unsigned long long)t->size, q.n, q.k,
                          (unsigned long long)q.data_size);
    const sq_container_tensor *s = sq_dequant_scale_of(c, t);
    if (!s)
        return sq_err_set(err, "tensor \"%s\": packed weight without its .scale companion",
                          t->name);
    int groups = sq_qweight_groups(&q);
    if (check_scale(t, s, (uint64_t)q.n * groups, (uint64_t)q.n_pad * groups, err) != 0)
        return -1;
    /* A read-only view: only data and the padded shape are used by get(). */
    q.data = (void *)(uintptr_t)t->data;
    q.borrowed = 1;
    const sq_qtype_traits *tr = sq_qtype_get(qt);
    const float *scale = s->data;
    int block = tr->block > 0 ? tr->block : q.k_pad;
    for (int n = 0; n < q.n; n++)
        for (int k = 0; k < q.k; k++)
            dst[(size_t)n * q.k + k] =
                (float)tr->get(&q, n, k) * scale[(size_t)n * groups + k / block];
    return 0;
}

int sq_dequant_tensor(const sq_container *c, const char *name, sq_dequant *out, sq_err *err)
{
    memset(out, 0, sizeof *out);
    const sq_container_tensor *t = sq_container_find(c, name);
    if (!t)
        return sq_err_set(err, "no tensor \"%s\"", name);
    sq_dequant d = {0};
    if (sq_dequant_shape(t, &d.ndim, d.dims, err) != 0)
        return -1;
    uint64_t count = element_count(d.ndim, d.dims);
    if (count > SIZE_MAX / sizeof(float))
        return sq_err_set(err, "tensor \"%s\": too large to dequantize", name);
    d.count = (size_t)count;
    if (d.count) {
        d.data = malloc(d.count * sizeof(float));
        if (!d.data)
            return sq_err_set(err, "tensor \"%s\": out of memory for %zu floats", name, d.count);
    }
    int qt = sq_qtype_from_cdtype(t->dtype);
    int rc = d.count == 0 ? 0
             : qt >= 0    ? dequant_packed(c, t, (sq_qtype)qt, d.data, err)
                          : dequant_plain(c, t, d.data, d.count, err);
    if (rc != 0) {
        free(d.data);
        return -1;
    }
    *out = d;
    return 0;
}

void sq_dequant_free(sq_dequant *out)
{
    if (!out)
        return;
    free(out->data);
    memset(out, 0, sizeof *out);
}

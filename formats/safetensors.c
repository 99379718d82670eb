#include "safetensors.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"

static const struct {
    const char *name;
    int size;
} dtype_table[SQ_DT_COUNT] = {
    [SQ_DT_F64] = {"F64", 8},   [SQ_DT_F32] = {"F32", 4},   [SQ_DT_F16] = {"F16", 2},
    [SQ_DT_BF16] = {"BF16", 2}, [SQ_DT_I64] = {"I64", 8},   [SQ_DT_I32] = {"I32", 4},
    [SQ_DT_I16] = {"I16", 2},   [SQ_DT_I8] = {"I8", 1},     [SQ_DT_U8] = {"U8", 1},
    [SQ_DT_BOOL] = {"BOOL", 1}, [SQ_DT_U16] = {"U16", 2},   [SQ_DT_U32] = {"U32", 4},
    [SQ_DT_U64] = {"U64", 8},   [SQ_DT_F8_E4M3] = {"F8_E4M3", 1},
    [SQ_DT_F8_E5M2] = {"F8_E5M2", 1},
};

const char *sq_st_dtype_name(sq_st_dtype dt)
{
    return (unsigned)dt < SQ_DT_COUNT ? dtype_table[dt].name : "?";
}

int sq_st_dtype_size(sq_st_dtype dt)
{
    return (unsigned)dt < SQ_DT_COUNT ? dtype_table[dt].size : 0;
}

static int dtype_from_name(const char *s, sq_st_dtype *out)
{
    for (int i = 0; i < SQ_DT_COUNT; i++)
        if (strcmp(s, dtype_table[i].name) == 0) {
            *out = (sq_st_dtype)i;
            return 0;
        }
    return -1;
}

static int cmp_by_name(const void *a, const void *b)
{
    return strcmp(((const sq_st_tensor *)a)->name, ((const sq_st_tensor *)b)->name);
}

static int cmp_by_offset(const void *a, const void *b)
{
    const sq_st_tensor *x = *(const sq_st_tensor *const *)a, *y = *(const sq_st_tensor *const *)b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* Parse one header entry into t; data_len is the size of the data buffer. */
static int parse_entry(const char *path, const char *name, json_t *v, uint64_t data_start,
                       uint64_t data_len, sq_st_tensor *t, sq_err *err)
{
    if (strlen(name) > SQ_ST_MAX_NAME)
        return sq_err_set(err, "%s: tensor name longer than %d bytes", path, SQ_ST_MAX_NAME);
    if (!json_is_object(v))
        return sq_err_set(err, "%s: tensor \"%s\": header entry is not an object", path, name);
    json_t *jd = json_object_get(v, "dtype"), *js = json_object_get(v, "shape"),
           *jo = json_object_get(v, "data_offsets");
    if (!json_is_string(jd))
        return sq_err_set(err, "%s: tensor \"%s\": missing or non-string \"dtype\"", path, name);
    if (dtype_from_name(json_string_value(jd), &t->dtype) != 0)
        return sq_err_set(err, "%s: tensor \"%s\": unknown dtype \"%s\"", path, name,
                          json_string_value(jd));
    if (!json_is_array(js))
        return sq_err_set(err, "%s: tensor \"%s\": missing or non-array \"shape\"", path, name);
    size_t nd = json_array_size(js);
    if (nd > SQ_ST_MAX_DIMS)
        return sq_err_set(err, "%s: tensor \"%s\": %zu dimensions (at most %d supported)", path,
                          name, nd, SQ_ST_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(js, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return sq_err_set(err, "%s: tensor \"%s\": shape[%zu] is not a non-negative integer",
                              path, name, i);
        uint64_t di = (uint64_t)json_integer_value(d);
        t->shape[i] = (int64_t)di;
        if (di != 0 && numel > (UINT64_MAX / 16) / di)
            return sq_err_set(err, "%s: tensor \"%s\": shape overflows 64 bits", path, name);
        numel *= di;
    }
    if (numel > (uint64_t)INT64_MAX / 16)
        return sq_err_set(err, "%s: tensor \"%s\": too many elements", path, name);
    t->numel = (int64_t)numel;
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
        !json_is_integer(json_array_get(jo, 1)))
        return sq_err_set(err, "%s: tensor \"%s\": \"data_offsets\" must be [begin, end]", path,
                          name);
    json_int_t b = json_integer_value(json_array_get(jo, 0)),
               e = json_integer_value(json_array_get(jo, 1));
    if (b < 0 || e < b)
        return sq_err_set(err, "%s: tensor \"%s\": invalid data_offsets [%lld, %lld]", path, name,
                          (long long)b, (long long)e);
    if ((uint64_t)e > data_len)
        return sq_err_set(err,
                          "%s: tensor \"%s\": data_offsets end %lld is past the end of the data "
                          "(%llu bytes; file truncated?)",
                          path, name, (long long)e, (unsigned long long)data_len);
    uint64_t want = numel * (uint64_t)sq_st_dtype_size(t->dtype);
    if ((uint64_t)(e - b) != want)
        return sq_err_set(err,
                          "%s: tensor \"%s\": shape x dtype size is %llu bytes but data_offsets "
                          "span %lld bytes",
                          path, name, (unsigned long long)want, (long long)(e - b));
    t->offset = data_start + (uint64_t)b;
    t->nbytes = (uint64_t)(e - b);
    return 0;
}

/* The string values of "__metadata__" (the format's; others are skipped). */
static int keep_metadata(sq_safetensors *st, const json_t *meta)
{
    size_t n = json_object_size(meta);
    st->meta_key = calloc(n ? n : 1, sizeof *st->meta_key);
    st->meta_value = calloc(n ? n : 1, sizeof *st->meta_value);
    if (!st->meta_key || !st->meta_value)
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)meta, k, v)
    {
        if (!json_is_string(v))
            continue;
        st->meta_key[st->n_meta] = strdup(k);
        st->meta_value[st->n_meta] = strndup(json_string_value(v), json_string_length(v));
        if (!st->meta_key[st->n_meta] || !st->meta_value[st->n_meta]) {
            st->n_meta++;
            return -1;
        }
        st->n_meta++;
    }
    return 0;
}

const char *sq_safetensors_meta(const sq_safetensors *st, const char *key)
{
    for (int i = 0; i < st->n_meta; i++)
        if (strcmp(st->meta_key[i], key) == 0)
            return st->meta_value[i];
    return NULL;
}

int sq_safetensors_open(const char *path, sq_safetensors *st, sq_err *err)
{
    memset(st, 0, sizeof *st);
    if (sq_map_file(path, &st->mf, err) != 0)
        return -1;
    const uint8_t *p = st->mf.data;
    size_t size = st->mf.size;
    json_t *root = NULL;
    if (size < 8) {
        sq_err_set(err, "%s: file is %zu bytes, too short for a safetensors header", path, size);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | p[i];
    if (hlen < 2 || hlen > SQ_ST_MAX_HEADER) {
        sq_err_set(err, "%s: header length %llu is outside [2, %u] (not a safetensors file?)", path,
                   (unsigned long long)hlen, SQ_ST_MAX_HEADER);
        goto fail;
    }
    if (hlen > size - 8) {
        sq_err_set(err, "%s: header length %llu is past the end of the file (%zu bytes)", path,
                   (unsigned long long)hlen, size);
        goto fail;
    }
    if (p[8] != '{') {
        sq_err_set(err, "%s: header does not start with '{'", path);
        goto fail;
    }
    char what[600];
    snprintf(what, sizeof what, "%s (safetensors header)", path);
    root = sq_json_parse_object((const char *)p + 8, (size_t)hlen, what, err);
    if (!root)
        goto fail;
    uint64_t data_start = 8 + hlen, data_len = size - data_start;
    size_t n = json_object_size(root);
    if (n > SQ_ST_MAX_TENSORS) {
        sq_err_set(err, "%s: %zu header entries (limit %d)", path, n, SQ_ST_MAX_TENSORS);
        goto fail;
    }
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    if (!st->tensors) {
        sq_err_set(err, "%s: out of memory", path);
        goto fail;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(val)) {
                sq_err_set(err, "%s: \"__metadata__\" is not an object", path);
                goto fail;
            }
            if (keep_metadata(st, val) != 0) {
                sq_err_set(err, "%s: out of memory", path);
                goto fail;
            }
            continue;
        }
        sq_st_tensor *t = &st->tensors[st->n_tensors];
        if (parse_entry(path, key, val, data_start, data_len, t, err) != 0)
            goto fail;
        t->name = strdup(key);
        if (!t->name) {
            sq_err_set(err, "%s: out of memory", path);
            goto fail;
        }
        st->n_tensors++;
    }
    /* Duplicate names are rejected by the JSON parser (JSON_REJECT_DUPLICATES). */
    qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_by_name);

    /* Ranges must not overlap. */
    if (st->n_tensors > 1) {
        const sq_st_tensor **order = malloc((size_t)st->n_tensors * sizeof *order);
        if (!order) {
            sq_err_set(err, "%s: out of memory", path);
            goto fail;
        }
        for (int i = 0; i < st->n_tensors; i++)
            order[i] = &st->tensors[i];
        qsort(order, (size_t)st->n_tensors, sizeof *order, cmp_by_offset);
        for (int i = 1; i < st->n_tensors; i++) {
            if (order[i]->offset < order[i - 1]->offset + order[i - 1]->nbytes) {
                sq_err_set(err, "%s: tensors \"%s\" and \"%s\" have overlapping data ranges", path,
                           order[i - 1]->name, order[i]->name);
                free(order);
                goto fail;
            }
        }
        free(order);
    }
    json_decref(root);
    return 0;
fail:
    json_decref(root);
    sq_safetensors_close(st);
    return -1;
}

void sq_safetensors_close(sq_safetensors *st)
{
    for (int i = 0; i < st->n_tensors; i++)
        free(st->tensors[i].name);
    free(st->tensors);
    for (int i = 0; i < st->n_meta; i++) {
        free(st->meta_key[i]);
        free(st->meta_value[i]);
    }
    free(st->meta_key);
    free(st->meta_value);
    sq_unmap_file(&st->mf);
    memset(st, 0, sizeof *st);
}

const sq_st_tensor *sq_safetensors_find(const sq_safetensors *st, const char *name)
{
    int lo = 0, hi = st->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, st->tensors[mid].name);
        if (c == 0)
            return &st->tensors[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

float sq_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalize */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400u) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float sq_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t sq_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

uint16_t sq_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00u;
    if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return sign | 0x7c00u;
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (ax < 0x33000000u)
            return sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t half = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return sign | (uint16_t)half;
    }
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1);
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

int sq_safetensors_read_f32(const sq_safetensors *st, const sq_st_tensor *t, float *dst,
                            sq_err *err)
{
    const uint8_t *src = st->mf.data + t->offset;
    int64_t n = t->numel;
    switch (t->dtype) {
    case SQ_DT_F32:
        memcpy(dst, src, (size_t)n * 4);
        break;
    case SQ_DT_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = sq_f16_to_f32((uint16_t)(src[2 * i] | (src[2 * i + 1] << 8)));
        break;
    case SQ_DT_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = sq_bf16_to_f32((uint16_t)(src[2 * i] | (src[2 * i + 1] << 8)));
        break;
    default:
        return sq_err_set(err, "%s: tensor \"%s\" has dtype %s; only F32, F16 and BF16 are supported",
                          st->mf.path, t->name, sq_st_dtype_name(t->dtype));
    }
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return sq_err_set(err, "%s: tensor \"%s\" holds a non-finite value (%g) at element %lld",
                              st->mf.path, t->name, (double)dst[i], (long long)i);
    return 0;
}

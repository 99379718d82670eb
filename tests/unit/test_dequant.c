/* Dequantization of container tensors (libquant/weights/dequant.h): plain dtypes,
 * int8 rows with their scales, packed int8 / int4 panels with per-channel and
 * per-group scales (padding dropped), and the errors for missing or
 * mismatched companions. Every case writes a real container and reads it
 * back. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "dequant.h"
#include "pack.h"
#include "qweight.h"
#include "safetensors.h"
#include "test_util.h"

static char *dir;
static sq_container_writer *w;
static sq_container c;

static void setup(void)
{
    dir = tu_mkdtemp();
    w = sq_container_writer_new(SQ_KIND_SQM);
    ck_assert_ptr_nonnull(w);
    memset(&c, 0, sizeof c);
}

static void teardown(void)
{
    sq_container_close(&c);
    sq_container_writer_free(w);
    tu_rmtree(dir);
    free(dir);
}

static void add(const char *name, unsigned dtype, int ndim, uint64_t d0, uint64_t d1,
                const void *data)
{
    uint64_t dims[2] = {d0, d1}, size;
    sq_err err;
    ck_assert_msg(sq_cdtype_size(dtype, ndim, dims, &size, &err) == 0, "%s", err.msg);
    ck_assert_msg(sq_container_writer_add_tensor(w, name, dtype, ndim, dims, data, size, &err) == 0,
                  "%s", err.msg);
}

static void write_and_open(void)
{
    sq_err err;
    char *path = tu_write(dir, "m.sqm", "", 0);
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
    free(path);
}

static float rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

START_TEST(plain_dtypes)
{
    const float f[6] = {1.5f, -2.25f, 0, 3e-5f, 1e6f, -7};
    uint16_t h[6], bh[6];
    const int8_t i8[6] = {-127, -1, 0, 1, 5, 127};
    const uint8_t u8[3] = {0, 128, 255};
    const int32_t i32[2] = {-5, 1 << 20};
    for (int i = 0; i < 6; i++) {
        h[i] = sq_f32_to_f16(f[i]);
        uint32_t bits;
        memcpy(&bits, &f[i], 4);
        bh[i] = (uint16_t)(bits >> 16);
    }
    add("f", SQ_CDT_F32, 2, 2, 3, f);
    add("h", SQ_CDT_F16, 1, 6, 0, h);
    add("bh", SQ_CDT_BF16, 1, 6, 0, bh);
    add("q", SQ_CDT_I8, 2, 3, 2, i8); /* no q.scale: raw values */
    add("u", SQ_CDT_U8, 1, 3, 0, u8);
    add("i", SQ_CDT_I32, 1, 2, 0, i32);
    write_and_open();
    sq_dequant d;
    sq_err err;
    ck_assert_msg(sq_dequant_tensor(&c, "f", &d, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(d.ndim, 2);
    ck_assert_uint_eq(d.dims[0], 2);
    ck_assert_uint_eq(d.dims[1], 3);
    ck_assert_uint_eq(d.count, 6);
    ck_assert_mem_eq(d.data, f, sizeof f);
    sq_dequant_free(&d);
    ck_assert(sq_dequant_tensor(&c, "h", &d, &err) == 0);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(d.data[i], sq_f16_to_f32(h[i]));
    ck_assert_float_eq(d.data[0], 1.5f);
    sq_dequant_free(&d);
    ck_assert(sq_dequant_tensor(&c, "bh", &d, &err) == 0);
    ck_assert_float_eq(d.data[1], -2.25f);
    ck_assert_float_eq(d.data[5], -7.0f);
    sq_dequant_free(&d);
    ck_assert(sq_dequant_tensor(&c, "q", &d, &err) == 0);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(d.data[i], (float)i8[i]);
    sq_dequant_free(&d);
    ck_assert(sq_dequant_tensor(&c, "u", &d, &err) == 0);
    ck_assert_float_eq(d.data[2], 255.0f);
    sq_dequant_free(&d);
    ck_assert(sq_dequant_tensor(&c, "i", &d, &err) == 0);
    ck_assert_float_eq(d.data[0], -5.0f);
    ck_assert_float_eq(d.data[1], 1048576.0f);
    sq_dequant_free(&d);
}
END_TEST

START_TEST(int8_rows_with_scale)
{
    enum { V = 5, H = 7 };
    int8_t q[V * H];
    float s[V];
    unsigned seed = 3;
    for (int i = 0; i < V * H; i++)
        q[i] = (int8_t)(rnd(&seed) * 127);
    for (int r = 0; r < V; r++)
        s[r] = 0.01f * (float)(r + 1);
    add("embeddings.word", SQ_CDT_I8, 2, V, H, q);
    add("embeddings.word.scale", SQ_CDT_F32, 1, V, 0, s);
    write_and_open();
    sq_dequant d;
    sq_err err;
    ck_assert_msg(sq_dequant_tensor(&c, "embeddings.word", &d, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(d.count, V * H);
    for (int r = 0; r < V; r++)
        for (int k = 0; k < H; k++)
            ck_assert_float_eq(d.data[r * H + k], (float)q[r * H + k] * s[r]);
    sq_dequant_free(&d);
}
END_TEST

/* Quantized values vals [n][k] packed to qt, with scales scale (n x groups). */
static void add_packed(const char *prefix, sq_qtype qt, int n, int k, const int8_t *vals,
                       const float *scale, int groups)
{
    sq_qweight q;
    sq_err err;
    ck_assert_msg(sq_qweight_alloc(&q, qt, n, k, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(sq_qweight_groups(&q), groups);
    sq_pack(&q, vals);
    char name[64];
    snprintf(name, sizeof name, "%s.weight", prefix);
    add(name, sq_qtype_get(qt)->cdtype, 2, (uint64_t)n, (uint64_t)k, q.data);
    snprintf(name, sizeof name, "%s.scale", prefix);
    add(name, SQ_CDT_F32, qt == SQ_QT_S4G128 ? 2 : 1, (uint64_t)n, (uint64_t)groups, scale);
    sq_qweight_free(&q);
}

static void check_packed(sq_qtype qt, int n, int k, int qmax)
{
    int groups = qt == SQ_QT_S4G128 ? (k + 127) / 128 : 1;
    int8_t *vals = malloc((size_t)n * k);
    float *scale = malloc((size_t)n * groups * sizeof *scale);
    unsigned seed = 11;
    for (int i = 0; i < n * k; i++)
        vals[i] = (int8_t)lrintf(rnd(&seed) * (float)qmax);
    for (int i = 0; i < n * groups; i++)
        scale[i] = 0.001f * (float)(i + 1);
    add_packed("layer.0.qkv", qt, n, k, vals, scale, groups);
    write_and_open();
    sq_dequant d;
    sq_err err;
    ck_assert_msg(sq_dequant_tensor(&c, "layer.0.qkv.weight", &d, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(d.ndim, 2);
    ck_assert_uint_eq(d.dims[0], (uint64_t)n);
    ck_assert_uint_eq(d.dims[1], (uint64_t)k);
    ck_assert_uint_eq(d.count, (size_t)n * k); /* padding dropped */
    for (int r = 0; r < n; r++)
        for (int j = 0; j < k; j++)
            ck_assert_msg(d.data[r * k + j] == (float)vals[r * k + j] * scale[r * groups + j / 128],
                          "W[%d][%d] = %g", r, j, (double)d.data[r * k + j]);
    sq_dequant_free(&d);
    free(vals);
    free(scale);
}

START_TEST(packed_int8)
{
    check_packed(SQ_QT_S8, 21, 10, 127); /* N and K both padded */
}
END_TEST

START_TEST(packed_int4)
{
    check_packed(SQ_QT_S4G128, 17, 300, 7); /* 3 groups, the last partial */
}
END_TEST

START_TEST(companion_errors)
{
    int8_t vals[16 * 4] = {1, 2, 3};
    float scale[16] = {1};
    add_packed("a", SQ_QT_S8, 16, 4, vals, scale, 1);
    add_packed("b", SQ_QT_S8, 16, 4, vals, scale, 1);
    sq_qweight q;
    sq_err err;
    ck_assert(sq_qweight_alloc(&q, SQ_QT_S8, 16, 4, &err) == 0);
    add("noscale.weight", SQ_CDT_S8_PANEL, 2, 16, 4, q.data);
    sq_qweight_free(&q);
    /* An int8 tensor whose scale has too few rows. */
    int8_t e8[4] = {1, 2, 3, 4};
    float short_scale[1] = {2};
    add("emb", SQ_CDT_I8, 2, 2, 2, e8);
    add("emb.scale", SQ_CDT_F32, 1, 1, 0, short_scale);
    write_and_open();
    sq_dequant d;
    ck_assert(sq_dequant_tensor(&c, "a.weight", &d, &err) == 0);
    ck_assert_float_eq(d.data[1], 2.0f);
    sq_dequant_free(&d);
    ck_assert(sq_dequant_tensor(&c, "noscale.weight", &d, &err) == -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "noscale.weight"));
    ck_assert_ptr_nonnull(strstr(err.msg, ".scale"));
    ck_assert_ptr_null(d.data);
    ck_assert(sq_dequant_tensor(&c, "emb", &d, &err) == -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "emb.scale"));
    ck_assert(sq_dequant_tensor(&c, "missing", &d, &err) == -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "missing"));
    ck_assert(sq_dequant_supported(SQ_CDT_S4G128_PANEL));
    ck_assert(sq_dequant_supported(SQ_CDT_F16));
    ck_assert(!sq_dequant_supported(0x42));
    ck_assert_int_eq(sq_qtype_from_cdtype(SQ_CDT_S8_PANEL), SQ_QT_S8);
    ck_assert_int_eq(sq_qtype_from_cdtype(SQ_CDT_F32), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dequant");
    TCase *tc = tcase_create("dequant");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, plain_dtypes);
    tcase_add_test(tc, int8_rows_with_scale);
    tcase_add_test(tc, packed_int8);
    tcase_add_test(tc, packed_int4);
    tcase_add_test(tc, companion_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* safetensors reader: valid files, every header validation, dtype conversion. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"
#include "test_util.h"

static char *dir;

static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

/* Build a file: header JSON (padded to 8), then `data` bytes. */
static char *make_st(const char *name, const char *header, const void *data, size_t dlen,
                     int64_t force_hlen)
{
    size_t h = strlen(header), hp = (h + 7) / 8 * 8;
    size_t total = 8 + hp + dlen;
    uint8_t *buf = calloc(1, total);
    uint64_t hl = force_hlen >= 0 ? (uint64_t)force_hlen : hp;
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8, header, h);
    memset(buf + 8 + h, ' ', hp - h);
    if (dlen)
        memcpy(buf + 8 + hp, data, dlen);
    char *p = tu_write(dir, name, buf, total);
    free(buf);
    return p;
}

static int open_expect_fail(const char *path, const char *needle)
{
    sq_safetensors st;
    sq_err err = {0};
    int rc = sq_safetensors_open(path, &st, &err);
    if (rc == 0) {
        sq_safetensors_close(&st);
        return 0;
    }
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message '%s' does not name the file", err.msg);
    return 1;
}

START_TEST(valid_f32)
{
    float d[6] = {1, 2, 3, 4, 5, 6};
    char *p = make_st("a.safetensors",
                      "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                      "\"data_offsets\":[0,24]}}",
                      d, sizeof d, -1);
    sq_safetensors st;
    sq_err err = {0};
    ck_assert_int_eq(sq_safetensors_open(p, &st, &err), 0);
    ck_assert_int_eq(st.n_tensors, 1);
    const sq_st_tensor *t = sq_safetensors_find(&st, "w");
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_null(sq_safetensors_find(&st, "x"));
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[1], 3);
    float out[6];
    ck_assert_int_eq(sq_safetensors_read_f32(&st, t, out, &err), 0);
    ck_assert_mem_eq(out, d, sizeof d);
    sq_safetensors_close(&st);
    free(p);
}
END_TEST

START_TEST(f16_bf16_convert)
{
    uint16_t h[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};  /* 1, -2, smallest subnormal, 65504 */
    uint16_t b[2] = {0x3f80, 0xc040};                    /* 1, -3 */
    uint8_t data[12];
    memcpy(data, h, 8);
    memcpy(data + 8, b, 4);
    char *p = make_st("h.safetensors",
                      "{\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}",
                      data, sizeof data, -1);
    sq_safetensors st;
    sq_err err = {0};
    ck_assert_int_eq(sq_safetensors_open(p, &st, &err), 0);
    float o[4];
    ck_assert_int_eq(sq_safetensors_read_f32(&st, sq_safetensors_find(&st, "h"), o, &err), 0);
    ck_assert(o[0] == 1.0f && o[1] == -2.0f && o[2] == ldexpf(1.0f, -24) && o[3] == 65504.0f);
    ck_assert_int_eq(sq_safetensors_read_f32(&st, sq_safetensors_find(&st, "b"), o, &err), 0);
    ck_assert(o[0] == 1.0f && o[1] == -3.0f);
    sq_safetensors_close(&st);
    /* Round trips: every finite half converts back exactly. */
    for (uint32_t v = 0; v < 0x10000; v++) {
        if ((v & 0x7c00) == 0x7c00)
            continue;
        ck_assert_uint_eq(sq_f32_to_f16(sq_f16_to_f32((uint16_t)v)), v);
    }
    ck_assert_uint_eq(sq_f32_to_bf16(1.0f), 0x3f80);
    free(p);
}
END_TEST

START_TEST(rejects_bad_headers)
{
    float d[4] = {0};
    struct {
        const char *header;
        int64_t hlen;
        size_t dlen;
        const char *needle;
    } cases[] = {
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 1 << 20, 16, "past the end"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 1, 16, "outside"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}", -1, 16, "invalid JSON"},
        {"[1,2]", -1, 0, "does not start"},
        {"{\"w\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,16]}}", -1, 16, "unknown dtype"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[0,16]}}", -1, 16, "shape x dtype"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,32]}}", -1, 16, "past the end of the data"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,0]}}", -1, 16, "invalid data_offsets"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", -1, 16, "non-negative"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,16]}}", -1, 16, "overflow"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"v\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", -1, 16, "overlapping"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", -1, 16, "duplicate"},
        {"{\"w\":{\"shape\":[4],\"data_offsets\":[0,16]}}", -1, 16, "dtype"},
        {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", -1, 16, "shape"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", -1, 16, "data_offsets"},
        {"{\"w\":7}", -1, 16, "not an object"},
        {"{\"__metadata__\":[1]}", -1, 0, "__metadata__"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.safetensors", i);
        char *p = make_st(name, cases[i].header, d, cases[i].dlen, cases[i].hlen);
        ck_assert_msg(open_expect_fail(p, cases[i].needle), "case %zu was accepted", i);
        free(p);
    }
    /* Files shorter than the length prefix, and empty files. */
    char *p = tu_write(dir, "short.safetensors", "\x10\x00\x00", 3);
    ck_assert(open_expect_fail(p, "too short"));
    free(p);
    p = tu_write(dir, "empty.safetensors", "", 0);
    ck_assert(open_expect_fail(p, "too short"));
    free(p);
}
END_TEST

START_TEST(truncated_everywhere)
{
    float d[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    char *p = make_st("full.safetensors",
                      "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}",
                      d, sizeof d, -1);
    FILE *fp = fopen(p, "rb");
    uint8_t buf[512];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    for (size_t cut = 0; cut < n; cut++) {
        char *q = tu_write(dir, "cut.safetensors", buf, cut);
        ck_assert_msg(open_expect_fail(q, ""), "truncated at %zu accepted", cut);
        free(q);
    }
    free(p);
}
END_TEST

START_TEST(nan_refused)
{
    float d[2] = {1.0f, NAN};
    char *p = make_st("nan.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                      d, sizeof d, -1);
    sq_safetensors st;
    sq_err err = {0};
    ck_assert_int_eq(sq_safetensors_open(p, &st, &err), 0);
    float o[2];
    ck_assert_int_eq(sq_safetensors_read_f32(&st, sq_safetensors_find(&st, "w"), o, &err), -1);
    ck_assert(strstr(err.msg, "non-finite") && strstr(err.msg, "\"w\""));
    sq_safetensors_close(&st);
    free(p);
}
END_TEST

START_TEST(wrong_dtype_refused)
{
    int32_t d[2] = {1, 2};
    char *p = make_st("i.safetensors", "{\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                      d, sizeof d, -1);
    sq_safetensors st;
    sq_err err = {0};
    ck_assert_int_eq(sq_safetensors_open(p, &st, &err), 0);
    float o[2];
    ck_assert_int_eq(sq_safetensors_read_f32(&st, sq_safetensors_find(&st, "w"), o, &err), -1);
    ck_assert(strstr(err.msg, "I32") != NULL);
    sq_safetensors_close(&st);
    free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("reader");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, valid_f32);
    tcase_add_test(tc, f16_bf16_convert);
    tcase_add_test(tc, rejects_bad_headers);
    tcase_add_test(tc, truncated_everywhere);
    tcase_add_test(tc, nan_refused);
    tcase_add_test(tc, wrong_dtype_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

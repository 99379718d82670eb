/* TensorFlow.js graph model reader: the real USE-lite model from shared data,
 * a small valid model (weights spanning shards, several groups), and hostile
 * variants of model.json and the shards. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "tfjs_model.h"

static char *dir;

static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

static void put(const char *name, const void *data, size_t len) { free(tu_write(dir, name, data, len)); }

static void put_json(const char *fmt, ...) SQ_PRINTF(1, 2);
static void put_json(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put("model.json", buf, strlen(buf));
}

/* The small model: group 0 = shards s1 (30 bytes) + s2 (18 bytes) holding
 * a float32[2,3], b int32[], c float32[5] (c spans s1 and s2). */
#define TOPO                                                                                      \
    "\"modelTopology\":{\"node\":["                                                               \
    "{\"name\":\"a\",\"op\":\"Const\",\"input\":[],\"attr\":{}},"                                 \
    "{\"name\":\"x\",\"op\":\"Placeholder\"},"                                                    \
    "{\"name\":\"m\",\"op\":\"MatMul\",\"input\":[\"x\",\"a:0\",\"^b\",\"sp:12\"]},"              \
    "{\"name\":\"sm\",\"op\":\"Softmax\",\"input\":[\"m\"]}]}"
#define W_A "{\"name\":\"a\",\"shape\":[2,3],\"dtype\":\"float32\"}"
#define W_B "{\"name\":\"b\",\"shape\":[],\"dtype\":\"int32\"}"
#define W_C "{\"name\":\"c\",\"shape\":[5],\"dtype\":\"float32\"}"
#define GROUP0 "{\"paths\":[\"s1\",\"s2\"],\"weights\":[" W_A "," W_B "," W_C "]}"

static uint8_t stream0[48];

static void make_stream0(void)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, c[5] = {-1.5f, 0.25f, 7, 8, 9};
    int32_t b = -42;
    memcpy(stream0, a, 24);
    memcpy(stream0 + 24, &b, 4);
    memcpy(stream0 + 28, c, 20);
}

/* Writes s1/s2 from stream0 with s2 resized to s2_len bytes (18 = exact). */
static void put_shards(size_t s2_len)
{
    uint8_t s2[64] = {0};
    memcpy(s2, stream0 + 30, 18);
    put("s1", stream0, 30);
    put("s2", s2, s2_len);
}

static void make_valid(void)
{
    make_stream0();
    put_json("{" TOPO ",\"weightsManifest\":[" GROUP0 "]}");
    put_shards(18);
}

/* Open must fail with a message naming `file` and containing `needle`; the
 * model struct is left zeroed. */
static void expect_fail(const char *file, const char *needle)
{
    sq_tfjs_model m;
    sq_err err = {0};
    int rc = sq_tfjs_open(dir, &m, &err);
    if (rc == 0)
        sq_tfjs_close(&m);
    ck_assert_msg(rc == -1, "open succeeded, expected failure with '%s'", needle);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
    ck_assert_msg(strstr(err.msg, file) != NULL, "message '%s' does not name %s", err.msg, file);
    ck_assert_msg(strstr(err.msg, dir) != NULL, "message '%s' lacks the directory", err.msg);
    ck_assert_ptr_null(m.buf);
    ck_assert_ptr_null(m.root);
    ck_assert_int_eq(m.n_tensors, 0);
}

/* One weight entry replaced by `w` in an otherwise valid model. */
static void expect_weight_fail(const char *w, const char *needle)
{
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"s1\",\"s2\"],\"weights\":[" W_A "," W_B
             ",%s]}]}", w);
    expect_fail("model.json", needle);
}

START_TEST(valid_small)
{
    make_valid();
    sq_tfjs_model m;
    sq_err err = {0};
    ck_assert_msg(sq_tfjs_open(dir, &m, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.n_tensors, 3);
    ck_assert_int_eq(m.n_files, 3);
    ck_assert_str_eq(m.files[0], "model.json");
    ck_assert_str_eq(m.files[1], "s1");
    ck_assert_str_eq(m.files[2], "s2");
    ck_assert_str_eq(m.tensors[0].name, "a"); /* manifest order */
    for (int i = 0; i < m.n_tensors; i++)
        ck_assert_uint_eq((uintptr_t)m.tensors[i].data % 64, 0);

    int64_t want[2] = {2, 3}, any[2] = {-1, 3}, bad[2] = {3, 2};
    const sq_tfjs_tensor *a = sq_tfjs_get(&m, "a", SQ_TFJS_F32, 2, want, &err);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->numel, 6);
    ck_assert_float_eq(((const float *)a->data)[5], 6.0f);
    ck_assert_ptr_eq(sq_tfjs_get(&m, "a", SQ_TFJS_F32, 2, any, &err), a);
    ck_assert_ptr_eq(sq_tfjs_get(&m, "a", SQ_TFJS_F32, 2, NULL, &err), a);
    ck_assert_ptr_eq(sq_tfjs_get(&m, "a", SQ_TFJS_F32, -1, NULL, &err), a);
    ck_assert_ptr_null(sq_tfjs_get(&m, "a", SQ_TFJS_F32, 2, bad, &err));
    ck_assert_msg(strstr(err.msg, "model.json") && strstr(err.msg, "\"a\"") &&
                      strstr(err.msg, "shape [2, 3], expected [3, 2]"),
                  "%s", err.msg);
    ck_assert_ptr_null(sq_tfjs_get(&m, "a", SQ_TFJS_F32, 1, NULL, &err));
    ck_assert_msg(strstr(err.msg, "expected [*]"), "%s", err.msg);
    ck_assert_ptr_null(sq_tfjs_get(&m, "a", SQ_TFJS_I32, 2, want, &err));
    ck_assert_msg(strstr(err.msg, "is float32, expected int32"), "%s", err.msg);
    ck_assert_ptr_null(sq_tfjs_get(&m, "nope", SQ_TFJS_F32, -1, NULL, &err));
    ck_assert_msg(strstr(err.msg, "no weight named \"nope\"") && strstr(err.msg, "model.json"),
                  "%s", err.msg);

    /* c spans the two shards. */
    int64_t five = 5;
    const sq_tfjs_tensor *c = sq_tfjs_get(&m, "c", SQ_TFJS_F32, 1, &five, &err);
    ck_assert_ptr_nonnull(c);
    const float *cf = c->data;
    ck_assert(cf[0] == -1.5f && cf[1] == 0.25f && cf[2] == 7 && cf[3] == 8 && cf[4] == 9);

    int64_t iv = 0;
    double dv = 0;
    ck_assert_int_eq(sq_tfjs_scalar_i32(&m, "b", &iv, &err), 0);
    ck_assert_int_eq(iv, -42);
    ck_assert_int_eq(sq_tfjs_scalar_f32(&m, "b", &dv, &err), -1);
    ck_assert_int_eq(sq_tfjs_scalar_f32(&m, "c", &dv, &err), -1);
    ck_assert_msg(strstr(err.msg, "expected a scalar") && strstr(err.msg, "[5]"), "%s", err.msg);

    /* Graph queries. */
    ck_assert_int_eq(sq_tfjs_count_op(&m, "Softmax"), 1);
    ck_assert_int_eq(sq_tfjs_count_op(&m, "Conv2D"), 0);
    const json_t *mm = sq_tfjs_node(&m, "m");
    ck_assert_ptr_nonnull(mm);
    ck_assert_ptr_null(sq_tfjs_node(&m, "zz"));
    ck_assert_str_eq(sq_tfjs_node_op(mm), "MatMul");
    ck_assert_int_eq(sq_tfjs_node_n_inputs(mm), 4);
    ck_assert_str_eq(sq_tfjs_node_input(mm, 0), "x");
    ck_assert_str_eq(sq_tfjs_node_input(mm, 1), "a");
    ck_assert_str_eq(sq_tfjs_node_input(mm, 2), "b");
    ck_assert_str_eq(sq_tfjs_node_input(mm, 3), "sp");
    ck_assert_ptr_null(sq_tfjs_node_input(mm, 4));
    ck_assert_ptr_null(sq_tfjs_node_input(mm, -1));
    ck_assert_int_eq(sq_tfjs_node_input_port(mm, 0), 0);
    ck_assert_int_eq(sq_tfjs_node_input_port(mm, 2), -1);
    ck_assert_int_eq(sq_tfjs_node_input_port(mm, 3), 12);
    ck_assert_int_eq(sq_tfjs_node_input_port(mm, 4), -1);
    ck_assert_int_eq(sq_tfjs_node_n_inputs(sq_tfjs_node(&m, "x")), 0);
    ck_assert_ptr_null(sq_tfjs_node_input(sq_tfjs_node(&m, "x"), 0));
    ck_assert(sq_tfjs_is_model_dir(dir));
    sq_tfjs_close(&m);
    sq_tfjs_close(&m); /* closing twice is harmless */
}
END_TEST

START_TEST(valid_groups)
{
    make_stream0();
    int32_t d[3] = {7, 8, 9};
    put_json("{" TOPO ",\"weightsManifest\":[" GROUP0 ",{\"paths\":[\"t1\",\"t0\"],\"weights\":["
             "{\"name\":\"e\",\"shape\":[0,4],\"dtype\":\"float32\"},"
             "{\"name\":\"d\",\"shape\":[3,1],\"dtype\":\"int32\"}]},"
             "{\"paths\":[],\"weights\":[{\"name\":\"z\",\"shape\":[0],\"dtype\":\"int32\"}]}]}");
    put_shards(18);
    put("t1", d, 5);
    put("t0", (uint8_t *)d + 5, 7);
    sq_tfjs_model m;
    sq_err err = {0};
    ck_assert_msg(sq_tfjs_open(dir, &m, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.n_tensors, 6);
    ck_assert_int_eq(m.n_files, 5);
    ck_assert_str_eq(m.files[3], "t1");
    ck_assert_str_eq(m.files[4], "t0");
    int64_t w[2] = {3, 1};
    const sq_tfjs_tensor *t = sq_tfjs_get(&m, "d", SQ_TFJS_I32, 2, w, &err);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(((const int32_t *)t->data)[2], 9);
    const sq_tfjs_tensor *e = sq_tfjs_find(&m, "e");
    ck_assert_int_eq(e->numel, 0);
    ck_assert_ptr_nonnull(e->data);
    ck_assert_ptr_nonnull(sq_tfjs_find(&m, "z"));
    for (int i = 0; i < m.n_tensors; i++)
        ck_assert_uint_eq((uintptr_t)m.tensors[i].data % 64, 0);
    sq_tfjs_close(&m);
}
END_TEST

START_TEST(shard_sizes)
{
    make_valid();
    put_shards(17);
    expect_fail("model.json", "hold 47 bytes but its 3 weights need 48 bytes");
    expect_fail("\"s2\"", "truncated");
    put_shards(19);
    expect_fail("model.json", "hold 49 bytes but its 3 weights need 48 bytes");
    expect_fail("\"s1\"", "extra bytes");
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"s1\"],\"weights\":[" W_A "]}]}");
    expect_fail("model.json", "shard file \"s1\" holds 30 bytes but its 1 weights need 24 bytes");
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[],\"weights\":[" W_A "]}]}");
    expect_fail("model.json", "lists no shard files, which hold 0 bytes but its 1 weights need 24");
    make_valid();
    put_shards(18);
    remove(strcat(strcpy((char[4200]){0}, dir), "/s2"));
    expect_fail("/s2", "No such file");
    expect_fail("model.json", "weightsManifest[0]");
    /* A directory or a FIFO where a shard should be (the FIFO must not block). */
    char p[4200];
    snprintf(p, sizeof p, "%s/s2", dir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    expect_fail("/s2", "not a regular file");
    rmdir(p);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    expect_fail("/s2", "not a regular file");
}
END_TEST

START_TEST(shard_paths)
{
    make_valid();
    static const char *const bad[] = {"../s1", "/etc/passwd", "sub/s1", "..", ".", "", "a\\\\b"};
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"../s1\"],\"weights\":[]}]}");
    expect_fail("model.json", "paths[0] (\"../s1\") is not a plain file name");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"%s\"],\"weights\":[]}]}", bad[i]);
        expect_fail("model.json", "is not a plain file name");
    }
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"s1\",7],\"weights\":[]}]}");
    expect_fail("model.json", "paths[1] (not a string) is not a plain file name");
    put_json("{" TOPO ",\"weightsManifest\":[" GROUP0 ",{\"paths\":[\"s1\"],\"weights\":[]}]}");
    expect_fail("model.json", "\"s1\" is listed more than once");
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"model.json\"],\"weights\":[]}]}");
    expect_fail("model.json", "listed more than once");
}
END_TEST

START_TEST(weight_entries)
{
    make_valid();
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"s1\",\"s2\"],\"weights\":[" W_A "," W_B
             "," W_A "]}]}");
    expect_fail("model.json", "two weights are named \"a\"");
    /* Duplicates across groups too. */
    put("t", stream0, 4);
    put_json("{" TOPO ",\"weightsManifest\":[" GROUP0 ",{\"paths\":[\"t\"],\"weights\":[" W_B
             "]}]}");
    expect_fail("model.json", "two weights are named \"b\"");

    expect_weight_fail("{\"name\":\"c\",\"shape\":[5],\"dtype\":\"float16\"}",
                       "weight \"c\": unsupported dtype \"float16\"");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[5],\"dtype\":\"bool\"}", "unsupported dtype");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[5],\"dtype\":\"string\"}", "unsupported dtype");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[5]}", "\"dtype\" is missing");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[5],\"dtype\":\"float32\",\"quantization\":"
                       "{\"dtype\":\"uint8\",\"scale\":0.1,\"min\":-1}}",
                       "weight \"c\" is quantized");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[5,-1],\"dtype\":\"float32\"}",
                       "weight \"c\": shape[1] is not a non-negative integer");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[2.5],\"dtype\":\"float32\"}",
                       "shape[0] is not a non-negative integer");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[\"5\"],\"dtype\":\"float32\"}",
                       "shape[0] is not a non-negative integer");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[4294967296,4294967296,4294967296],"
                       "\"dtype\":\"float32\"}",
                       "overflows");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[1073741824,2],\"dtype\":\"int32\"}",
                       "exceed the 4294967296-byte limit");
    expect_weight_fail("{\"name\":\"c\",\"shape\":[1,1,1,1,1,1,1,1,5],\"dtype\":\"float32\"}",
                       "9 dimensions (at most 8");
    expect_weight_fail("{\"name\":\"c\",\"shape\":5,\"dtype\":\"float32\"}",
                       "\"shape\" is missing or not an array");
    expect_weight_fail("{\"shape\":[5],\"dtype\":\"float32\"}",
                       "weights[2]: \"name\" is missing");
    expect_weight_fail("{\"name\":\"\",\"shape\":[5],\"dtype\":\"float32\"}",
                       "weights[2]: \"name\" is missing");
    expect_weight_fail("[]", "weightsManifest[0].weights[2] is not an object");
    /* Several groups, each within the limit, together over it. */
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[],\"weights\":[{\"name\":\"p\","
             "\"shape\":[1073741824],\"dtype\":\"int32\"}]},{\"paths\":[],\"weights\":["
             "{\"name\":\"q\",\"shape\":[1],\"dtype\":\"int32\"}]}]}");
    expect_fail("model.json", "the weights need more than the 4294967296-byte limit");
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[],\"weights\":[{\"name\":\"p\","
             "\"shape\":[1073741824],\"dtype\":\"int32\"},{\"name\":\"q\",\"shape\":[1],"
             "\"dtype\":\"int32\"}]}]}");
    expect_fail("model.json", "weightsManifest[0]: the weights need more than");
}
END_TEST

START_TEST(non_finite)
{
    make_valid();
    float nan = NAN, inf = -INFINITY;
    memcpy(stream0 + 8, &nan, 4);
    put_shards(18);
    expect_fail("model.json", "weight \"a\" holds a non-finite value (nan) at element 2");
    make_stream0();
    memcpy(stream0 + 44, &inf, 4); /* c[4], in s2 */
    put_shards(18);
    expect_fail("model.json", "weight \"c\" holds a non-finite value (-inf) at element 4");
    /* The same bits as int32 are fine. */
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"s1\",\"s2\"],\"weights\":[" W_A "," W_B
             ",{\"name\":\"c\",\"shape\":[5],\"dtype\":\"int32\"}]}]}");
    sq_tfjs_model m;
    sq_err err;
    ck_assert_msg(sq_tfjs_open(dir, &m, &err) == 0, "%s", err.msg);
    sq_tfjs_close(&m);
}
END_TEST

START_TEST(bad_json)
{
    make_valid();
    put_json("{\"modelTopology\": ");
    expect_fail("model.json", "invalid JSON");
    put_json("[1, 2]");
    expect_fail("model.json", "not an object");
    put_json("{\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "missing \"modelTopology\"");
    put_json("{" TOPO "}");
    expect_fail("model.json", "missing \"weightsManifest\"");
    put_json("{" TOPO ",\"weightsManifest\":{}}");
    expect_fail("model.json", "\"weightsManifest\" is not a non-empty array");
    put_json("{" TOPO ",\"weightsManifest\":[]}");
    expect_fail("model.json", "\"weightsManifest\" is not a non-empty array");
    put_json("{" TOPO ",\"weightsManifest\":[3]}");
    expect_fail("model.json", "weightsManifest[0] is not an object");
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":\"s1\",\"weights\":[]}]}");
    expect_fail("model.json", "weightsManifest[0]: \"paths\" is missing or not an array");
    put_json("{" TOPO ",\"weightsManifest\":[{\"paths\":[\"s1\"]}]}");
    expect_fail("model.json", "weightsManifest[0]: \"weights\" is missing or not an array");
    put_json("{\"modelTopology\":[],\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "\"modelTopology\" is not an object");
    put_json("{\"modelTopology\":{},\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "missing \"modelTopology.node\"");
    put_json("{\"format\":\"layers-model\",\"modelTopology\":{\"model_config\":{}},"
             "\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "layers model");
    put_json("{\"modelTopology\":{\"node\":{}},\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "\"modelTopology.node\" is not an array");
    put_json("{\"modelTopology\":{\"node\":[1]},\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "modelTopology.node[0] is not an object");
    put_json("{\"modelTopology\":{\"node\":[{\"op\":\"Const\"}]},\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "node[0]: \"name\" is missing");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":3}]},\"weightsManifest\":["
             GROUP0 "]}");
    expect_fail("model.json", "node \"a\": \"op\" is missing");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":\"X\",\"input\":\"b\"}]},"
             "\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "node \"a\": \"input\" is not an array");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":\"X\",\"input\":[\"^\"]}]},"
             "\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "node \"a\": input[0] is not a valid tensor name");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":\"X\",\"input\":[\":1\"]}]},"
             "\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "input[0] is not a valid tensor name");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":\"X\",\"input\":[\"b:99999999999\"]}]},"
             "\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "input[0] is not a valid tensor name");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":\"X\",\"attr\":[]}]},"
             "\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "node \"a\": \"attr\" is not an object");
    put_json("{\"modelTopology\":{\"node\":[{\"name\":\"a\",\"op\":\"X\"},{\"name\":\"a\","
             "\"op\":\"Y\"}]},\"weightsManifest\":[" GROUP0 "]}");
    expect_fail("model.json", "two graph nodes are named \"a\"");
    put_json("{" TOPO ",\"weightsManifest\":[" GROUP0 "],\"weightsManifest\":[]}");
    expect_fail("model.json", "duplicate");
    remove(strcat(strcpy((char[4200]){0}, dir), "/model.json"));
    expect_fail("model.json", "cannot open");
}
END_TEST

START_TEST(sniff)
{
    ck_assert(!sq_tfjs_is_model_dir(dir));
    ck_assert(!sq_tfjs_is_model_dir("/nonexistent-squint-dir"));
    put_json("{\"architectures\":[\"BertModel\"]}");
    ck_assert(!sq_tfjs_is_model_dir(dir));
    put_json("{\"modelTopology\":{},\"other\":\"weightsManifest\"}");
    ck_assert(!sq_tfjs_is_model_dir(dir));
    put_json("{\"modelTopology\":{},\"weightsManifest\":[]}");
    ck_assert(sq_tfjs_is_model_dir(dir));
    put_json("{\"modelTopology\":{},\"weightsManifest\":[");
    ck_assert(sq_tfjs_is_model_dir(dir)); /* open will report the JSON error */
    char p[4200];
    snprintf(p, sizeof p, "%s/sub", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/sub/model.json", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/sub", dir);
    ck_assert(!sq_tfjs_is_model_dir(p));
    sq_tfjs_model m;
    sq_err err;
    ck_assert_int_eq(sq_tfjs_open(p, &m, &err), -1);
    ck_assert_msg(strstr(err.msg, "sub/model.json: not a regular file"), "%s", err.msg);
    ck_assert_int_eq(sq_tfjs_open("/nonexistent-squint-dir", &m, &err), -1);
    ck_assert_msg(strstr(err.msg, "/nonexistent-squint-dir: not a directory"), "%s", err.msg);
}
END_TEST

#define USE "module_apply_default/Encoder_en/KonaTransformer/"

START_TEST(real_use_lite)
{
    const char *root = getenv("SQUINT_SHARED_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/use-lite-tfjs", root ? root : "");
    if (!root || !sq_tfjs_is_model_dir(path)) {
        fprintf(stderr, "SKIP real_use_lite: $SQUINT_SHARED_DATA/use-lite-tfjs not found\n");
        return;
    }
    sq_tfjs_model m;
    sq_err err = {0};
    ck_assert_msg(sq_tfjs_open(path, &m, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.n_tensors, 61);
    int64_t bytes = 0;
    for (int i = 0; i < m.n_tensors; i++) {
        bytes += m.tensors[i].numel * 4;
        ck_assert_uint_eq((uintptr_t)m.tensors[i].data % 64, 0);
        /* Every weight is a Const node of the graph. */
        const json_t *n = sq_tfjs_node(&m, m.tensors[i].name);
        ck_assert_msg(n && strcmp(sq_tfjs_node_op(n), "Const") == 0, "%s", m.tensors[i].name);
    }
    ck_assert_int_eq(bytes, 27903656);
    ck_assert_int_eq(m.n_files, 8);
    ck_assert_str_eq(m.files[0], "model.json");
    ck_assert_str_eq(m.files[1], "group1-shard1of7");
    ck_assert_str_eq(m.files[7], "group1-shard7of7");

    int64_t emb_shape[2] = {8002, 256};
    const sq_tfjs_tensor *emb =
        sq_tfjs_get(&m, "module/Embeddings_en", SQ_TFJS_F32, 2, emb_shape, &err);
    ck_assert_msg(emb != NULL, "%s", err.msg);
    const float *e = emb->data;
    ck_assert_float_eq_tol(e[0], -0.022370126f, 1e-9f);
    ck_assert_float_eq_tol(e[3], -0.065840192f, 1e-9f);
    ck_assert_float_eq_tol(e[8002 * 256 - 1], -0.020930365f, 1e-9f);
    int64_t qkv[4] = {1, 1, 512, 1536};
    ck_assert_ptr_nonnull(sq_tfjs_get(&m,
        "module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/"
        "qkv_transform_single/kernel/part_0", SQ_TFJS_F32, 4, qkv, &err));

    double eps = 0, scale = 0;
    ck_assert_msg(sq_tfjs_scalar_f32(&m, USE "Encode/TransformerStack/Layer_1/TransformerLayer/"
                                         "FFN/layer_prepostprocess/layer_norm/Cast/x", &eps, &err) == 0,
                  "%s", err.msg);
    ck_assert_double_eq_tol(eps, 1e-6, 1e-12);
    ck_assert_int_eq(sq_tfjs_scalar_f32(&m, USE "Encode/TransformerStack/Layer_0/TransformerLayer/"
                                            "MultiheadAttention/mul/y", &scale, &err), 0);
    ck_assert_double_eq(scale, 0.125);
    int64_t maxlen = 0;
    ck_assert_int_eq(sq_tfjs_scalar_i32(&m, USE "ClipToMaxLength/Less/y", &maxlen, &err), 0);
    ck_assert_int_eq(maxlen, 128);

    ck_assert_int_eq(sq_tfjs_count_op(&m, "Softmax"), 2);
    ck_assert_int_eq(sq_tfjs_count_op(&m, "Const"), 61);
    ck_assert_int_eq(sq_tfjs_count_op(&m, "BatchMatMul"), 4);
    const json_t *sm = sq_tfjs_node(&m, USE "Encode/TransformerStack/Layer_0/TransformerLayer/"
                                            "MultiheadAttention/DotProductAttention/"
                                            "BaseDotProductAttention/Softmax");
    ck_assert_ptr_nonnull(sm);
    ck_assert_str_eq(sq_tfjs_node_input(sm, 0),
                     USE "Encode/TransformerStack/Layer_0/TransformerLayer/MultiheadAttention/"
                         "DotProductAttention/BaseDotProductAttention/Reshape");
    const json_t *sh = sq_tfjs_node(&m, USE "Encode/TransformerStack/Layer_0/TransformerLayer/"
                                            "MultiheadAttention/split_heads_1/"
                                            "split_last_dimension/Shape");
    ck_assert_ptr_nonnull(sh);
    ck_assert_str_eq(sq_tfjs_node_input(sh, 0),
                     USE "Encode/TransformerStack/Layer_0/TransformerLayer/MultiheadAttention/split");
    ck_assert_int_eq(sq_tfjs_node_input_port(sh, 0), 1);
    ck_assert_ptr_nonnull(sq_tfjs_node(&m, sq_tfjs_node_input(sh, 0)));
    sq_tfjs_close(&m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tfjs_model");
    TCase *tc = tcase_create("reader");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, valid_small);
    tcase_add_test(tc, valid_groups);
    tcase_add_test(tc, shard_sizes);
    tcase_add_test(tc, shard_paths);
    tcase_add_test(tc, weight_entries);
    tcase_add_test(tc, non_finite);
    tcase_add_test(tc, bad_json);
    tcase_add_test(tc, sniff);
    tcase_add_test(tc, real_use_lite);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

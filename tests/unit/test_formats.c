/* config.json / pooling readers, npy header, atomic writes, text input,
 * checkpoint archives. */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <math.h>

#include "checkpoint_dir.h"
#include "fileio.h"
#include "hf_config.h"
#include "layer_name.h"
#include "npy.h"
#include "test_util.h"
#include "text_input.h"

static char *dir;
static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

static const char *good_cfg =
    "{\"model_type\":\"bert\",\"hidden_size\":32,\"num_hidden_layers\":2,"
    "\"num_attention_heads\":4,\"intermediate_size\":64,\"max_position_embeddings\":64,"
    "\"type_vocab_size\":2,\"layer_norm_eps\":1e-12,\"hidden_act\":\"gelu\",\"vocab_size\":200}";

START_TEST(config_ok)
{
    char *p = tu_write_str(dir, "config.json", good_cfg);
    sq_bert_config c;
    sq_err err = {0};
    ck_assert_int_eq(sq_bert_config_load(p, &c, &err), 0);
    ck_assert_int_eq(c.hidden, 32);
    ck_assert_int_eq(c.heads, 4);
    ck_assert_int_eq(c.vocab_size, 200);
    ck_assert(c.ln_eps == 1e-12);
    free(p);
}
END_TEST

/* MPNet's config: RoBERTa position ids (max tokens = positions - pad - 1),
 * no token types, 32 relative buckets (another count is refused); and the
 * buckets themselves, against values PyTorch 1.13 gives for MPNet's
 * relative_position_bucket (float32 steps; the boundaries at distance 16,
 * 32, 64 are exact there and must land the same here). */
START_TEST(config_mpnet)
{
    static const char *cfg =
        "{\"model_type\":\"mpnet\",\"architectures\":[\"MPNetForMaskedLM\"],\"hidden_size\":32,"
        "\"num_hidden_layers\":2,\"num_attention_heads\":4,\"intermediate_size\":64,"
        "\"max_position_embeddings\":514,\"vocab_size\":200,\"pad_token_id\":1,"
        "\"layer_norm_eps\":1e-05,\"relative_attention_num_buckets\":32}";
    char *p = tu_write_str(dir, "config.json", cfg);
    sq_bert_config c;
    sq_err err = {0};
    ck_assert_int_eq(sq_bert_config_load(p, &c, &err), 0);
    ck_assert_int_eq(c.type_vocab, 0);
    ck_assert_int_eq(c.pos_ids, SQ_POS_IDS_ROBERTA);
    ck_assert_int_eq(c.rel_buckets, 32);
    ck_assert_int_eq(c.rel_max_distance, 128);
    ck_assert_int_eq(sq_bert_max_tokens(&c), 512);
    ck_assert_str_eq(sq_architecture_name(&c), "mpnet");
    free(p);
    char bad[1024];
    const char *at = strstr(cfg, ":32}");
    snprintf(bad, sizeof bad, "%.*s:64}", (int)(at - cfg), cfg);
    p = tu_write_str(dir, "config.json", bad);
    ck_assert_int_eq(sq_bert_config_load(p, &c, &err), -1);
    ck_assert_msg(strstr(err.msg, "relative_attention_num_buckets 64"), "%s", err.msg);
    free(p);
    /* (distance key - query, bucket) from torch: both directions, the exact
     * range, each logarithmic step's first distance, the clamp */
    static const int want[][2] = {
        {0, 0},    {-1, 1},   {-7, 7},   {-8, 8},   {-11, 8},  {-12, 9},  {-15, 9},
        {-16, 10}, {-22, 10}, {-23, 11}, {-31, 11}, {-32, 12}, {-45, 12}, {-46, 13},
        {-63, 13}, {-64, 14}, {-90, 14}, {-91, 15}, {-600, 15}, {1, 17}, {7, 23},
        {8, 24},   {12, 25},  {16, 26},  {23, 27},  {32, 28},  {46, 29}, {64, 30},
        {91, 31},  {511, 31},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        ck_assert_msg(sq_rel_bucket(want[i][0], 32, 128) == want[i][1], "distance %d: bucket %d, torch %d",
                      want[i][0], sq_rel_bucket(want[i][0], 32, 128), want[i][1]);
}
END_TEST

/* The layer index in a tensor name (layer_name.h). */
START_TEST(layer_index)
{
    const char *end = NULL;
    ck_assert_int_eq(sq_layer_index("layer.3.qkv.weight", "layer.", &end), 3);
    ck_assert_str_eq(end, ".qkv.weight");
    ck_assert_int_eq(sq_layer_index("model.layers.12.mlp.up_proj.weight", "model.layers.", NULL),
                     12);
    ck_assert_int_eq(sq_layer_index("layer.007.x", "layer.", NULL), 7); /* callers check form */
    ck_assert_int_eq(sq_layer_index("layer.3", "layer.", NULL), -1);    /* no '.' after */
    ck_assert_int_eq(sq_layer_index("layer.x.qkv", "layer.", NULL), -1);
    ck_assert_int_eq(sq_layer_index("layer.-1.qkv", "layer.", NULL), -1);
    ck_assert_int_eq(sq_layer_index("embeddings.word", "layer.", NULL), -1);
    ck_assert_int_eq(sq_layer_index("encoder.layer.5.attention", "layer.", NULL), -1);
}
END_TEST

START_TEST(config_refusals)
{
    struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"bert\"", "\"gpt2\"", "model_type \"gpt2\" is not supported"},
        {"\"gelu\"", "\"relu\"", "hidden_act"},
        {"\"num_attention_heads\":4", "\"num_attention_heads\":5", "not divisible"},
        {"\"hidden_size\":32", "\"hidden_size\":-1", "hidden_size"},
        {"\"hidden_size\":32", "\"hidden_size\":\"32\"", "must be an integer"},
        {"\"vocab_size\":200", "\"vocab_sizex\":200", "missing \"vocab_size\""},
        {"\"layer_norm_eps\":1e-12", "\"layer_norm_eps\":0.5", "layer_norm_eps"},
        {"\"type_vocab_size\":2", "\"type_vocab_size\":2,\"position_embedding_type\":\"relative_key\"", "position_embedding_type"},
        {"{", "[", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[1024];
        const char *at = strstr(good_cfg, cases[i].from);
        ck_assert_ptr_nonnull(at);
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good_cfg), good_cfg, cases[i].to,
                 at + strlen(cases[i].from));
        char *p = tu_write_str(dir, "config.json", buf);
        sq_bert_config c;
        sq_err err = {0};
        ck_assert_int_eq(sq_bert_config_load(p, &c, &err), -1);
        ck_assert_msg(strstr(err.msg, cases[i].needle) && strstr(err.msg, p), "case %zu: %s", i,
                      err.msg);
        free(p);
    }
}
END_TEST

START_TEST(pooling_configs)
{
    sq_pooling_config pc;
    sq_err err = {0};
    ck_assert_int_eq(sq_pooling_config_load_dir(dir, &pc, &err), 0);
    ck_assert(pc.pooling == SQ_POOL_CLS && !pc.normalize && !pc.from_sentence_transformers);
    free(tu_write_str(dir, "modules.json",
                      "[{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"},"
                      "{\"idx\":1,\"name\":\"1\",\"path\":\"1_Pooling\",\"type\":\"sentence_transformers.models.Pooling\"},"
                      "{\"idx\":2,\"name\":\"2\",\"path\":\"2_Normalize\",\"type\":\"sentence_transformers.models.Normalize\"}]"));
    free(tu_write_str(dir, "1_Pooling/config.json",
                      "{\"word_embedding_dimension\":32,\"pooling_mode_cls_token\":false,\"pooling_mode_mean_tokens\":true}"));
    ck_assert_int_eq(sq_pooling_config_load_dir(dir, &pc, &err), 0);
    ck_assert(pc.pooling == SQ_POOL_MEAN && pc.normalize);
    free(tu_write_str(dir, "1_Pooling/config.json", "{\"pooling_mode\":\"cls\"}"));
    ck_assert_int_eq(sq_pooling_config_load_dir(dir, &pc, &err), 0);
    ck_assert(pc.pooling == SQ_POOL_CLS);
    free(tu_write_str(dir, "1_Pooling/config.json", "{\"pooling_mode_max_tokens\":true}"));
    ck_assert_int_eq(sq_pooling_config_load_dir(dir, &pc, &err), -1);
    ck_assert(strstr(err.msg, "pooling_mode_max_tokens"));
    free(tu_write_str(dir, "modules.json",
                      "[{\"path\":\"../../etc\",\"type\":\"sentence_transformers.models.Pooling\"}]"));
    ck_assert_int_eq(sq_pooling_config_load_dir(dir, &pc, &err), -1);
    ck_assert(strstr(err.msg, "leaves the model directory"));
    free(tu_write_str(dir, "modules.json", "[{\"path\":\"x\",\"type\":\"sentence_transformers.models.Dense\"}]"));
    ck_assert_int_eq(sq_pooling_config_load_dir(dir, &pc, &err), -1);
    ck_assert(strstr(err.msg, "Dense"));
}
END_TEST

START_TEST(npy_header)
{
    char *p = sq_path_join(dir, "x.npy");
    FILE *fp = fopen(p, "wb");
    int64_t shape[2] = {3, 384};
    ck_assert_int_eq(sq_npy_write_header_f32(fp, shape, 2), 0);
    long n = ftell(fp);
    fclose(fp);
    ck_assert_int_eq(n % 64, 0);
    char *buf;
    size_t len;
    sq_err err;
    ck_assert_int_eq(sq_read_file(p, 1 << 20, &buf, &len, &err), 0);
    ck_assert(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0);
    ck_assert_ptr_nonnull(strstr(buf + 10, "'shape': (3, 384)"));
    ck_assert_int_eq(buf[len - 1], '\n');
    free(buf);
    free(p);
}
END_TEST

/* The strict .npy reader: our own files round trip; numpy's other spellings
 * (version 2.0, double quotes, no trailing comma) load; every hostile header
 * is refused with a message naming the file and the problem. */
static int npy_try(const char *hdr, size_t data_bytes, int major, float fill, float **v,
                   int64_t *r, int64_t *c, sq_err *err)
{
    size_t hl = strlen(hdr), off = major == 1 ? 10 : 12, len = off + hl + data_bytes;
    unsigned char *b = calloc(len, 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8);
    memcpy(b + off, hdr, hl);
    for (size_t i = 0; i + 4 <= data_bytes; i += 4)
        memcpy(b + off + hl + i, &fill, 4);
    int rc = sq_npy_parse_f32_2d(b, len, "t.npy", v, r, c, err);
    free(b);
    return rc;
}

START_TEST(npy_reader)
{
    char *p = sq_path_join(dir, "e.npy");
    FILE *fp = fopen(p, "wb");
    int64_t shape[2] = {3, 5};
    float vals[15];
    for (int i = 0; i < 15; i++)
        vals[i] = (float)i * 0.5f - 2.0f;
    ck_assert_int_eq(sq_npy_write_header_f32(fp, shape, 2), 0);
    fwrite(vals, sizeof vals, 1, fp);
    fclose(fp);
    float *v;
    int64_t r, c;
    sq_err err;
    ck_assert_int_eq(sq_npy_read_f32_2d(p, &v, &r, &c, &err), 0);
    ck_assert(r == 3 && c == 5 && memcmp(v, vals, sizeof vals) == 0);
    free(v);
    free(p);
    ck_assert_int_eq(npy_try("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}\n",
                             24, 2, 1.0f, &v, &r, &c, &err), 0);
    ck_assert(r == 2 && c == 3 && v[5] == 1.0f);
    free(v);
    ck_assert_int_eq(npy_try("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 384), }\n", 0,
                             1, 0, &v, &r, &c, &err), 0);
    ck_assert(r == 0 && c == 384);
    free(v);
    static const struct {
        const char *hdr;
        size_t bytes;
        float fill;
        const char *needle;
    } bad[] = {
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n", 48, 0, "'<f8'"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, 0, "little-endian"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24, 0, "Fortran"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n", 24, 0, "1 dimensions"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }\n", 24, 0, "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 20, 0, "holds 20"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 28, 0, "holds 28"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", 16, 0,
         "needs"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }\n", 4, 0,
         "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }\n", 24, 0, "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, NAN, "not finite"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, INFINITY,
         "not finite"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 24, 0,
         "repeated"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}\n", 24, 0, "'x'"},
        {"{'descr': '<f4', 'shape': (2, 3), }\n", 24, 0, "exactly"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk\n", 24, 0, "exactly"},
        {"['descr']\n", 24, 0, "not a dictionary"},
        {"{'descr': '<f4\n", 24, 0, "descr"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = npy_try(bad[i].hdr, bad[i].bytes, 1, bad[i].fill, &v, &r, &c, &err);
        ck_assert_msg(rc == -1 && strstr(err.msg, bad[i].needle) && strstr(err.msg, "t.npy"),
                      "case %zu: rc %d, message '%s' lacks '%s'", i, rc, err.msg, bad[i].needle);
        ck_assert_ptr_null(v);
    }
    /* version 4, bad magic, a header longer than the file */
    unsigned char b[64] = "\x93NUMPY\x04\x00";
    ck_assert_int_eq(sq_npy_parse_f32_2d(b, sizeof b, "t.npy", &v, &r, &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "version 4"));
    b[6] = 1;
    b[8] = 0xff;
    ck_assert_int_eq(sq_npy_parse_f32_2d(b, sizeof b, "t.npy", &v, &r, &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "runs past"));
    b[0] = 'x';
    ck_assert_int_eq(sq_npy_parse_f32_2d(b, sizeof b, "t.npy", &v, &r, &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "magic"));
    /* a FIFO is refused, never waited on */
    char *f = sq_path_join(dir, "fifo.npy");
    ck_assert_int_eq(mkfifo(f, 0600), 0);
    ck_assert_int_eq(sq_npy_read_f32_2d(f, &v, &r, &c, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file"));
    free(f);
}
END_TEST

/* Once a command has begun, an output that is one of its inputs is refused,
 * by device and inode (a hard link counts); a new command starts afresh. */
START_TEST(inputs_guard)
{
    char *in = tu_write_str(dir, "in.txt", "text\n");
    char *hard = sq_path_join(dir, "hard.txt");
    char *other = sq_path_join(dir, "other.txt");
    ck_assert_int_eq(link(in, hard), 0);
    sq_err err;
    char *buf;
    sq_atomic_file af;
    ck_assert_int_eq(sq_read_file(in, 100, &buf, NULL, &err), 0); /* before begin: not recorded */
    free(buf);
    ck_assert_int_eq(sq_atomic_open(&af, in, &err), 0);
    sq_atomic_abort(&af);
    sq_inputs_guard_begin();
    ck_assert_int_eq(sq_read_file(in, 100, &buf, NULL, &err), 0);
    free(buf);
    ck_assert_int_eq(sq_atomic_open(&af, hard, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "is also an input"));
    ck_assert_int_eq(sq_atomic_open(&af, other, &err), 0); /* a new file is fine */
    fputs("x", af.fp);
    ck_assert_int_eq(sq_atomic_commit(&af, &err), 0);
    sq_inputs_guard_begin(); /* the next command */
    ck_assert_int_eq(sq_atomic_open(&af, in, &err), 0);
    sq_atomic_abort(&af);
    free(in);
    free(hard);
    free(other);
}
END_TEST

START_TEST(atomic_write)
{
    char *p = sq_path_join(dir, "out.bin");
    sq_atomic_file af;
    sq_err err;
    ck_assert_int_eq(sq_atomic_open(&af, p, &err), 0);
    fputs("partial", af.fp);
    sq_atomic_abort(&af);
    ck_assert_int_eq(tu_count_files(dir), 0); /* nothing left behind */
    free(tu_write_str(dir, "out.bin", "old"));
    ck_assert_int_eq(sq_atomic_open(&af, p, &err), 0);
    fputs("new", af.fp);
    ck_assert_int_eq(sq_atomic_commit(&af, &err), 0);
    char *buf;
    ck_assert_int_eq(sq_read_file(p, 100, &buf, NULL, &err), 0);
    ck_assert_str_eq(buf, "new");
    ck_assert_int_eq(tu_count_files(dir), 1);
    free(buf);
    /* Unwritable directory: clear error, no file. */
    ck_assert_int_eq(sq_atomic_open(&af, "/nonexistent-dir/x.bin", &err), -1);
    ck_assert(strstr(err.msg, "/nonexistent-dir/x.bin"));
    /* Size limit of sq_read_file. */
    ck_assert_int_eq(sq_read_file(p, 2, &buf, NULL, &err), -1);
    ck_assert(strstr(err.msg, "limit"));
    free(p);
}
END_TEST

START_TEST(text_input_formats)
{
    sq_texts t;
    sq_err err = {0};
    char *p = tu_write_str(dir, "a.txt", "first line\r\n\nthird\n");
    ck_assert_int_eq(sq_texts_read(p, NULL, &t, &err), 0);
    ck_assert_int_eq(t.n, 3);
    ck_assert_str_eq(t.text[0], "first line");
    ck_assert_str_eq(t.text[1], "");
    ck_assert_str_eq(t.text[2], "third");
    sq_texts_free(&t);
    free(p);
    p = tu_write_str(dir, "b.jsonl", "{\"doc\":{\"title\":\"A \\u00e9\"}}\n\n{\"doc\":{\"title\":\"B\"}}\n");
    ck_assert_int_eq(sq_texts_read(p, "doc.title", &t, &err), 0);
    ck_assert_int_eq(t.n, 2);
    ck_assert_str_eq(t.text[0], "A \xc3\xa9");
    sq_texts_free(&t);
    ck_assert_int_eq(sq_texts_read(p, "doc.body", &t, &err), -1);
    ck_assert(strstr(err.msg, ":1:") && strstr(err.msg, "doc.body"));
    free(p);
    p = tu_write_str(dir, "empty.txt", "");
    ck_assert_int_eq(sq_texts_read(p, NULL, &t, &err), -1);
    ck_assert(strstr(err.msg, "no inputs") && strstr(err.msg, p));
    free(p);
    p = tu_write_str(dir, "bad.jsonl", "{\"text\":1}\n");
    ck_assert_int_eq(sq_texts_read(p, NULL, &t, &err), -1);
    free(p);
    p = tu_write(dir, "nul.txt", "a\0b\n", 4);
    ck_assert_int_eq(sq_texts_read(p, NULL, &t, &err), -1);
    ck_assert(strstr(err.msg, "NUL"));
    free(p);
}
END_TEST

/* Write a tar.gz with the given member names/contents. */
static char *make_tgz(const char *name, const char *const *members, int n)
{
    char *p = sq_path_join(dir, name);
    struct archive *a = archive_write_new();
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    ck_assert_int_eq(archive_write_open_filename(a, p), ARCHIVE_OK);
    for (int i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, members[i]);
        archive_entry_set_size(e, 2);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_write_header(a, e);
        archive_write_data(a, "{}", 2);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return p;
}

START_TEST(checkpoint_archives)
{
    const char *ok[] = {"model/config.json", "model/vocab.txt"};
    char *p = make_tgz("ok.tar.gz", ok, 2);
    sq_checkpoint_dir cd;
    sq_err err = {0};
    ck_assert_int_eq(sq_checkpoint_open(p, &cd, &err), 0);
    char *cfg = sq_path_join(cd.dir, "config.json");
    ck_assert(sq_file_exists(cfg));
    free(cfg);
    char *root = strdup(cd.tmp_root);
    sq_checkpoint_close(&cd);
    ck_assert(!sq_dir_exists(root)); /* extraction removed */
    free(root);
    free(p);
    const char *evil[] = {"../evil/config.json"};
    p = make_tgz("evil.tar.gz", evil, 1);
    ck_assert_int_eq(sq_checkpoint_open(p, &cd, &err), -1);
    ck_assert(strstr(err.msg, "unsafe path"));
    free(p);
    const char *none[] = {"a/x.json", "b/y.json"};
    p = make_tgz("none.tar.gz", none, 2);
    ck_assert_int_eq(sq_checkpoint_open(p, &cd, &err), -1);
    ck_assert(strstr(err.msg, "no config.json"));
    free(p);
    p = tu_write_str(dir, "junk.zip", "this is not an archive");
    ck_assert_int_eq(sq_checkpoint_open(p, &cd, &err), -1);
    free(p);
    ck_assert_int_eq(sq_checkpoint_open("/nonexistent/model", &cd, &err), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("formats");
    TCase *tc = tcase_create("formats");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, config_ok);
    tcase_add_test(tc, layer_index);
    tcase_add_test(tc, config_refusals);
    tcase_add_test(tc, pooling_configs);
    tcase_add_test(tc, npy_header);
    tcase_add_test(tc, npy_reader);
    tcase_add_test(tc, config_mpnet);
    tcase_add_test(tc, inputs_guard);
    tcase_add_test(tc, atomic_write);
    tcase_add_test(tc, text_input_formats);
    tcase_add_test(tc, checkpoint_archives);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

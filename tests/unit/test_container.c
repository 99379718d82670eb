/* The squint container: round trips, determinism, corruption and truncation
 * of every kind a reader must refuse, zstd form, and crash-safe writes. */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "container.h"

/* ---- helpers ---- */
static char *tmpdir_new(void)
{
    char *d = strdup("/tmp/sq_container_test.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

static void tmpdir_free(char *d) /* flat directories only */
{
    DIR *dir = opendir(d);
    if (dir) {
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *p = sq_path_join(d, e->d_name);
            unlink(p);
            free(p);
        }
        closedir(dir);
    }
    rmdir(d);
    free(d);
}

static int count_files(const char *d)
{
    DIR *dir = opendir(d);
    int n = 0;
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (dir)
        closedir(dir);
    return n;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    char *buf;
    sq_err err;
    ck_assert_msg(sq_read_file(path, (size_t)1 << 30, &buf, len, &err) == 0, "%s", err.msg);
    return (uint8_t *)buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Header field offsets (SPEC.md). */
enum {
    META_OFF = 16,
    META_SIZE = 24,
    DIR_OFF = 32,
    DIR_SIZE = 40,
    DATA_OFF = 48,
    DATA_SIZE = 56,
    FILE_SIZE = 64,
    META_HASH = 72,
    DIR_HASH = 80,
    HDR_HASH = 120
};

/* After editing the directory or the header, make their checksums right
 * again so the reader gets to the field under test. */
static int in_file(uint64_t off, uint64_t size, size_t len)
{
    return off <= len && size <= len - off;
}

static void rehash(uint8_t *b, size_t len)
{
    if (in_file(get64(b + DIR_OFF), get64(b + DIR_SIZE), len))
        put64(b + DIR_HASH, XXH64(b + get64(b + DIR_OFF), get64(b + DIR_SIZE), 0));
    if (in_file(get64(b + META_OFF), get64(b + META_SIZE), len))
        put64(b + META_HASH, XXH64(b + get64(b + META_OFF), get64(b + META_SIZE), 0));
    put64(b + HDR_HASH, XXH64(b, HDR_HASH, 0));
}

/* Position of directory entry i's fields in the file. */
typedef struct entry_pos {
    size_t name_len, name, dtype, ndim, dims, offset, size, hash;
} entry_pos;

static entry_pos entry_at(const uint8_t *b, unsigned i)
{
    size_t p = get64(b + DIR_OFF) + 4;
    entry_pos e;
    for (unsigned k = 0;; k++) {
        e.name_len = p;
        unsigned nl = b[p] | b[p + 1] << 8;
        e.name = p + 2;
        e.dtype = e.name + nl;
        e.ndim = e.dtype + 1;
        e.dims = e.ndim + 1;
        e.offset = e.dims + 8 * b[e.ndim];
        e.size = e.offset + 8;
        e.hash = e.size + 8;
        if (k == i)
            return e;
        p = e.hash + 8;
    }
}

/* ---- the sample container ---- */
#define N_SAMPLE 10
static float word[7 * 5];
static double scale[3];
static int32_t ids[8];
static uint32_t u32s[5];
static int64_t big[9];
static uint64_t one[1] = {0x0123456789abcdefull};
static int8_t q[130];
static uint8_t byte1[1] = {0xa5};
static uint16_t halfs[3] = {0x3c00, 0xc000, 0x7bff};

static const char *sample_meta = "name: \"bge-small — ünïcode ✓ 日本\"\nlayers: 4\n";

typedef struct sample {
    const char *name;
    unsigned dtype;
    int ndim;
    uint64_t dims[3];
    const void *data;
    uint64_t size;
} sample;

static sample samples[N_SAMPLE] = {
    {"embeddings.word", SQ_CDT_F32, 2, {7, 5}, word, sizeof word},
    {"layer.0.scale", SQ_CDT_F64, 1, {3}, scale, sizeof scale},
    {"ids", SQ_CDT_I32, 3, {2, 2, 2}, ids, sizeof ids},
    {"u32", SQ_CDT_U32, 1, {5}, u32s, sizeof u32s},
    {"big", SQ_CDT_I64, 2, {3, 3}, big, sizeof big},
    {"one", SQ_CDT_U64, 1, {1}, one, sizeof one},
    {"q", SQ_CDT_I8, 1, {130}, q, sizeof q},
    {"scalar", SQ_CDT_U8, 0, {0}, byte1, 1},
    {"empty", SQ_CDT_F32, 2, {0, 4}, NULL, 0},
    {"ñame-ü ✓", SQ_CDT_F16, 1, {3}, halfs, sizeof halfs},
};

static void fill_samples(void)
{
    for (int i = 0; i < 35; i++)
        word[i] = (float)i * 0.25f - 3.0f;
    for (int i = 0; i < 3; i++)
        scale[i] = 1.0 / (i + 3);
    for (int i = 0; i < 8; i++)
        ids[i] = -i * 1000;
    for (int i = 0; i < 5; i++)
        u32s[i] = 0xfffffff0u + (uint32_t)i;
    for (int i = 0; i < 9; i++)
        big[i] = (int64_t)i * -123456789012345ll;
    for (int i = 0; i < 130; i++)
        q[i] = (int8_t)(i - 65);
}

static sq_container_writer *sample_writer(uint32_t kind, int by_ref)
{
    fill_samples();
    sq_container_writer *w = sq_container_writer_new(kind);
    ck_assert_ptr_nonnull(w);
    sq_err err;
    ck_assert_msg(sq_container_writer_set_metadata(w, sample_meta, strlen(sample_meta), &err) == 0,
                  "%s", err.msg);
    for (int i = 0; i < N_SAMPLE; i++) {
        const sample *s = &samples[i];
        int rc = by_ref ? sq_container_writer_add_tensor_ref(w, s->name, s->dtype, s->ndim, s->dims,
                                                             s->data, s->size, &err)
                        : sq_container_writer_add_tensor(w, s->name, s->dtype, s->ndim, s->dims,
                                                         s->data, s->size, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
    }
    return w;
}

static char *write_sample(const char *dir, const char *name, uint32_t kind, int by_ref, int zstd)
{
    sq_container_writer *w = sample_writer(kind, by_ref);
    if (zstd)
        sq_container_writer_set_zstd(w, zstd);
    char *path = sq_path_join(dir, name);
    sq_err err;
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container_writer_free(w);
    return path;
}

static void check_sample(const sq_container *c)
{
    ck_assert_uint_eq(c->version_major, 1);
    ck_assert_uint_eq(c->version_minor, 0);
    ck_assert_str_eq(c->metadata, sample_meta);
    ck_assert_uint_eq(c->metadata_len, strlen(sample_meta));
    ck_assert_uint_eq(c->n_tensors, N_SAMPLE);
    for (int i = 0; i < N_SAMPLE; i++) {
        const sample *s = &samples[i];
        const sq_container_tensor *t = sq_container_tensor_at(c, (size_t)i);
        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_eq(sq_container_find(c, s->name), t);
        ck_assert_str_eq(t->name, s->name);
        ck_assert_uint_eq(t->dtype, s->dtype);
        ck_assert_int_eq(t->ndim, s->ndim);
        for (int d = 0; d < s->ndim; d++)
            ck_assert_uint_eq(t->dims[d], s->dims[d]);
        ck_assert_uint_eq(t->size, s->size);
        ck_assert_uint_eq(t->offset % 64, 0);
        ck_assert_uint_eq((uintptr_t)t->data % 64, 0);
        if (s->size)
            ck_assert_mem_eq(t->data, s->data, s->size);
    }
    ck_assert_ptr_null(sq_container_tensor_at(c, N_SAMPLE));
    ck_assert_ptr_null(sq_container_find(c, "absent"));
    ck_assert_ptr_null(sq_container_find(c, "ids "));
}

/* Expect open (or, when it succeeds, verify) of buf to fail with `needle`
 * in the message, which must name the file. */
static void expect_refused(const uint8_t *buf, size_t len, const char *needle)
{
    sq_container c;
    sq_err err = {0};
    int rc = sq_container_open_buffer(buf, len, "bad.sqm", NULL, &c, &err);
    if (rc == 0) {
        rc = sq_container_verify(&c, &err);
        sq_container_close(&c);
    }
    ck_assert_msg(rc != 0, "accepted, wanted \"%s\"", needle);
    ck_assert_msg(strncmp(err.msg, "bad.sqm", 7) == 0, "message does not name the file: %s",
                  err.msg);
    ck_assert_msg(strstr(err.msg, needle), "wanted \"%s\" in: %s", needle, err.msg);
}

/* ---- tests ---- */
START_TEST(round_trip)
{
    char *dir = tmpdir_new();
    char *path = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    sq_container c;
    sq_err err;
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(c.kind, SQ_KIND_SQM);
    ck_assert_int_eq(c.compressed, 0);
    check_sample(&c);
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    sq_container_close(&c);
    ck_assert_msg(sq_container_open(path, 0, &c, &err) == 0, "%s", err.msg);
    sq_container_close(&c);
    free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(layout_is_as_specified)
{
    char *dir = tmpdir_new();
    char *path = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ck_assert_mem_eq(b, "SQNTSQM\0", 8);
    ck_assert_uint_eq(b[8] | b[9] << 8, 1);
    ck_assert_uint_eq(get64(b + FILE_SIZE), len);
    ck_assert_uint_eq(get64(b + META_OFF), 128);
    ck_assert_uint_eq(get64(b + META_SIZE), strlen(sample_meta));
    ck_assert_mem_eq(b + 128, sample_meta, strlen(sample_meta));
    ck_assert_uint_eq(get64(b + DIR_OFF), 128 + strlen(sample_meta));
    uint64_t dir_end = get64(b + DIR_OFF) + get64(b + DIR_SIZE);
    ck_assert_uint_eq(get64(b + DATA_OFF), (dir_end + 63) / 64 * 64);
    ck_assert_uint_eq(get64(b + DATA_OFF) + get64(b + DATA_SIZE), len - 16);
    ck_assert_mem_eq(b + len - 16, "SQEND\0\0\0", 8);
    ck_assert_uint_eq(get64(b + len - 8), XXH64(b, len - 16, 0));
    ck_assert_uint_eq(get64(b + HDR_HASH), XXH64(b, 120, 0));
    for (int i = 88; i < 120; i++)
        ck_assert_uint_eq(b[i], 0);
    /* Tensors in insertion order, each at the next 64-byte boundary. */
    uint64_t cur = 0;
    for (unsigned i = 0; i < N_SAMPLE; i++) {
        entry_pos e = entry_at(b, i);
        uint64_t off = get64(b + e.offset);
        ck_assert_uint_eq(off, (cur + 63) / 64 * 64);
        ck_assert_uint_eq(get64(b + e.hash), XXH64(samples[i].data, samples[i].size, 0));
        cur = off + get64(b + e.size);
    }
    ck_assert_uint_eq(get64(b + DATA_SIZE), cur);
    free(b);
    free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(deterministic_output)
{
    char *dir = tmpdir_new();
    char *a = write_sample(dir, "a.sqm", SQ_KIND_SQM, 0, 0);
    char *b = write_sample(dir, "b.sqm", SQ_KIND_SQM, 1, 0); /* referenced, not copied */
    char *za = write_sample(dir, "a.sqm.zst", SQ_KIND_SQM, 0, 3);
    char *zb = write_sample(dir, "b.sqm.zst", SQ_KIND_SQM, 1, 3);
    size_t la, lb, lza, lzb;
    uint8_t *ba = slurp(a, &la), *bb = slurp(b, &lb), *bza = slurp(za, &lza),
            *bzb = slurp(zb, &lzb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(ba, bb, la);
    ck_assert_uint_eq(lza, lzb);
    ck_assert_mem_eq(bza, bzb, lza);
    free(ba), free(bb), free(bza), free(bzb);
    free(a), free(b), free(za), free(zb);
    tmpdir_free(dir);
}
END_TEST

START_TEST(empty_container)
{
    char *dir = tmpdir_new();
    char *path = sq_path_join(dir, "e.sqc");
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQC);
    sq_err err;
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container_writer_free(w);
    sq_container c;
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQC, &c, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(c.n_tensors, 0);
    ck_assert_uint_eq(c.metadata_len, 0);
    ck_assert_str_eq(c.metadata, "");
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    sq_container_close(&c);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ck_assert_uint_eq(len, 128 + 64 + 16); /* header, count + padding, trailer */
    free(b);
    free(path);
    tmpdir_free(dir);
}
END_TEST

/* sq_container_writer_add keeps its first failure: later adds are ignored
 * and the write reports it, naming the file, with nothing left behind. */
START_TEST(sticky_add_failure)
{
    char *dir = tmpdir_new();
    char *path = sq_path_join(dir, "s.sqc");
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQC);
    static const float v[4] = {1, 2, 3, 4};
    uint64_t d4 = 4, d3 = 3;
    sq_container_writer_add(w, "ok", SQ_CDT_F32, 1, &d4, v, 16);
    sq_container_writer_add(w, "bad.size", SQ_CDT_F32, 1, &d3, v, 16); /* 3 floats != 16 bytes */
    sq_container_writer_add(w, "after", SQ_CDT_F32, 1, &d4, v, 16);
    sq_err err;
    ck_assert_int_eq(sq_container_writer_write(w, path, &err), -1);
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "bad.size") != NULL, "%s", err.msg);
    ck_assert_int_ne(access(path, F_OK), 0);
    sq_container_writer_free(w);
    free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(wrong_kind)
{
    char *dir = tmpdir_new();
    char *sqc = write_sample(dir, "s.sqc", SQ_KIND_SQC, 0, 0);
    char *sqm = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    sq_container c;
    sq_err err;
    char want[512];
    ck_assert_int_ne(sq_container_open(sqc, SQ_KIND_SQM, &c, &err), 0);
    snprintf(want, sizeof want, "%s is a squint statistics file, not a model file", sqc);
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_ne(sq_container_open(sqm, SQ_KIND_SQC, &c, &err), 0);
    snprintf(want, sizeof want, "%s is a squint model file, not a statistics file", sqm);
    ck_assert_str_eq(err.msg, want);
    ck_assert_ptr_null(c.tensors); /* zeroed on failure */
    free(sqc), free(sqm);
    tmpdir_free(dir);
}
END_TEST

/* Any single flipped byte is caught by open or by verify. */
START_TEST(every_flipped_byte_detected)
{
    char *dir = tmpdir_new();
    char *path = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    size_t len;
    uint8_t *b = slurp(path, &len);
    for (size_t i = 0; i < len; i++) {
        b[i] ^= 0x20;
        expect_refused(b, len, "");
        b[i] ^= 0x20;
    }
    free(b);
    free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(verify_names_corrupted_tensor)
{
    char *dir = tmpdir_new();
    char *path = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    char *bad = sq_path_join(dir, "bad.sqm");
    size_t len;
    uint8_t *b = slurp(path, &len);
    uint64_t data = get64(b + DATA_OFF);
    for (unsigned i = 0; i < N_SAMPLE; i++) {
        entry_pos e = entry_at(b, i);
        uint64_t size = get64(b + e.size);
        if (size == 0)
            continue;
        size_t at = data + get64(b + e.offset) + size / 2;
        b[at] ^= 1;
        spit(bad, b, len);
        b[at] ^= 1;
        sq_container c;
        sq_err err;
        ck_assert_msg(sq_container_open(bad, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
        ck_assert_int_ne(sq_container_verify(&c, &err), 0);
        char want[600];
        snprintf(want, sizeof want, "%s: tensor \"%s\": checksum mismatch", bad, samples[i].name);
        ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
        sq_container_close(&c);
    }
    /* Metadata, directory, data padding and the trailer checksum. */
    size_t at = get64(b + META_OFF) + 3;
    b[at] ^= 1;
    expect_refused(b, len, "metadata checksum mismatch");
    b[at] ^= 1;
    at = get64(b + DIR_OFF) + 5;
    b[at] ^= 1;
    expect_refused(b, len, "directory checksum mismatch");
    b[at] ^= 1;
    entry_pos e0 = entry_at(b, 0);
    at = data + get64(b + e0.offset) + get64(b + e0.size); /* padding after tensor 0 */
    b[at] ^= 1;
    expect_refused(b, len, "non-zero padding byte");
    b[at] ^= 1;
    b[len - 1] ^= 1;
    expect_refused(b, len, "whole-file checksum mismatch");
    b[len - 1] ^= 1;
    sq_container c; /* sanity: the pristine bytes pass */
    sq_err err;
    ck_assert_msg(sq_container_open_buffer(b, len, "ok.sqm", NULL, &c, &err) == 0, "%s", err.msg);
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    sq_container_close(&c);
    free(b), free(bad), free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(truncation_everywhere)
{
    char *dir = tmpdir_new();
    char *path = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    char *cut = sq_path_join(dir, "cut.sqm");
    size_t len;
    uint8_t *b = slurp(path, &len);
    for (size_t n = 0; n < len; n++) {
        spit(cut, b, n);
        sq_container c;
        sq_err err;
        ck_assert_int_ne(sq_container_open(cut, 0, &c, &err), 0);
        ck_assert_msg(strncmp(err.msg, cut, strlen(cut)) == 0, "%zu: %s", n, err.msg);
        if (n >= 144)
            ck_assert_msg(strstr(err.msg, "truncated"), "%zu: %s", n, err.msg);
    }
    /* The section boundaries, by name. */
    const size_t bounds[] = {4, 128, get64(b + DIR_OFF), get64(b + DATA_OFF), len - 16, len - 1};
    for (size_t i = 0; i < sizeof bounds / sizeof *bounds; i++) {
        sq_container c;
        sq_err err;
        ck_assert_int_ne(sq_container_open_buffer(b, bounds[i], "cut.sqm", NULL, &c, &err), 0);
        ck_assert_msg(strstr(err.msg, "cut.sqm: truncated"), "%zu: %s", bounds[i], err.msg);
    }
    /* Appended bytes are refused too. */
    uint8_t *longer = calloc(1, len + 1);
    memcpy(longer, b, len);
    expect_refused(longer, len + 1, "trailing data");
    free(longer);
    free(b);
    free(cut);
    free(path);
    tmpdir_free(dir);
}
END_TEST

/* Mutate a copy of the sample, fix the checksums, expect `needle`. */
typedef void (*mutator)(uint8_t *b, size_t len);
static void mutate_expect(mutator m, int fix_hashes, const char *needle)
{
    char *dir = tmpdir_new();
    char *path = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    size_t len;
    uint8_t *b = slurp(path, &len);
    m(b, len);
    if (fix_hashes)
        rehash(b, len);
    expect_refused(b, len, needle);
    free(b);
    free(path);
    tmpdir_free(dir);
}

static void m_magic(uint8_t *b, size_t len)
{
    b[1] = 'X';
}
static void m_major(uint8_t *b, size_t len)
{
    put16(b + 8, 2);
}
static void m_hdr_byte(uint8_t *b, size_t len)
{
    b[100] ^= 1;
}
static void m_kind(uint8_t *b, size_t len)
{
    b[4] = 's';
}
static void m_flags(uint8_t *b, size_t len)
{
    b[12] = 1;
}
static void m_file_size(uint8_t *b, size_t len)
{
    put64(b + FILE_SIZE, len + 64);
}
static void m_data_past_eof(uint8_t *b, size_t len)
{
    put64(b + DATA_OFF, len + 4096);
}
static void m_meta_overflow(uint8_t *b, size_t len)
{
    put64(b + META_SIZE, UINT64_MAX - 64);
}
static void m_dir_overlaps_meta(uint8_t *b, size_t len)
{
    put64(b + DIR_OFF, get64(b + DIR_OFF) - 8);
}
static void m_data_overlaps_dir(uint8_t *b, size_t len)
{
    put64(b + DATA_OFF, get64(b + DATA_OFF) - 64);
    put64(b + DATA_SIZE, get64(b + DATA_SIZE) + 64);
}
static void m_data_misaligned(uint8_t *b, size_t len)
{
    put64(b + DATA_OFF, get64(b + DATA_OFF) + 8);
    put64(b + DATA_SIZE, get64(b + DATA_SIZE) - 8);
}
static void m_trailer(uint8_t *b, size_t len)
{
    b[len - 16] = 'X';
}
static void m_dup_name(uint8_t *b, size_t len)
{
    /* "big" -> "ids": same length as an earlier name. */
    memcpy(b + entry_at(b, 4).name, "ids", 3);
}
static void m_tensor_misaligned(uint8_t *b, size_t len)
{
    entry_pos e = entry_at(b, 1);
    put64(b + e.offset, get64(b + e.offset) + 8);
}
static void m_tensor_overlap(uint8_t *b, size_t len)
{
    put64(b + entry_at(b, 2).offset, get64(b + entry_at(b, 1).offset));
}
static void m_tensor_outside(uint8_t *b, size_t len)
{
    put64(b + entry_at(b, 3).offset, (get64(b + DATA_SIZE) + 63) / 64 * 64 + 64 * 10);
}
static void m_tensor_size(uint8_t *b, size_t len)
{
    entry_pos e = entry_at(b, 0);
    put64(b + e.dims, 6); /* [6, 5] f32 is 120 bytes, not 140 */
}
static void m_tensor_size_overflow(uint8_t *b, size_t len)
{
    entry_pos e = entry_at(b, 0);
    put64(b + e.dims, UINT64_MAX / 4);
}
static void m_dtype_unknown(uint8_t *b, size_t len)
{
    b[entry_at(b, 0).dtype] = 0x33;
}
static void m_dtype_packed_shape(uint8_t *b, size_t len)
{
    /* "q" is [130]: as a packed panel tensor it lacks the [N, K] shape. */
    b[entry_at(b, 6).dtype] = SQ_CDT_S8_PANEL;
}
static void m_ndim(uint8_t *b, size_t len)
{
    b[entry_at(b, 0).ndim] = 9;
}
static void m_name_utf8(uint8_t *b, size_t len)
{
    b[entry_at(b, 0).name] = 0xff;
}
static void m_name_nul(uint8_t *b, size_t len)
{
    b[entry_at(b, 0).name + 2] = 0;
}
static void m_name_empty(uint8_t *b, size_t len)
{
    put16(b + entry_at(b, 0).name_len, 0);
}
static void m_name_long(uint8_t *b, size_t len)
{
    put16(b + entry_at(b, 0).name_len, 513);
}
static void m_count_huge(uint8_t *b, size_t len)
{
    put64(b + get64(b + DIR_OFF), 2000000);
}
static void m_count_big(uint8_t *b, size_t len)
{
    b[get64(b + DIR_OFF)] = 200;
}
static void m_count_small(uint8_t *b, size_t len)
{
    b[get64(b + DIR_OFF)] = 9;
}
static void m_meta_bad_utf8(uint8_t *b, size_t len)
{
    b[get64(b + META_OFF) + 8] = 0xc0;
}

START_TEST(corrupt_headers_refused)
{
    mutate_expect(m_magic, 0, "not a squint container (bad magic)");
    mutate_expect(m_major, 0, "version 2.0 is not supported");
    mutate_expect(m_hdr_byte, 0, "header checksum mismatch");
    mutate_expect(m_kind, 1, "invalid kind");
    mutate_expect(m_flags, 1, "unknown flags");
    mutate_expect(m_file_size, 1, "truncated: the header says");
    mutate_expect(m_data_past_eof, 1, "points past the end");
    mutate_expect(m_meta_overflow, 1, "overflows 64 bits");
    mutate_expect(m_dir_overlaps_meta, 1, "directory offset");
    mutate_expect(m_dir_overlaps_meta, 1, "overlaps the metadata");
    mutate_expect(m_data_overlaps_dir, 1, "data section offset");
    mutate_expect(m_data_overlaps_dir, 1, "overlaps the directory");
    mutate_expect(m_data_misaligned, 1, "not a multiple of 64");
    mutate_expect(m_trailer, 1, "bad trailer magic");
    mutate_expect(m_meta_bad_utf8, 1, "metadata is not valid UTF-8");
}
END_TEST

START_TEST(corrupt_directory_refused)
{
    mutate_expect(m_dup_name, 1, "duplicate tensor name \"ids\"");
    mutate_expect(m_tensor_misaligned, 1,
                  "\"layer.0.scale\": data offset 200 is not a multiple of 64");
    mutate_expect(m_tensor_overlap, 1, "tensors \"layer.0.scale\"");
    mutate_expect(m_tensor_overlap, 1, "overlap");
    mutate_expect(m_tensor_outside, 1, "\"u32\": data");
    mutate_expect(m_tensor_outside, 1, "outside the data section");
    mutate_expect(m_tensor_size, 1, "size 140 bytes but shape [6, 5] x f32 is 120");
    mutate_expect(m_tensor_size_overflow, 1, "overflows 64 bits");
    mutate_expect(m_dtype_unknown, 1, "unknown dtype code 0x33");
    mutate_expect(m_dtype_packed_shape, 1,
                  "tensor \"q\": s8-panel needs 2 dimensions [N, K], not 1");
    mutate_expect(m_ndim, 1, "9 dimensions");
    mutate_expect(m_name_utf8, 1, "name is not valid UTF-8");
    mutate_expect(m_name_nul, 1, "name contains a NUL byte");
    mutate_expect(m_name_empty, 1, "name length 0 is outside");
    mutate_expect(m_name_long, 1, "name length 513 is outside");
    mutate_expect(m_count_huge, 1, "2000000 tensors (limit 1000000)");
    mutate_expect(m_count_big, 1, "cannot hold 200 entries");
    mutate_expect(m_count_small, 1, "unexpected bytes after the last directory entry");
}
END_TEST

START_TEST(writer_refuses_bad_tensors)
{
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    sq_err err;
    float f[6] = {0};
    uint64_t d2[2] = {2, 3}, d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(sq_container_writer_add_tensor(w, "a", SQ_CDT_F32, 2, d2, f, 24, &err), 0);
    ck_assert_int_ne(sq_container_writer_add_tensor(w, "a", SQ_CDT_F32, 2, d2, f, 24, &err), 0);
    ck_assert_str_eq(err.msg, "duplicate tensor name \"a\"");
    ck_assert_int_ne(sq_container_writer_add_tensor(w, "b", SQ_CDT_F32, 2, d2, f, 20, &err), 0);
    ck_assert_str_eq(err.msg, "tensor \"b\": 20 bytes given but the shape needs 24");
    /* A packed [2, 3] int4 tensor is one padded panel: 16 x 128 / 2 bytes. */
    ck_assert_int_ne(
        sq_container_writer_add_tensor(w, "b", SQ_CDT_S4G128_PANEL, 2, d2, f, 24, &err), 0);
    ck_assert_str_eq(err.msg, "tensor \"b\": 24 bytes given but the shape needs 1024");
    ck_assert_int_ne(sq_container_writer_add_tensor(w, "b", 0x7e, 2, d2, f, 24, &err), 0);
    ck_assert_msg(strstr(err.msg, "unknown dtype code 0x7e"), "%s", err.msg);
    ck_assert_int_ne(sq_container_writer_add_tensor(w, "b", SQ_CDT_U8, 9, d9, f, 1, &err), 0);
    ck_assert_int_ne(sq_container_writer_add_tensor(w, "", SQ_CDT_F32, 2, d2, f, 24, &err), 0);
    char longname[600];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert_int_ne(sq_container_writer_add_tensor(w, longname, SQ_CDT_F32, 2, d2, f, 24, &err),
                     0);
    longname[512] = '\0';
    ck_assert_int_eq(sq_container_writer_add_tensor(w, longname, SQ_CDT_F32, 2, d2, f, 24, &err),
                     0);
    ck_assert_int_ne(sq_container_writer_add_tensor(w, "bad\xc3", SQ_CDT_F32, 2, d2, f, 24, &err),
                     0);
    ck_assert_int_ne(sq_container_writer_set_metadata(w, "a\0b", 3, &err), 0);
    ck_assert_int_ne(sq_container_writer_set_metadata(w, "\xed\xa0\x80", 3, &err),
                     0); /* surrogate */
    sq_container_writer_free(w);
}
END_TEST

START_TEST(many_tensors_lookup)
{
    char *dir = tmpdir_new();
    char *path = sq_path_join(dir, "many.sqc");
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQC);
    sq_err err;
    enum { N = 3000 };
    static uint32_t vals[N];
    for (uint32_t i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%u.absmax", i);
        vals[i] = i * 7;
        uint64_t d[1] = {1};
        ck_assert_int_eq(
            sq_container_writer_add_tensor_ref(w, name, SQ_CDT_U32, 1, d, &vals[i], 4, &err), 0);
    }
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container_writer_free(w);
    sq_container c;
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQC, &c, &err) == 0, "%s", err.msg);
    for (uint32_t i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%u.absmax", i);
        const sq_container_tensor *t = sq_container_find(&c, name);
        ck_assert_ptr_nonnull(t);
        ck_assert_ptr_eq(t, &c.tensors[i]);
        ck_assert_uint_eq(*(const uint32_t *)t->data, i * 7);
    }
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    sq_container_close(&c);
    free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(zstd_round_trip)
{
    char *dir = tmpdir_new();
    char *plain = write_sample(dir, "m.sqm", SQ_KIND_SQM, 0, 0);
    char *z = write_sample(dir, "m.sqm.zst", SQ_KIND_SQM, 1, 19);
    size_t lp, lz;
    uint8_t *bp = slurp(plain, &lp), *bz = slurp(z, &lz);
    ck_assert_uint_eq(get64(bz) & 0xffffffffu, ZSTD_MAGICNUMBER);
    ck_assert_uint_lt(lz, lp);
    ck_assert_uint_eq(ZSTD_getFrameContentSize(bz, lz), lp); /* declared size present */
    sq_container c;
    sq_err err;
    ck_assert_msg(sq_container_open(z, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.compressed, 1);
    check_sample(&c);
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(c.size, lp);
    ck_assert_mem_eq(c.bytes, bp, lp); /* decompresses to the plain file exactly */
    sq_container_close(&c);
    /* Kind checks apply after decompression. */
    ck_assert_int_ne(sq_container_open(z, SQ_KIND_SQC, &c, &err), 0);
    ck_assert_msg(strstr(err.msg, "is a squint model file, not a statistics file"), "%s", err.msg);
    free(bp), free(bz), free(plain), free(z);
    tmpdir_free(dir);
}
END_TEST

START_TEST(zstd_corrupt_refused)
{
    char *dir = tmpdir_new();
    char *z = write_sample(dir, "m.sqm.zst", SQ_KIND_SQM, 0, 3);
    size_t lz;
    uint8_t *bz = slurp(z, &lz);
    sq_container c;
    sq_err err;
    /* Flipped bytes in the compressed body: zstd's own checksum or ours. */
    for (size_t i = 4; i < lz; i += 7) {
        bz[i] ^= 0x55;
        int rc = sq_container_open_buffer(bz, lz, "c.sqm.zst", NULL, &c, &err);
        if (rc == 0) {
            rc = sq_container_verify(&c, &err);
            sq_container_close(&c);
        }
        ck_assert_msg(rc != 0, "flip at %zu accepted", i);
        ck_assert_msg(strncmp(err.msg, "c.sqm.zst: ", 11) == 0, "%s", err.msg);
        bz[i] ^= 0x55;
    }
    /* Truncated stream. */
    for (size_t n = 4; n < lz; n++) {
        ck_assert_int_ne(sq_container_open_buffer(bz, n, "t.sqm.zst", NULL, &c, &err), 0);
        ck_assert_msg(strncmp(err.msg, "t.sqm.zst: ", 11) == 0, "%s", err.msg);
    }
    ck_assert_int_ne(sq_container_open_buffer(bz, lz - 3, "t.sqm.zst", NULL, &c, &err), 0);
    ck_assert_msg(strstr(err.msg, "truncated zstd stream"), "%s", err.msg);
    /* Declared size over the limit. */
    sq_container_opts o = {.max_decompressed = 256};
    ck_assert_int_ne(sq_container_open_buffer(bz, lz, "l.sqm.zst", &o, &c, &err), 0);
    ck_assert_msg(strstr(err.msg, "declares"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "over the 256-byte limit"), "%s", err.msg);
    /* A frame header declaring 32 GiB (> 16 GiB default) is refused before
     * any allocation. */
    uint8_t fake[32] = {0x28, 0xb5, 0x2f, 0xfd, 0xe0 /* 8-byte FCS, single segment */};
    put64(fake + 5, (uint64_t)32 << 30);
    ck_assert_int_ne(sq_container_open_buffer(fake, sizeof fake, "f.sqm.zst", NULL, &c, &err), 0);
    ck_assert_msg(strstr(err.msg, "over the 17179869184-byte limit"), "%s", err.msg);
    free(bz), free(z);
    tmpdir_free(dir);
}
END_TEST

/* A stream without a declared size grows its buffer, within the limit. */
START_TEST(zstd_unknown_size)
{
    enum { BIG = 1 << 20 };
    uint8_t *zeros = calloc(1, BIG);
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQC);
    uint64_t d[1] = {BIG};
    sq_err err;
    ck_assert_int_eq(
        sq_container_writer_add_tensor_ref(w, "zeros", SQ_CDT_U8, 1, d, zeros, BIG, &err), 0);
    char *dir = tmpdir_new();
    char *path = sq_path_join(dir, "z.sqc");
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container_writer_free(w);
    size_t len;
    uint8_t *plain = slurp(path, &len);
    /* Recompress with no content size in the frame header. */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    size_t cap = ZSTD_compressBound(len);
    uint8_t *zb = malloc(cap);
    ZSTD_outBuffer ob = {zb, cap, 0};
    ZSTD_inBuffer in = {plain, len, 0};
    ck_assert_uint_eq(ZSTD_compressStream2(cc, &ob, &in, ZSTD_e_end), 0);
    ZSTD_freeCCtx(cc);
    ck_assert_uint_eq(ZSTD_getFrameContentSize(zb, ob.pos), ZSTD_CONTENTSIZE_UNKNOWN);
    sq_container c;
    ck_assert_msg(sq_container_open_buffer(zb, ob.pos, "u.sqc.zst", NULL, &c, &err) == 0, "%s",
                  err.msg);
    ck_assert_uint_eq(c.size, len);
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq((uintptr_t)c.tensors[0].data % 64, 0);
    sq_container_close(&c);
    sq_container_opts o = {.max_decompressed = 100000};
    ck_assert_int_ne(sq_container_open_buffer(zb, ob.pos, "u.sqc.zst", &o, &c, &err), 0);
    /* Refused once the decoded container header says how big the file is. */
    ck_assert_msg(strstr(err.msg, "u.sqc.zst: container header declares 1048") &&
                      strstr(err.msg, "over the 100000-byte decompression limit"),
                  "%s", err.msg);
    free(zb), free(plain), free(zeros), free(path);
    tmpdir_free(dir);
}
END_TEST

START_TEST(not_a_container)
{
    sq_container c;
    sq_err err;
    ck_assert_int_ne(sq_container_open("/nonexistent/x.sqm", 0, &c, &err), 0);
    ck_assert_msg(strstr(err.msg, "/nonexistent/x.sqm: cannot open"), "%s", err.msg);
    const char *json = "{\"hello\": 1}";
    expect_refused((const uint8_t *)json, strlen(json), "bad magic");
    expect_refused((const uint8_t *)"", 0, "empty file");
    expect_refused((const uint8_t *)"SQ", 2, "truncated");
}
END_TEST

START_TEST(failed_writes_leave_nothing)
{
    char *dir = tmpdir_new();
    sq_container_writer *w = sample_writer(SQ_KIND_SQM, 0);
    sq_err err;
    /* Missing directory. */
    char *sub = sq_path_join(dir, "missing");
    char *missing = sq_path_join(sub, "m.sqm");
    ck_assert_int_ne(sq_container_writer_write(w, missing, &err), 0);
    ck_assert_msg(strncmp(err.msg, missing, strlen(missing)) == 0, "%s", err.msg);
    /* Unwritable directory (root ignores permissions: skip then). */
    if (geteuid() != 0) {
        mkdir(sub, 0555);
        ck_assert_int_ne(sq_container_writer_write(w, missing, &err), 0);
        ck_assert_int_eq(count_files(sub), 0);
        rmdir(sub);
    }
    /* A write that fails midway (file size limit) leaves the existing file
     * untouched and no temp file behind. */
    char *path = sq_path_join(dir, "m.sqm");
    spit(path, "previous", 8);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 300;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = sq_container_writer_write(w, path, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    size_t len;
    uint8_t *b = slurp(path, &len);
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(b, "previous", 8);
    free(b);
    ck_assert_int_eq(count_files(dir), 1);
    /* Same through zstd. */
    sq_container_writer_set_zstd(w, 1);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    uint8_t *noise = malloc(4096);
    for (int i = 0; i < 4096; i++)
        noise[i] = (uint8_t)(i * 2654435761u >> 13);
    uint64_t d[1] = {4096};
    ck_assert_int_eq(
        sq_container_writer_add_tensor_ref(w, "noise", SQ_CDT_U8, 1, d, noise, 4096, &err), 0);
    rc = sq_container_writer_write(w, path, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    ck_assert_int_ne(rc, 0);
    b = slurp(path, &len);
    ck_assert_mem_eq(b, "previous", 8);
    free(b);
    ck_assert_int_eq(count_files(dir), 1);
    /* A device that is full. */
    ck_assert_int_ne(sq_container_writer_write(w, "/dev/full", &err), 0);
    ck_assert_msg(strstr(err.msg, "/dev/full"), "%s", err.msg);
    /* And the writer still works afterwards. */
    ck_assert_msg(sq_container_writer_write(w, path, &err) == 0, "%s", err.msg);
    sq_container c;
    ck_assert_msg(sq_container_open(path, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
    ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.compressed, 1);
    sq_container_close(&c);
    sq_container_writer_free(w);
    free(noise), free(path), free(sub), free(missing);
    tmpdir_free(dir);
}
END_TEST

START_TEST(dtype_table)
{
    uint64_t d[2] = {3, 5}, size;
    sq_err err;
    ck_assert_str_eq(sq_cdtype_name(SQ_CDT_BF16), "bf16");
    ck_assert_ptr_null(sq_cdtype_name(0));
    ck_assert_ptr_null(sq_cdtype_name(200));
    ck_assert_uint_eq(sq_cdtype_elem_size(SQ_CDT_F64), 8);
    ck_assert_uint_eq(sq_cdtype_elem_size(SQ_CDT_S8_PANEL), 0);
    /* Packed panels: dims [N, K], N padded to 16, K to 4 (s8) or 128 (s4). */
    uint64_t nk[2] = {17, 130};
    ck_assert_int_eq(sq_cdtype_size(SQ_CDT_S8_PANEL, 2, nk, &size, &err), 0);
    ck_assert_uint_eq(size, 32 * 132);
    ck_assert_int_eq(sq_cdtype_size(SQ_CDT_S4G128_PANEL, 2, nk, &size, &err), 0);
    ck_assert_uint_eq(size, 32 * 256 / 2);
    ck_assert_int_ne(sq_cdtype_size(SQ_CDT_S8_PANEL, 1, nk, &size, &err), 0);
    uint64_t nk_huge[2] = {UINT64_MAX - 3, 4};
    ck_assert_int_ne(sq_cdtype_size(SQ_CDT_S8_PANEL, 2, nk_huge, &size, &err), 0);
    uint64_t nk_big[2] = {1ull << 40, 1ull << 30};
    ck_assert_int_ne(sq_cdtype_size(SQ_CDT_S4G128_PANEL, 2, nk_big, &size, &err), 0);
    ck_assert_int_eq(sq_cdtype_size(SQ_CDT_I64, 2, d, &size, &err), 0);
    ck_assert_uint_eq(size, 120);
    ck_assert_int_eq(sq_cdtype_size(SQ_CDT_I8, 0, d, &size, &err), 0);
    ck_assert_uint_eq(size, 1);
    uint64_t huge[3] = {1ull << 40, 1ull << 30, 0};
    ck_assert_int_ne(sq_cdtype_size(SQ_CDT_F32, 2, huge, &size, &err), 0);
    ck_assert_int_eq(sq_cdtype_size(SQ_CDT_F32, 3, huge, &size, &err), 0); /* a zero dim: empty */
    ck_assert_uint_eq(size, 0);
    char kb[8];
    ck_assert_str_eq(sq_kind_describe(SQ_KIND_SQC, kb), "statistics");
    ck_assert_str_eq(sq_kind_describe(SQ_KIND_CODE('X', 'Y', 0, 0), kb), "XY");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("container");
    TCase *tc = tcase_create("container");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, layout_is_as_specified);
    tcase_add_test(tc, deterministic_output);
    tcase_add_test(tc, empty_container);
    tcase_add_test(tc, sticky_add_failure);
    tcase_add_test(tc, wrong_kind);
    tcase_add_test(tc, every_flipped_byte_detected);
    tcase_add_test(tc, verify_names_corrupted_tensor);
    tcase_add_test(tc, truncation_everywhere);
    tcase_add_test(tc, corrupt_headers_refused);
    tcase_add_test(tc, corrupt_directory_refused);
    tcase_add_test(tc, writer_refuses_bad_tensors);
    tcase_add_test(tc, many_tensors_lookup);
    tcase_add_test(tc, zstd_round_trip);
    tcase_add_test(tc, zstd_corrupt_refused);
    tcase_add_test(tc, zstd_unknown_size);
    tcase_add_test(tc, not_a_container);
    tcase_add_test(tc, failed_writes_leave_nothing);
    tcase_add_test(tc, dtype_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

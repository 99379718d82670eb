/* sqm_poke: write a copy of a plain (uncompressed) squint container with one
 * element of one tensor changed and every checksum recomputed, i.e. the
 * forged file a hostile writer can make (checksums are no defence). For
 * the tests that prove the loader and `verify` check what they compute.
 *
 * usage: sqm_poke IN OUT TENSOR INDEX (--add N | --set-f32 X | --set-i32 N | --set-i8 N)
 *   INDEX is the element index in the tensor's bytes viewed as its dtype
 *   (i32/f32: 4-byte elements; panels and i8/u8: bytes).
 *        sqm_poke IN OUT --replace OLD NEW
 *   every occurrence of the bytes OLD outside the tensors' data (metadata,
 *   tensor names) replaced by NEW of the same length: a metadata value
 *   changed ("int8" -> "fp32"), tensors taken away by renaming them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "container_fixup.h"

/* fixes the container's checksums, writes OUT, frees buf */
static int write_out(const char *out, uint8_t *buf, size_t size)
{
    container_fixup(buf, size);
    FILE *fp = fopen(out, "wb");
    const int ok = fp && fwrite(buf, 1, size, fp) == size;
    if ((fp && fclose(fp) != 0) || !ok) {
        fprintf(stderr, "sqm_poke: cannot write %s\n", out);
        free(buf);
        return 2;
    }
    free(buf);
    return 0;
}

static int replace(const char *in, const char *out, const char *from, const char *to)
{
    const size_t n = strlen(from);
    if (n == 0 || strlen(to) != n) {
        fprintf(stderr, "sqm_poke: --replace needs two strings of the same length\n");
        return 2;
    }
    sq_container c;
    sq_err err;
    if (sq_container_open(in, 0, &c, &err) != 0 || c.compressed) {
        fprintf(stderr, "sqm_poke: %s\n", c.compressed ? "compressed input" : err.msg);
        return 2;
    }
    uint8_t *buf = malloc(c.size), *data = calloc(c.size, 1);
    memcpy(buf, c.bytes, c.size);
    const size_t size = c.size;
    for (size_t i = 0; i < c.n_tensors; i++) /* the tensors' data stays as it is */
        memset(data + ((const uint8_t *)c.tensors[i].data - c.bytes), 1, c.tensors[i].size);
    sq_container_close(&c);
    int hits = 0;
    for (size_t o = 0; o + n <= size; o++)
        if (!data[o] && !data[o + n - 1] && memcmp(buf + o, from, n) == 0) {
            memcpy(buf + o, to, n);
            hits++;
        }
    free(data);
    if (hits == 0) {
        fprintf(stderr, "sqm_poke: \"%s\" not found in %s\n", from, in);
        free(buf);
        return 2;
    }
    return write_out(out, buf, size);
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[3], "--replace"))
        return replace(argv[1], argv[2], argv[4], argv[5]);
    if (argc != 7) {
        fprintf(stderr, "usage: sqm_poke IN OUT TENSOR INDEX --add N|--set-f32 X|--set-i32 N|"
                        "--set-i8 N\n");
        return 2;
    }
    const char *in = argv[1], *out = argv[2], *name = argv[3], *op = argv[5], *val = argv[6];
    long long index = atoll(argv[4]);
    sq_container c;
    sq_err err;
    if (sq_container_open(in, 0, &c, &err) != 0 || c.compressed) {
        fprintf(stderr, "sqm_poke: %s\n", c.compressed ? "compressed input" : err.msg);
        return 2;
    }
    const sq_container_tensor *t = sq_container_find(&c, name);
    if (!t) {
        fprintf(stderr, "sqm_poke: no tensor %s in %s\n", name, in);
        return 2;
    }
    size_t esz = strstr(op, "i8") || t->dtype == SQ_CDT_I8 || t->dtype == SQ_CDT_U8 ||
                         t->dtype >= SQ_CDT_S8_PANEL
                     ? 1
                     : 4;
    if (index < 0 || (uint64_t)(index + 1) * esz > t->size) {
        fprintf(stderr, "sqm_poke: index %lld outside %s\n", index, name);
        return 2;
    }
    size_t off = (size_t)((const uint8_t *)t->data - c.bytes) + (size_t)index * esz;
    uint8_t *buf = malloc(c.size);
    memcpy(buf, c.bytes, c.size);
    size_t size = c.size;
    sq_container_close(&c);
    if (!strcmp(op, "--set-f32")) {
        float f = strtof(val, NULL);
        memcpy(buf + off, &f, 4);
    } else if (!strcmp(op, "--set-i32")) {
        int32_t v = (int32_t)atoll(val);
        memcpy(buf + off, &v, 4);
    } else if (!strcmp(op, "--set-i8")) {
        buf[off] = (uint8_t)(int8_t)atoi(val);
    } else if (!strcmp(op, "--add") && esz == 4) {
        int32_t v;
        memcpy(&v, buf + off, 4);
        v += (int32_t)atoll(val);
        memcpy(buf + off, &v, 4);
    } else if (!strcmp(op, "--add")) {
        buf[off] = (uint8_t)(buf[off] + atoi(val));
    } else {
        fprintf(stderr, "sqm_poke: unknown operation %s\n", op);
        return 2;
    }
    return write_out(out, buf, size);
}

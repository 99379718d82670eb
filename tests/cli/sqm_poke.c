/* sqm_poke: write a copy of a plain (uncompressed) squint container with one
 * element of one tensor changed and every checksum recomputed, i.e. the
 * forged file a hostile writer can make (checksums are no defence). For
 * the tests that prove the loader and `verify` check what they compute.
 *
 * usage: sqm_poke IN OUT TENSOR INDEX (--add N | --set-f32 X | --set-i32 N | --set-i8 N)
 *   INDEX is the element index in the tensor's bytes viewed as its dtype
 *   (i32/f32: 4-byte elements; panels and i8/u8: bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "container_fixup.h"

int main(int argc, char **argv)
{
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
    container_fixup(buf, size);
    FILE *fp = fopen(out, "wb");
    if (!fp || fwrite(buf, 1, size, fp) != size || fclose(fp) != 0) {
        fprintf(stderr, "sqm_poke: cannot write %s\n", out);
        return 2;
    }
    free(buf);
    return 0;
}

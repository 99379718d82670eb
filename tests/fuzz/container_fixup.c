/* Checksum repair for squint containers (formats/SPEC.md sections 3, 5, 8). */
#include "container_fixup.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* [off, off + len) inside [0, lim)? */
static int inside(uint64_t off, uint64_t len, uint64_t lim)
{
    return off <= lim && len <= lim - off;
}

/* Rewrite each directory entry's tensor xxh64 where its range is readable. */
static void fix_tensors(uint8_t *buf, uint64_t n, uint64_t dir, uint64_t dsz, uint64_t data,
                        uint64_t data_sz)
{
    if (dsz < 4)
        return;
    const uint8_t *p = buf + dir;
    uint32_t count = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24;
    uint64_t pos = 4;
    for (uint32_t i = 0; i < count; i++) {
        if (dsz - pos < 2)
            return;
        uint64_t name_len = (uint64_t)p[pos] | (uint64_t)p[pos + 1] << 8;
        pos += 2;
        if (dsz - pos < name_len + 2)
            return;
        pos += name_len + 1; /* name, dtype */
        uint64_t ndim = p[pos++];
        if (ndim > 8 || dsz - pos < 8 * ndim + 24)
            return;
        pos += 8 * ndim;
        uint64_t off = rd64(p + pos), size = rd64(p + pos + 8);
        if (inside(off, size, data_sz) && inside(data, data_sz, n))
            wr64(buf + dir + pos + 16, XXH64(buf + data + off, (size_t)size, 0));
        pos += 24;
    }
}

int container_fixup(uint8_t *buf, size_t n)
{
    if (n < 144 || memcmp(buf, "SQNT", 4) != 0)
        return 0;
    wr64(buf + 64, n); /* file_size */
    uint64_t lim = n - 16;
    uint64_t md = rd64(buf + 16), md_sz = rd64(buf + 24);
    uint64_t dir = rd64(buf + 32), dir_sz = rd64(buf + 40);
    uint64_t data = rd64(buf + 48), data_sz = rd64(buf + 56);
    if (inside(dir, dir_sz, lim)) {
        fix_tensors(buf, lim, dir, dir_sz, data, data_sz);
        wr64(buf + 80, XXH64(buf + dir, (size_t)dir_sz, 0));
    }
    if (inside(md, md_sz, lim))
        wr64(buf + 72, XXH64(buf + md, (size_t)md_sz, 0));
    wr64(buf + 120, XXH64(buf, 120, 0));
    wr64(buf + n - 8, XXH64(buf, lim, 0));
    return 1;
}

uint8_t *container_fixed_copy(const uint8_t *data, size_t n)
{
    uint8_t *copy = malloc(n + 1);
    if (!copy)
        abort();
    memcpy(copy, data, n);
    container_fixup(copy, n);
    return copy;
}

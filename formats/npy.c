#include "npy.h"

#include <string.h>

int sq_npy_write_header_f32(FILE *fp, const int64_t *shape, int ndim)
{
    char dict[256];
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int i = 0; i < ndim; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)shape[i],
                      (ndim == 1 || i + 1 < ndim) ? ", " : "");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    if (n <= 0 || (size_t)n >= sizeof dict - 70)
        return -1;
    /* magic(6) + version(2) + len(2) + dict + pad + '\n' must be a multiple of 64. */
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    unsigned short hlen = (unsigned short)(n + pad + 1);
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    if (fwrite(pre, 1, 10, fp) != 10 || fwrite(dict, 1, (size_t)n, fp) != (size_t)n)
        return -1;
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', fp) == EOF)
            return -1;
    return fputc('\n', fp) == EOF ? -1 : 0;
}

#include "layer_name.h"

#include <stdlib.h>
#include <string.h>

long sq_layer_index(const char *name, const char *prefix, const char **digits_end)
{
    const size_t np = strlen(prefix);
    if (strncmp(name, prefix, np) != 0 || name[np] < '0' || name[np] > '9')
        return -1;
    char *end;
    long v = strtol(name + np, &end, 10);
    if (*end != '.')
        return -1;
    if (digits_end)
        *digits_end = end;
    return v;
}

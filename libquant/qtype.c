#include "qtype.h"

#include <string.h>

static const sq_qtype_traits table[SQ_QT_COUNT] = {
    [SQ_QT_F32] = {"fp32", 32, 0, true},
    [SQ_QT_S8] = {"int8", 8, 0, false},
    [SQ_QT_S4G128] = {"int4-g128", 4, 128, false},
};

const sq_qtype_traits *sq_qtype_get(sq_qtype qt)
{
    return (unsigned)qt < SQ_QT_COUNT ? &table[qt] : NULL;
}

int sq_qtype_parse(const char *name, sq_qtype *out)
{
    for (int i = 0; i < SQ_QT_COUNT; i++)
        if (strcmp(name, table[i].name) == 0) {
            *out = (sq_qtype)i;
            return 0;
        }
    return -1;
}

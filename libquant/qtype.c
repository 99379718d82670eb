#include "qtype.h"

#include <string.h>

#include "container.h"
#include "pack.h"

static const sq_qtype_traits table[SQ_QT_COUNT] = {
    [SQ_QT_F32] = {.name = "fp32", .bits = 32, .block = 0, .executable = true},
    [SQ_QT_S8] = {.name = "int8",
                  .bits = 8,
                  .block = 0,
                  .executable = false,
                  .qmax = 127,
                  .k_align = SQ_PANEL_K,
                  .cdtype = SQ_CDT_S8_PANEL,
                  .packed_size = sq_packed_size_s8,
                  .pack_panel = sq_pack_panel_s8,
                  .get = sq_panel_get_s8},
    [SQ_QT_S4G128] = {.name = "int4-g128",
                      .bits = 4,
                      .block = SQ_INT4_GROUP,
                      .executable = false,
                      .qmax = 7,
                      .k_align = SQ_INT4_GROUP,
                      .cdtype = SQ_CDT_S4G128_PANEL,
                      .packed_size = sq_packed_size_s4,
                      .pack_panel = sq_pack_panel_s4,
                      .get = sq_panel_get_s4},
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

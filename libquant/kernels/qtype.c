#include "qtype.h"

#include <string.h>

#include "container.h"
#include "gemm_s8.h"
#include "pack.h"

static const sq_qtype_traits table[SQ_QT_COUNT] = {
    [SQ_QT_F32] = {.name = "fp32", .label = "fp32", .bits = 32, .block = 0, .executable = true},
    [SQ_QT_S8] = {.name = "int8",
                  .label = "int8",
                  .bits = 8,
                  .block = 0,
                  .executable = true,
                  .acc = SQ_ACC_S32,
                  .gemm = sq_gemm_s8_fused,
                  .act_zero = true,
                  .qmax = 127,
                  .k_align = SQ_PANEL_K,
                  .cdtype = SQ_CDT_S8_PANEL,
                  .packed_size = sq_packed_size_s8,
                  .pack_panel = sq_pack_panel_s8,
                  .get = sq_panel_get_s8},
    [SQ_QT_S4G128] = {.name = "int4-g128",
                      .label = "int4",
                      .bits = 4,
                      .block = SQ_INT4_GROUP,
                      .executable = true,
                      .acc = SQ_ACC_F32,
                      .gemm = sq_gemm_s4_fused,
                      .act_zero = false,
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

int sq_qtype_from_cdtype(unsigned code)
{
    for (int qt = 0; qt < SQ_QT_COUNT; qt++)
        if (table[qt].packed_size && table[qt].cdtype == code)
            return qt;
    return -1;
}

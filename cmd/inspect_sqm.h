/* `squint inspect` on a model file (.sqm); the verify result it reports comes
 * from libquant/run/sqm_verify.h. */
#ifndef SQ_INSPECT_SQM_H
#define SQ_INSPECT_SQM_H

#include <stdbool.h>

#include "container.h"
#include "sq_error.h"

/* `squint inspect FILE.sqm [--json] [--tensors]`: header, metadata summary,
 * bytes per qtype, per-layer linears and the verify result. Returns an exit
 * code (SQ_EXIT_FAIL when the file is damaged, after printing the rest). */
int inspect_sqm(const char *path, bool json, bool list_tensors);

#endif

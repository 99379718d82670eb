/* Where the installed data lives (the bundled calibration corpus, the
 * shipped recipes): found at run time next to the executable, so an
 * installation can be moved and a build tree needs no absolute paths.
 *
 * A file NAME is looked up, first hit wins, in:
 *   1. $SQUINT_DATA/NAME                    (an override)
 *   2. EXE_DIR/SQ_REL_DATADIR/NAME          (installed: bin/../share/squint)
 *   3. EXE_DIR/calib/data/NAME              (the build tree: meson copies it there)
 * EXE_DIR is the directory of /proc/self/exe. */
#ifndef SQ_DATA_DIR_H
#define SQ_DATA_DIR_H

#include <stdbool.h>
#include <stddef.h>

#include "sq_error.h"

/* Fill out[cap] with the path of NAME; 0, or -1 with err listing every
 * place looked at. */
int sq_data_file(const char *name, char *out, size_t cap, sq_err *err);

/* The bundled calibration corpus: $SQUINT_BUNDLED_CORPUS (a file), else
 * sq_data_file("qasper-calib.jsonl.zst"); with pairs, the query/document
 * pair corpus: $SQUINT_BUNDLED_PAIR_CORPUS, else "qasper-pairs.jsonl.zst".
 * Returns buf, or NULL when it is nowhere (calibration then says so when,
 * and only when, it needs it). */
const char *cli_bundled_corpus(bool pairs, char *buf, size_t cap);

#endif

/* Internal to heads/: what the JSON head file (head_file.c) and the
 * safetensors head file (head_safetensors.c) share. */
#ifndef SQ_HEAD_IO_H
#define SQ_HEAD_IO_H

#include <jansson.h>
#include <stdbool.h>

#include "head.h"

bool sq_head_ends_with(const char *s, const char *suf);

/* labels (a JSON array of h->classes strings, each a valid class name,
 * unique) into h->labels (h allocated with sq_head_alloc). Errors name path. */
int sq_head_labels_from_json(const char *path, const json_t *labels, sq_head *h, sq_err *err);

/* formats/HEAD.md, "safetensors": called by sq_head_read / sq_head_write. */
int sq_head_read_safetensors(const char *path, sq_head *h, sq_err *err);
int sq_head_write_safetensors(const char *path, const sq_head *h, const sq_head_provenance *p,
                              sq_err *err);

#endif

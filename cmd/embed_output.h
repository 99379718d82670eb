/* Writing embedding results: .jsonl, raw .f32 or .npy (chosen by the file
 * extension), token ids as JSONL, hidden states as .npy. Files are written
 * atomically; "-" is standard output (JSONL). */
#ifndef SQ_EMBED_OUTPUT_H
#define SQ_EMBED_OUTPUT_H

#include "embedder.h"

/* format: "jsonl", "npy", "f32", or NULL to choose by the file extension. */
int write_embeddings(const char *path, const char *format, const sq_embed_result *r, sq_err *err);
int write_tokens_jsonl(const char *path, const sq_embed_result *r, sq_err *err);
int write_hidden_npy(const char *path, const sq_embed_result *r, sq_err *err);

#endif

/* Reader for TensorFlow.js graph models: a directory holding model.json
 * ("modelTopology", a TF GraphDef as JSON, and "weightsManifest", groups of
 * shard files whose concatenation holds the weights back to back) plus the
 * shard files. Only unquantized float32 and int32 weights are supported.
 *
 * All weights are copied into one allocation, each tensor 64-byte aligned;
 * the parsed JSON is kept for graph queries. */
#ifndef SQ_TFJS_MODEL_H
#define SQ_TFJS_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sq_error.h"

#define SQ_TFJS_MAX_DIMS 8
/* Total weight bytes accepted (sum over all tensors, padding excluded). */
#define SQ_TFJS_MAX_BYTES (4ull << 30)
#define SQ_TFJS_MAX_TENSORS (1 << 20)
#define SQ_TFJS_MAX_FILES 65536
#define SQ_TFJS_ALIGN 64
/* Member added by sq_tfjs_open to every node: the array of its input names
 * with any leading '^' and ":N" suffix removed (see sq_tfjs_node_input). */
#define SQ_TFJS_INPUTS_KEY "squint:inputs"

typedef enum { SQ_TFJS_F32 = 0, SQ_TFJS_I32 = 1 } sq_tfjs_dtype;

typedef struct sq_tfjs_tensor {
    const char *name; /* borrowed from the JSON tree */
    sq_tfjs_dtype dtype;
    int ndim;
    int64_t shape[SQ_TFJS_MAX_DIMS];
    int64_t numel;
    const void *data; /* 64-byte aligned, inside the model buffer */
} sq_tfjs_tensor;

typedef struct sq_tfjs_model {
    char *dir;
    char *json_path;
    json_t *root;         /* jansson, kept for graph queries */
    const json_t *nodes;  /* modelTopology.node array */
    sq_tfjs_tensor *tensors; /* manifest order */
    int n_tensors;
    void *buf;
    size_t buf_size;
    char **files; /* every file read, relative to dir: model.json then the shards in order */
    int n_files;
    /* private: lookup indexes sorted by name */
    int *tensor_order;
    const json_t **node_order;
    int n_nodes;
} sq_tfjs_model;

/* dir is a directory holding model.json. 0, or -1 with err (m is then zeroed). */
int sq_tfjs_open(const char *dir, sq_tfjs_model *m, sq_err *err);
/* model.json exists, is a regular file within SQ_JSON_MAX_FILE, and mentions
 * both "weightsManifest" and "modelTopology"; when it parses as JSON both must
 * be top-level keys. A model.json that does not parse still counts, so that
 * sq_tfjs_open reports the exact JSON error. */
bool sq_tfjs_is_model_dir(const char *dir);
void sq_tfjs_close(sq_tfjs_model *m);

const char *sq_tfjs_dtype_name(sq_tfjs_dtype dt);
const sq_tfjs_tensor *sq_tfjs_find(const sq_tfjs_model *m, const char *name);
/* Fetch a tensor by exact name requiring dtype and shape: ndim (-1 = any
 * shape, want ignored) and want[ndim] (-1 entries = any; want may be NULL to
 * check only ndim). The error names model.json, the tensor, the expected and
 * the actual shape. */
const sq_tfjs_tensor *sq_tfjs_get(const sq_tfjs_model *m, const char *name, sq_tfjs_dtype dt,
                                  int ndim, const int64_t *want, sq_err *err);
/* Scalar constants: a weight with exactly one element (shape [], [1], ...). */
int sq_tfjs_scalar_f32(const sq_tfjs_model *m, const char *name, double *out, sq_err *err);
int sq_tfjs_scalar_i32(const sq_tfjs_model *m, const char *name, int64_t *out, sq_err *err);

/* Graph queries over modelTopology.node (names and ops are validated by open). */
const json_t *sq_tfjs_node(const sq_tfjs_model *m, const char *name); /* by exact name */
int sq_tfjs_count_op(const sq_tfjs_model *m, const char *op);
const char *sq_tfjs_node_op(const json_t *node);
int sq_tfjs_node_n_inputs(const json_t *node);
/* The i-th input name of a node (without a ":N" suffix or leading '^'), NULL
 * if absent. Only for nodes of a model opened by sq_tfjs_open. */
const char *sq_tfjs_node_input(const json_t *node, int i);
/* The output index N of the i-th input ("x:N"; 0 without a suffix), -1 for a
 * control input ('^x') or when absent. */
int sq_tfjs_node_input_port(const json_t *node, int i);

#endif

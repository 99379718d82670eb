#include "tfjs_model.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "json_util.h"

#define MAX_NODES (1 << 22)
#define MAX_NAME 4096

/* One weightsManifest group while loading. */
typedef struct group_info {
    int first_file, n_files; /* into m->files */
    int first_tensor, n_tensors;
    uint64_t need;           /* bytes the weights need */
} group_info;

typedef struct loader {
    sq_tfjs_model *m;
    group_info *groups;
    size_t n_groups;
    uint64_t *offset;  /* per tensor: byte offset inside m->buf */
    uint64_t *nbytes;  /* per tensor */
    uint64_t *fsize;   /* per file (index into m->files) */
} loader;

const char *sq_tfjs_dtype_name(sq_tfjs_dtype dt)
{
    return dt == SQ_TFJS_F32 ? "float32" : dt == SQ_TFJS_I32 ? "int32" : "?";
}

/* A jansson string usable as a C string: no embedded NUL, bounded length. */
static bool clean_string(const json_t *v)
{
    if (!json_is_string(v))
        return false;
    size_t n = json_string_length(v);
    return n > 0 && n <= MAX_NAME && strlen(json_string_value(v)) == n;
}

/* Read exactly n bytes; a short read means the file shrank since it was sized. */
static int read_full(int fd, void *dst, size_t n, const char *path, sq_err *err)
{
    uint8_t *p = dst;
    while (n > 0) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : n;
        ssize_t r = read(fd, p, chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return sq_err_set(err, "%s: read error: %s", path, strerror(errno));
        if (r == 0)
            return sq_err_set(err, "%s: file shrank while being read", path);
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Whole regular file into a NUL-terminated heap buffer, at most max bytes. */
static int slurp(const char *path, size_t max, char **out, size_t *len, sq_err *err)
{
    uint64_t size;
    int fd = sq_open_regular(path, &size, err);
    if (fd < 0)
        return -1;
    if (size > max) {
        close(fd);
        return sq_err_set(err, "%s: file is %llu bytes, over the %zu-byte limit", path,
                          (unsigned long long)size, max);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        close(fd);
        return sq_err_set(err, "%s: out of memory", path);
    }
    if (read_full(fd, buf, (size_t)size, path, err) != 0) {
        free(buf);
        close(fd);
        return -1;
    }
    close(fd);
    buf[size] = '\0';
    *out = buf;
    *len = (size_t)size;
    return 0;
}

/* ---- graph ---- */

/* Names sorted with their original index, for the lookup tables. */
typedef struct name_idx {
    const char *name;
    int idx;
} name_idx;

static int cmp_name_idx(const void *a, const void *b)
{
    return strcmp(((const name_idx *)a)->name, ((const name_idx *)b)->name);
}

/* Strip '^' and a ":N" suffix; *port = N, 0, or -1 for a control input. */
static int split_input(const char *s, size_t *name_len, long *port)
{
    *port = 0;
    if (*s == '^') {
        *port = -1;
        s++;
    }
    size_t n = strlen(s);
    const char *colon = strrchr(s, ':');
    if (colon && colon[1]) {
        size_t digits = strspn(colon + 1, "0123456789");
        if (colon[1 + digits] == '\0') {
            if (digits > 9)
                return -1;
            if (*port == 0)
                *port = strtol(colon + 1, NULL, 10);
            n = (size_t)(colon - s);
        }
    }
    *name_len = n;
    return n > 0 ? 0 : -1;
}

/* Validate one node and attach its normalized input names. */
static int parse_node(const sq_tfjs_model *m, size_t i, json_t *node, sq_err *err)
{
    const char *p = m->json_path;
    if (!json_is_object(node))
        return sq_err_set(err, "%s: modelTopology.node[%zu] is not an object", p, i);
    if (!clean_string(json_object_get(node, "name")))
        return sq_err_set(err, "%s: modelTopology.node[%zu]: \"name\" is missing or not a "
                               "non-empty string (at most %d bytes)", p, i, MAX_NAME);
    const char *name = json_string_value(json_object_get(node, "name"));
    if (!clean_string(json_object_get(node, "op")))
        return sq_err_set(err, "%s: node \"%s\": \"op\" is missing or not a non-empty string (at "
                               "most %d bytes)", p, name, MAX_NAME);
    json_t *attr = json_object_get(node, "attr");
    if (attr && !json_is_object(attr))
        return sq_err_set(err, "%s: node \"%s\": \"attr\" is not an object", p, name);
    json_t *in = json_object_get(node, "input");
    if (in && !json_is_array(in))
        return sq_err_set(err, "%s: node \"%s\": \"input\" is not an array", p, name);
    json_t *norm = json_array();
    if (!norm)
        return sq_err_set(err, "%s: out of memory", p);
    for (size_t k = 0; k < json_array_size(in); k++) {
        json_t *v = json_array_get(in, k);
        size_t len;
        long port;
        if (!clean_string(v) || split_input(json_string_value(v), &len, &port) != 0) {
            json_decref(norm);
            return sq_err_set(err, "%s: node \"%s\": input[%zu] is not a valid tensor name", p,
                              name, k);
        }
        const char *s = json_string_value(v);
        if (json_array_append_new(norm, json_stringn(s + (port < 0), len)) != 0) {
            json_decref(norm);
            return sq_err_set(err, "%s: out of memory", p);
        }
    }
    if (json_object_set_new(node, SQ_TFJS_INPUTS_KEY, norm) != 0)
        return sq_err_set(err, "%s: out of memory", p);
    return 0;
}

static int parse_topology(sq_tfjs_model *m, sq_err *err)
{
    const char *p = m->json_path;
    json_t *topo = json_object_get(m->root, "modelTopology");
    if (!topo)
        return sq_err_set(err, "%s: missing \"modelTopology\" (not a TensorFlow.js model?)", p);
    if (!json_is_object(topo))
        return sq_err_set(err, "%s: \"modelTopology\" is not an object", p);
    json_t *nodes = json_object_get(topo, "node");
    if (!nodes) {
        const char *fmt = json_string_value(json_object_get(m->root, "format"));
        if ((fmt && strcmp(fmt, "layers-model") == 0) || json_object_get(topo, "model_config"))
            return sq_err_set(err, "%s: a TensorFlow.js layers model; only graph models "
                                   "(modelTopology.node) are supported", p);
        return sq_err_set(err, "%s: missing \"modelTopology.node\"", p);
    }
    if (!json_is_array(nodes))
        return sq_err_set(err, "%s: \"modelTopology.node\" is not an array", p);
    size_t n = json_array_size(nodes);
    if (n > MAX_NODES)
        return sq_err_set(err, "%s: %zu graph nodes (limit %d)", p, n, MAX_NODES);
    for (size_t i = 0; i < n; i++)
        if (parse_node(m, i, json_array_get(nodes, i), err) != 0)
            return -1;
    /* Sorted by name for sq_tfjs_node; GraphDef node names are unique. */
    m->node_order = malloc((n ? n : 1) * sizeof *m->node_order);
    name_idx *v = malloc((n ? n : 1) * sizeof *v);
    if (!m->node_order || !v) {
        free(v);
        return sq_err_set(err, "%s: out of memory", p);
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (name_idx){json_string_value(json_object_get(json_array_get(nodes, i), "name")),
                          (int)i};
    qsort(v, n, sizeof *v, cmp_name_idx);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(v[i - 1].name, v[i].name) == 0) {
            sq_err_set(err, "%s: two graph nodes are named \"%s\"", p, v[i].name);
            free(v);
            return -1;
        }
        m->node_order[i] = json_array_get(nodes, (size_t)v[i].idx);
    }
    free(v);
    m->nodes = nodes;
    m->n_nodes = (int)n;
    return 0;
}

/* ---- manifest ---- */

/* A shard path must name a file directly inside the model directory. */
static bool plain_file_name(const json_t *v)
{
    if (!clean_string(v))
        return false;
    const char *s = json_string_value(v);
    return strlen(s) <= 255 && !strchr(s, '/') && !strchr(s, '\\') && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

static int parse_weight(loader *L, size_t g, size_t k, json_t *w, int ti, sq_err *err)
{
    sq_tfjs_model *m = L->m;
    const char *p = m->json_path;
    sq_tfjs_tensor *t = &m->tensors[ti];
    if (!json_is_object(w))
        return sq_err_set(err, "%s: weightsManifest[%zu].weights[%zu] is not an object", p, g, k);
    if (!clean_string(json_object_get(w, "name")))
        return sq_err_set(err, "%s: weightsManifest[%zu].weights[%zu]: \"name\" is missing or not "
                               "a non-empty string (at most %d bytes)", p, g, k, MAX_NAME);
    t->name = json_string_value(json_object_get(w, "name"));
    if (json_object_get(w, "quantization"))
        return sq_err_set(err, "%s: weight \"%s\" is quantized (\"quantization\" entry); only "
                               "unquantized float32 and int32 weights are supported", p, t->name);
    const char *dt = json_string_value(json_object_get(w, "dtype"));
    if (!dt)
        return sq_err_set(err, "%s: weight \"%s\": \"dtype\" is missing or not a string", p,
                          t->name);
    if (strcmp(dt, "float32") == 0)
        t->dtype = SQ_TFJS_F32;
    else if (strcmp(dt, "int32") == 0)
        t->dtype = SQ_TFJS_I32;
    else
        return sq_err_set(err, "%s: weight \"%s\": unsupported dtype \"%s\" (only float32 and "
                               "int32)", p, t->name, dt);
    json_t *js = json_object_get(w, "shape");
    if (!json_is_array(js))
        return sq_err_set(err, "%s: weight \"%s\": \"shape\" is missing or not an array", p,
                          t->name);
    size_t nd = json_array_size(js);
    if (nd > SQ_TFJS_MAX_DIMS)
        return sq_err_set(err, "%s: weight \"%s\": %zu dimensions (at most %d supported)", p,
                          t->name, nd, SQ_TFJS_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(js, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return sq_err_set(err, "%s: weight \"%s\": shape[%zu] is not a non-negative integer",
                              p, t->name, i);
        uint64_t di = (uint64_t)json_integer_value(d);
        t->shape[i] = (int64_t)di;
        if (di != 0 && numel > UINT64_MAX / di)
            return sq_err_set(err, "%s: weight \"%s\": element count of the shape overflows 64 bits",
                              p, t->name);
        numel *= di;
    }
    if (numel > SQ_TFJS_MAX_BYTES / 4)
        return sq_err_set(err, "%s: weight \"%s\": %llu elements exceed the %llu-byte limit", p,
                          t->name, (unsigned long long)numel,
                          (unsigned long long)SQ_TFJS_MAX_BYTES);
    t->numel = (int64_t)numel;
    L->nbytes[ti] = numel * 4;
    L->groups[g].need += numel * 4;
    if (L->groups[g].need > SQ_TFJS_MAX_BYTES)
        return sq_err_set(err, "%s: weightsManifest[%zu]: the weights need more than the %llu-byte "
                               "limit", p, g, (unsigned long long)SQ_TFJS_MAX_BYTES);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fill m->tensors, m->files and the per-group info from the manifest. */
static int parse_manifest(loader *L, sq_err *err)
{
    sq_tfjs_model *m = L->m;
    const char *p = m->json_path;
    json_t *man = json_object_get(m->root, "weightsManifest");
    if (!man)
        return sq_err_set(err, "%s: missing \"weightsManifest\" (not a TensorFlow.js model?)", p);
    if (!json_is_array(man) || json_array_size(man) == 0)
        return sq_err_set(err, "%s: \"weightsManifest\" is not a non-empty array", p);
    size_t ng = json_array_size(man), nt = 0, nf = 1;
    for (size_t g = 0; g < ng; g++) {
        json_t *grp = json_array_get(man, g);
        if (!json_is_object(grp))
            return sq_err_set(err, "%s: weightsManifest[%zu] is not an object", p, g);
        json_t *paths = json_object_get(grp, "paths"), *ws = json_object_get(grp, "weights");
        if (!json_is_array(paths))
            return sq_err_set(err, "%s: weightsManifest[%zu]: \"paths\" is missing or not an array",
                              p, g);
        if (!json_is_array(ws))
            return sq_err_set(err, "%s: weightsManifest[%zu]: \"weights\" is missing or not an "
                                   "array", p, g);
        nt += json_array_size(ws);
        nf += json_array_size(paths);
        if (nt > SQ_TFJS_MAX_TENSORS)
            return sq_err_set(err, "%s: more than %d weights", p, SQ_TFJS_MAX_TENSORS);
        if (nf > SQ_TFJS_MAX_FILES)
            return sq_err_set(err, "%s: more than %d shard files", p, SQ_TFJS_MAX_FILES);
    }
    L->n_groups = ng;
    L->groups = calloc(ng, sizeof *L->groups);
    m->tensors = calloc(nt ? nt : 1, sizeof *m->tensors);
    L->nbytes = calloc(nt ? nt : 1, sizeof *L->nbytes);
    L->offset = calloc(nt ? nt : 1, sizeof *L->offset);
    m->tensor_order = calloc(nt ? nt : 1, sizeof *m->tensor_order);
    m->files = calloc(nf, sizeof *m->files);
    L->fsize = calloc(nf, sizeof *L->fsize);
    if (!L->groups || !m->tensors || !L->nbytes || !L->offset || !m->tensor_order || !m->files ||
        !L->fsize)
        return sq_err_set(err, "%s: out of memory", p);
    uint64_t total = 0;
    if (!(m->files[m->n_files++] = strdup("model.json")))
        return sq_err_set(err, "%s: out of memory", p);
    for (size_t g = 0; g < ng; g++) {
        json_t *grp = json_array_get(man, g);
        json_t *paths = json_object_get(grp, "paths"), *ws = json_object_get(grp, "weights");
        group_info *gi = &L->groups[g];
        gi->first_file = m->n_files;
        gi->first_tensor = m->n_tensors;
        for (size_t k = 0; k < json_array_size(paths); k++) {
            json_t *v = json_array_get(paths, k);
            if (!plain_file_name(v))
                return sq_err_set(err, "%s: weightsManifest[%zu].paths[%zu] (%s%.200s%s) is not a "
                                       "plain file name inside the model directory", p, g, k,
                                  json_is_string(v) ? "\"" : "", json_is_string(v) ?
                                  json_string_value(v) : "not a string", json_is_string(v) ? "\"" : "");
            if (!(m->files[m->n_files++] = strdup(json_string_value(v))))
                return sq_err_set(err, "%s: out of memory", p);
        }
        gi->n_files = m->n_files - gi->first_file;
        for (size_t k = 0; k < json_array_size(ws); k++) {
            if (parse_weight(L, g, k, json_array_get(ws, k), m->n_tensors, err) != 0)
                return -1;
            m->n_tensors++;
        }
        gi->n_tensors = m->n_tensors - gi->first_tensor;
        total += gi->need;
        if (total > SQ_TFJS_MAX_BYTES)
            return sq_err_set(err, "%s: the weights need more than the %llu-byte limit", p,
                              (unsigned long long)SQ_TFJS_MAX_BYTES);
    }
    /* A file listed twice (or a shard called model.json) is a broken manifest. */
    char **sorted = malloc((size_t)m->n_files * sizeof *sorted);
    if (!sorted)
        return sq_err_set(err, "%s: out of memory", p);
    memcpy(sorted, m->files, (size_t)m->n_files * sizeof *sorted);
    qsort(sorted, (size_t)m->n_files, sizeof *sorted, cmp_str);
    for (int i = 1; i < m->n_files; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            sq_err_set(err, "%s: file \"%s\" is listed more than once", p, sorted[i]);
            free(sorted);
            return -1;
        }
    free(sorted);
    return 0;
}

/* Sorted index for sq_tfjs_find; refuses duplicate names (across groups too). */
static int index_tensors(sq_tfjs_model *m, sq_err *err)
{
    int n = m->n_tensors;
    name_idx *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        return sq_err_set(err, "%s: out of memory", m->json_path);
    for (int i = 0; i < n; i++)
        v[i] = (name_idx){m->tensors[i].name, i};
    qsort(v, (size_t)n, sizeof *v, cmp_name_idx);
    for (int i = 0; i < n; i++) {
        if (i > 0 && strcmp(v[i - 1].name, v[i].name) == 0) {
            sq_err_set(err, "%s: two weights are named \"%s\"", m->json_path, v[i].name);
            free(v);
            return -1;
        }
        m->tensor_order[i] = v[i].idx;
    }
    free(v);
    return 0;
}

/* ---- shards ---- */

/* "shard files "a" .. "b" hold" and the like, for the size mismatch message. */
static void describe_files(const sq_tfjs_model *m, const group_info *gi, char *out, size_t cap)
{
    if (gi->n_files == 0)
        snprintf(out, cap, "it lists no shard files, which hold");
    else if (gi->n_files == 1)
        snprintf(out, cap, "shard file \"%s\" holds", m->files[gi->first_file]);
    else
        snprintf(out, cap, "shard files \"%s\" .. \"%s\" hold", m->files[gi->first_file],
                 m->files[gi->first_file + gi->n_files - 1]);
}

/* Size every shard and check each group's shards hold exactly its weights
 * (parse_manifest already bounded the total the weights need). */
static int size_shards(loader *L, sq_err *err)
{
    sq_tfjs_model *m = L->m;
    for (size_t g = 0; g < L->n_groups; g++) {
        group_info *gi = &L->groups[g];
        uint64_t have = 0;
        for (int f = gi->first_file; f < gi->first_file + gi->n_files; f++) {
            char *path = sq_path_join(m->dir, m->files[f]);
            if (!path)
                return sq_err_set(err, "%s: out of memory", m->json_path);
            uint64_t sz = 0;
            int fd = sq_open_regular(path, &sz, err);
            free(path);
            if (fd < 0)
                return sq_err_prefix(err, "%s: weightsManifest[%zu] shard", m->json_path, g);
            close(fd);
            L->fsize[f] = sz;
            if (sz > SQ_TFJS_MAX_BYTES || have + sz > SQ_TFJS_MAX_BYTES)
                return sq_err_set(err, "%s/%s: shard data beyond the %llu-byte limit", m->dir,
                                  m->files[f], (unsigned long long)SQ_TFJS_MAX_BYTES);
            have += sz;
        }
        if (have != gi->need) {
            char files[600];
            describe_files(m, gi, files, sizeof files);
            return sq_err_set(err, "%s: weightsManifest[%zu]: %s %llu bytes but its %d "
                                   "weights need %llu bytes (%s)", m->json_path, g, files,
                              (unsigned long long)have, gi->n_tensors,
                              (unsigned long long)gi->need,
                              have < gi->need ? "truncated or missing shard data"
                                              : "extra bytes after the last weight");
        }
    }
    return 0;
}

/* Sequential reader over the concatenated shards of one group. */
typedef struct shard_stream {
    const loader *L;
    const group_info *gi;
    int next; /* next file to open, relative to gi->first_file */
    int fd;
    uint64_t left;
    char *path;
} shard_stream;

static void stream_close(shard_stream *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->path);
    s->path = NULL;
}

static int stream_read(shard_stream *s, uint8_t *dst, uint64_t n, sq_err *err)
{
    const sq_tfjs_model *m = s->L->m;
    while (n > 0) {
        if (s->left == 0) {
            stream_close(s);
            if (s->next >= s->gi->n_files)
                return sq_err_set(err, "%s: shard files changed while being read", m->json_path);
            int f = s->gi->first_file + s->next++;
            s->path = sq_path_join(m->dir, m->files[f]);
            if (!s->path)
                return sq_err_set(err, "%s: out of memory", m->json_path);
            uint64_t sz = 0;
            s->fd = sq_open_regular(s->path, &sz, err);
            if (s->fd < 0)
                return -1;
            if (sz != s->L->fsize[f])
                return sq_err_set(err, "%s: file changed size while being read", s->path);
            s->left = sz;
            continue;
        }
        uint64_t chunk = n < s->left ? n : s->left;
        if (read_full(s->fd, dst, (size_t)chunk, s->path, err) != 0)
            return -1;
        dst += chunk;
        n -= chunk;
        s->left -= chunk;
    }
    return 0;
}

static int check_finite(const sq_tfjs_model *m, const sq_tfjs_tensor *t, sq_err *err)
{
    const float *f = t->data;
    for (int64_t i = 0; i < t->numel; i++)
        if (!isfinite(f[i]))
            return sq_err_set(err, "%s: weight \"%s\" holds a non-finite value (%g) at element %lld",
                              m->json_path, t->name, (double)f[i], (long long)i);
    return 0;
}

/* Shard bytes are little-endian. */
static void to_host_order(const sq_tfjs_tensor *t)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint32_t *w = (uint32_t *)t->data;
    for (int64_t i = 0; i < t->numel; i++)
        w[i] = __builtin_bswap32(w[i]);
#else
    (void)t;
#endif
}

/* One allocation for all weights, each tensor 64-byte aligned, then copy. */
static int load_weights(loader *L, sq_err *err)
{
    sq_tfjs_model *m = L->m;
    uint64_t cursor = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        L->offset[i] = cursor;
        cursor += (L->nbytes[i] + SQ_TFJS_ALIGN - 1) / SQ_TFJS_ALIGN * SQ_TFJS_ALIGN;
    }
    if (cursor == 0)
        cursor = SQ_TFJS_ALIGN; /* keep data pointers non-NULL */
    if (cursor > SIZE_MAX)
        return sq_err_set(err, "%s: weights do not fit in memory", m->json_path);
    m->buf = aligned_alloc(SQ_TFJS_ALIGN, (size_t)cursor);
    if (!m->buf)
        return sq_err_set(err, "%s: out of memory (%llu bytes of weights)", m->json_path,
                          (unsigned long long)cursor);
    m->buf_size = (size_t)cursor;
    uint8_t *base = m->buf;
    memset(base, 0, SQ_TFJS_ALIGN); /* the whole buffer when every tensor is empty */
    for (size_t g = 0; g < L->n_groups; g++) {
        const group_info *gi = &L->groups[g];
        shard_stream s = {.L = L, .gi = gi, .fd = -1};
        for (int i = gi->first_tensor; i < gi->first_tensor + gi->n_tensors; i++) {
            sq_tfjs_tensor *t = &m->tensors[i];
            t->data = base + L->offset[i];
            uint64_t pad = (SQ_TFJS_ALIGN - L->nbytes[i] % SQ_TFJS_ALIGN) % SQ_TFJS_ALIGN;
            memset(base + L->offset[i] + L->nbytes[i], 0, (size_t)pad);
            if (stream_read(&s, base + L->offset[i], L->nbytes[i], err) != 0) {
                stream_close(&s);
                return -1;
            }
            to_host_order(t);
            if (t->dtype == SQ_TFJS_F32 && check_finite(m, t, err) != 0) {
                stream_close(&s);
                return -1;
            }
        }
        stream_close(&s);
    }
    return 0;
}

/* ---- open / close ---- */

int sq_tfjs_open(const char *dir, sq_tfjs_model *m, sq_err *err)
{
    memset(m, 0, sizeof *m);
    loader L = {.m = m};
    char *text = NULL;
    size_t len = 0;
    m->dir = strdup(dir);
    m->json_path = sq_path_join(dir, "model.json");
    if (!m->dir || !m->json_path) {
        sq_err_set(err, "%s: out of memory", dir);
        goto fail;
    }
    if (!sq_dir_exists(dir)) {
        sq_err_set(err, "%s: not a directory (expected a TensorFlow.js model directory)", dir);
        goto fail;
    }
    if (slurp(m->json_path, SQ_JSON_MAX_FILE, &text, &len, err) != 0)
        goto fail;
    m->root = sq_json_parse_object(text, len, m->json_path, err);
    free(text);
    if (!m->root || parse_topology(m, err) != 0 || parse_manifest(&L, err) != 0 ||
        index_tensors(m, err) != 0 || size_shards(&L, err) != 0 || load_weights(&L, err) != 0)
        goto fail;
    free(L.groups);
    free(L.offset);
    free(L.nbytes);
    free(L.fsize);
    return 0;
fail:
    free(L.groups);
    free(L.offset);
    free(L.nbytes);
    free(L.fsize);
    sq_tfjs_close(m);
    return -1;
}

void sq_tfjs_close(sq_tfjs_model *m)
{
    if (!m)
        return;
    json_decref(m->root);
    free(m->tensors);
    free(m->tensor_order);
    free(m->node_order);
    free(m->buf);
    for (int i = 0; i < m->n_files; i++)
        free(m->files[i]);
    free(m->files);
    free(m->dir);
    free(m->json_path);
    memset(m, 0, sizeof *m);
}

bool sq_tfjs_is_model_dir(const char *dir)
{
    char *path = sq_path_join(dir, "model.json");
    if (!path)
        return false;
    char *text = NULL;
    size_t len = 0;
    sq_err err;
    int rc = slurp(path, SQ_JSON_MAX_FILE, &text, &len, &err);
    free(path);
    if (rc != 0)
        return false;
    bool yes = strstr(text, "\"weightsManifest\"") && strstr(text, "\"modelTopology\"");
    if (yes) {
        json_t *root = json_loadb(text, len, SQ_JSON_FLAGS, NULL);
        if (root)
            yes = json_object_get(root, "weightsManifest") && json_object_get(root, "modelTopology");
        json_decref(root);
    }
    free(text);
    return yes;
}

/* ---- queries ---- */

const sq_tfjs_tensor *sq_tfjs_find(const sq_tfjs_model *m, const char *name)
{
    int lo = 0, hi = m->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const sq_tfjs_tensor *t = &m->tensors[m->tensor_order[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

static void format_shape(char *out, size_t cap, int ndim, const int64_t *dims)
{
    size_t k = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++) {
        if (dims && dims[i] >= 0)
            k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
        else
            k += (size_t)snprintf(out + k, cap - k, "%s*", i ? ", " : "");
    }
    if (k < cap)
        snprintf(out + k, cap - k, "]");
}

const sq_tfjs_tensor *sq_tfjs_get(const sq_tfjs_model *m, const char *name, sq_tfjs_dtype dt,
                                  int ndim, const int64_t *want, sq_err *err)
{
    const sq_tfjs_tensor *t = sq_tfjs_find(m, name);
    if (!t) {
        sq_err_set(err, "%s: no weight named \"%s\"", m->json_path, name);
        return NULL;
    }
    if (t->dtype != dt) {
        sq_err_set(err, "%s: weight \"%s\" is %s, expected %s", m->json_path, name,
                   sq_tfjs_dtype_name(t->dtype), sq_tfjs_dtype_name(dt));
        return NULL;
    }
    if (ndim < 0)
        return t;
    bool ok = t->ndim == ndim;
    for (int i = 0; ok && want && i < ndim; i++)
        ok = want[i] < 0 || want[i] == t->shape[i];
    if (!ok) {
        char exp[200], got[200];
        if (ndim > SQ_TFJS_MAX_DIMS)
            snprintf(exp, sizeof exp, "%d dimensions", ndim);
        else
            format_shape(exp, sizeof exp, ndim, want);
        format_shape(got, sizeof got, t->ndim, t->shape);
        sq_err_set(err, "%s: weight \"%s\" has shape %s, expected %s", m->json_path, name, got,
                   exp);
        return NULL;
    }
    return t;
}

static const sq_tfjs_tensor *get_scalar(const sq_tfjs_model *m, const char *name,
                                        sq_tfjs_dtype dt, sq_err *err)
{
    const sq_tfjs_tensor *t = sq_tfjs_get(m, name, dt, -1, NULL, err);
    if (t && t->numel != 1) {
        char got[200];
        format_shape(got, sizeof got, t->ndim, t->shape);
        sq_err_set(err, "%s: weight \"%s\" has shape %s, expected a scalar (one element)",
                   m->json_path, name, got);
        return NULL;
    }
    return t;
}

int sq_tfjs_scalar_f32(const sq_tfjs_model *m, const char *name, double *out, sq_err *err)
{
    const sq_tfjs_tensor *t = get_scalar(m, name, SQ_TFJS_F32, err);
    if (!t)
        return -1;
    *out = *(const float *)t->data;
    return 0;
}

int sq_tfjs_scalar_i32(const sq_tfjs_model *m, const char *name, int64_t *out, sq_err *err)
{
    const sq_tfjs_tensor *t = get_scalar(m, name, SQ_TFJS_I32, err);
    if (!t)
        return -1;
    *out = *(const int32_t *)t->data;
    return 0;
}

const json_t *sq_tfjs_node(const sq_tfjs_model *m, const char *name)
{
    int lo = 0, hi = m->n_nodes - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, json_string_value(json_object_get(m->node_order[mid], "name")));
        if (c == 0)
            return m->node_order[mid];
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return NULL;
}

int sq_tfjs_count_op(const sq_tfjs_model *m, const char *op)
{
    int n = 0;
    for (int i = 0; i < m->n_nodes; i++)
        n += strcmp(json_string_value(json_object_get(m->node_order[i], "op")), op) == 0;
    return n;
}

const char *sq_tfjs_node_op(const json_t *node)
{
    return json_string_value(json_object_get(node, "op"));
}

int sq_tfjs_node_n_inputs(const json_t *node)
{
    return (int)json_array_size(json_object_get(node, SQ_TFJS_INPUTS_KEY));
}

const char *sq_tfjs_node_input(const json_t *node, int i)
{
    if (i < 0)
        return NULL;
    return json_string_value(json_array_get(json_object_get(node, SQ_TFJS_INPUTS_KEY), (size_t)i));
}

int sq_tfjs_node_input_port(const json_t *node, int i)
{
    if (i < 0)
        return -1;
    const char *s = json_string_value(json_array_get(json_object_get(node, "input"), (size_t)i));
    size_t len;
    long port;
    if (!s || split_input(s, &len, &port) != 0)
        return -1;
    return (int)port;
}

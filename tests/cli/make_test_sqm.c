/* make_test_sqm: writes a small .sqm-shaped container (formats/SQM.md) with
 * seeded random weights, for the CLI tests of verify, diff and inspect until
 * `squint quantize` can build real ones. Tensors follow SQM.md's names and
 * order; linears are packed int8 / int4 when the container knows the panel
 * dtypes, else stored f32 (with a note on stderr).
 *
 * usage: make_test_sqm OUT [--seed S] [--qtype f32|int8|int4] [--layers L]
 *                          [--perturb TENSOR] [--drop TENSOR] [--zstd] [--act-zero Z]
 * --perturb adds 0.25 to the first value of an f32 tensor; --drop leaves a
 * tensor out (an inconsistent model, for verify); --act-zero gives
 * layer.0.ffn_down an activation zero point Z (any int, for the range checks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "pack.h"
#include "qweight.h"
#include "sqm_model.h"
#include "sqm_schema.h"
#include "strbuf.h"

enum { H = 32, FFN = 64, VOCAB = 24, POS = 16, TYPES = 2, HEADS = 2 };

static uint64_t rng_state;

static float rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

static float *rnd_array(size_t n, float amp)
{
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; a && i < n; i++)
        a[i] = amp * rnd();
    return a;
}

/* Tensors are collected first so that --perturb can change one before writing. */
typedef struct tensor {
    char name[80];
    unsigned dtype;
    int ndim;
    uint64_t dims[2];
    void *data;
    uint64_t size;
} tensor;

static tensor tensors[256];
static int n_tensors;

static void add(const char *name, unsigned dtype, int ndim, uint64_t d0, uint64_t d1, void *data,
                uint64_t size)
{
    tensor *t = &tensors[n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->data = data;
    t->size = size;
}

static void add_f32(const char *name, int ndim, uint64_t d0, uint64_t d1, float *data)
{
    add(name, SQ_CDT_F32, ndim, d0, d1, data, d0 * (ndim > 1 ? d1 : 1) * sizeof(float));
}

/* True when the container can store this packed dtype for an [n][k] weight. */
static int container_knows(unsigned cdtype, int n, int k)
{
    uint64_t dims[2] = {(uint64_t)n, (uint64_t)k}, size;
    sq_err err;
    return sq_cdtype_size(cdtype, 2, dims, &size, &err) == 0;
}

/* Symmetric RTN of w [n][k] into q (int8 per channel, int4 per group of 128). */
static void quantize(const float *w, int n, int k, sq_qweight *q)
{
    const sq_qtype_traits *tr = sq_qtype_get(q->qtype);
    int groups = sq_qweight_groups(q), block = tr->block > 0 ? tr->block : k;
    int8_t *vals = calloc((size_t)n * k, 1);
    for (int r = 0; r < n; r++)
        for (int g = 0; g < groups; g++) {
            int k0 = g * block, k1 = k0 + block < k ? k0 + block : k;
            float amax = 0;
            for (int c = k0; c < k1; c++)
                amax = fmaxf(amax, fabsf(w[(size_t)r * k + c]));
            float s = amax > 0 ? amax / (float)tr->qmax : 1.0f;
            q->scale[(size_t)r * groups + g] = s;
            for (int c = k0; c < k1; c++)
                vals[(size_t)r * k + c] = (int8_t)lrintf(w[(size_t)r * k + c] / s);
        }
    sq_pack(q, vals);
    free(vals);
}

static const char *add_linear(const char *prefix, int n, int k, sq_qtype qt, int smooth)
{
    char name[80];
    float *w = rnd_array((size_t)n * k, 0.1f);
    const sq_qtype_traits *tr = sq_qtype_get(qt);
    if (qt != SQ_QT_F32 && !container_knows(tr->cdtype, n, k)) {
        fprintf(stderr, "make_test_sqm: the container has no size rule for %s yet: f32 weights\n",
                sq_cdtype_name(tr->cdtype));
        qt = SQ_QT_F32;
    }
    snprintf(name, sizeof name, "%s.weight", prefix);
    if (qt == SQ_QT_F32) {
        add_f32(name, 2, (uint64_t)n, (uint64_t)k, w);
    } else {
        sq_qweight q;
        sq_err err;
        if (sq_qweight_alloc(&q, qt, n, k, &err) != 0) {
            fprintf(stderr, "make_test_sqm: %s\n", err.msg);
            exit(2);
        }
        quantize(w, n, k, &q);
        free(w);
        int groups = sq_qweight_groups(&q), nd = qt == SQ_QT_S4G128 ? 2 : 1;
        add(name, tr->cdtype, 2, (uint64_t)n, (uint64_t)k, q.data, q.data_size);
        snprintf(name, sizeof name, "%s.scale", prefix);
        add_f32(name, nd, (uint64_t)n, (uint64_t)groups, q.scale);
        snprintf(name, sizeof name, "%s.wsum", prefix);
        add(name, SQ_CDT_I32, nd, (uint64_t)q.n_pad, (uint64_t)groups, q.wsum,
            (uint64_t)q.n_pad * groups * sizeof(int32_t));
    }
    snprintf(name, sizeof name, "%s.bias", prefix);
    add_f32(name, 1, (uint64_t)n, 0, rnd_array((size_t)n, 0.05f));
    if (qt != SQ_QT_F32 && smooth) {
        float *s = rnd_array((size_t)k, 0.5f);
        for (int i = 0; i < k; i++)
            s[i] += 1.0f;
        snprintf(name, sizeof name, "%s.smooth", prefix);
        add_f32(name, 1, (uint64_t)k, 0, s);
    }
    if (qt != SQ_QT_F32) {
        float *a = malloc(sizeof *a);
        *a = 4.0f / 127;
        snprintf(name, sizeof name, "%s.act_scale", prefix);
        add_f32(name, 1, 1, 0, a);
    }
    return sq_qtype_get(qt)->name;
}

static void add_ln(const char *prefix)
{
    char name[80];
    float *g = rnd_array(H, 0.1f);
    for (int i = 0; i < H; i++)
        g[i] += 1.0f;
    snprintf(name, sizeof name, "%s.gamma", prefix);
    add_f32(name, 1, H, 0, g);
    snprintf(name, sizeof name, "%s.beta", prefix);
    add_f32(name, 1, H, 0, rnd_array(H, 0.05f));
}

static void add_embeddings(int int8)
{
    /* The vocabulary: "[PAD]", "[UNK]", ... then "tokN", each NUL-terminated. */
    static const char *special[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    char *v = malloc(VOCAB * 16);
    size_t len = 0;
    for (int i = 0; i < VOCAB; i++) /* snprintf writes each token's NUL terminator */
        len += (size_t)(i < 5 ? snprintf(v + len, 16, "%s", special[i])
                              : snprintf(v + len, 16, "tok%d", i)) + 1;
    add("tokenizer.vocab", SQ_CDT_U8, 1, len, 0, v, len);
    float *w = rnd_array((size_t)VOCAB * H, 0.2f);
    if (int8) {
        int8_t *q = malloc((size_t)VOCAB * H);
        float *s = malloc(VOCAB * sizeof *s);
        for (int r = 0; r < VOCAB; r++) {
            float amax = 0;
            for (int c = 0; c < H; c++)
                amax = fmaxf(amax, fabsf(w[r * H + c]));
            s[r] = amax / 127;
            for (int c = 0; c < H; c++)
                q[r * H + c] = (int8_t)lrintf(w[r * H + c] / s[r]);
        }
        free(w);
        add("embeddings.word", SQ_CDT_I8, 2, VOCAB, H, q, (uint64_t)VOCAB * H);
        add_f32("embeddings.word.scale", 1, VOCAB, 0, s);
    } else {
        add_f32("embeddings.word", 2, VOCAB, H, w);
    }
    add_f32("embeddings.position", 2, POS, H, rnd_array((size_t)POS * H, 0.1f));
    add_f32("embeddings.token_type", 2, TYPES, H, rnd_array((size_t)TYPES * H, 0.1f));
    add_ln("embeddings.ln");
}

static void metadata(sq_strbuf *m, int layers, const char *const *types, const char *emb_type)
{
    sq_sb_printf(m,
                  "format: squint-model\nformat_version: 1\ntool: \"make_test_sqm\"\n"
                  "architecture: bert\n"
                  "config: {vocab_size: %d, hidden: %d, layers: %d, heads: %d, ffn: %d, "
                  "max_positions: %d, type_vocab: %d, pad_token_id: 0, layer_norm_eps: 1e-12}\n"
                  "pooling: cls\nnormalize: true\nmax_seq: %d\nembeddings_type: %s\n"
                  "tokenizer:\n  type: wordpiece\n  vocab_size: %d\n  lowercase: true\n"
                  "  strip_accents: null\n  clean_text: true\n  handle_chinese_chars: true\n"
                  "  continuing_subword_prefix: \"##\"\n  max_input_chars_per_word: 100\n"
                  "  unk_id: 1\n  cls_id: 2\n  sep_id: 3\n  pad_id: 0\n  mask_id: 4\n"
                  "source:\n  path: \"test-model/\"\n  digest: \"0123456789abcdef\"\n"
                  "calibration:\n  digest: \"fedcba9876543210\"\n"
                  "  observer: {method: percentile, percentile: 99.99}\n"
                  "  corpus: [{name: test.jsonl, size: 100, xxh64: \"00000000000000aa\"}]\n"
                  "  samples: 16\n  seed: 0\n  max_seq: %d\n"
                  "recipe: |\n  model: test\n  weights: %s\n  smoothquant: {alpha: 0.5}\n"
                  "linears:\n",
                  VOCAB, H, layers, HEADS, FFN, POS, TYPES, POS, emb_type, VOCAB, POS, types[0]);
    static const char *kinds[4] = {"qkv", "attn_out", "ffn_up", "ffn_down"};
    static const int shape[4][2] = {{3 * H, H}, {H, H}, {FFN, H}, {H, FFN}};
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < 4; k++)
            sq_sb_printf(m,
                          "  - {name: layer.%d.%s, type: %s, shape: [%d, %d], smooth: %s, "
                          "alpha: 0.5, act_amax: 4.0, err_fp: 0.01, err_nosmooth: 0.02}\n",
                          l, kinds[k], types[l * 4 + k], shape[k][0], shape[k][1],
                          k == 0 || k == 2 ? "true" : "false");
}

static int check_schema(const char *path, sq_err *err)
{
    sq_container c;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    if (sq_container_open(path, SQ_KIND_SQM, &c, err) != 0)
        return -1;
    int rc = sq_sqm_read_meta(&c, &ctx, &info, err) == 0 &&
                     sq_sqm_check_schema(&c, &ctx, SQ_SQM_STRICT, err) == 0
                 ? 0
                 : -1;
    sq_container_close(&c);
    return rc;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *perturb = NULL, *drop = NULL, *act_zero = NULL;
    sq_qtype qt = SQ_QT_S8;
    int layers = 2, zstd = 0;
    rng_state = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 10) + 1;
        else if (!strcmp(argv[i], "--qtype") && i + 1 < argc) {
            const char *t = argv[++i];
            qt = !strcmp(t, "f32") ? SQ_QT_F32 : !strcmp(t, "int4") ? SQ_QT_S4G128 : SQ_QT_S8;
        } else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
            layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--perturb") && i + 1 < argc)
            perturb = argv[++i];
        else if (!strcmp(argv[i], "--drop") && i + 1 < argc)
            drop = argv[++i];
        else if (!strcmp(argv[i], "--zstd"))
            zstd = 1;
        else if (!strcmp(argv[i], "--act-zero") && i + 1 < argc)
            act_zero = argv[++i];
        else if (!out && argv[i][0] != '-')
            out = argv[i];
        else {
            fprintf(stderr, "usage: make_test_sqm OUT [--seed S] [--qtype f32|int8|int4] "
                            "[--layers L] [--perturb TENSOR] [--drop TENSOR] [--zstd] "
                            "[--act-zero Z]\n");
            return 2;
        }
    }
    if (!out || layers < 1 || layers > 8)
        return fprintf(stderr, "make_test_sqm: need OUT and 1 <= layers <= 8\n"), 2;

    add_embeddings(qt != SQ_QT_F32);
    static const char *kinds[4] = {"qkv", "attn_out", "ffn_up", "ffn_down"};
    static const int shape[4][2] = {{3 * H, H}, {H, H}, {FFN, H}, {H, FFN}};
    const char *types[32];
    for (int l = 0; l < layers; l++) {
        char p[64];
        for (int k = 0; k < 4; k++) {
            snprintf(p, sizeof p, "layer.%d.%s", l, kinds[k]);
            types[l * 4 + k] = add_linear(p, shape[k][0], shape[k][1], qt, k == 0 || k == 2);
            if (k == 1) {
                snprintf(p, sizeof p, "layer.%d.ln_attn", l);
                add_ln(p);
            }
        }
        snprintf(p, sizeof p, "layer.%d.ln_ffn", l);
        add_ln(p);
    }

    if (act_zero && qt != SQ_QT_F32) {
        int32_t *z = malloc(sizeof *z);
        *z = (int32_t)strtol(act_zero, NULL, 10);
        add("layer.0.ffn_down.act_zero", SQ_CDT_I32, 1, 1, 0, z, sizeof *z);
    }
    int found = !perturb;
    for (int i = 0; i < n_tensors && perturb; i++)
        if (!strcmp(tensors[i].name, perturb) && tensors[i].dtype == SQ_CDT_F32) {
            ((float *)tensors[i].data)[0] += 0.25f;
            found = 1;
        }
    if (!found)
        return fprintf(stderr, "make_test_sqm: no f32 tensor \"%s\" to perturb\n", perturb), 2;

    sq_strbuf meta = {0};
    metadata(&meta, layers, types, qt != SQ_QT_F32 ? "int8" : "fp32");
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    sq_err err;
    int rc = w ? sq_container_writer_set_metadata(w, meta.s, meta.len, &err) : -1;
    for (int i = 0; i < n_tensors && rc == 0; i++)
        if (!drop || strcmp(tensors[i].name, drop) != 0)
            rc = sq_container_writer_add_tensor(w, tensors[i].name, tensors[i].dtype,
                                                tensors[i].ndim, tensors[i].dims, tensors[i].data,
                                                tensors[i].size, &err);
    if (zstd)
        sq_container_writer_set_zstd(w, 3);
    if (rc == 0)
        rc = sq_container_writer_write(w, out, &err);
    /* An unforged file is what the schema (libquant/sqm/sqm_schema.c) describes,
     * every tensor accounted for. */
    if (rc == 0 && !drop && !(act_zero && qt != SQ_QT_S8))
        rc = check_schema(out, &err);
    if (rc != 0)
        fprintf(stderr, "make_test_sqm: %s\n", w ? err.msg : "out of memory");
    sq_container_writer_free(w);
    sq_sb_free(&meta);
    for (int i = 0; i < n_tensors; i++)
        free(tensors[i].data);
    return rc ? 2 : 0;
}

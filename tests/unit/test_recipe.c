/* Quantization recipes: the shipped recipes load, canonical YAML round trips,
 * override precedence (globs, anchored regexes), unmatched overrides (strict
 * error vs warning), every validation error with its file:line:col, and the
 * built-in default. SQ_TEST_SRCDIR is the source root (recipes/ and
 * tests/data/recipes/ are read from it). */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe.h"

#ifndef SQ_TEST_SRCDIR
#error "compile with -DSQ_TEST_SRCDIR=\"<source root>\""
#endif

static char *src_path(const char *rel)
{
    size_t n = strlen(SQ_TEST_SRCDIR) + strlen(rel) + 2;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    snprintf(p, n, "%s/%s", SQ_TEST_SRCDIR, rel);
    return p;
}

static void load_ok(const char *text, sq_recipe *r)
{
    sq_err err = {0};
    int rc = sq_recipe_load_buffer(text, strlen(text), "x.yaml", r, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
}

static void load_file_ok(const char *rel, sq_recipe *r)
{
    char *p = src_path(rel);
    sq_err err = {0};
    int rc = sq_recipe_load_file(p, r, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    free(p);
}

static sq_resolved_linear resolve(const sq_recipe *r, const char *name)
{
    sq_resolved_linear out;
    sq_err err = {0};
    ck_assert_msg(sq_recipe_resolve(r, name, &out, &err) == 0, "%s", err.msg);
    return out;
}

/* to_yaml -> load -> equal, and the canonical text is a fixed point. */
static void assert_round_trip(const sq_recipe *r)
{
    char *y1 = sq_recipe_to_yaml(r);
    ck_assert_ptr_nonnull(y1);
    sq_recipe back;
    sq_err err = {0};
    ck_assert_msg(sq_recipe_load_buffer(y1, strlen(y1), "canonical.yaml", &back, &err) == 0,
                  "%s\n%s", err.msg, y1);
    ck_assert_msg(sq_recipe_equal(r, &back), "round trip changed the recipe:\n%s", y1);
    char *y2 = sq_recipe_to_yaml(&back);
    ck_assert_ptr_nonnull(y2);
    ck_assert_str_eq(y1, y2);
    free(y1);
    free(y2);
    sq_recipe_free(&back);
}

/* ---- shipped recipes ---- */

static const struct {
    const char *file, *name;
    int hidden, layers, heads, ffn;
} shipped[] = {
    {"recipes/bge-small-en-v1.5.yaml", "bge-small-en-v1.5", 384, 12, 12, 1536},
    {"recipes/bge-base-en-v1.5.yaml", "bge-base-en-v1.5", 768, 12, 12, 3072},
    {"recipes/bge-large-en-v1.5.yaml", "bge-large-en-v1.5", 1024, 24, 16, 4096},
    {"recipes/bert-generic.yaml", "bert-generic", 0, 0, 0, 0},
    {"recipes/all-mpnet-base-v2.yaml", "all-mpnet-base-v2", 768, 12, 12, 3072},
    {"recipes/nomic-embed-text-v1.5.yaml", "nomic-embed-text-v1.5", 768, 12, 12, 3072},
};

START_TEST(shipped_recipes_load)
{
    sq_recipe r;
    load_file_ok(shipped[_i].file, &r);
    ck_assert_str_eq(r.name, shipped[_i].name);
    ck_assert_int_eq(r.hidden, shipped[_i].hidden);
    ck_assert_int_eq(r.layers, shipped[_i].layers);
    ck_assert_int_eq(r.heads, shipped[_i].heads);
    ck_assert_int_eq(r.ffn, shipped[_i].ffn);
    /* int8 everywhere with SmoothQuant on the LN outputs */
    ck_assert_int_eq(r.weight_type, SQ_QT_S8);
    ck_assert(r.sq_enabled);
    ck_assert(r.sq_inputs[SQ_LIN_QKV] && r.sq_inputs[SQ_LIN_FFN_UP]);
    ck_assert(!r.sq_inputs[SQ_LIN_ATTN_OUT] && !r.sq_inputs[SQ_LIN_FFN_DOWN]);
    ck_assert_int_eq(r.observer, SQ_CALIB_PERCENTILE);
    ck_assert(r.gates.set[SQ_GATE_COS_MEAN]);
    if (shipped[_i].hidden) {
        /* the bge models are CLS + Normalize, all-mpnet-base-v2 and
         * nomic-embed-text-v1.5 mean + Normalize (their 1_Pooling and
         * modules.json) */
        const bool mpnet = strcmp(r.architecture, "mpnet") == 0 ||
                           strcmp(r.architecture, "nomic_bert") == 0;
        ck_assert(r.set_pooling && r.pooling == (mpnet ? SQ_POOL_MEAN : SQ_POOL_CLS));
        ck_assert(r.set_normalize && r.normalize);
        int layers = r.layers;
        ck_assert_int_eq(sq_recipe_check_overrides_layers(&r, layers, true, NULL, NULL, NULL), 0);
    } else {
        ck_assert(!r.set_pooling && !r.set_normalize);
    }
    assert_round_trip(&r);
    sq_recipe_free(&r);
}
END_TEST

/* The shipped bge shapes are those of the real configs in shared data. */
START_TEST(shipped_shapes_match_real_configs)
{
    const char *dir = getenv("SQUINT_SHARED_DATA");
    if (!dir)
        return; /* meson sets it; a bare run skips this check */
    static const char *const models[] = {"bge-small-en-v1.5", "bge-base-en-v1.5",
                                         "bge-large-en-v1.5"};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/config.json", dir, models[i]);
        sq_bert_config cfg;
        sq_err err = {0};
        ck_assert_msg(sq_bert_config_load(path, &cfg, &err) == 0, "%s", err.msg);
        snprintf(path, sizeof path, "%s/%s/%s.yaml", SQ_TEST_SRCDIR, "recipes", models[i]);
        sq_recipe r;
        ck_assert_msg(sq_recipe_load_file(path, &r, &err) == 0, "%s", err.msg);
        ck_assert_msg(sq_recipe_check_model(&r, &cfg, &err) == 0, "%s", err.msg);
        snprintf(path, sizeof path, "%s/%s", dir, models[i]);
        sq_pooling_config pc;
        ck_assert_msg(sq_pooling_config_load_dir(path, &pc, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(pc.pooling, r.pooling);
        ck_assert_int_eq(pc.normalize, r.normalize);
        sq_recipe_free(&r);
    }
}
END_TEST

/* ---- default ---- */

START_TEST(default_recipe)
{
    sq_recipe r;
    ck_assert_int_eq(sq_recipe_default(&r), 0);
    ck_assert_int_eq(r.version, 1);
    ck_assert_ptr_null(r.name);
    ck_assert_int_eq(r.weight_type, SQ_QT_S8);
    ck_assert(r.int4_scale_search);
    ck_assert(!r.int4_gptq);
    ck_assert_int_eq(r.observer, SQ_CALIB_PERCENTILE);
    ck_assert(r.percentile == 99.99);
    ck_assert(!r.skip_zeros);
    ck_assert(r.sq_enabled && !r.sq_alpha.is_auto && r.sq_alpha.value == 0.5);
    ck_assert(r.sq_auto_step == 0.05);
    ck_assert_uint_eq(r.n_overrides, 0);
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        ck_assert(!r.gates.set[i]);
    ck_assert_int_eq(r.gates.topk_k, 10);
    ck_assert_int_eq(r.hidden + r.layers + r.heads + r.ffn, 0);

    sq_resolved_linear q = resolve(&r, "layer.0.qkv");
    ck_assert_int_eq(q.qtype, SQ_QT_S8);
    ck_assert(q.smooth && !q.alpha.is_auto && q.alpha.value == 0.5);
    ck_assert_int_eq(q.last_override, -1);
    ck_assert(resolve(&r, "layer.7.ffn_up").smooth);
    ck_assert(!resolve(&r, "layer.7.attn_out").smooth);
    ck_assert(!resolve(&r, "layer.7.ffn_down").smooth);

    /* An empty mapping is the default recipe. */
    sq_recipe e;
    load_ok("{}\n", &e);
    ck_assert(sq_recipe_equal(&r, &e));
    sq_recipe_free(&e);

    assert_round_trip(&r);
    char *y = sq_recipe_to_yaml(&r);
    ck_assert_str_eq(y, "version: 1\n"
                        "observer:\n"
                        "  method: percentile\n"
                        "  percentile: 99.99\n"
                        "  skip_zeros: false\n"
                        "  zero_point: true\n"
                        "  guard: row\n"
                        "smoothquant:\n"
                        "  enabled: true\n"
                        "  alpha: 0.5\n"
                        "  auto_step: 0.05\n"
                        "  inputs: [qkv, ffn_up]\n"
                        "outliers:\n"
                        "  enabled: true\n"
                        "  ratio: 8\n"
                        "  max_channels: 16\n"
                        "weights:\n"
                        "  type: int8\n"
                        "  int4_scale_search: true\n"
                        "overrides: []\n"
                        "gates:\n"
                        "  topk_k: 10\n");
    free(y);
    sq_recipe_free(&r);
    sq_recipe_free(&r); /* freeing twice is harmless */
}
END_TEST

/* ---- round trip ---- */

START_TEST(full_recipe_round_trip)
{
    sq_recipe r;
    load_file_ok("tests/data/recipes/full.yaml", &r);
    ck_assert_str_eq(r.name, "every field \"quoted\" \xc3\xa9");
    ck_assert_int_eq(r.hidden, 64);
    ck_assert_int_eq(r.layers, 2);
    ck_assert_int_eq(r.heads, 4);
    ck_assert_int_eq(r.ffn, 256);
    ck_assert(r.set_pooling && r.pooling == SQ_POOL_MEAN);
    ck_assert(r.set_normalize && !r.normalize);
    ck_assert_int_eq(r.observer, SQ_CALIB_PERCENTILE);
    ck_assert(r.percentile == 99.9);
    ck_assert(r.skip_zeros);
    ck_assert(r.sq_alpha.is_auto);
    ck_assert(r.sq_auto_step == 0.1);
    ck_assert(r.sq_inputs[SQ_LIN_QKV] && r.sq_inputs[SQ_LIN_ATTN_OUT] &&
              r.sq_inputs[SQ_LIN_FFN_UP] && r.sq_inputs[SQ_LIN_FFN_DOWN]);
    ck_assert_int_eq(r.weight_type, SQ_QT_S4G128);
    ck_assert(!r.int4_scale_search);
    ck_assert(r.int4_gptq);
    ck_assert(r.attn_matmul == SQ_ATTN_BF16);
    ck_assert_uint_eq(r.n_overrides, 3);
    ck_assert(r.overrides[1].is_regex);
    ck_assert(r.overrides[2].set_alpha && r.overrides[2].alpha.value == 0.75);
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        ck_assert(r.gates.set[i]);
    ck_assert(r.gates.threshold[SQ_GATE_NDCG10_DROP] == 0.005);
    ck_assert(r.gates.threshold[SQ_GATE_MAX_ACCURACY_DROP] == 0.5);
    ck_assert(r.gates.threshold[SQ_GATE_SCORE_SPEARMAN] == 0.99);
    ck_assert_int_eq(r.gates.topk_k, 5);
    assert_round_trip(&r);
    sq_recipe_free(&r);
}
END_TEST

/* classifier: {type: int8} round trips and is written only when set, so
 * recipes without it keep their canonical text (and their .sqm bytes). */
START_TEST(classifier_type_round_trip)
{
    sq_recipe r, d;
    sq_err err;
    const char *t = "version: 1\nclassifier:\n  type: int8\n";
    ck_assert_msg(sq_recipe_load_buffer(t, strlen(t), "c.yaml", &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.classifier_type, SQ_QT_S8);
    assert_round_trip(&r);
    char *y = sq_recipe_to_yaml(&r);
    ck_assert_ptr_nonnull(strstr(y, "classifier:\n  type: int8\n"));
    free(y);
    sq_recipe_free(&r);
    const char *f = "version: 1\nclassifier: {type: fp32}\n";
    ck_assert_msg(sq_recipe_load_buffer(f, strlen(f), "f.yaml", &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(sq_recipe_default(&d), 0);
    char *a = sq_recipe_to_yaml(&r), *b = sq_recipe_to_yaml(&d);
    ck_assert_str_eq(a, b);
    ck_assert_ptr_null(strstr(a, "classifier"));
    free(a);
    free(b);
    sq_recipe_free(&r);
    sq_recipe_free(&d);
}
END_TEST

/* The same recipe written differently gives the same canonical bytes. */
START_TEST(canonical_is_independent_of_spelling)
{
    sq_recipe a, b;
    load_ok("weights: {type: int8}\n"
            "smoothquant:\n"
            "  inputs: [ffn_up, qkv]\n"
            "  alpha: 0.50\n"
            "gates: {cos_mean: 9.9e-1}\n"
            "overrides:\n"
            "  - {match: 'layer.1.*', type: fp32}\n",
            &a);
    load_ok("# comment\n"
            "version: 1\n"
            "overrides:\n"
            "  - type: fp32\n"
            "    match: \"layer.1.*\"\n"
            "gates:\n"
            "  cos_mean: 0.99\n"
            "  topk_k: 10\n"
            "smoothquant: {alpha: .5, inputs: [qkv, ffn_up], enabled: True}\n",
            &b);
    ck_assert(sq_recipe_equal(&a, &b));
    char *ya = sq_recipe_to_yaml(&a), *yb = sq_recipe_to_yaml(&b);
    ck_assert_str_eq(ya, yb);
    free(ya);
    free(yb);
    /* and a difference shows */
    b.overrides[0].type = SQ_QT_S8;
    ck_assert(!sq_recipe_equal(&a, &b));
    sq_recipe_free(&a);
    sq_recipe_free(&b);
}
END_TEST

/* Numbers survive the round trip bit for bit; text is quoted safely. */
START_TEST(round_trip_awkward_values)
{
    sq_recipe r;
    load_ok("name: \"tab\\t newline\\n colon: hash # quote' \\\"\"\n"
            "observer: {method: percentile, percentile: 1e-3}\n"
            "smoothquant: {alpha: 0.30000000000000004, inputs: []}\n"
            "overrides:\n"
            "  - {match: 're:layer\\.(1|2)\\..*', alpha: 1}\n"
            "  - {match: '*[!u]p', smoothquant: false}\n"
            "gates: {cos_min: 0, stsb_spearman_drop: 1}\n",
            &r);
    ck_assert(r.percentile == 1e-3);
    ck_assert(r.sq_alpha.value == 0.30000000000000004);
    ck_assert_str_eq(r.overrides[0].match, "re:layer\\.(1|2)\\..*");
    assert_round_trip(&r);
    sq_recipe_free(&r);

    /* observer methods without parameters write none */
    load_ok("observer: {method: mse}\n", &r);
    char *y = sq_recipe_to_yaml(&r);
    ck_assert_ptr_nonnull(
        strstr(y, "observer:\n  method: mse\n  zero_point: true\n  guard: row\nsmoothquant:"));
    free(y);
    assert_round_trip(&r);
    sq_recipe_free(&r);
    load_ok("observer: {method: entropy, skip_zeros: true}\n", &r);
    assert_round_trip(&r);
    sq_recipe_free(&r);
}
END_TEST

/* ---- resolution ---- */

START_TEST(overrides_last_match_wins)
{
    sq_recipe r;
    load_ok("smoothquant: {alpha: 0.5, inputs: [qkv, ffn_up]}\n"
            "overrides:\n"
            "  - match: 'layer.*.ffn_*'\n"        /* 0: every FFN to int4 */
            "    type: int4-g128\n"
            "  - match: 're:layer\\.(0|11)\\..*'\n" /* 1: first and last layer */
            "    type: int8\n"
            "    alpha: 0.8\n"
            "  - match: 'layer.11.ffn_down'\n"    /* 2: one linear */
            "    type: fp32\n"
            "  - match: 'layer.1?.qkv'\n"         /* 3: 10..19 */
            "    alpha: auto\n"
            "  - match: 'layer.5.attn_out'\n"     /* 4: smoothing on a kind not in inputs */
            "    smoothquant: true\n",
            &r);
    sq_resolved_linear x;

    x = resolve(&r, "layer.3.ffn_up");
    ck_assert_int_eq(x.qtype, SQ_QT_S4G128);
    ck_assert(x.smooth && x.alpha.value == 0.5);
    ck_assert_int_eq(x.last_override, 0);

    x = resolve(&r, "layer.3.ffn_down");
    ck_assert_int_eq(x.qtype, SQ_QT_S4G128);
    ck_assert(!x.smooth);

    x = resolve(&r, "layer.0.ffn_up"); /* 1 after 0 */
    ck_assert_int_eq(x.qtype, SQ_QT_S8);
    ck_assert(x.smooth && x.alpha.value == 0.8);
    ck_assert_int_eq(x.last_override, 1);

    x = resolve(&r, "layer.11.ffn_down"); /* 0, 1, then 2 */
    ck_assert_int_eq(x.qtype, SQ_QT_F32);
    ck_assert(!x.smooth); /* fp32 inputs are not quantized */
    ck_assert_int_eq(x.last_override, 2);

    /* 1 sets type and alpha, 3 only alpha: the type from 1 stays */
    x = resolve(&r, "layer.11.qkv");
    ck_assert_int_eq(x.qtype, SQ_QT_S8);
    ck_assert(x.smooth && x.alpha.is_auto);
    ck_assert_int_eq(x.last_override, 3);

    x = resolve(&r, "layer.1.qkv"); /* '?' needs one character */
    ck_assert(!x.alpha.is_auto && x.alpha.value == 0.5);
    ck_assert_int_eq(x.last_override, -1);

    x = resolve(&r, "layer.5.attn_out");
    ck_assert(x.smooth && x.alpha.value == 0.5);
    ck_assert(!resolve(&r, "layer.6.attn_out").smooth);

    /* not a linear's name */
    sq_err err = {0};
    ck_assert_int_eq(sq_recipe_resolve(&r, "layer.1.query", &x, &err), -1);
    ck_assert_str_eq(err.msg, "'layer.1.query' is not a linear name (layer.<i>.<kind>)");
    ck_assert_int_eq(sq_recipe_resolve(&r, "layer.01.qkv", &x, &err), -1);
    ck_assert_int_eq(sq_recipe_resolve(&r, "encoder.layer.1.qkv", &x, &err), -1);
    sq_recipe_free(&r);
}
END_TEST

START_TEST(regex_is_anchored_glob_spans_dots)
{
    sq_recipe r;
    load_ok("overrides:\n"
            "  - {match: 're:qkv', type: fp32}\n"
            "  - {match: 're:layer\\.1', type: fp32}\n"
            "  - {match: 're:layer\\.1\\..*|.*\\.ffn_down', type: fp32}\n"
            "  - {match: 'layer.1*', type: fp32}\n"
            "  - {match: 'layer.[0-2].attn_out', type: fp32}\n"
            "  - {match: 're:a)|b', type: fp32}\n",
            &r);
    const sq_recipe_override *o = r.overrides;
    ck_assert(!sq_recipe_override_matches(&o[0], "layer.1.qkv"));
    ck_assert(!sq_recipe_override_matches(&o[1], "layer.1.qkv"));
    ck_assert(!sq_recipe_override_matches(&o[1], "layer.10.qkv"));
    ck_assert(sq_recipe_override_matches(&o[2], "layer.1.qkv"));
    ck_assert(sq_recipe_override_matches(&o[2], "layer.7.ffn_down"));
    ck_assert(!sq_recipe_override_matches(&o[2], "layer.7.ffn_up"));
    ck_assert(!sq_recipe_override_matches(&o[2], "layer.10.qkv"));
    /* fnmatch without FNM_PATHNAME / FNM_PERIOD: '*' crosses dots */
    ck_assert(sq_recipe_override_matches(&o[3], "layer.1.qkv"));
    ck_assert(sq_recipe_override_matches(&o[3], "layer.13.ffn_down"));
    ck_assert(!sq_recipe_override_matches(&o[3], "layer.2.qkv"));
    ck_assert(sq_recipe_override_matches(&o[4], "layer.2.attn_out"));
    ck_assert(!sq_recipe_override_matches(&o[4], "layer.3.attn_out"));
    /* glibc reads a stray ')' literally: "a)" or "b", whole name only */
    ck_assert(sq_recipe_override_matches(&o[5], "a)"));
    ck_assert(sq_recipe_override_matches(&o[5], "b"));
    ck_assert(!sq_recipe_override_matches(&o[5], "ab"));
    ck_assert(!sq_recipe_override_matches(&o[5], "a"));
    sq_recipe_free(&r);
}
END_TEST

/* ---- unmatched overrides ---- */

static int n_warnings;
static char last_warning[1024];

static void collect(void *ctx, const char *msg)
{
    (void)ctx;
    n_warnings++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

START_TEST(unmatched_override_strict_vs_warning)
{
    sq_recipe r;
    load_ok("overrides:\n"
            "  - match: 'layer.*.qkv'\n"
            "    type: fp32\n"
            "  - match: 'layer.30.*'\n"
            "    type: fp32\n"
            "  - match: 're:layer\\.2[0-9]\\..*'\n"
            "    type: fp32\n",
            &r);
    sq_err err = {0};
    n_warnings = 0;
    ck_assert_int_eq(sq_recipe_check_overrides_layers(&r, 12, false, collect, NULL, &err), 2);
    ck_assert_int_eq(n_warnings, 2);
    ck_assert_str_eq(last_warning, "x.yaml:6:5: override 're:layer\\.2[0-9]\\..*' matches no "
                                   "linear of the model");

    ck_assert_int_eq(sq_recipe_check_overrides_layers(&r, 12, true, collect, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "x.yaml:4:5: override 'layer.30.*' matches no linear of the model");
    ck_assert_int_eq(n_warnings, 2); /* strict does not warn */

    /* 24 layers: only layer.30.* is left unmatched */
    ck_assert_int_eq(sq_recipe_check_overrides_layers(&r, 24, false, NULL, NULL, &err), 1);
    ck_assert_int_eq(sq_recipe_check_overrides_layers(&r, 31, true, NULL, NULL, &err), 0);

    /* explicit name list */
    const char *names[] = {"layer.0.qkv", "layer.30.ffn_up"};
    ck_assert_int_eq(sq_recipe_check_overrides(&r, names, 2, false, NULL, NULL, &err), 1);
    ck_assert_int_eq(sq_recipe_check_overrides(&r, names, 0, false, NULL, NULL, &err), 3);
    sq_recipe_free(&r);
}
END_TEST

/* ---- validation errors ---- */

static const struct {
    const char *text, *want;
} bad[] = {
    /* unknown keys, at every level */
    {"smoothquant:\n  enabled: true\n  alpah: 0.5\n",
     "x.yaml:3:3: unknown key 'alpah' in smoothquant (expected: enabled, alpha, auto_step, "
     "inputs)"},
    {"version: 1\nweight:\n  type: int8\n",
     "x.yaml:2:1: unknown key 'weight' in the recipe (expected: version, name, model, observer, "
     "smoothquant, outliers, weights, attention, classifier, overrides, gates)"},
    {"attention: {matmul: int4}\n",
     "x.yaml:1:21: unknown attention matmul 'int4' (expected: f32, bf16, int8)"},
    {"classifier: {type: int4-g128}\n",
     "x.yaml:1:20: unknown classifier type 'int4-g128' (expected: fp32, int8)"},
    {"classifier: {dtype: int8}\n",
     "x.yaml:1:14: unknown key 'dtype' in classifier (expected: type)"},
    {"attention: {precision: bf16}\n",
     "x.yaml:1:13: unknown key 'precision' in attention (expected: matmul)"},
    {"model: {hiden: 384}\n",
     "x.yaml:1:9: unknown key 'hiden' in model (expected: architecture, hidden, layers, heads, "
     "ffn, pooling, normalize)"},
    {"observer: {method: mse, percentil: 99}\n",
     "x.yaml:1:25: unknown key 'percentil' in observer (expected: method, percentile, "
     "skip_zeros, zero_point, guard)"},
    {"observer: {guard: rows}\n", "x.yaml:1:19: unknown guard 'rows' (expected: row, clip)"},
    {"weights:\n  type: int8\n  scale_search: true\n",
     "x.yaml:3:3: unknown key 'scale_search' in weights (expected: type, int4_scale_search, "
     "int4_rounding)"},
    {"weights: {int4_rounding: gptqq}\n",
     "x.yaml:1:26: unknown int4_rounding 'gptqq' (expected: nearest, gptq)"},
    {"weights: {int4_rounding: [gptq]}\n", "x.yaml:1:26: 'int4_rounding' must be a string, not a sequence"},
    {"overrides:\n  - match: layer.1.qkv\n    typ: fp32\n",
     "x.yaml:3:5: unknown key 'typ' in an override (expected: match, type, smoothquant, alpha)"},
    {"gates:\n  cos_avg: 0.9\n",
     "x.yaml:2:3: unknown key 'cos_avg' in gates (expected: cos_mean, cos_min, topk_overlap, "
     "stsb_spearman_drop, ndcg10_drop, centred_cos_mean, score_spearman, max_accuracy_drop, "
     "topk_k)"},
    /* alpha */
    {"smoothquant:\n  alpha: 1.5\n", "x.yaml:2:10: 'alpha' must be a number in [0, 1] or auto"},
    {"smoothquant:\n  alpha: -0.1\n", "x.yaml:2:10: 'alpha' must be a number in [0, 1] or auto"},
    {"smoothquant:\n  alpha: autox\n", "x.yaml:2:10: 'alpha' must be a number in [0, 1] or auto"},
    {"smoothquant:\n  alpha: [0.5]\n", "x.yaml:2:10: 'alpha' must be a number in [0, 1] or auto"},
    {"overrides:\n  - {match: x, alpha: 2}\n",
     "x.yaml:2:23: 'alpha' must be a number in [0, 1] or auto"},
    {"smoothquant: {auto_step: 0}\n", "x.yaml:1:26: 'auto_step' must be a number in [0.01, 0.5]"},
    {"smoothquant: {enabled: yes}\n", "x.yaml:1:24: 'enabled' must be true or false"},
    {"smoothquant: {inputs: qkv}\n", "x.yaml:1:23: 'inputs' must be a sequence, not a scalar"},
    {"smoothquant: {inputs: [qkv, ffn]}\n",
     "x.yaml:1:29: unknown linear kind 'ffn' (expected: qkv, attn_out, ffn_up, ffn_down, res)"},
    {"smoothquant: {inputs: [qkv, qkv]}\n", "x.yaml:1:29: linear kind 'qkv' is listed twice"},
    /* types */
    {"weights:\n  type: int3\n",
     "x.yaml:2:9: unknown weight type 'int3' (expected: fp32, int8, int4-g128)"},
    {"overrides:\n  - match: layer.1.qkv\n    type: INT8\n",
     "x.yaml:3:11: unknown weight type 'INT8' (expected: fp32, int8, int4-g128)"},
    {"weights: {int4_scale_search: 1}\n",
     "x.yaml:1:30: 'int4_scale_search' must be true or false"},
    /* overrides */
    {"overrides:\n  - match: 're:layer.('\n    type: fp32\n",
     "x.yaml:2:12: bad regex 'layer.(' in 'match': Unmatched ( or \\("},
    /* regression (fuzz_recipe): stacked repetitions made glibc regcomp exhaust memory */
    {"overrides:\n  - match: 're:a++++++++++++++++++++++++'\n    type: fp32\n",
     "x.yaml:2:12: regex in 'match' repeats a repetition ('++')"},
    {"overrides:\n  - match: 're:(a+)(b+)(c+)(d+)(e+)(f+)(g+)(h+)(i+)(j+)(k+)(l+)(m+)(n+)(o+)(p+)(q+)'\n    type: fp32\n",
     "x.yaml:2:12: regex in 'match' has more than 16 repetition operators"},
    /* nested bounded repeats multiply glibc's copies (1.8 GB for 40 bytes) */
    {"overrides:\n  - match: 're:((l{1,100}){1,100}){1,100}'\n    type: fp32\n",
     "x.yaml:2:12: regex in 'match' repeats a group that holds a repetition"},
    {"overrides:\n  - match: 're:(a(b+)c)*'\n    type: fp32\n",
     "x.yaml:2:12: regex in 'match' repeats a group that holds a repetition"},
    {"overrides:\n  - match: 're:a{2}{3}'\n    type: fp32\n",
     "x.yaml:2:12: regex in 'match' repeats a repetition ('}{')"},
    {"overrides:\n  - match: 're:'\n    type: fp32\n",
     "x.yaml:2:12: 'match' has an empty regex after 're:'"},
    {"overrides:\n  - match: ''\n    type: fp32\n", "x.yaml:2:12: 'match' must not be empty"},
    {"overrides:\n  - type: fp32\n", "x.yaml:2:5: missing required key 'match'"},
    {"overrides:\n  - match: [a]\n    type: fp32\n",
     "x.yaml:2:12: 'match' must be a string, not a sequence"},
    {"overrides:\n  - match: layer.1.qkv\n",
     "x.yaml:2:5: override 'layer.1.qkv' sets nothing (give type, smoothquant or alpha)"},
    {"overrides:\n  - layer.1.qkv\n",
     "x.yaml:2:5: 'overrides item' must be a mapping, not a scalar"},
    {"overrides: {match: x, type: fp32}\n",
     "x.yaml:1:12: 'overrides' must be a sequence, not a mapping"},
    {"smoothquant: {enabled: false}\noverrides:\n  - {match: x, alpha: 0.5}\n",
     "x.yaml:3:23: override 'x' sets smoothquant options but smoothquant.enabled is false"},
    {"smoothquant: {enabled: false}\noverrides:\n  - {match: x, smoothquant: true}\n",
     "x.yaml:3:29: override 'x' sets smoothquant options but smoothquant.enabled is false"},
    /* observer */
    {"observer: {method: kl}\n",
     "x.yaml:1:20: unknown observer method 'kl' (expected: minmax, percentile, entropy, mse)"},
    {"observer: {method: percentile, percentile: 0}\n",
     "x.yaml:1:44: 'percentile' must be a number in (0, 100]"},
    {"observer: {percentile: 100.5}\n", "x.yaml:1:24: 'percentile' must be a number in (0, 100]"},
    {"observer: {method: mse, percentile: 99}\n",
     "x.yaml:1:37: 'percentile' applies only to method percentile (method is mse)"},
    {"observer: {method: minmax, skip_zeros: true}\n",
     "x.yaml:1:40: 'skip_zeros' applies only to methods percentile and entropy (method is "
     "minmax)"},
    {"observer: percentile\n", "x.yaml:1:11: 'observer' must be a mapping, not a scalar"},
    /* gates */
    {"gates:\n  cos_mean: 1.5\n", "x.yaml:2:13: 'cos_mean' must be a number in [0, 1]"},
    {"gates:\n  ndcg10_drop: -0.01\n", "x.yaml:2:16: 'ndcg10_drop' must be a number in [0, 1]"},
    {"gates:\n  max_accuracy_drop: 101\n",
     "x.yaml:2:22: 'max_accuracy_drop' must be a number in [0, 100]"},
    {"gates:\n  topk_overlap: high\n", "x.yaml:2:17: 'topk_overlap' must be a number in [0, 1]"},
    {"gates:\n  topk_k: 0\n", "x.yaml:2:11: 'topk_k' must be an integer in [1, 1000]"},
    /* model */
    {"model: {architecture: gpt2}\n",
     "x.yaml:1:23: unsupported architecture 'gpt2' (expected: bert, t2t, mpnet, nomic_bert, llama, qwen3)"},
    {"model: {hidden: 0}\n", "x.yaml:1:17: 'hidden' must be an integer in [1, 16384]"},
    {"model: {layers: 12.5}\n", "x.yaml:1:17: 'layers' must be an integer in [1, 256]"},
    {"model: {hidden: 384, heads: 10}\n", "x.yaml:1:29: 'heads' (10) must divide 'hidden' (384)"},
    {"model: {pooling: max}\n", "x.yaml:1:18: unknown pooling 'max' (expected: cls, mean)"},
    {"model: {normalize: 1}\n", "x.yaml:1:20: 'normalize' must be true or false"},
    /* top level and shapes */
    {"version: 2\n", "x.yaml:1:10: unsupported recipe version 2 (this squint reads 1)"},
    {"version: one\n", "x.yaml:1:10: 'version' must be an integer in [1, 2147483647]"},
    {"name: {a: b}\n", "x.yaml:1:7: 'name' must be a string, not a mapping"},
    {"smoothquant:\n  - enabled\n", "x.yaml:2:3: 'smoothquant' must be a mapping, not a sequence"},
    {"weights:\n", "x.yaml:1:9: 'weights' must be a mapping, not a scalar"},
    {"- weights\n", "x.yaml:1:1: 'recipe' must be a mapping, not a sequence"},
    {"int8\n", "x.yaml:1:1: 'recipe' must be a mapping, not a scalar"},
    {"", "x.yaml:1:1: empty recipe (expected a mapping of: version, name, model, observer, "
         "smoothquant, weights, overrides, gates)"},
    {"# only a comment\n", "x.yaml:1:1: empty recipe (expected a mapping of: version, name, "
                           "model, observer, smoothquant, weights, overrides, gates)"},
    {"weights:\n  type: int8\n  type: fp32\n",
     "x.yaml:3:3: duplicate key 'type' (first at line 2, column 3)"},
    {"outliers: {ratio: 1}\n", "x.yaml:1:19: 'ratio' must be a number in [2, 1000]"},
    {"outliers: {max_channels: 0}\n",
     "x.yaml:1:26: 'max_channels' must be an integer in [1, 256]"},
    {"outliers: {enable: true}\n",
     "x.yaml:1:12: unknown key 'enable' in outliers (expected: enabled, ratio, max_channels)"},
    {"gates: {cos_mean: 0.9}\ngates: {cos_min: 0.9}\n",
     "x.yaml:2:1: duplicate key 'gates' (first at line 1, column 1)"},
};

START_TEST(validation_errors)
{
    sq_recipe r;
    sq_err err = {0};
    int rc = sq_recipe_load_buffer(bad[_i].text, strlen(bad[_i].text), "x.yaml", &r, &err);
    ck_assert_msg(rc == -1, "accepted: %s", bad[_i].text);
    ck_assert_str_eq(err.msg, bad[_i].want);
    /* a failed load leaves an empty recipe */
    ck_assert_ptr_null(r.overrides);
    ck_assert_ptr_null(r.name);
    sq_recipe_free(&r);
}
END_TEST

/* Errors from files carry the path; a missing file is an error too. */
START_TEST(file_errors_carry_the_path)
{
    char *p = src_path("tests/data/recipes/typo.yaml");
    sq_recipe r;
    sq_err err = {0};
    ck_assert_int_eq(sq_recipe_load_file(p, &r, &err), -1);
    char want[4096];
    snprintf(want, sizeof want,
             "%s:7:3: unknown key 'alpah' in smoothquant (expected: enabled, alpha, auto_step, "
             "inputs)",
             p);
    ck_assert_str_eq(err.msg, want);
    free(p);

    p = src_path("tests/data/recipes/empty.yaml");
    ck_assert_int_eq(sq_recipe_load_file(p, &r, &err), -1);
    snprintf(want, sizeof want, "%s:1:1: empty recipe", p);
    ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    free(p);

    p = src_path("tests/data/recipes/no-such-recipe.yaml");
    ck_assert_int_eq(sq_recipe_load_file(p, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no-such-recipe.yaml"));
    sq_recipe_free(&r);
    free(p);
}
END_TEST

/* ---- the documentation ---- */

/* Every ```yaml block of recipes/README.md is a valid recipe, and the one
 * under "## The default recipe" is the default's canonical text. */
START_TEST(readme_examples_load)
{
    char *p = src_path("recipes/README.md");
    FILE *f = fopen(p, "rb");
    ck_assert_msg(f != NULL, "%s", p);
    static char doc[1 << 17];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    free(p);
    doc[len] = '\0';

    sq_recipe def;
    ck_assert_int_eq(sq_recipe_default(&def), 0);
    char *def_yaml = sq_recipe_to_yaml(&def);
    const char *def_section = strstr(doc, "## The default recipe");
    ck_assert_ptr_nonnull(def_section);

    int blocks = 0;
    bool saw_default = false;
    for (const char *b = strstr(doc, "```yaml\n"); b; b = strstr(b, "```yaml\n")) {
        b += strlen("```yaml\n");
        const char *e = strstr(b, "```\n");
        ck_assert_ptr_nonnull(e);
        sq_recipe r;
        sq_err err = {0};
        int rc = sq_recipe_load_buffer(b, (size_t)(e - b), "README.md block", &r, &err);
        ck_assert_msg(rc == 0, "%s\n%.*s", err.msg, (int)(e - b), b);
        if (b > def_section && !saw_default) {
            saw_default = true;
            ck_assert_uint_eq((size_t)(e - b), strlen(def_yaml));
            ck_assert(memcmp(b, def_yaml, strlen(def_yaml)) == 0);
        }
        sq_recipe_free(&r);
        blocks++;
        b = e + 4;
    }
    ck_assert_int_ge(blocks, 10);
    ck_assert(saw_default);
    free(def_yaml);
    sq_recipe_free(&def);
}
END_TEST

/* ---- model section, gates, names ---- */

START_TEST(model_checks_and_pooling)
{
    sq_recipe r;
    load_ok("model: {hidden: 384, layers: 12, pooling: mean}\n", &r);
    sq_bert_config cfg = {.hidden = 384, .layers = 12, .heads = 12, .ffn = 1536};
    sq_err err = {0};
    ck_assert_int_eq(sq_recipe_check_model(&r, &cfg, &err), 0); /* heads, ffn unchecked */
    cfg.layers = 24;
    ck_assert_int_eq(sq_recipe_check_model(&r, &cfg, &err), -1);
    ck_assert_str_eq(err.msg, "x.yaml: the recipe expects layers 12, the model has 24");

    sq_pooling_config pc = {.pooling = SQ_POOL_CLS, .normalize = true};
    sq_recipe_apply_pooling(&r, &pc);
    ck_assert_int_eq(pc.pooling, SQ_POOL_MEAN);
    ck_assert(pc.normalize); /* not given: as the model says */
    sq_recipe_free(&r);
}
END_TEST

START_TEST(gates_from_command_line)
{
    sq_recipe r;
    load_ok("gates: {cos_mean: 0.99, cos_min: 0.9}\n", &r);
    sq_err err = {0};
    ck_assert_int_eq(sq_recipe_set_gate(&r, "cos_mean=0.995", &err), 0);
    ck_assert(r.gates.threshold[SQ_GATE_COS_MEAN] == 0.995);
    ck_assert(r.gates.threshold[SQ_GATE_COS_MIN] == 0.9);
    ck_assert_int_eq(sq_recipe_set_gate(&r, "ndcg10_drop=0.01", &err), 0);
    ck_assert(r.gates.set[SQ_GATE_NDCG10_DROP]);
    ck_assert_int_eq(sq_recipe_set_gate(&r, "topk_k=20", &err), 0);
    ck_assert_int_eq(r.gates.topk_k, 20);

    ck_assert_int_eq(sq_recipe_set_gate(&r, "cos_mean=1.5", &err), -1);
    ck_assert_str_eq(err.msg, "gate 'cos_mean=1.5': 'cos_mean' must be a number in [0, 1]");
    ck_assert_int_eq(sq_recipe_set_gate(&r, "cos_mean=nan", &err), -1);
    ck_assert_int_eq(sq_recipe_set_gate(&r, "cos_mean=", &err), -1);
    ck_assert_int_eq(sq_recipe_set_gate(&r, "topk_k=2.5", &err), -1);
    ck_assert_int_eq(sq_recipe_set_gate(&r, "cos_mean", &err), -1);
    ck_assert_str_eq(err.msg, "gate 'cos_mean': expected NAME=VALUE");
    ck_assert_int_eq(sq_recipe_set_gate(&r, "cos=0.9", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown gate"));
    ck_assert(r.gates.threshold[SQ_GATE_COS_MEAN] == 0.995); /* failures change nothing */

    /* direction: min gates and max (drop) gates */
    ck_assert(sq_gate_pass(SQ_GATE_COS_MEAN, 0.99, 0.991));
    ck_assert(sq_gate_pass(SQ_GATE_COS_MEAN, 0.99, 0.99));
    ck_assert(!sq_gate_pass(SQ_GATE_COS_MEAN, 0.99, 0.989));
    ck_assert(sq_gate_pass(SQ_GATE_NDCG10_DROP, 0.01, 0.005));
    ck_assert(!sq_gate_pass(SQ_GATE_NDCG10_DROP, 0.01, 0.02));
    ck_assert(!sq_gate_pass(SQ_GATE_COS_MIN, 0.9, NAN));
    ck_assert_int_eq(sq_gate_lookup("stsb_spearman_drop"), SQ_GATE_STSB_SPEARMAN_DROP);
    ck_assert_int_eq(sq_gate_lookup("topk_k"), -1);
    sq_recipe_free(&r);
}
END_TEST

START_TEST(linear_names)
{
    char buf[32];
    int layer = -1;
    sq_linear_kind kind;
    sq_linear_name(buf, sizeof buf, 11, SQ_LIN_FFN_DOWN);
    ck_assert_str_eq(buf, "layer.11.ffn_down");
    ck_assert_int_eq(sq_linear_name_parse(buf, &layer, &kind), 0);
    ck_assert_int_eq(layer, 11);
    ck_assert_int_eq(kind, SQ_LIN_FFN_DOWN);
    ck_assert_int_eq(sq_linear_name_parse("layer.0.attn_out", &layer, &kind), 0);
    ck_assert_int_eq(layer, 0);
    ck_assert_int_eq(kind, SQ_LIN_ATTN_OUT);
    ck_assert_int_eq(sq_linear_name_parse("layer.0.attn_out.x", &layer, &kind), -1);
    ck_assert_int_eq(sq_linear_name_parse("layer..qkv", &layer, &kind), -1);
    ck_assert_int_eq(sq_linear_name_parse("layer.-1.qkv", &layer, &kind), -1);
    ck_assert_int_eq(sq_linear_name_parse("layers.1.qkv", &layer, &kind), -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("recipe");
    TCase *tc = tcase_create("recipe");
    tcase_add_loop_test(tc, shipped_recipes_load, 0, (int)(sizeof shipped / sizeof shipped[0]));
    tcase_add_test(tc, shipped_shapes_match_real_configs);
    tcase_add_test(tc, default_recipe);
    tcase_add_test(tc, full_recipe_round_trip);
    tcase_add_test(tc, canonical_is_independent_of_spelling);
    tcase_add_test(tc, classifier_type_round_trip);
    tcase_add_test(tc, round_trip_awkward_values);
    tcase_add_test(tc, overrides_last_match_wins);
    tcase_add_test(tc, regex_is_anchored_glob_spans_dots);
    tcase_add_test(tc, unmatched_override_strict_vs_warning);
    tcase_add_loop_test(tc, validation_errors, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, file_errors_carry_the_path);
    tcase_add_test(tc, readme_examples_load);
    tcase_add_test(tc, model_checks_and_pooling);
    tcase_add_test(tc, gates_from_command_line);
    tcase_add_test(tc, linear_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Quantization recipes: schema validation (recipes/README.md), per-linear
 * resolution of overrides, and the canonical YAML form. */
#include "recipe.h"

#include <fnmatch.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "strbuf.h"
#include "yaml_tree.h"

#define RECIPE_MAX_BYTES ((size_t)1 << 20) /* a recipe is a page of text */
#define DEFAULT_PERCENTILE 99.99           /* calib's SQ_DEFAULT_PERCENTILE */
#define DEFAULT_ALPHA 0.5
#define DEFAULT_OUTLIER_RATIO 8.0
#define DEFAULT_OUTLIER_MAX 16
#define DEFAULT_AUTO_STEP 0.05
#define AUTO_STEP_MIN 0.01
#define AUTO_STEP_MAX 0.5
#define TOPK_MAX 1000
#define MAX_LAYER_INDEX 99999

/* ---- tables ---- */

static bool observer_takes_skip_zeros(sq_calib_method m)
{
    return m == SQ_CALIB_PERCENTILE || m == SQ_CALIB_ENTROPY;
}

static const sq_gate_info gate_table[SQ_GATE_COUNT] = {
    [SQ_GATE_COS_MEAN] = {"cos_mean", 0.0, 1.0, false},
    [SQ_GATE_COS_MIN] = {"cos_min", 0.0, 1.0, false},
    [SQ_GATE_TOPK_OVERLAP] = {"topk_overlap", 0.0, 1.0, false},
    [SQ_GATE_STSB_SPEARMAN_DROP] = {"stsb_spearman_drop", 0.0, 1.0, true},
    [SQ_GATE_NDCG10_DROP] = {"ndcg10_drop", 0.0, 1.0, true},
    [SQ_GATE_CENTRED_COS_MEAN] = {"centred_cos_mean", -1.0, 1.0, false},
    [SQ_GATE_SCORE_SPEARMAN] = {"score_spearman", -1.0, 1.0, false},
    [SQ_GATE_MAX_ACCURACY_DROP] = {"max_accuracy_drop", 0.0, 100.0, true},
};

const sq_gate_info *sq_gate_get(sq_gate_id id)
{
    return (unsigned)id < SQ_GATE_COUNT ? &gate_table[id] : NULL;
}

int sq_gate_lookup(const char *name)
{
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        if (strcmp(name, gate_table[i].name) == 0)
            return i;
    return -1;
}

bool sq_gate_pass(sq_gate_id id, double threshold, double measured)
{
    const sq_gate_info *g = sq_gate_get(id);
    if (!g || isnan(measured))
        return false;
    return g->is_max ? measured <= threshold : measured >= threshold;
}

/* ---- linear names ---- */

int sq_linear_kind_parse(const char *name, sq_linear_kind *out)
{
    for (int k = 0; k < SQ_LIN_KINDS; k++)
        if (strcmp(name, sq_linear_kind_name((sq_linear_kind)k)) == 0) {
            *out = (sq_linear_kind)k;
            return 0;
        }
    return -1;
}

int sq_linear_name(char *buf, size_t n, int layer, sq_linear_kind kind)
{
    return snprintf(buf, n, "layer.%d.%s", layer, sq_linear_kind_name(kind));
}

int sq_linear_name_parse(const char *name, int *layer, sq_linear_kind *kind)
{
    if (strncmp(name, "layer.", 6) != 0)
        return -1;
    const char *p = name + 6;
    size_t digits = strspn(p, "0123456789");
    /* canonical decimal only: "layer.03.qkv" is not a linear's name */
    if (digits == 0 || digits > 5 || (digits > 1 && p[0] == '0') || p[digits] != '.')
        return -1;
    if (sq_linear_kind_parse(p + digits + 1, kind) != 0)
        return -1;
    *layer = atoi(p);
    return 0;
}

/* ---- lifecycle ---- */

static void set_defaults(sq_recipe *r)
{
    memset(r, 0, sizeof *r);
    r->version = SQ_RECIPE_VERSION;
    r->pooling = SQ_POOL_CLS;
    r->observer = SQ_CALIB_PERCENTILE;
    r->percentile = DEFAULT_PERCENTILE;
    r->zero_point = true;
    r->guard_rows = true;
    r->sq_enabled = true;
    r->sq_alpha.value = DEFAULT_ALPHA;
    r->sq_auto_step = DEFAULT_AUTO_STEP;
    /* The LayerNorm outputs carry BERT's outlier channels (DESIGN.md). */
    r->sq_inputs[SQ_LIN_QKV] = true;
    r->sq_inputs[SQ_LIN_FFN_UP] = true;
    r->outl_enabled = true;
    r->outl_ratio = DEFAULT_OUTLIER_RATIO;
    r->outl_max = DEFAULT_OUTLIER_MAX;
    r->weight_type = SQ_QT_S8;
    r->int4_scale_search = true;
    r->gates.topk_k = SQ_GATE_TOPK_DEFAULT;
}

int sq_recipe_default(sq_recipe *r)
{
    set_defaults(r);
    r->source = strdup("<default>");
    return r->source ? 0 : -1;
}

void sq_recipe_free(sq_recipe *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_overrides; i++) {
        free(r->overrides[i].match);
        if (r->overrides[i].is_regex)
            regfree(&r->overrides[i].re);
    }
    free(r->overrides);
    free(r->name);
    free(r->source);
    memset(r, 0, sizeof *r);
}

/* ---- parsing helpers ---- */

/* Refuse keys not in `allowed` (NULL-terminated), naming the section. */
static int check_keys(const yt_node *map, const char *section, const char *const *allowed,
                      sq_err *err)
{
    for (size_t i = 0; i < yt_len(map); i++) {
        const yt_node *k = yt_key_at(map, i);
        bool known = false;
        for (size_t j = 0; allowed[j] && !known; j++)
            known = strcmp(allowed[j], yt_scalar(k)) == 0;
        if (known)
            continue;
        char list[512];
        size_t len = 0;
        list[0] = '\0';
        for (size_t j = 0; allowed[j] && len < sizeof list; j++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                    allowed[j]);
        return yt_error(k, err, "unknown key '%s' in %s (expected: %s)", yt_scalar(k), section,
                        list);
    }
    return 0;
}

/* A section that must be a mapping when present; NULL when absent. */
static int get_section(const yt_node *root, const char *key, const yt_node **out, sq_err *err)
{
    *out = yt_get(root, key);
    if (*out && yt_expect(*out, YT_MAPPING, key, err) != 0)
        return -1;
    return 0;
}

/* An int key in [lo, hi]; out untouched when absent. */
static int get_int(const yt_node *map, const char *key, int lo, int hi, int *out, sq_err *err)
{
    int64_t v;
    int rc = yt_get_int64(map, key, lo, hi, &v, err);
    if (rc == 0)
        *out = (int)v;
    return rc < 0 ? -1 : 0;
}

static int get_bool(const yt_node *map, const char *key, bool *out, bool *set, sq_err *err)
{
    int rc = yt_get_bool(map, key, out, err);
    if (rc == 0 && set)
        *set = true;
    return rc < 0 ? -1 : 0;
}

static int parse_qtype(const yt_node *n, const char *what, sq_qtype *out, sq_err *err)
{
    const char *s;
    if (yt_as_string(n, what, &s, err) != 0)
        return -1;
    /* only types the executor runs: a model of any other could not be loaded */
    if (sq_qtype_parse(s, out) == 0 && sq_qtype_get(*out)->executable)
        return 0;
    char list[128];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < SQ_QT_COUNT && len < sizeof list; i++)
        if (sq_qtype_get((sq_qtype)i)->executable)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                    sq_qtype_get((sq_qtype)i)->name);
    return yt_error(n, err, "unknown weight type '%s' (expected: %s)", s, list);
}

static int parse_alpha(const yt_node *n, sq_alpha *out, sq_err *err)
{
    if (yt_kind_of(n) == YT_SCALAR && strcmp(yt_scalar(n), "auto") == 0) {
        out->is_auto = true;
        out->value = DEFAULT_ALPHA;
        return 0;
    }
    double v;
    if (yt_kind_of(n) != YT_SCALAR || yt_as_double(n, "alpha", 0.0, 1.0, &v, err) != 0)
        return yt_error(n, err, "'alpha' must be a number in [0, 1] or auto");
    out->is_auto = false;
    out->value = v;
    return 0;
}

/* ---- sections ---- */

static int parse_model(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"architecture", "hidden", "layers", "heads",
                                       "ffn", "pooling", "normalize", NULL};
    if (check_keys(m, "model", keys, err) != 0)
        return -1;
    const yt_node *arch = yt_get(m, "architecture");
    if (arch) {
        const char *s;
        if (yt_as_string(arch, "architecture", &s, err) != 0)
            return -1;
        if (strcmp(s, "bert") != 0 && strcmp(s, "t2t") != 0 && strcmp(s, "mpnet") != 0 &&
            strcmp(s, "nomic_bert") != 0 && strcmp(s, "llama") != 0 && strcmp(s, "qwen3") != 0)
            return yt_error(arch, err,
                            "unsupported architecture '%s' (expected: bert, t2t, mpnet, "
                            "nomic_bert, llama, qwen3)",
                            s);
        snprintf(r->architecture, sizeof r->architecture, "%s", s);
    }
    if (get_int(m, "hidden", 1, SQ_MAX_HIDDEN, &r->hidden, err) != 0 ||
        get_int(m, "layers", 1, SQ_MAX_LAYERS, &r->layers, err) != 0 ||
        get_int(m, "heads", 1, SQ_MAX_HIDDEN, &r->heads, err) != 0 ||
        get_int(m, "ffn", 1, SQ_MAX_FFN, &r->ffn, err) != 0)
        return -1;
    if (r->hidden && r->heads && r->hidden % r->heads != 0)
        return yt_error(yt_get(m, "heads"), err, "'heads' (%d) must divide 'hidden' (%d)",
                        r->heads, r->hidden);
    const yt_node *pool = yt_get(m, "pooling");
    if (pool) {
        const char *s;
        if (yt_as_string(pool, "pooling", &s, err) != 0)
            return -1;
        if (sq_pooling_parse(s, &r->pooling) != 0)
            return yt_error(pool, err, "unknown pooling '%s' (expected: cls, mean)", s);
        r->set_pooling = true;
    }
    return get_bool(m, "normalize", &r->normalize, &r->set_normalize, err);
}

static int parse_observer(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"method", "percentile", "skip_zeros", "zero_point",
                                       "guard", NULL};
    if (check_keys(m, "observer", keys, err) != 0)
        return -1;
    const yt_node *method = yt_get(m, "method");
    if (method) {
        const char *s;
        if (yt_as_string(method, "method", &s, err) != 0)
            return -1;
        sq_err ignored;
        if (sq_calib_method_parse(s, &r->observer, &ignored) != 0)
            return yt_error(method, err,
                            "unknown observer method '%s' (expected: minmax, percentile, "
                            "entropy, mse)",
                            s);
    }
    const yt_node *pct = yt_get(m, "percentile");
    if (pct) {
        if (r->observer != SQ_CALIB_PERCENTILE)
            return yt_error(pct, err,
                            "'percentile' applies only to method percentile (method is %s)",
                            sq_calib_method_name(r->observer));
        /* (0, 100]: yt_as_double checks a closed range, so refuse 0 apart */
        double v;
        if (yt_as_double(pct, "percentile", 0.0, 100.0, &v, err) != 0 || v <= 0.0)
            return yt_error(pct, err, "'percentile' must be a number in (0, 100]");
        r->percentile = v;
    }
    const yt_node *sz = yt_get(m, "skip_zeros");
    if (sz && !observer_takes_skip_zeros(r->observer))
        return yt_error(sz, err,
                        "'skip_zeros' applies only to methods percentile and entropy "
                        "(method is %s)",
                        sq_calib_method_name(r->observer));
    if (get_bool(m, "skip_zeros", &r->skip_zeros, NULL, err) != 0)
        return -1;
    const yt_node *g = yt_get(m, "guard");
    if (g) {
        const char *s;
        if (yt_as_string(g, "guard", &s, err) != 0)
            return -1;
        if (strcmp(s, "row") && strcmp(s, "clip"))
            return yt_error(g, err, "unknown guard '%s' (expected: row, clip)", s);
        r->guard_rows = strcmp(s, "row") == 0;
    }
    return get_bool(m, "zero_point", &r->zero_point, NULL, err);
}

static int parse_inputs(const yt_node *seq, bool inputs[SQ_LIN_KINDS], sq_err *err)
{
    if (yt_expect(seq, YT_SEQUENCE, "inputs", err) != 0)
        return -1;
    for (int k = 0; k < SQ_LIN_KINDS; k++)
        inputs[k] = false;
    for (size_t i = 0; i < yt_len(seq); i++) {
        const yt_node *item = yt_at(seq, i);
        const char *s;
        sq_linear_kind kind;
        if (yt_as_string(item, "inputs item", &s, err) != 0)
            return -1;
        if (sq_linear_kind_parse(s, &kind) != 0)
            return yt_error(item, err,
                            "unknown linear kind '%s' (expected: qkv, attn_out, ffn_up, ffn_down, "
                            "res)",
                            s);
        if (inputs[kind])
            return yt_error(item, err, "linear kind '%s' is listed twice", s);
        inputs[kind] = true;
    }
    return 0;
}

static int parse_smoothquant(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"enabled", "alpha", "auto_step", "inputs", NULL};
    if (check_keys(m, "smoothquant", keys, err) != 0 ||
        get_bool(m, "enabled", &r->sq_enabled, NULL, err) != 0)
        return -1;
    const yt_node *alpha = yt_get(m, "alpha");
    if (alpha && parse_alpha(alpha, &r->sq_alpha, err) != 0)
        return -1;
    const yt_node *step = yt_get(m, "auto_step");
    if (step && yt_as_double(step, "auto_step", AUTO_STEP_MIN, AUTO_STEP_MAX, &r->sq_auto_step,
                             err) != 0)
        return -1;
    const yt_node *inputs = yt_get(m, "inputs");
    return inputs ? parse_inputs(inputs, r->sq_inputs, err) : 0;
}

static int parse_weights(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"type", "int4_scale_search", "int4_rounding", NULL};
    if (check_keys(m, "weights", keys, err) != 0)
        return -1;
    const yt_node *type = yt_get(m, "type");
    if (type && parse_qtype(type, "type", &r->weight_type, err) != 0)
        return -1;
    const yt_node *rounding = yt_get(m, "int4_rounding");
    if (rounding) {
        const char *s;
        if (yt_as_string(rounding, "int4_rounding", &s, err) != 0)
            return -1;
        if (strcmp(s, "gptq") != 0 && strcmp(s, "nearest") != 0)
            return yt_error(rounding, err, "unknown int4_rounding '%s' (expected: nearest, gptq)",
                            s);
        r->int4_gptq = strcmp(s, "gptq") == 0;
    }
    return get_bool(m, "int4_scale_search", &r->int4_scale_search, NULL, err);
}

static int parse_outliers(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"enabled", "ratio", "max_channels", NULL};
    if (check_keys(m, "outliers", keys, err) != 0 ||
        get_bool(m, "enabled", &r->outl_enabled, NULL, err) != 0 ||
        get_int(m, "max_channels", 1, SQ_RECIPE_MAX_OUTLIERS, &r->outl_max, err) != 0)
        return -1;
    return yt_get_double(m, "ratio", 2.0, 1000.0, &r->outl_ratio, err) < 0 ? -1 : 0;
}

/* Compile a "re:" pattern; matching is anchored at both ends (see
 * sq_recipe_override_matches), so the pattern is compiled as written. */
static int compile_match(const yt_node *n, sq_recipe_override *o, sq_err *err)
{
    const char *s = yt_scalar(n);
    if (s[0] == '\0')
        return yt_error(n, err, "'match' must not be empty");
    if (strncmp(s, "re:", 3) != 0)
        return 0;
    if (s[3] == '\0')
        return yt_error(n, err, "'match' has an empty regex after 're:'");
    /* glibc's regcomp copies the parse tree for each repetition operator, so
     * stacked repetitions ("a++++...") grow memory exponentially: a recipe
     * from a stranger could exhaust memory. Linear names are short; bound the
     * pattern and its repetitions, and refuse a repetition of a repetition. */
    size_t len = strlen(s + 3);
    if (len > SQ_RECIPE_MAX_REGEX)
        return yt_error(n, err, "regex in 'match' is longer than %d bytes", SQ_RECIPE_MAX_REGEX);
    int reps = 0;
    /* Per open group: does it hold a repetition? A repetition of a group
     * that does ("((l{1,100}){1,100}){1,100}") multiplies the copies, so it
     * is refused like a repetition of a repetition. */
    bool group_rep[SQ_RECIPE_MAX_REGEX + 1] = {false};
    int depth = 0;
    bool closed_rep = false; /* the group that just closed held a repetition */
    bool after_rep = false;  /* the previous token was a repetition operator */
    for (size_t i = 3; s[i]; i++) {
        bool was_rep = after_rep;
        after_rep = false;
        if (s[i] == '\\' && s[i + 1]) { /* an escaped character is a literal */
            i++;
            closed_rep = false;
            continue;
        }
        if (s[i] == '[') { /* a bracket expression: its characters are literals */
            size_t j = i + 1;
            if (s[j] == '^')
                j++;
            if (s[j] == ']')
                j++;
            while (s[j] && s[j] != ']')
                j++;
            if (!s[j])
                break; /* unterminated: regcomp reports it */
            i = j;
            closed_rep = false;
            continue;
        }
        if (s[i] == '(') {
            group_rep[++depth] = false;
            closed_rep = false;
            continue;
        }
        if (s[i] == ')') {
            closed_rep = depth > 0 && group_rep[depth];
            if (depth > 0) {
                depth--;
                group_rep[depth] |= closed_rep; /* the enclosing group holds it too */
            }
            continue;
        }
        bool rep = s[i] == '+' || s[i] == '*' || s[i] == '?' || s[i] == '{';
        if (!rep) {
            closed_rep = false;
            continue;
        }
        char prev = s[i - 1];
        after_rep = was_rep;
        if (++reps > SQ_RECIPE_MAX_REGEX_REPS)
            return yt_error(n, err, "regex in 'match' has more than %d repetition operators",
                            SQ_RECIPE_MAX_REGEX_REPS);
        if (after_rep)
            return yt_error(n, err, "regex in 'match' repeats a repetition ('%c%c')", prev, s[i]);
        if (prev == ')' && closed_rep)
            return yt_error(n, err, "regex in 'match' repeats a group that holds a repetition");
        group_rep[depth] = true;
        closed_rep = false;
        if (s[i] == '{') { /* skip the bound, {m}, {m,} or {m,n} */
            while (s[i] && s[i] != '}')
                i++;
            if (!s[i])
                break;
        }
        after_rep = true;
        continue;
    }
    int rc = regcomp(&o->re, s + 3, REG_EXTENDED);
    if (rc != 0) {
        char why[200];
        regerror(rc, &o->re, why, sizeof why);
        return yt_error(n, err, "bad regex '%s' in 'match': %s", s + 3, why);
    }
    o->is_regex = true;
    return 0;
}

static int parse_override(const yt_node *item, const sq_recipe *r, sq_recipe_override *o,
                          sq_err *err)
{
    static const char *const keys[] = {"match", "type", "smoothquant", "alpha", NULL};
    if (yt_expect(item, YT_MAPPING, "overrides item", err) != 0 ||
        check_keys(item, "an override", keys, err) != 0)
        return -1;
    o->line = yt_line(item);
    o->col = yt_col(item);
    const yt_node *match = yt_require(item, "match", err);
    const char *s;
    if (!match || yt_as_string(match, "match", &s, err) != 0)
        return -1;
    o->match = strdup(s);
    if (!o->match)
        return yt_error(match, err, "out of memory");
    if (compile_match(match, o, err) != 0)
        return -1;
    const yt_node *type = yt_get(item, "type");
    if (type) {
        if (parse_qtype(type, "type", &o->type, err) != 0)
            return -1;
        o->set_type = true;
    }
    if (get_bool(item, "smoothquant", &o->smooth, &o->set_smooth, err) != 0)
        return -1;
    const yt_node *alpha = yt_get(item, "alpha");
    if (alpha) {
        if (parse_alpha(alpha, &o->alpha, err) != 0)
            return -1;
        o->set_alpha = true;
    }
    if (!o->set_type && !o->set_smooth && !o->set_alpha)
        return yt_error(item, err, "override '%s' sets nothing (give type, smoothquant or alpha)",
                        o->match);
    /* Turning smoothing on per linear while it is off globally would be
     * ignored silently otherwise. */
    if (!r->sq_enabled && ((o->set_smooth && o->smooth) || o->set_alpha))
        return yt_error(o->set_alpha ? alpha : yt_get(item, "smoothquant"), err,
                        "override '%s' sets smoothquant options but smoothquant.enabled is false",
                        o->match);
    return 0;
}

static int parse_overrides(const yt_node *seq, sq_recipe *r, sq_err *err)
{
    if (yt_expect(seq, YT_SEQUENCE, "overrides", err) != 0)
        return -1;
    size_t n = yt_len(seq);
    if (n == 0)
        return 0;
    r->overrides = calloc(n, sizeof *r->overrides);
    if (!r->overrides)
        return yt_error(seq, err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        /* count it first so sq_recipe_free releases a half-built entry */
        r->n_overrides = i + 1;
        if (parse_override(yt_at(seq, i), r, &r->overrides[i], err) != 0)
            return -1;
    }
    return 0;
}

static int parse_gates(const yt_node *m, sq_recipe *r, sq_err *err)
{
    const char *keys[SQ_GATE_COUNT + 2];
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        keys[i] = gate_table[i].name;
    keys[SQ_GATE_COUNT] = "topk_k";
    keys[SQ_GATE_COUNT + 1] = NULL;
    if (check_keys(m, "gates", keys, err) != 0)
        return -1;
    for (int i = 0; i < SQ_GATE_COUNT; i++) {
        const sq_gate_info *g = &gate_table[i];
        int rc = yt_get_double(m, g->name, g->lo, g->hi, &r->gates.threshold[i], err);
        if (rc < 0)
            return -1;
        r->gates.set[i] = rc == 0;
    }
    return get_int(m, "topk_k", 1, TOPK_MAX, &r->gates.topk_k, err);
}

static int parse_attention(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"matmul", NULL};
    if (check_keys(m, "attention", keys, err) != 0)
        return -1;
    const yt_node *mm = yt_get(m, "matmul");
    if (!mm)
        return 0;
    const char *s;
    if (yt_as_string(mm, "matmul", &s, err) != 0)
        return -1;
    if (sq_attn_matmul_parse(s, &r->attn_matmul) != 0)
        return yt_error(mm, err, "unknown attention matmul '%s' (expected: %s)", s,
                        sq_attn_matmul_names());
    return 0;
}

/* classifier: a causal LM's classifier (the lm_head), fp32 or int8 (per
 * output channel, dynamic per-token activations; SQM.md 10.6). */
static int parse_classifier(const yt_node *m, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"type", NULL};
    if (check_keys(m, "classifier", keys, err) != 0)
        return -1;
    const yt_node *t = yt_get(m, "type");
    if (!t)
        return 0;
    const char *s;
    if (yt_as_string(t, "type", &s, err) != 0)
        return -1;
    if (strcmp(s, "fp32") != 0 && strcmp(s, "int8") != 0)
        return yt_error(t, err, "unknown classifier type '%s' (expected: fp32, int8)", s);
    r->classifier_type = strcmp(s, "int8") == 0 ? SQ_QT_S8 : SQ_QT_F32;
    return 0;
}

static int parse_root(const yt_node *root, sq_recipe *r, sq_err *err)
{
    static const char *const keys[] = {"version",  "name",    "model",     "observer",
                                       "smoothquant", "outliers", "weights", "attention",
                                       "classifier", "overrides", "gates", NULL};
    if (yt_expect(root, YT_MAPPING, "recipe", err) != 0 ||
        check_keys(root, "the recipe", keys, err) != 0)
        return -1;
    const yt_node *ver = yt_get(root, "version");
    if (ver) {
        int64_t v;
        if (yt_as_int64(ver, "version", 1, INT_MAX, &v, err) != 0)
            return -1;
        if (v != SQ_RECIPE_VERSION)
            return yt_error(ver, err, "unsupported recipe version %lld (this squint reads %d)",
                            (long long)v, SQ_RECIPE_VERSION);
    }
    const yt_node *name = yt_get(root, "name");
    if (name) {
        const char *s;
        if (yt_as_string(name, "name", &s, err) != 0)
            return -1;
        if (!(r->name = strdup(s)))
            return yt_error(name, err, "out of memory");
    }
    const yt_node *sec;
    if (get_section(root, "model", &sec, err) != 0 || (sec && parse_model(sec, r, err) != 0))
        return -1;
    if (get_section(root, "observer", &sec, err) != 0 ||
        (sec && parse_observer(sec, r, err) != 0))
        return -1;
    if (get_section(root, "smoothquant", &sec, err) != 0 ||
        (sec && parse_smoothquant(sec, r, err) != 0))
        return -1;
    if (get_section(root, "outliers", &sec, err) != 0 ||
        (sec && parse_outliers(sec, r, err) != 0))
        return -1;
    if (get_section(root, "weights", &sec, err) != 0 || (sec && parse_weights(sec, r, err) != 0))
        return -1;
    if (get_section(root, "attention", &sec, err) != 0 ||
        (sec && parse_attention(sec, r, err) != 0))
        return -1;
    if (get_section(root, "classifier", &sec, err) != 0 ||
        (sec && parse_classifier(sec, r, err) != 0))
        return -1;
    /* after smoothquant: overrides are checked against smoothquant.enabled */
    const yt_node *ov = yt_get(root, "overrides");
    if (ov && parse_overrides(ov, r, err) != 0)
        return -1;
    if (get_section(root, "gates", &sec, err) != 0 || (sec && parse_gates(sec, r, err) != 0))
        return -1;
    return 0;
}

int sq_recipe_load_buffer(const char *text, size_t len, const char *name, sq_recipe *r,
                          sq_err *err)
{
    if (sq_recipe_default(r) != 0)
        return sq_err_set(err, "%s: out of memory", name);
    free(r->source);
    r->source = strdup(name);
    if (!r->source) {
        sq_recipe_free(r);
        return sq_err_set(err, "%s: out of memory", name);
    }
    if (len > RECIPE_MAX_BYTES) {
        sq_recipe_free(r);
        return sq_err_set(err, "%s: %zu bytes is too large for a recipe (limit %zu)", name, len,
                          RECIPE_MAX_BYTES);
    }
    yt_doc *doc = yt_parse_buffer(text, len, name, err);
    if (!doc) {
        sq_recipe_free(r);
        return -1;
    }
    int rc;
    if (!yt_root(doc))
        rc = sq_err_set(err, "%s:1:1: empty recipe (expected a mapping of: version, name, model, "
                             "observer, smoothquant, weights, overrides, gates)",
                        name);
    else
        rc = parse_root(yt_root(doc), r, err);
    yt_free(doc);
    if (rc != 0)
        sq_recipe_free(r);
    return rc;
}

int sq_recipe_load_file(const char *path, sq_recipe *r, sq_err *err)
{
    char *text;
    size_t len;
    memset(r, 0, sizeof *r);
    if (sq_read_regular_file(path, RECIPE_MAX_BYTES, &text, &len, err) != 0)
        return -1;
    int rc = sq_recipe_load_buffer(text, len, path, r, err);
    free(text);
    return rc;
}

/* ---- equality ---- */

static bool alpha_equal(sq_alpha a, sq_alpha b)
{
    return a.is_auto == b.is_auto && (a.is_auto || a.value == b.value);
}

static bool str_equal(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool override_equal(const sq_recipe_override *a, const sq_recipe_override *b)
{
    return strcmp(a->match, b->match) == 0 && a->set_type == b->set_type &&
           (!a->set_type || a->type == b->type) && a->set_smooth == b->set_smooth &&
           (!a->set_smooth || a->smooth == b->smooth) && a->set_alpha == b->set_alpha &&
           (!a->set_alpha || alpha_equal(a->alpha, b->alpha));
}

bool sq_recipe_equal(const sq_recipe *a, const sq_recipe *b)
{
    if (a->version != b->version || !str_equal(a->name, b->name) ||
        strcmp(a->architecture, b->architecture) != 0 || a->hidden != b->hidden ||
        a->layers != b->layers || a->heads != b->heads || a->ffn != b->ffn ||
        a->set_pooling != b->set_pooling || (a->set_pooling && a->pooling != b->pooling) ||
        a->set_normalize != b->set_normalize ||
        (a->set_normalize && a->normalize != b->normalize))
        return false;
    if (a->observer != b->observer || a->percentile != b->percentile ||
        a->skip_zeros != b->skip_zeros || a->zero_point != b->zero_point ||
        a->guard_rows != b->guard_rows)
        return false;
    if (a->sq_enabled != b->sq_enabled || !alpha_equal(a->sq_alpha, b->sq_alpha) ||
        a->sq_auto_step != b->sq_auto_step ||
        memcmp(a->sq_inputs, b->sq_inputs, sizeof a->sq_inputs) != 0)
        return false;
    if (a->outl_enabled != b->outl_enabled || a->outl_ratio != b->outl_ratio ||
        a->outl_max != b->outl_max)
        return false;
    if (a->weight_type != b->weight_type || a->int4_scale_search != b->int4_scale_search ||
        a->int4_gptq != b->int4_gptq || a->attn_matmul != b->attn_matmul ||
        a->classifier_type != b->classifier_type)
        return false;
    if (a->n_overrides != b->n_overrides)
        return false;
    for (size_t i = 0; i < a->n_overrides; i++)
        if (!override_equal(&a->overrides[i], &b->overrides[i]))
            return false;
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        if (a->gates.set[i] != b->gates.set[i] ||
            (a->gates.set[i] && a->gates.threshold[i] != b->gates.threshold[i]))
            return false;
    return a->gates.topk_k == b->gates.topk_k;
}

/* ---- canonical YAML ---- */

/* Shortest "%.*g" that reads back to exactly v (the C locale is in force). */
static void put_number(sq_strbuf *sb, double v)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    sq_sb_printf(sb, "%s", buf);
}

static void put_alpha(sq_strbuf *sb, sq_alpha a)
{
    if (a.is_auto)
        sq_sb_printf(sb, "auto");
    else
        put_number(sb, a.value);
}

static bool put_string(sq_strbuf *sb, const char *s)
{
    char *q = yt_quote_alloc(s);
    if (!q)
        return false;
    sq_sb_printf(sb, "%s", q);
    free(q);
    return true;
}

static const char *bool_name(bool b)
{
    return b ? "true" : "false";
}

static bool write_yaml(sq_strbuf *sb, const sq_recipe *r)
{
    sq_sb_printf(sb, "version: %d\n", r->version);
    if (r->name) {
        sq_sb_printf(sb, "name: ");
        if (!put_string(sb, r->name))
            return false;
        sq_sb_printf(sb, "\n");
    }
    if (r->architecture[0] || r->hidden || r->layers || r->heads || r->ffn || r->set_pooling ||
        r->set_normalize)
        sq_sb_printf(sb, "model:\n");
    if (r->architecture[0])
        sq_sb_printf(sb, "  architecture: %s\n", r->architecture);
    if (r->hidden)
        sq_sb_printf(sb, "  hidden: %d\n", r->hidden);
    if (r->layers)
        sq_sb_printf(sb, "  layers: %d\n", r->layers);
    if (r->heads)
        sq_sb_printf(sb, "  heads: %d\n", r->heads);
    if (r->ffn)
        sq_sb_printf(sb, "  ffn: %d\n", r->ffn);
    if (r->set_pooling)
        sq_sb_printf(sb, "  pooling: %s\n", sq_pooling_name(r->pooling));
    if (r->set_normalize)
        sq_sb_printf(sb, "  normalize: %s\n", bool_name(r->normalize));

    sq_sb_printf(sb, "observer:\n  method: %s\n", sq_calib_method_name(r->observer));
    if (r->observer == SQ_CALIB_PERCENTILE) {
        sq_sb_printf(sb, "  percentile: ");
        put_number(sb, r->percentile);
        sq_sb_printf(sb, "\n");
    }
    if (observer_takes_skip_zeros(r->observer))
        sq_sb_printf(sb, "  skip_zeros: %s\n", bool_name(r->skip_zeros));
    sq_sb_printf(sb, "  zero_point: %s\n", bool_name(r->zero_point));
    sq_sb_printf(sb, "  guard: %s\n", r->guard_rows ? "row" : "clip");

    sq_sb_printf(sb, "smoothquant:\n  enabled: %s\n  alpha: ", bool_name(r->sq_enabled));
    put_alpha(sb, r->sq_alpha);
    sq_sb_printf(sb, "\n  auto_step: ");
    put_number(sb, r->sq_auto_step);
    sq_sb_printf(sb, "\n  inputs: [");
    const char *sep = "";
    for (int k = 0; k < SQ_LIN_KINDS; k++)
        if (r->sq_inputs[k]) {
            sq_sb_printf(sb, "%s%s", sep, sq_linear_kind_name((sq_linear_kind)k));
            sep = ", ";
        }
    sq_sb_printf(sb, "]\n");

    sq_sb_printf(sb, "outliers:\n  enabled: %s\n  ratio: ", bool_name(r->outl_enabled));
    put_number(sb, r->outl_ratio);
    sq_sb_printf(sb, "\n  max_channels: %d\n", r->outl_max);

    sq_sb_printf(sb, "weights:\n  type: %s\n  int4_scale_search: %s\n",
                 sq_qtype_get(r->weight_type)->name, bool_name(r->int4_scale_search));
    if (r->int4_gptq) /* written only when set: recipes without it print as before */
        sq_sb_printf(sb, "  int4_rounding: gptq\n");
    if (r->attn_matmul != SQ_ATTN_F32) /* likewise */
        sq_sb_printf(sb, "attention:\n  matmul: %s\n", sq_attn_matmul_name(r->attn_matmul));
    if (r->classifier_type != SQ_QT_F32) /* likewise */
        sq_sb_printf(sb, "classifier:\n  type: %s\n", sq_qtype_get(r->classifier_type)->name);

    sq_sb_printf(sb, "overrides:%s\n", r->n_overrides ? "" : " []");
    for (size_t i = 0; i < r->n_overrides; i++) {
        const sq_recipe_override *o = &r->overrides[i];
        sq_sb_printf(sb, "  - match: ");
        if (!put_string(sb, o->match))
            return false;
        sq_sb_printf(sb, "\n");
        if (o->set_type)
            sq_sb_printf(sb, "    type: %s\n", sq_qtype_get(o->type)->name);
        if (o->set_smooth)
            sq_sb_printf(sb, "    smoothquant: %s\n", bool_name(o->smooth));
        if (o->set_alpha) {
            sq_sb_printf(sb, "    alpha: ");
            put_alpha(sb, o->alpha);
            sq_sb_printf(sb, "\n");
        }
    }

    sq_sb_printf(sb, "gates:\n");
    for (int i = 0; i < SQ_GATE_COUNT; i++)
        if (r->gates.set[i]) {
            sq_sb_printf(sb, "  %s: ", gate_table[i].name);
            put_number(sb, r->gates.threshold[i]);
            sq_sb_printf(sb, "\n");
        }
    sq_sb_printf(sb, "  topk_k: %d\n", r->gates.topk_k);
    return true;
}

char *sq_recipe_to_yaml(const sq_recipe *r)
{
    /* Numbers are written with '.' whatever LC_NUMERIC the program set. */
    locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_loc)
        return NULL;
    locale_t old = uselocale(c_loc);
    sq_strbuf sb = {0};
    bool ok = write_yaml(&sb, r);
    uselocale(old);
    freelocale(c_loc);
    if (!ok || sb.failed) {
        sq_sb_free(&sb);
        return NULL;
    }
    return sb.s;
}

/* ---- resolution ---- */

bool sq_recipe_override_matches(const sq_recipe_override *o, const char *linear_name)
{
    if (!o->is_regex)
        return fnmatch(o->match, linear_name, 0) == 0;
    /* Anchored: POSIX regexec finds the leftmost-longest match, so the
     * pattern matches the whole name iff that match spans it. Wrapping the
     * pattern in ^(...)$ instead would change the meaning of patterns with a
     * stray ')', which glibc reads as a literal. */
    regmatch_t m;
    if (regexec(&o->re, linear_name, 1, &m, 0) != 0)
        return false;
    return m.rm_so == 0 && (size_t)m.rm_eo == strlen(linear_name);
}

int sq_recipe_resolve(const sq_recipe *r, const char *linear_name, sq_resolved_linear *out,
                      sq_err *err)
{
    int layer;
    sq_linear_kind kind;
    if (sq_linear_name_parse(linear_name, &layer, &kind) != 0)
        return sq_err_set(err, "'%s' is not a linear name (layer.<i>.<kind>)", linear_name);
    out->qtype = r->weight_type;
    out->smooth = r->sq_enabled && r->sq_inputs[kind];
    out->alpha = r->sq_alpha;
    out->last_override = -1;
    for (size_t i = 0; i < r->n_overrides; i++) {
        const sq_recipe_override *o = &r->overrides[i];
        if (!sq_recipe_override_matches(o, linear_name))
            continue;
        if (o->set_type)
            out->qtype = o->type;
        if (o->set_smooth)
            out->smooth = o->smooth;
        if (o->set_alpha)
            out->alpha = o->alpha;
        out->last_override = (int)i;
    }
    /* an fp32 linear does not quantize its input: nothing to smooth */
    if (out->qtype == SQ_QT_F32)
        out->smooth = false;
    return 0;
}

int sq_recipe_check_overrides(const sq_recipe *r, const char *const *names, size_t n,
                              bool strict, sq_recipe_warn_fn warn, void *warn_ctx, sq_err *err)
{
    int unmatched = 0;
    for (size_t i = 0; i < r->n_overrides; i++) {
        const sq_recipe_override *o = &r->overrides[i];
        bool hit = false;
        for (size_t j = 0; j < n && !hit; j++)
            hit = sq_recipe_override_matches(o, names[j]);
        if (hit)
            continue;
        unmatched++;
        sq_err e;
        if (o->line > 0)
            sq_err_set(&e, "%s:%d:%d: override '%s' matches no linear of the model", r->source,
                       o->line, o->col, o->match);
        else
            sq_err_set(&e, "override '%s' matches no linear of the model", o->match);
        if (strict) {
            *err = e;
            return -1;
        }
        if (warn)
            warn(warn_ctx, e.msg);
    }
    return unmatched;
}

int sq_recipe_check_overrides_layers(const sq_recipe *r, int layers, bool strict,
                                     sq_recipe_warn_fn warn, void *warn_ctx, sq_err *err)
{
    if (layers < 0 || layers > MAX_LAYER_INDEX + 1)
        return sq_err_set(err, "bad layer count %d", layers);
    size_t n = (size_t)layers * SQ_LIN_KINDS;
    char (*buf)[32] = malloc((n ? n : 1) * sizeof *buf);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!buf || !names) {
        free(buf);
        free(names);
        return sq_err_set(err, "out of memory");
    }
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            size_t i = (size_t)l * SQ_LIN_KINDS + (size_t)k;
            sq_linear_name(buf[i], sizeof buf[i], l, (sq_linear_kind)k);
            names[i] = buf[i];
        }
    int rc = sq_recipe_check_overrides(r, names, n, strict, warn, warn_ctx, err);
    free(names);
    free(buf);
    return rc;
}

/* ---- model section ---- */

static int check_dim(const sq_recipe *r, const char *what, int want, int have, sq_err *err)
{
    if (want == 0 || want == have)
        return 0;
    return sq_err_set(err, "%s: the recipe expects %s %d, the model has %d", r->source, what, want,
                      have);
}

int sq_recipe_check_model(const sq_recipe *r, const sq_bert_config *cfg, sq_err *err)
{
    if (r->architecture[0] && strcmp(r->architecture, sq_architecture_name(cfg)) != 0)
        return sq_err_set(err, "%s: the recipe is for architecture %s, the model is %s", r->source,
                          r->architecture, sq_architecture_name(cfg));
    if (check_dim(r, "hidden", r->hidden, cfg->hidden, err) != 0 ||
        check_dim(r, "layers", r->layers, cfg->layers, err) != 0 ||
        check_dim(r, "heads", r->heads, cfg->heads, err) != 0 ||
        check_dim(r, "ffn", r->ffn, cfg->ffn, err) != 0)
        return -1;
    return 0;
}

void sq_recipe_apply_pooling(const sq_recipe *r, sq_pooling_config *pc)
{
    if (r->set_pooling)
        pc->pooling = r->pooling;
    if (r->set_normalize)
        pc->normalize = r->normalize;
}

/* A plain decimal number, read in the C locale (no inf, nan or hex). */
static bool parse_plain_number(const char *s, double *out)
{
    if (!*s || strspn(s, "0123456789.eE+-") != strlen(s))
        return false;
    locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_loc)
        return false;
    char *end;
    *out = strtod_l(s, &end, c_loc);
    freelocale(c_loc);
    return *end == '\0' && isfinite(*out);
}

int sq_recipe_set_gate(sq_recipe *r, const char *spec, sq_err *err)
{
    const char *eq = strchr(spec, '=');
    if (!eq)
        return sq_err_set(err, "gate '%s': expected NAME=VALUE", spec);
    size_t nlen = (size_t)(eq - spec);
    double v;
    bool num = parse_plain_number(eq + 1, &v);
    if (nlen == 6 && strncmp(spec, "topk_k", 6) == 0) {
        if (!num || v != floor(v) || v < 1 || v > TOPK_MAX)
            return sq_err_set(err, "gate '%s': 'topk_k' must be an integer in [1, %d]", spec,
                              TOPK_MAX);
        r->gates.topk_k = (int)v;
        return 0;
    }
    for (int i = 0; i < SQ_GATE_COUNT; i++) {
        const sq_gate_info *g = &gate_table[i];
        if (strlen(g->name) != nlen || strncmp(spec, g->name, nlen) != 0)
            continue;
        if (!num || v < g->lo || v > g->hi)
            return sq_err_set(err, "gate '%s': '%s' must be a number in [%g, %g]", spec, g->name,
                              g->lo, g->hi);
        r->gates.set[i] = true;
        r->gates.threshold[i] = v;
        return 0;
    }
    return sq_err_set(err,
                      "gate '%s': unknown gate (expected: cos_mean, cos_min, centred_cos_mean, "
                      "topk_overlap, stsb_spearman_drop, ndcg10_drop, max_accuracy_drop, topk_k)",
                      spec);
}

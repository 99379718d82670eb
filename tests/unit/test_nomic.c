/* NomicBERT: the rotary rotation against its formula (double precision),
 * its place in a packed batch (positions restart per sequence, v untouched,
 * the same bits at any thread count), NomicBERT's config.json (the values
 * squint runs, and every value it does not run refused with the file and
 * the key), and the .sqm config rows (rotary_base round trip, forged rows). */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_yaml.h"
#include "encoder_rope.h"
#include "hf_config.h"
#include "test_util.h"

static char *dir;
static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* x'[i] = x[i] cos(p w_i) - x[i + d/2] sin(p w_i), x'[i + d/2] = x[i + d/2]
 * cos + x[i] sin, w_i = base^(-2i/d): in double, within the float32 angle's
 * rounding (p * w_i rounded: about p * 6e-8 radians). */
START_TEST(rotation_formula)
{
    enum { HEADS = 3, D = 16 };
    const double base = 1000.0;
    const int pos[] = {0, 1, 2, 7, 100, 511, 2047, 8191};
    unsigned seed = 7;
    for (size_t pi = 0; pi < sizeof pos / sizeof *pos; pi++) {
        float x[HEADS * D], y[HEADS * D];
        for (int i = 0; i < HEADS * D; i++)
            x[i] = y[i] = frand(&seed);
        sq_rope_rotate_row(y, HEADS, D, pos[pi], base);
        const double tol = 1e-6 + 2e-7 * pos[pi];
        for (int h = 0; h < HEADS; h++)
            for (int i = 0; i < D / 2; i++) {
                const double w = pow(base, -2.0 * i / D), a = pos[pi] * w;
                const double x0 = x[h * D + i], x1 = x[h * D + i + D / 2];
                const double want0 = x0 * cos(a) - x1 * sin(a), want1 = x1 * cos(a) + x0 * sin(a);
                ck_assert_msg(fabs(y[h * D + i] - want0) <= tol &&
                                  fabs(y[h * D + i + D / 2] - want1) <= tol,
                              "pos %d head %d pair %d: (%.9g, %.9g), formula (%.9g, %.9g)",
                              pos[pi], h, i, y[h * D + i], y[h * D + i + D / 2], want0, want1);
            }
        if (pos[pi] == 0) /* angle 0: the identity, bit for bit */
            ck_assert(memcmp(x, y, sizeof x) == 0);
    }
    /* the frequencies: 1 for pair 0, then base^(-2i/d) */
    ck_assert(sq_rope_inv_freq(base, 0, D) == 1.0f);
    ck_assert(fabs(sq_rope_inv_freq(base, 4, D) - pow(base, -0.5)) < 1e-7);
}
END_TEST

/* A packed batch: each sequence's token t turns by t (not by its row in the
 * batch), v is untouched, and 1 or 4 threads give the same bytes. */
START_TEST(rotation_batch)
{
    enum { HEADS = 2, D = 8, W = HEADS * D, T = 9 };
    const int offsets[] = {0, 4, 9};
    float qkv[T * 3 * W], ref[T * 3 * W], again[T * 3 * W];
    unsigned seed = 3;
    for (int i = 0; i < T * 3 * W; i++)
        qkv[i] = ref[i] = frand(&seed);
    memcpy(again, qkv, sizeof qkv);
    omp_set_num_threads(1);
    sq_rope_batch(qkv, W, HEADS, offsets, 2, 1000.0);
    omp_set_num_threads(4);
    sq_rope_batch(again, W, HEADS, offsets, 2, 1000.0);
    ck_assert(memcmp(qkv, again, sizeof qkv) == 0);
    for (int s = 0; s < 2; s++)
        for (int t = offsets[s]; t < offsets[s + 1]; t++) {
            float q[W], k[W];
            memcpy(q, ref + t * 3 * W, sizeof q);
            memcpy(k, ref + t * 3 * W + W, sizeof k);
            sq_rope_rotate_row(q, HEADS, D, t - offsets[s], 1000.0);
            sq_rope_rotate_row(k, HEADS, D, t - offsets[s], 1000.0);
            ck_assert(memcmp(q, qkv + t * 3 * W, sizeof q) == 0);
            ck_assert(memcmp(k, qkv + t * 3 * W + W, sizeof k) == 0);
            ck_assert(memcmp(ref + t * 3 * W + 2 * W, qkv + t * 3 * W + 2 * W, W * 4) == 0);
        }
    /* the first token of the second sequence is at position 0: unchanged */
    ck_assert(memcmp(ref + 4 * 3 * W, qkv + 4 * 3 * W, 2 * W * 4) == 0);
}
END_TEST

static const char *good =
    "{\"model_type\":\"nomic_bert\",\"architectures\":[\"NomicBertModel\"],\"n_embd\":64,"
    "\"n_head\":4,\"n_layer\":2,\"n_inner\":100,\"n_positions\":8192,\"vocab_size\":1000,"
    "\"pad_vocab_size_multiple\":64,\"type_vocab_size\":2,\"pad_token_id\":0,"
    "\"layer_norm_epsilon\":1e-12,\"activation_function\":\"swiglu\",\"prenorm\":false,"
    "\"rotary_emb_fraction\":1.0,\"rotary_emb_base\":1000,\"rotary_emb_interleaved\":false,"
    "\"rotary_scaling_factor\":null,\"qkv_proj_bias\":false,\"mlp_fc1_bias\":false,"
    "\"mlp_fc2_bias\":false,\"causal\":false,\"scale_attn_weights\":true}";

START_TEST(config_good)
{
    char *p = tu_write_str(dir, "config.json", good);
    sq_bert_config c;
    sq_err err = {0};
    ck_assert_msg(sq_bert_config_load(p, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.hidden, 64);
    ck_assert_int_eq(c.ffn, 256);         /* n_inner rounded up to 256 as the gated MLP */
    ck_assert_int_eq(c.vocab_size, 1024); /* padded to pad_vocab_size_multiple */
    ck_assert_int_eq(c.act, SQ_ACT_SWIGLU);
    ck_assert_int_eq(c.positions, SQ_POS_ROTARY);
    ck_assert_int_eq(c.norm, SQ_NORM_POST);
    ck_assert(c.rotary_base == 1000.0);
    ck_assert(c.emb_ln);
    ck_assert_int_eq(sq_bert_max_tokens(&c), 8192); /* no table: n_positions */
    ck_assert_str_eq(sq_architecture_name(&c), "nomic_bert");
    free(p);
}
END_TEST

/* Replace `from` in the good config by `to`: loading must fail with a
 * message naming the file and `needle`. */
START_TEST(config_refusals)
{
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":-5", "rotary_emb_base -5"},
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":0", "rotary_emb_base 0"},
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":1", "rotary_emb_base 1 "},
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":1e300", "rotary_emb_base"},
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":\"1000\"", "rotary_emb_base"},
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":NaN", "config.json"},
        {"\"rotary_emb_base\":1000", "\"rotary_emb_base\":1e999", "config.json"},
        {"\"swiglu\"", "\"gelu\"", "activation_function \"gelu\""},
        {"\"swiglu\"", "\"geglu\"", "activation_function \"geglu\""},
        {"\"activation_function\":\"swiglu\",", "", "activation_function"},
        {"\"rotary_emb_interleaved\":false", "\"rotary_emb_interleaved\":true",
         "rotary_emb_interleaved"},
        {"\"rotary_scaling_factor\":null", "\"rotary_scaling_factor\":2.0",
         "rotary_scaling_factor"},
        {"\"prenorm\":false", "\"prenorm\":true", "prenorm"},
        {"\"qkv_proj_bias\":false", "\"qkv_proj_bias\":true", "qkv_proj_bias"},
        {"\"mlp_fc1_bias\":false,", "", "mlp_fc1_bias"}, /* NomicBertConfig's default: true */
        {"\"mlp_fc2_bias\":false", "\"mlp_fc2_bias\":true", "mlp_fc2_bias"},
        {"\"causal\":false", "\"causal\":true", "causal"},
        {"\"scale_attn_weights\":true", "\"scale_attn_weights\":false", "scale_attn_weights"},
        {"\"rotary_emb_fraction\":1.0", "\"rotary_emb_fraction\":0.5", "rotary_emb_fraction"},
        {"\"rotary_emb_fraction\":1.0,", "", "rotary_emb_fraction 0"},
        {"\"n_head\":4", "\"n_head\":5", "n_head 5"},
        {"\"n_head\":4", "\"n_head\":64", "even head size"}, /* head size 1 */
        {"\"n_embd\":64", "\"n_embd\":-64", "n_embd"},
        {"\"n_inner\":100", "\"n_inner\":0", "n_inner"},
        {"\"n_positions\":8192", "\"n_positions\":1", "n_positions"},
        {"\"n_positions\":8192,", "", "n_positions"},
        {"\"pad_token_id\":0", "\"pad_token_id\":5000", "pad_token_id 5000"},
        {"\"layer_norm_epsilon\":1e-12", "\"layer_norm_epsilon\":-1", "layer_norm_epsilon"},
        {"\"pad_vocab_size_multiple\":64", "\"pad_vocab_size_multiple\":0",
         "pad_vocab_size_multiple"},
        {"\"NomicBertModel\"", "\"NomicBertForSequenceClassification\"",
         "NomicBertForSequenceClassification"},
        {"\"causal\":false", "\"num_experts\":8", "num_experts 8"},
        {"\"causal\":false", "\"rotary_emb_scale_base\":512", "rotary_emb_scale_base"},
        {"\"causal\":false", "\"num_heads_kv\":2", "num_heads_kv 2"},
        {"\"causal\":false", "\"parallel_block\":true", "parallel_block"},
        {"\"causal\":false", "\"scale_attn_by_inverse_layer_idx\":true",
         "scale_attn_by_inverse_layer_idx"},
        {"\"causal\":false", "\"use_rms_norm\":true", "use_rms_norm"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *at = strstr(good, cases[i].from);
        ck_assert_msg(at, "case %zu: %s not in the config", i, cases[i].from);
        char text[2048];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, cases[i].to,
                 at + strlen(cases[i].from));
        char *p = tu_write_str(dir, "config.json", text);
        sq_bert_config c;
        sq_err err = {0};
        ck_assert_msg(sq_bert_config_load(p, &c, &err) == -1, "case %zu (%s) loads", i,
                      cases[i].to);
        ck_assert_msg(strstr(err.msg, "config.json") && strstr(err.msg, cases[i].needle),
                      "case %zu: \"%s\" does not name the file and %s", i, err.msg,
                      cases[i].needle);
        free(p);
    }
}
END_TEST

static int yaml_config(const char *text, sq_bert_config *c, sq_err *err)
{
    yt_doc *doc = yt_parse_buffer(text, strlen(text), "meta.yaml", err);
    if (!doc)
        return -1;
    const yt_node *conf = yt_get(yt_root(doc), "config");
    int rc = conf ? sq_bert_config_from_yaml(conf, c, err) : -1;
    yt_free(doc);
    return rc;
}

/* The .sqm config rows: written and read back exactly; forged rows refused. */
START_TEST(sqm_config_rows)
{
    char *p = tu_write_str(dir, "config.json", good);
    sq_bert_config c, back;
    sq_err err = {0};
    ck_assert(sq_bert_config_load(p, &c, &err) == 0);
    free(p);
    c.rotary_base = 1000.123456789012345; /* %.17g: every bit comes back */
    sq_strbuf sb = {0};
    sq_sb_printf(&sb, "config:\n");
    sq_bert_config_to_yaml(&sb, &c, "  ");
    ck_assert(!sb.failed);
    ck_assert_msg(strstr(sb.s, "  positions: rotary\n") && strstr(sb.s, "  activation: swiglu\n") &&
                      strstr(sb.s, "  rotary_base: 1000.1234567890124\n"),
                  "%s", sb.s);
    ck_assert_msg(yaml_config(sb.s, &back, &err) == 0, "%s", err.msg);
    ck_assert(back.rotary_base == c.rotary_base && back.positions == SQ_POS_ROTARY &&
              back.act == SQ_ACT_SWIGLU && back.ffn == c.ffn);
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"  rotary_base: 1000.1234567890124\n", "", "needs rotary_base"},
        {"  positions: rotary\n", "  positions: learned\n", "takes no rotary_base"},
        {"rotary_base: 1000.1234567890124", "rotary_base: -3", "rotary_base"},
        {"rotary_base: 1000.1234567890124", "rotary_base: 1", "above 1"},
        {"rotary_base: 1000.1234567890124", "rotary_base: .nan", "rotary_base"},
        {"rotary_base: 1000.1234567890124", "rotary_base: 1e400", "rotary_base"},
        {"positions: rotary", "positions: spiral", "spiral"},
        {"activation: swiglu", "activation: geglu", "geglu"},
        {"  heads: 4\n", "  heads: 64\n", "even head size"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *at = strstr(sb.s, cases[i].from);
        ck_assert_msg(at, "case %zu: %s not in %s", i, cases[i].from, sb.s);
        char text[4096];
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - sb.s), sb.s, cases[i].to,
                 at + strlen(cases[i].from));
        ck_assert_msg(yaml_config(text, &back, &err) == -1, "case %zu loads", i);
        ck_assert_msg(strstr(err.msg, cases[i].needle), "case %zu: \"%s\" lacks %s", i,
                      err.msg, cases[i].needle);
    }
    sq_sb_free(&sb);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nomic");
    TCase *tc = tcase_create("nomic");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, rotation_formula);
    tcase_add_test(tc, rotation_batch);
    tcase_add_test(tc, config_good);
    tcase_add_test(tc, config_refusals);
    tcase_add_test(tc, sqm_config_rows);
    SRunner *sr = srunner_create(s);
    suite_add_tcase(s, tc);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* ModernBERT: its config.json (the values squint runs, every value it does
 * not run refused with the file and the key), the layer pattern (global
 * every third layer, the local window and rotary base of the others), the
 * sliding window of the attention (attn_window.h: exact zeros outside, the
 * old bits without a window, the int8 attention against a double reference
 * of the windowed softmax) and GeGLU's row against its formula. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_s8.h"
#include "attn_window.h"
#include "config_yaml.h"
#include "hf_config.h"
#include "ops.h"
#include "test_util.h"
#include "yaml_tree.h"

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

/* ModernBERT-base's config.json (its keys and values, 6 layers). */
static const char good[] =
    "{\"architectures\":[\"ModernBertForMaskedLM\"],\"model_type\":\"modernbert\","
    "\"hidden_size\":64,\"num_attention_heads\":4,\"num_hidden_layers\":6,"
    "\"intermediate_size\":96,\"max_position_embeddings\":8192,\"vocab_size\":50368,"
    "\"pad_token_id\":50283,\"cls_token_id\":50281,\"sep_token_id\":50282,\"norm_eps\":1e-05,"
    "\"norm_bias\":false,\"attention_bias\":false,\"mlp_bias\":false,"
    "\"hidden_activation\":\"gelu\",\"global_attn_every_n_layers\":3,\"local_attention\":128,"
    "\"global_rope_theta\":160000.0,\"local_rope_theta\":10000.0,\"classifier_pooling\":\"mean\","
    "\"deterministic_flash_attn\":false,\"embedding_dropout\":0.0}";

START_TEST(config_good)
{
    char *p = tu_write_str(dir, "config.json", good);
    sq_bert_config c;
    sq_err err = {0};
    ck_assert_msg(sq_bert_config_load(p, &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.hidden, 64);
    ck_assert_int_eq(c.ffn, 96);
    ck_assert_int_eq(c.vocab_size, 50368);
    ck_assert_int_eq(c.type_vocab, 0);
    ck_assert_int_eq(c.act, SQ_ACT_GEGLU);
    ck_assert(sq_act_gated(c.act));
    ck_assert_int_eq(c.positions, SQ_POS_ROTARY);
    ck_assert_int_eq(c.norm, SQ_NORM_PRE);
    ck_assert(c.emb_ln && c.final_norm && c.first_attn_norm_absent);
    ck_assert(c.ln_eps == 1e-5);
    ck_assert_int_eq(sq_bert_max_tokens(&c), 8192);
    ck_assert_str_eq(sq_architecture_name(&c), "modernbert");
    ck_assert_str_eq(sq_act_name(c.act), "geglu");
    /* layers 0 and 3 global (theta 160000), the others local: +-64 keys */
    for (int l = 0; l < 6; l++) {
        const bool global = l % 3 == 0;
        ck_assert_int_eq(sq_layer_window(&c, l), global ? -1 : 64);
        ck_assert(sq_layer_rotary_base(&c, l) == (global ? 160000.0 : 10000.0));
    }
    /* every other family: every layer global at its one base */
    sq_bert_config b = {0};
    sq_bert_config_set_bert_defaults(&b);
    b.rotary_base = 1000.0;
    ck_assert_int_eq(sq_layer_window(&b, 1), -1);
    ck_assert(sq_layer_rotary_base(&b, 1) == 1000.0);
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
        {"\"norm_bias\":false", "\"norm_bias\":true", "norm_bias"},
        {"\"attention_bias\":false", "\"attention_bias\":true", "attention_bias"},
        {"\"mlp_bias\":false", "\"mlp_bias\":true", "mlp_bias"},
        {"\"mlp_bias\":false", "\"mlp_bias\":1", "mlp_bias"},
        {"\"gelu\"", "\"gelu_pytorch_tanh\"", "hidden_activation \"gelu_pytorch_tanh\""},
        {"\"gelu\"", "\"silu\"", "hidden_activation \"silu\""},
        {"\"global_rope_theta\":160000.0", "\"global_rope_theta\":-5", "global_rope_theta -5"},
        {"\"global_rope_theta\":160000.0", "\"global_rope_theta\":1", "global_rope_theta 1"},
        {"\"global_rope_theta\":160000.0", "\"global_rope_theta\":NaN", "config.json"},
        {"\"global_rope_theta\":160000.0", "\"global_rope_theta\":1e999", "config.json"},
        {"\"global_rope_theta\":160000.0", "\"global_rope_theta\":\"1e5\"", "global_rope_theta"},
        {"\"local_rope_theta\":10000.0", "\"local_rope_theta\":0", "local_rope_theta 0"},
        {"\"local_rope_theta\":10000.0", "\"local_rope_theta\":1e300", "local_rope_theta"},
        {"\"local_attention\":128", "\"local_attention\":0", "local_attention"},
        {"\"local_attention\":128", "\"local_attention\":-128", "local_attention"},
        {"\"local_attention\":128", "\"local_attention\":12.5", "local_attention"},
        {"\"global_attn_every_n_layers\":3", "\"global_attn_every_n_layers\":0",
         "global_attn_every_n_layers"},
        {"\"num_attention_heads\":4", "\"num_attention_heads\":5", "num_attention_heads 5"},
        {"\"num_attention_heads\":4", "\"num_attention_heads\":64", "even head size"},
        {"\"hidden_size\":64", "\"hidden_size\":-64", "hidden_size"},
        {"\"intermediate_size\":96", "\"intermediate_size\":0", "intermediate_size"},
        {"\"pad_token_id\":50283", "\"pad_token_id\":60000", "pad_token_id 60000"},
        {"\"norm_eps\":1e-05", "\"norm_eps\":-1", "norm_eps"},
        {"\"ModernBertForMaskedLM\"", "\"ModernBertForSequenceClassification\"",
         "ModernBertForSequenceClassification"},
        {"\"embedding_dropout\":0.0", "\"rope_scaling\":{\"type\":\"linear\"}", "rope_scaling"},
        {"\"embedding_dropout\":0.0", "\"causal_mask\":true", "causal_mask"},
        {"\"embedding_dropout\":0.0", "\"rope_parameters\":{}", "rope_parameters"},
        {"\"embedding_dropout\":0.0",
         "\"layer_types\":[\"full_attention\",\"full_attention\",\"sliding_attention\","
         "\"full_attention\",\"sliding_attention\",\"sliding_attention\"]",
         "layer_types[1]"},
        {"\"embedding_dropout\":0.0", "\"layer_types\":[\"full_attention\"]", "layer_types"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *at = strstr(good, cases[i].from);
        ck_assert_msg(at, "case %zu: %s not in the config", i, cases[i].from);
        char text[4096];
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
    /* the layer pattern written out in full is accepted */
    const char *at = strstr(good, "\"embedding_dropout\":0.0");
    char text[4096];
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good,
             "\"layer_types\":[\"full_attention\",\"sliding_attention\",\"sliding_attention\","
             "\"full_attention\",\"sliding_attention\",\"sliding_attention\"]",
             at + strlen("\"embedding_dropout\":0.0"));
    char *p = tu_write_str(dir, "config.json", text);
    sq_bert_config c;
    sq_err err = {0};
    ck_assert_msg(sq_bert_config_load(p, &c, &err) == 0, "%s", err.msg);
    free(p);
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

/* The config rows (in a .sqc; SQM.md): written and read back to the same
 * bytes of the config; forged rows refused. */
START_TEST(config_rows)
{
    char *p = tu_write_str(dir, "config.json", good);
    sq_bert_config c, back;
    sq_err err = {0};
    ck_assert(sq_bert_config_load(p, &c, &err) == 0);
    free(p);
    c.rotary_base_local = 10000.123456789012345; /* %.17g: every bit comes back */
    sq_strbuf sb = {0};
    sq_sb_printf(&sb, "config:\n");
    sq_bert_config_to_yaml(&sb, &c, "  ");
    ck_assert(!sb.failed);
    ck_assert_msg(strstr(sb.s, "  activation: geglu\n") && strstr(sb.s, "  local_window: 128\n") &&
                      strstr(sb.s, "  global_every: 3\n") &&
                      strstr(sb.s, "  first_attention_norm: false\n") &&
                      strstr(sb.s, "  final_norm: true\n"),
                  "%s", sb.s);
    ck_assert_msg(yaml_config(sb.s, &back, &err) == 0, "%s", err.msg);
    ck_assert(memcmp(&back, &c, sizeof c) == 0);
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"  local_window: 128\n", "", "come together"},
        {"  global_every: 3\n", "", "come together"},
        {"local_window: 128", "local_window: 0", "local_window"},
        {"local_window: 128", "local_window: -4", "local_window"},
        {"global_every: 3", "global_every: 0", "global_every"},
        {"rotary_base_local: 10000.123456789011", "rotary_base_local: .nan", "rotary_base_local"},
        {"rotary_base_local: 10000.123456789011", "rotary_base_local: 1", "above 1"},
        {"activation: geglu", "activation: gelu", "takes no local_window"},
        {"norm: pre", "norm: post", "first_attention_norm false needs norm pre"},
        {"final_norm: true", "final_norm: 7", "final_norm"},
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

/* The window's keys, the exact zeros outside it, the sum 1 inside, and the
 * old bits of sq_softmax_row without a window. */
START_TEST(window_softmax)
{
    enum { L = 40 };
    unsigned seed = 5;
    float row[L], a[L], b[L];
    for (int i = 0; i < L; i++)
        row[i] = 4 * frand(&seed);
    int lo, hi;
    sq_attn_window(0, L, 3, &lo, &hi);
    ck_assert(lo == 0 && hi == 4);
    sq_attn_window(20, L, 3, &lo, &hi);
    ck_assert(lo == 17 && hi == 24);
    sq_attn_window(39, L, 3, &lo, &hi);
    ck_assert(lo == 36 && hi == 40);
    sq_attn_window(5, L, -1, &lo, &hi);
    ck_assert(lo == 0 && hi == L);
    memcpy(a, row, sizeof row);
    memcpy(b, row, sizeof row);
    sq_attn_window_softmax(a, 7, L, -1);
    sq_softmax_row(b, L);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    for (int i = 0; i < L; i++) {
        memcpy(a, row, sizeof row);
        sq_attn_window_softmax(a, i, L, 5);
        double sum = 0, m = -1e30;
        for (int j = 0; j < L; j++)
            if (abs(i - j) <= 5)
                m = fmax(m, row[j]);
        double z = 0;
        for (int j = 0; j < L; j++)
            if (abs(i - j) <= 5)
                z += exp(row[j] - m);
        for (int j = 0; j < L; j++) {
            if (abs(i - j) > 5) {
                ck_assert_msg(a[j] == 0.0f, "query %d key %d: %g outside the window", i, j, a[j]);
                continue;
            }
            sum += a[j];
            ck_assert(fabs(a[j] - exp(row[j] - m) / z) < 1e-6);
        }
        ck_assert(fabs(sum - 1) < 1e-5);
        uint8_t codes[L];
        const int zc = sq_attn_window_softmax_u8(row, i, L, 5, codes);
        int zs = 0;
        for (int j = 0; j < L; j++) {
            if (abs(i - j) > 5)
                ck_assert(codes[j] == 0);
            zs += codes[j];
        }
        ck_assert_int_eq(zc, zs);
    }
}
END_TEST

/* The int8 attention of one head with a window against a double
 * reference of the windowed softmax (and the reference without a window is
 * clearly different: the check can fail). */
START_TEST(window_int8_attention)
{
    enum { L = 48, DH = 16, LD = 3 * DH, W = 4 };
    unsigned seed = 11;
    float *qkv = malloc(sizeof(float) * L * LD), ctx[L * DH];
    for (int i = 0; i < L * LD; i++)
        qkv[i] = 2 * frand(&seed);
    const float c = 1.0f / sqrtf((float)DH);
    void *scratch = NULL;
    ck_assert(posix_memalign(&scratch, 64, sq_attn_s8_scratch_bytes(L, DH)) == 0);
    double worst = 0, worst_global = 0;
    for (int hw = 0; hw < 1 + (int)sq_attn_s8_hw(); hw++) {
        sq_attn_s8_head(qkv, qkv + DH, qkv + 2 * DH, LD, L, DH, c, NULL, W, ctx, DH, scratch,
                        hw, NULL, NULL);
        for (int i = 0; i < L; i++) {
            double p[L], pg[L], m = -1e30, mg = -1e30, z = 0, zg = 0;
            for (int j = 0; j < L; j++) {
                double s = 0;
                for (int d = 0; d < DH; d++)
                    s += (double)qkv[i * LD + d] * qkv[j * LD + DH + d];
                p[j] = pg[j] = s * c;
                mg = fmax(mg, s * c);
                if (abs(i - j) <= W)
                    m = fmax(m, s * c);
            }
            for (int j = 0; j < L; j++) {
                p[j] = abs(i - j) <= W ? exp(p[j] - m) : 0;
                pg[j] = exp(pg[j] - mg);
                z += p[j], zg += pg[j];
            }
            for (int d = 0; d < DH; d++) {
                double o = 0, og = 0;
                for (int j = 0; j < L; j++) {
                    o += p[j] / z * qkv[j * LD + 2 * DH + d];
                    og += pg[j] / zg * qkv[j * LD + 2 * DH + d];
                }
                worst = fmax(worst, fabs(ctx[i * DH + d] - o));
                worst_global = fmax(worst_global, fabs(ctx[i * DH + d] - og));
            }
        }
    }
    ck_assert_msg(worst < 0.03, "int8 windowed attention off by %g", worst);
    ck_assert_msg(worst_global > 10 * worst, "the window makes no difference (%g vs %g)",
                  worst_global, worst);
    free(scratch);
    free(qkv);
}
END_TEST

/* GeGLU: gelu(a) * g with the exact GELU, a the first half of the row. */
START_TEST(geglu_row)
{
    enum { F = 37 };
    unsigned seed = 9;
    float gu[2 * F], h[F];
    for (int i = 0; i < 2 * F; i++)
        gu[i] = 4 * frand(&seed);
    sq_geglu_row(gu, h, F);
    for (int j = 0; j < F; j++) {
        const double a = gu[j], want = 0.5 * a * (1 + erf(a / sqrt(2.0))) * gu[F + j];
        ck_assert_msg(fabs(h[j] - want) <= 1e-5 * (1 + fabs(want)), "%d: %g, formula %g", j,
                      h[j], want);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("modernbert");
    TCase *tc = tcase_create("modernbert");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, config_good);
    tcase_add_test(tc, config_refusals);
    tcase_add_test(tc, config_rows);
    tcase_add_test(tc, window_softmax);
    tcase_add_test(tc, window_int8_attention);
    tcase_add_test(tc, geglu_row);
    SRunner *sr = srunner_create(s);
    suite_add_tcase(s, tc);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

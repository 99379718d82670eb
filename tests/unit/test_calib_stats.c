/* calib_stats: observer -> save -> load round trip, merge rules, and a .sqc
 * whose statistics are inconsistent is refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_stats.h"
#include "test_util.h"

static const sq_bert_config cfg = {.vocab_size = 100, .hidden = 8, .layers = 2, .heads = 2,
                                   .ffn = 16, .max_pos = 32, .type_vocab = 2, .ln_eps = 1e-12,
                                   .embed_dim = 8, .emb_ln = true};

static void fill(sq_calib_stats *st, unsigned seed)
{
    sq_observer o = sq_calib_stats_observer(st);
    float x[5 * 16];
    for (int l = 0; l < cfg.layers; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            int N, C;
            if (!sq_linear_shape(&cfg, l, (sq_linear_kind)k, &N, &C))
                continue;
            for (int i = 0; i < 5 * C; i++)
                x[i] = (float)((int)((seed + 31u * (unsigned)i + 7u * (unsigned)k) % 97u) - 48) / 7.0f;
            o.linear_input(o.ctx, l, (sq_linear_kind)k, x, 5, C);
        }
    o.attn_probs(o.ctx, 0, 0.01f, 0.9f);
    o.attn_probs(o.ctx, 1, 0.02f, 0.5f);
    st->model_digest = 0x1234abcd5678ef00ull;
    st->model_source = strdup("model dir: \"quoted\"");
    st->date = strdup("2026-12-02");
    st->n_texts = st->n_sequences = 5;
    st->n_tokens = 25;
    st->max_seq = 32;
}

START_TEST(round_trip)
{
    char *dir = tu_mkdtemp();
    char path[256];
    snprintf(path, sizeof path, "%s/a.sqc", dir);
    sq_calib_stats a, b;
    sq_err err = {0};
    ck_assert_int_eq(sq_calib_stats_init(&a, &cfg, &err), 0);
    fill(&a, 3);
    ck_assert_int_eq(sq_calib_stats_check(&a, &err), 0);
    ck_assert_int_eq(sq_calib_stats_save(&a, path, &err), 0);
    ck_assert_msg(sq_calib_stats_load(path, &b, &err) == 0, "%s", err.msg);
    ck_assert(memcmp(&a.cfg, &b.cfg, sizeof cfg) == 0);
    ck_assert_uint_eq(a.model_digest, b.model_digest);
    ck_assert_str_eq(a.model_source, b.model_source);
    for (int i = 0; i < cfg.layers * SQ_LIN_KINDS; i++) {
        const sq_act_stats *x = &a.lin[i], *y = &b.lin[i];
        ck_assert_int_eq(x->channels, y->channels);
        if (x->channels == 0) /* a linear this architecture lacks (BERT has no "res") */
            continue;
        ck_assert(memcmp(x->ch_max_abs, y->ch_max_abs, (size_t)x->channels * 4) == 0);
        ck_assert(memcmp(x->ch_sumsq, y->ch_sumsq, (size_t)x->channels * 8) == 0);
        ck_assert(memcmp(&x->hist, &y->hist, sizeof x->hist) == 0);
        ck_assert(x->rows == y->rows && x->min == y->min && x->max == y->max);
    }
    ck_assert(b.attn_pmax[0] == 0.9f && b.attn_pmin[1] == 0.02f);

    /* Merge: same model sums rows; a different digest is refused. */
    ck_assert_int_eq(sq_calib_stats_merge(&b, &a, &err), 0);
    ck_assert_uint_eq(b.lin[0].rows, 10);
    ck_assert_int_eq(b.runs, 2);
    b.model_digest ^= 1;
    ck_assert_int_eq(sq_calib_stats_merge(&b, &a, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "different models"));
    sq_calib_stats_free(&b);

    /* Inconsistent statistics (histogram total != sum of bins) are refused. */
    a.lin[3].hist.total += 1;
    ck_assert_int_eq(sq_calib_stats_save(&a, path, &err), 0);
    ck_assert_int_eq(sq_calib_stats_load(path, &b, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "inconsistent"));
    sq_calib_stats_free(&a);
    tu_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(nonfinite_reported)
{
    sq_calib_stats a;
    sq_err err = {0};
    ck_assert_int_eq(sq_calib_stats_init(&a, &cfg, &err), 0);
    sq_observer o = sq_calib_stats_observer(&a);
    float x[8] = {1, 2, NAN, 4, 5, 6, 7, 8};
    o.linear_input(o.ctx, 1, SQ_LIN_FFN_UP, x, 1, 8);
    ck_assert_int_eq(sq_calib_stats_check(&a, &err), -1);
    ck_assert_msg(strstr(err.msg, "layer 1 ffn_up") && strstr(err.msg, "non-finite"), "%s", err.msg);
    sq_calib_stats_free(&a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calib_stats");
    TCase *tc = tcase_create("calib_stats");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, nonfinite_reported);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

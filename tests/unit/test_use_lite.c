/* squint's fp32 Universal Sentence Encoder Lite against the model's own
 * runtime: golden token ids and embeddings written by TensorFlow.js
 * (tests/oracle/use_lite/gen_golden.mjs) for a few hundred sentences,
 * including the empty text, one over the 128-token clip and characters
 * outside the vocabulary. Needs ../shared/data/use-lite-tfjs. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "embedder.h"
#include "threads.h"

#ifndef SQ_TEST_USE_GOLDEN
#error "SQ_TEST_USE_GOLDEN must name tests/oracle/use_lite/golden"
#endif

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[n] = 0;
        *len = (size_t)n;
    }
    return b;
}

/* One JSON object per line; returns the values of `key`. */
static json_t **read_jsonl(const char *path, const char *key, size_t *n)
{
    size_t len;
    char *buf = read_all(path, &len);
    ck_assert_msg(buf, "cannot read %s", path);
    size_t cap = 512;
    json_t **v = malloc(cap * sizeof *v);
    *n = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        ck_assert_msg(o && json_object_get(o, key), "%s: bad line %zu", path, *n + 1);
        if (*n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = json_incref(json_object_get(o, key));
        json_decref(o);
    }
    free(buf);
    return v;
}

static const char *data_dir(void)
{
    const char *d = getenv("SQUINT_SHARED_DATA");
    return d ? d : "../shared/data";
}

START_TEST(fp32_matches_tfjs)
{
    char model[1024];
    snprintf(model, sizeof model, "%s/use-lite-tfjs", data_dir());
    size_t n, nt;
    json_t **text = read_jsonl(SQ_TEST_USE_GOLDEN "/sentences.jsonl", "text", &n);
    json_t **ids = read_jsonl(SQ_TEST_USE_GOLDEN "/tokens.jsonl", "ids", &nt);
    ck_assert_uint_eq(n, nt);
    size_t zlen;
    char *z = read_all(SQ_TEST_USE_GOLDEN "/embeddings.f32.zst", &zlen);
    ck_assert(z);
    unsigned long long raw = ZSTD_getFrameContentSize(z, zlen);
    ck_assert_uint_eq(raw, (unsigned long long)n * 512 * sizeof(float));
    float *gold = malloc(raw);
    ck_assert_uint_eq(ZSTD_decompress(gold, raw, z, zlen), raw);
    free(z);

    sq_threads_init(2);
    sq_embed_model m;
    sq_err err = {0};
    ck_assert_msg(sq_embed_model_open(model, &m, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(m.enc.cfg.hidden, 512);
    const char **t = malloc(n * sizeof *t);
    size_t *lens = malloc(n * sizeof *lens);
    for (size_t i = 0; i < n; i++) {
        t[i] = json_string_value(text[i]);
        lens[i] = strlen(t[i]);
    }
    sq_embed_opts o = {.batch = 16, .max_seq = m.max_seq, .pooling = m.pool.pooling,
                       .normalize = m.pool.normalize, .keep_tokens = true};
    sq_embed_result r;
    ck_assert_msg(sq_embed_texts(&m, t, lens, (int64_t)n, &o, &r, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(r.dim, 512);
    /* Token ids: the graph keeps the first 128 of what the tokenizer gives. */
    size_t tok_bad = 0;
    for (size_t i = 0; i < n; i++) {
        size_t want = json_array_size(ids[i]), got = (size_t)(r.offsets[i + 1] - r.offsets[i]);
        if (want > 128)
            want = 128;
        bool same = want == got;
        for (size_t k = 0; same && k < got; k++)
            same = json_integer_value(json_array_get(ids[i], k)) == r.ids[r.offsets[i] + (int64_t)k];
        if (!same && tok_bad++ < 5)
            fprintf(stderr, "tokens differ for sentence %zu: \"%s\"\n", i, t[i]);
    }
    double maxd = 0, cmin = 1;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        double dot = 0, na = 0, nb = 0;
        for (int c = 0; c < 512; c++) {
            double a = r.emb[i * 512 + c], b = gold[i * 512 + c];
            if (fabs(a - b) > maxd) {
                maxd = fabs(a - b);
                worst = i;
            }
            dot += a * b;
            na += a * a;
            nb += b * b;
        }
        double cs = dot / sqrt(na * nb);
        cmin = cs < cmin ? cs : cmin;
    }
    printf("USE Lite fp32 vs TensorFlow.js: %zu sentences, token mismatches %zu, max |diff| %.3g "
           "(sentence %zu), min cosine %.9f\n",
           n, tok_bad, maxd, worst, cmin);
    ck_assert_uint_eq(tok_bad, 0);
    ck_assert_msg(maxd <= 1e-4, "max abs diff %g", maxd);
    ck_assert_msg(cmin >= 0.99999, "min cosine %f", cmin);
    sq_embed_result_free(&r);
    sq_embed_model_close(&m);
    for (size_t i = 0; i < n; i++) {
        json_decref(text[i]);
        json_decref(ids[i]);
    }
    free(text);
    free(ids);
    free(t);
    free(lens);
    free(gold);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("use_lite");
    TCase *tc = tcase_create("oracle");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, fp32_matches_tfjs);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

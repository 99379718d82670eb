/* Byte-level BPE parity with transformers.js: golden/qwen3.ids.zst (made by
 * regen-qwen3-golden.sh) holds its ids (add_special_tokens false) for every
 * text of STS-B (GLUE train/dev/test), SciFact (queries; title and text of
 * the first 1000 corpus abstracts), SST-2 train, edge_strings.json and
 * qwen3_edge_strings.json; squint reads the same
 * $SQUINT_SHARED_DATA/qwen3-tokenizer/tokenizer.json through
 * sq_tokenizer_load_bpe_file. Every text is checked sequentially (full ids and
 * a small cap), then again from 4 threads sharing the tokenizer, and
 * decode(encode(text)) (special tokens as their text) must equal NFC(text)
 * byte for byte. Exit 77 (skip) without the shared data. */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zstd.h>

#include "golden_ids.h"
#include "sentences.h"
#include "tokenizer.h"
#include "unicode_nfkc.h"
#include "unicode_props.h"

#ifndef TK_SOURCE_DIR
#error "TK_SOURCE_DIR must name tests/tokenizer"
#endif

#define MAX_REPORTED 10
#define SMALL_CAP 3

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

/* NFC(text) as UTF-8 (invalid bytes as U+FFFD), malloc'd; *n its length. */
static char *nfc_utf8(const char *s, size_t len, size_t *n)
{
    sq_u32buf in = {0}, out = {0};
    char *o = NULL;
    if (sq_u32buf_reserve(&in, len + 1) != 0)
        goto done;
    for (size_t i = 0; i < len;)
        i += sq_utf8_decode((const uint8_t *)s + i, len - i, &in.v[in.n++]);
    if (sq_nfc(in.v, in.n, &out) != 0 || !(o = malloc(4 * out.n + 1)))
        goto done;
    *n = 0;
    for (size_t i = 0; i < out.n; i++)
        *n += (size_t)sq_utf8_encode(out.v[i], (uint8_t *)o + *n);
done:
    free(in.v);
    free(out.v);
    return o;
}

/* decode(ids) with special tokens as their text (HF skip_special_tokens=False)
 * == NFC(text)? */
static bool round_trip(const sq_tokenizer *t, const char *s, size_t len, const int32_t *ids,
                       int64_t n)
{
    size_t want_n = 0, at = 0;
    char *want = nfc_utf8(s, len, &want_n);
    bool ok = want != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        size_t l;
        const char *p = sq_tokenizer_is_special(t, ids[i]) ? sq_tokenizer_token(t, ids[i])
                                                           : sq_tokenizer_decode_piece(t, i ? ids[i - 1] : -1, ids[i], &l);
        if (sq_tokenizer_is_special(t, ids[i]))
            l = strlen(p);
        ok = at + l <= want_n && memcmp(want + at, p, l) == 0;
        at += l;
    }
    ok = ok && at == want_n;
    free(want);
    return ok;
}

/* Sequential check of every text. Returns id mismatches; *rt_bad the round-trip failures. */
static long check_all(const sq_tokenizer *t, gold *g, size_t ng, long *texts, long *tokens,
                      long *rt_bad)
{
    long total_mm = 0;
    for (size_t i = 0; i < ng; i++) {
        long mm = 0, rt = 0;
        for (size_t k = 0; k < g[i].s.n; k++) {
            const char *s = g[i].s.s[k];
            size_t len = g[i].s.len[k];
            int64_t want = g[i].n[k];
            int32_t *got = malloc((size_t)(want + 1) * sizeof *got);
            int64_t n = got ? sq_tokenizer_tokenize(t, s, len, got, want + 1) : -1;
            int32_t small[SMALL_CAP];
            int64_t ns = sq_tokenizer_tokenize(t, s, len, small, SMALL_CAP);
            bool ok = n >= 0 && same(got, n, g[i].ids[k], want) && ns == n &&
                      memcmp(small, got, (size_t)(n < SMALL_CAP ? n : SMALL_CAP) * sizeof *got) == 0;
            *tokens += n > 0 ? n : 0;
            if (n >= 0 && n <= want && !round_trip(t, s, len, got, n)) {
                if (rt < 3)
                    printf("  ROUND TRIP %s text %zu: \"%.*s\"\n", g[i].rel, k + 1, (int)len, s);
                rt++;
            }
            if (!ok) {
                if (total_mm + mm < MAX_REPORTED) {
                    printf("  MISMATCH %s text %zu: \"%.*s\"\n", g[i].rel, k + 1, (int)len, s);
                    print_ids(t, "expected", g[i].ids[k], want);
                    if (n > want) { /* fetch them all to show */
                        free(got);
                        got = malloc((size_t)n * sizeof *got);
                        if (got)
                            sq_tokenizer_tokenize(t, s, len, got, n);
                    }
                    if (got)
                        print_ids(t, "actual  ", got, n < 0 ? 0 : n);
                }
                mm++;
            }
            free(got);
        }
        printf("  %-40s %6zu texts, %ld mismatches, %ld round-trip failures\n", g[i].rel, g[i].s.n,
               mm, rt);
        *texts += (long)g[i].s.n;
        total_mm += mm;
        *rt_bad += rt;
    }
    return total_mm;
}

/* Every text from several threads on the shared tokenizer. */
static long check_threads(const sq_tokenizer *t, gold *g, size_t ng)
{
    long mm = 0;
    for (size_t i = 0; i < ng; i++) {
        long n_s = (long)g[i].s.n;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : mm) num_threads(4)
        for (long k = 0; k < n_s; k++) {
            int64_t want = g[i].n[k];
            int32_t *got = malloc((size_t)(want + 1) * sizeof *got);
            int64_t n = got ? sq_tokenizer_tokenize(t, g[i].s.s[k], g[i].s.len[k], got, want + 1) : -1;
            if (!got || !same(got, n, g[i].ids[k], want))
                mm++;
            free(got);
        }
    }
    return mm;
}

static double since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

int main(void)
{
    const char *data = getenv("SQUINT_SHARED_DATA");
    struct stat st;
    char path[4096];
    if (!data || stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("SKIPPED: Qwen3 tokenizer parity needs the shared data directory; "
               "SQUINT_SHARED_DATA=%s is not a directory\n",
               data ? data : "(unset)");
        return 77;
    }
    snprintf(path, sizeof path, "%s/qwen3-tokenizer/tokenizer.json", data);
    if (stat(path, &st) != 0) {
        printf("SKIPPED: %s is missing\n", path);
        return 77;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *text = tk_golden_load(TK_SOURCE_DIR "/golden/qwen3.ids.zst");
    if (!text)
        return 1;
    if (text[0] == '#') {
        const char *nl = strchr(text, '\n');
        printf("%.*s\n", nl ? (int)(nl - text) : 0, text);
    }
    gold *g;
    size_t ng;
    if (tk_golden_parse(text, data, TK_SOURCE_DIR, &g, &ng) != 0) {
        free(text);
        return 1;
    }
    free(text);
    printf("golden file and texts read in %.2f s\n", since(&t0));

    sq_err err = {0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sq_tokenizer *t = sq_tokenizer_load_bpe_file(path, -1, -1, &err);
    if (!t) {
        printf("ERROR %s\n", err.msg);
        return 1;
    }
    printf("tokenizer.json loaded in %.2f s: %d pieces, kind %s\n", since(&t0),
           (int)sq_tokenizer_vocab_size(t),
           sq_tokenizer_kind_of(t) == SQ_TOKENIZER_BYTELEVEL ? "byte-level BPE" : "WRONG");
    bool kind_ok = sq_tokenizer_kind_of(t) == SQ_TOKENIZER_BYTELEVEL;
    long texts = 0, tokens = 0, rt_bad = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long mm = check_all(t, g, ng, &texts, &tokens, &rt_bad);
    printf("  %-40s %6ld texts, %ld mismatches (%ld ids; %.2f s for 2 passes and the round trip)\n",
           "total", texts, mm, tokens, since(&t0));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long tmm = check_threads(t, g, ng);
    printf("  %-40s %6ld texts, %ld mismatches (%.2f s)\n", "again from 4 threads", texts, tmm,
           since(&t0));
    sq_tokenizer_free(t);
    tk_golden_free(g, ng);
    bool ok = kind_ok && mm == 0 && tmm == 0 && rt_bad == 0 && texts > 0;
    printf("%ld texts compared with transformers.js (Qwen3 tokenizer.json): %ld mismatches, %ld "
           "round-trip failures: %s\n",
           texts, mm, rt_bad, ok ? "all ids identical" : "FAILED");
    return ok ? 0 : 1;
}

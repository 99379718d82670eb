/* SentencePiece-unigram parity with the Universal Sentence Encoder Lite JS
 * tokenizer: golden/use-lite.ids.zst (made by regen-use-golden.sh with
 * @energetic-ai/embeddings) holds its ids for every sentence of STS-B
 * original sts-test, SST-2 dev, edge_strings.json and use_edge_strings.json;
 * the tokenizer is built from $SQUINT_SHARED_DATA/use-lite-tfjs/vocab.json.
 * Every sentence is checked sequentially (also with a small cap), then again
 * from several threads sharing the tokenizer. The float-score constructor is
 * measured too (informational: only the double scores must match).
 * Exit 77 (skip) without the shared data. */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "golden_ids.h"
#include "sentences.h"
#include "tokenizer_unigram.h"
#include "unicode_nfkc.h"
#include "use_vocab.h"

#ifndef TK_SOURCE_DIR
#error "TK_SOURCE_DIR must name tests/tokenizer"
#endif

#define MAX_REPORTED 10
#define SMALL_CAP 3

static void print_ids(const sq_unigram *u, const char *label, const int32_t *ids, int64_t n)
{
    printf("    %s (%lld):", label, (long long)n);
    for (int64_t i = 0; i < n; i++)
        printf(" %d", ids[i]);
    printf("\n     ");
    for (int64_t i = 0; i < n && i < 40; i++)
        printf(" [%s]", sq_unigram_piece(u, ids[i]) ? sq_unigram_piece(u, ids[i]) : "?");
    printf("\n");
}

static bool same(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

/* Sequential check of every sentence (full ids and a small cap). Returns mismatches. */
static long check_all(const sq_unigram *u, gold *g, size_t ng, bool verbose, bool report,
                      long *sentences, long *tokens)
{
    long total_mm = 0;
    int32_t *got = NULL;
    int64_t gcap = 0;
    for (size_t i = 0; i < ng; i++) {
        long mm = 0;
        for (size_t k = 0; k < g[i].s.n; k++) {
            const char *t = g[i].s.s[k];
            size_t len = g[i].s.len[k];
            int64_t n = sq_unigram_tokenize(u, t, len, got, gcap);
            if (n > gcap) {
                free(got);
                gcap = n;
                got = malloc((size_t)gcap * sizeof *got);
                if (!got) {
                    printf("ERROR out of memory\n");
                    return -1;
                }
                n = sq_unigram_tokenize(u, t, len, got, gcap);
            }
            int32_t small[SMALL_CAP];
            int64_t ns = sq_unigram_tokenize(u, t, len, small, SMALL_CAP);
            bool ok = n >= 0 && same(got, n, g[i].ids[k], g[i].n[k]) && ns == n &&
                      memcmp(small, got, (size_t)(n < SMALL_CAP ? n : SMALL_CAP) * sizeof *got) == 0;
            *tokens += n > 0 ? n : 0;
            if (ok)
                continue;
            if (report && total_mm + mm < MAX_REPORTED) {
                printf("  MISMATCH %s sentence %zu: \"%.*s\"\n", g[i].rel, k + 1, (int)len, t);
                print_ids(u, "expected", g[i].ids[k], g[i].n[k]);
                print_ids(u, "actual  ", got, n < 0 ? 0 : n);
                if (ns != n)
                    printf("    with cap %d: returned %lld\n", SMALL_CAP, (long long)ns);
            }
            mm++;
        }
        if (verbose)
            printf("  %-40s %6zu sentences, %ld mismatches\n", g[i].rel, g[i].s.n, mm);
        *sentences += (long)g[i].s.n;
        total_mm += mm;
    }
    free(got);
    return total_mm;
}

/* Every sentence from several threads on the shared tokenizer. */
static long check_threads(const sq_unigram *u, gold *g, size_t ng)
{
    long mm = 0;
    for (size_t i = 0; i < ng; i++) {
        long n_s = (long)g[i].s.n;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : mm) num_threads(4)
        for (long k = 0; k < n_s; k++) {
            int64_t want = g[i].n[k];
            int32_t *got = malloc((size_t)(want + 1) * sizeof *got);
            int64_t n = got ? sq_unigram_tokenize(u, g[i].s.s[k], g[i].s.len[k], got, want + 1) : -1;
            if (!got || !same(got, n, g[i].ids[k], want))
                mm++;
            free(got);
        }
    }
    return mm;
}

int main(void)
{
    const char *data = getenv("SQUINT_SHARED_DATA");
    struct stat st;
    char vocab[4096];
    if (!data || stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("SKIPPED: unigram parity needs the shared data directory; SQUINT_SHARED_DATA=%s "
               "is not a directory\n",
               data ? data : "(unset)");
        return 77;
    }
    snprintf(vocab, sizeof vocab, "%s/use-lite-tfjs/vocab.json", data);
    if (stat(vocab, &st) != 0) {
        printf("SKIPPED: %s is missing\n", vocab);
        return 77;
    }
    char *text = tk_golden_load(TK_SOURCE_DIR "/golden/use-lite.ids.zst");
    if (!text)
        return 1;
    if (text[0] == '#') {
        const char *nl = strchr(text, '\n');
        printf("%.*s\n", nl ? (int)(nl - text) : 0, text);
    }
    printf("squint NFKC tables: Unicode %s\n", sq_nfkc_unicode_version());
    gold *g;
    size_t ng;
    if (tk_golden_parse(text, data, TK_SOURCE_DIR, &g, &ng) != 0) {
        free(text);
        return 1;
    }
    free(text);

    sq_err err = {0};
    sq_unigram *u = sq_unigram_load_use_vocab(vocab, &err);
    if (!u) {
        printf("ERROR %s\n", err.msg);
        return 1;
    }
    struct timespec t0, t1;
    long sentences = 0, tokens = 0;
    printf("USE-lite vocab.json (%d pieces), double scores:\n", (int)sq_unigram_vocab_size(u));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long mm = check_all(u, g, ng, true, true, &sentences, &tokens);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("  %-40s %6ld sentences, %ld mismatches (%ld ids; %.2f s for 2 passes)\n", "total",
           sentences, mm, tokens, secs);
    long tmm = check_threads(u, g, ng);
    printf("  %-40s %6ld sentences, %ld mismatches\n", "again from 4 threads", sentences, tmm);

    /* Informational: the float API rounds the scores; count what that changes. */
    char **pieces;
    float *fscores;
    int32_t nv;
    long fmm = -1, fs = 0, ft = 0;
    if (sq_use_vocab_load(vocab, &pieces, &fscores, &nv, &err) == 0) {
        sq_unigram *uf = sq_unigram_new((const char *const *)pieces, fscores, nv, &err);
        if (uf)
            fmm = check_all(uf, g, ng, false, false, &fs, &ft);
        sq_unigram_free(uf);
        sq_use_vocab_free(pieces, fscores, nv);
    }
    printf("  (float scores via sq_unigram_new: %ld of %ld sentences differ; not a failure)\n", fmm, fs);

    sq_unigram_free(u);
    tk_golden_free(g, ng);
    bool ok = mm == 0 && tmm == 0 && sentences > 0;
    printf("%ld sentences compared with the USE-lite JS tokenizer: %s\n", sentences,
           ok ? "all ids identical" : "FAILED");
    return ok ? 0 : 1;
}

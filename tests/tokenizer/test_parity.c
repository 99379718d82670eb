/* Tokenizer parity against Hugging Face: llama.cpp's bge vocab test strings
 * (ids produced by the HF tokenizer) and transformers.js golden ids for every
 * sentence of STS-B and SST-2 (golden/bge-en-v1.5.ids.zst, made by
 * regen-golden.sh). Every bge tokenizer is checked twice: from tokenizer.json
 * and from vocab.txt + tokenizer_config.json. Needs SQUINT_SHARED_DATA;
 * without it the test is skipped (exit 77). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zstd.h>

#include "sentences.h"
#include "tokenizer.h"

#ifndef TK_SOURCE_DIR
#error "TK_SOURCE_DIR must name tests/tokenizer"
#endif

#define MAX_REPORTED 10
#define MAX_IDS 4096

static const char *const models[] = {"bge-small-en-v1.5", "bge-base-en-v1.5", "bge-large-en-v1.5"};

typedef struct tally {
    long checked, mismatches;
} tally;

static void print_ids(const char *label, const int32_t *ids, long n)
{
    printf("    %s (%ld):", label, n);
    for (long i = 0; i < n; i++)
        printf(" %d", ids[i]);
    printf("\n");
}

/* Parse space-separated ids from [p, end). Returns the count, or -1 if malformed. */
static long parse_ids(const char *p, const char *end, int32_t *ids, long cap)
{
    long n = 0;
    while (p < end) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        char *q;
        long v = strtol(p, &q, 10);
        if (q == p || q > end || v < 0 || v > INT32_MAX || n >= cap)
            return -1;
        ids[n++] = (int32_t)v;
        p = q;
    }
    return n;
}

static void compare(const sq_tokenizer *t, const char *what, const char *text, size_t len,
                    const int32_t *want, long nwant, bool specials, tally *tl)
{
    static int32_t got[MAX_IDS];
    long n;
    if (specials)
        n = sq_tokenizer_encode(t, text, len, MAX_IDS, got);
    else
        n = (long)sq_tokenizer_tokenize(t, text, len, got, MAX_IDS);
    tl->checked++;
    if (n == nwant && memcmp(got, want, (size_t)n * sizeof *got) == 0)
        return;
    if (tl->mismatches++ < MAX_REPORTED) {
        printf("  MISMATCH %s: \"%.*s\"\n", what, (int)len, text);
        print_ids("expected", want, nwant);
        print_ids("actual  ", got, n < 0 ? 0 : (n > MAX_IDS ? MAX_IDS : n));
    }
}

/* llama.cpp's .inp/.out pair: ids without [CLS]/[SEP], one .out line per string. */
static int check_llamacpp(const sq_tokenizer *t, const char *data, tally *tl)
{
    const char *rel = "llamacpp-vocab-bge/ggml-vocab-bert-bge.gguf.inp";
    char err[1024], path[4096];
    tk_sentences s;
    if (tk_sentences_load(data, rel, &s, err, sizeof err) != 0) {
        printf("  ERROR %s\n", err);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", data, "llamacpp-vocab-bge/ggml-vocab-bert-bge.gguf.out");
    size_t len;
    char *out = tk_read_file(path, &len);
    if (!out) {
        printf("  ERROR %s: cannot read\n", path);
        tk_sentences_free(&s);
        return -1;
    }
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += out[i] == '\n';
    int rc = 0;
    if (lines != s.n) {
        printf("  ERROR %s has %zu lines for %zu test strings\n", path, lines, s.n);
        rc = -1;
    }
    const char *p = out;
    static int32_t want[MAX_IDS];
    for (size_t k = 0; rc == 0 && k < s.n; k++) {
        const char *nl = strchr(p, '\n');
        long nw = parse_ids(p, nl, want, MAX_IDS);
        if (nw < 0) {
            printf("  ERROR %s line %zu: malformed ids\n", path, k + 1);
            rc = -1;
            break;
        }
        compare(t, rel, s.s[k], s.len[k], want, nw, false, tl);
        p = nl + 1;
    }
    free(out);
    tk_sentences_free(&s);
    return rc;
}

static char *load_golden(size_t *len)
{
    const char *path = TK_SOURCE_DIR "/golden/bge-en-v1.5.ids.zst";
    size_t zlen;
    char *z = tk_read_file(path, &zlen);
    if (!z) {
        printf("ERROR %s: cannot read\n", path);
        return NULL;
    }
    unsigned long long size = ZSTD_getFrameContentSize(z, zlen);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1ull << 30)) {
        printf("ERROR %s: not a zstd frame with a known size\n", path);
        free(z);
        return NULL;
    }
    char *buf = malloc(size + 1);
    size_t got = buf ? ZSTD_decompress(buf, size, z, zlen) : 0;
    free(z);
    if (!buf || ZSTD_isError(got) || got != size) {
        printf("ERROR %s: cannot decompress\n", path);
        free(buf);
        return NULL;
    }
    buf[size] = '\0';
    *len = size;
    return buf;
}

/* Golden file: comment lines '#', then per source "@ <rel> <count>" and
 * <count> lines of ids (with [CLS]/[SEP]). */
static int check_golden(const sq_tokenizer *t, const char *data, const char *golden, bool verbose,
                        tally *total)
{
    const char *p = golden;
    static int32_t want[MAX_IDS];
    int rc = 0;
    while (*p && rc == 0) {
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        if (*p == '#') {
            p = nl + 1;
            continue;
        }
        char rel[1024];
        size_t count;
        if (sscanf(p, "@ %1023s %zu", rel, &count) != 2) {
            printf("ERROR golden file: expected a \"@ source count\" line\n");
            return -1;
        }
        p = nl + 1;
        tk_sentences s;
        char err[1024];
        if (strncmp(rel, "squint:", 7) == 0)
            rc = tk_sentences_load(TK_SOURCE_DIR, rel + 7, &s, err, sizeof err);
        else
            rc = tk_sentences_load(data, rel, &s, err, sizeof err);
        if (rc != 0) {
            printf("  ERROR %s\n", err);
            return -1;
        }
        if (s.n != count) {
            printf("  ERROR %s: %zu sentences extracted, the golden file has %zu\n", rel, s.n, count);
            tk_sentences_free(&s);
            return -1;
        }
        tally tl = {0, 0};
        for (size_t k = 0; k < count; k++) {
            nl = strchr(p, '\n');
            long nw = nl ? parse_ids(p, nl, want, MAX_IDS) : -1;
            if (nw < 0) {
                printf("  ERROR golden file: malformed ids for %s sentence %zu\n", rel, k + 1);
                rc = -1;
                break;
            }
            compare(t, rel, s.s[k], s.len[k], want, nw, true, &tl);
            p = nl + 1;
        }
        if (verbose)
            printf("  %-48s %6ld sentences, %ld mismatches\n", rel, tl.checked, tl.mismatches);
        total->checked += tl.checked;
        total->mismatches += tl.mismatches;
        tk_sentences_free(&s);
    }
    return rc;
}

static sq_tokenizer *load_variant(const char dir[static 4096], bool from_vocab_txt)
{
    sq_err err = {0};
    sq_tokenizer *t = NULL;
    if (!from_vocab_txt) {
        t = sq_tokenizer_load_dir(dir, &err);
    } else {
        char vocab[4200], cfg[4200]; /* dir is at most 4096 bytes */
        snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
        snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
        sq_wordpiece_spec spec;
        if (sq_wordpiece_spec_load_vocab_txt(vocab, &spec, &err) == 0 &&
            sq_wordpiece_spec_apply_config(cfg, &spec, &err) == 0)
            t = sq_tokenizer_new(&spec, &err);
        sq_wordpiece_spec_free(&spec);
    }
    if (!t)
        printf("ERROR loading %s: %s\n", dir, err.msg);
    return t;
}

int main(void)
{
    const char *data = getenv("SQUINT_SHARED_DATA");
    struct stat st;
    if (!data || stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("SKIPPED: tokenizer parity needs the shared data directory; SQUINT_SHARED_DATA=%s "
               "is not a directory\n",
               data ? data : "(unset)");
        return 77;
    }
    size_t glen;
    char *golden = load_golden(&glen);
    if (!golden)
        return 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int failures = 0;
    long variants = 0;
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", data, models[m]);
        if (stat(dir, &st) != 0) {
            printf("%s: not in the shared data, not checked\n", models[m]);
            continue;
        }
        for (int v = 0; v < 2; v++) {
            const char *how = v ? "vocab.txt + tokenizer_config.json" : "tokenizer.json";
            sq_tokenizer *t = load_variant(dir, v == 1);
            if (!t) {
                failures++;
                continue;
            }
            variants++;
            printf("%s via %s:\n", models[m], how);
            tally lc = {0, 0}, gold = {0, 0};
            int rc = check_llamacpp(t, data, &lc);
            printf("  %-48s %6ld strings,   %ld mismatches\n", "llama.cpp ggml-vocab-bert-bge (no CLS/SEP)",
                   lc.checked, lc.mismatches);
            rc |= check_golden(t, data, golden, true, &gold);
            printf("  %-48s %6ld sentences, %ld mismatches\n", "golden total", gold.checked,
                   gold.mismatches);
            if (rc != 0 || lc.mismatches || gold.mismatches)
                failures++;
            sq_tokenizer_free(t);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(golden);
    printf("%ld tokenizer variants checked in %.2f s; %s\n", variants,
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
           failures ? "FAILED" : "all ids identical");
    return failures || variants == 0 ? 1 : 0;
}

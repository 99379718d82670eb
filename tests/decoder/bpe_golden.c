/* Token ids of a Llama tokenizer (llama2.c tokenizer.bin or HF
 * tokenizer.json) against references:
 *   bpe_golden golden TOKENIZER TESTS.inp TESTS.out
 *     llama.cpp's tokenizer test layout: texts separated by
 *     "\n__ggml_vocab_test__\n", one line of ids (no BOS) per text;
 *   bpe_golden same TOKENIZER_A TOKENIZER_B TEXT_FILE
 *     both give the same ids (with BOS) and the same decoded text for every
 *     line of the file, for the whole file at once, and for 2000
 *     deterministic random mixes of its characters with spaces, newlines,
 *     tabs and characters outside the vocabulary: valid UTF-8 without
 *     U+2581 (where the two kinds differ by design: the HF normalizer reads
 *     a "▁" in the text as a space, and sees invalid UTF-8 after a space
 *     as part of the 3-byte "▁").
 * Prints a summary; exit 1 on the first mismatch (shown). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "tokenizer_bpe.h"

static sq_bpe *open_tok(const char *path)
{
    sq_err err;
    size_t n = strlen(path);
    sq_bpe *t = n > 5 && strcmp(path + n - 5, ".json") == 0 ? sq_bpe_load_hf_json(path, 1, 2, &err)
                                                             : sq_bpe_load(path, &err);
    if (!t) {
        fprintf(stderr, "%s\n", err.msg);
        exit(2);
    }
    return t;
}

static char *slurp(const char *path, size_t *len)
{
    char *buf;
    sq_err err;
    if (sq_read_regular_file(path, 64u << 20, &buf, len, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(2);
    }
    return buf;
}

static void show(const char *what, const int32_t *ids, int64_t n)
{
    fprintf(stderr, "  %s:", what);
    for (int64_t i = 0; i < n; i++)
        fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, "\n");
}

static int golden(const char *tp, const char *inp, const char *outp)
{
    sq_bpe *t = open_tok(tp);
    size_t il, ol;
    char *in = slurp(inp, &il), *out = slurp(outp, &ol);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *p = in, *o = out;
    int n = 0, bad = 0;
    for (;;) {
        char *e = strstr(p, sep);
        if (!e)
            break;
        char *oe = strchr(o, '\n');
        if (!oe) {
            fprintf(stderr, "%s: fewer lines than tests\n", outp);
            return 2;
        }
        *oe = 0;
        int32_t want[4096];
        int64_t nw = 0;
        for (char *q = o, *end; nw < 4096; q = end) {
            long v = strtol(q, &end, 10);
            if (end == q)
                break;
            want[nw++] = (int32_t)v;
        }
        int32_t *ids;
        int64_t m = sq_bpe_encode(t, p, (size_t)(e - p), false, false, &ids);
        if (m != nw || memcmp(ids, want, (size_t)m * sizeof *ids) != 0) {
            fprintf(stderr, "test %d (\"%.*s\"): ids differ\n", n, (int)(e - p), p);
            show("want", want, nw);
            show("got ", ids, m);
            bad++;
        }
        free(ids);
        n++;
        p = e + sizeof sep - 1;
        o = oe + 1;
    }
    printf("%s: %d of %d llama.cpp golden tests give the expected ids\n", tp, n - bad, n);
    free(in);
    free(out);
    sq_bpe_free(t);
    return bad ? 1 : n > 0 ? 0 : 2;
}

static int same_one(const sq_bpe *a, const sq_bpe *b, const char *s, size_t len)
{
    int32_t *ia, *ib;
    int64_t na = sq_bpe_encode(a, s, len, true, false, &ia);
    int64_t nb = sq_bpe_encode(b, s, len, true, false, &ib);
    int ok = na == nb && na >= 0 && memcmp(ia, ib, (size_t)na * sizeof *ia) == 0;
    size_t la, lb;
    char *da = ok ? sq_bpe_decode(a, -1, ia, na, &la) : NULL;
    char *db = ok ? sq_bpe_decode(b, -1, ib, nb, &lb) : NULL;
    if (ok && (la != lb || memcmp(da, db, la) != 0)) {
        fprintf(stderr, "decoded texts differ for \"%.*s\"\n", (int)len, s);
        ok = 0;
    } else if (!ok) {
        fprintf(stderr, "ids differ for \"%.*s\"\n", (int)(len > 200 ? 200 : len), s);
        show("A", ia, na);
        show("B", ib, nb);
    }
    free(da);
    free(db);
    free(ia);
    free(ib);
    return ok;
}

static int same(const char *pa, const char *pb, const char *textp)
{
    sq_bpe *a = open_tok(pa), *b = open_tok(pb);
    size_t len;
    char *text = slurp(textp, &len);
    int lines = 0;
    for (char *p = text; p < text + len;) {
        char *e = memchr(p, '\n', (size_t)(text + len - p));
        if (!e)
            e = text + len;
        if (!same_one(a, b, p, (size_t)(e - p)))
            return 1;
        lines++;
        p = e + 1;
    }
    if (!same_one(a, b, text, len))
        return 1;
    static const char *const extra[] = {" ", "  ", "\n", "\t", "\xc3\xa9", "\xf0\x9f\xa6\x99",
                                        "<s>", "\xe4\xb8\x96", "\xe1\x9a\x80"};
    uint64_t r = 7;
    char buf[512];
    for (int k = 0; k < 2000; k++) {
        size_t n = 0;
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        int parts = 1 + (int)(r >> 58);
        for (int i = 0; i < parts; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            const char *src;
            size_t sl;
            if ((r >> 60) < 5) {
                src = extra[(r >> 33) % (sizeof extra / sizeof *extra)];
                sl = strlen(src);
            } else {
                size_t at = (size_t)((r >> 20) % (len ? len : 1));
                sl = 1 + (size_t)((r >> 8) % 12);
                if (at + sl > len)
                    sl = len - at;
                /* whole characters only */
                while (at > 0 && ((uint8_t)text[at] & 0xC0) == 0x80)
                    at--, sl++;
                while (at + sl < len && ((uint8_t)text[at + sl] & 0xC0) == 0x80)
                    sl++;
                src = text + at;
            }
            if (n + sl >= sizeof buf)
                break;
            memcpy(buf + n, src, sl);
            n += sl;
        }
        if (!same_one(a, b, buf, n))
            return 1;
    }
    printf("%s == %s: %d lines, the whole file (%zu bytes) and 2000 random mixes give the same "
           "ids and text\n", pa, pb, lines, len);
    free(text);
    sq_bpe_free(a);
    sq_bpe_free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "golden") == 0)
        return golden(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "same") == 0)
        return same(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: bpe_golden golden TOKENIZER INP OUT | same TOK_A TOK_B TEXT\n");
    return 2;
}

/* An encoder's byte-level BPE (ModernBERT's tokenizer.json shape) against
 * Hugging Face. The tokenizer is the fixture modernbert-fixture/ (made by
 * gen_modernbert_fixture.py: no real ModernBERT file is reachable offline),
 * opened as an encoder checkpoint folder opens it (sq_wordpiece_spec_load_dir
 * + sq_tokenizer_new). Goldens (regen-modernbert-golden.sh):
 *  - golden/modernbert.ids.zst: transformers.js's ids WITH the special tokens
 *    ([CLS] ... [SEP], TemplateProcessing) for every text of STS-B, SciFact
 *    (queries, first 1000 abstracts), SST-2 dev, edge_strings.json and
 *    modernbert_edge_strings.json ("[MASK]" with lstrip, "[SEP]" in text,
 *    multilingual, emoji, code, whitespace runs);
 *  - golden/modernbert-pairs.ids.zst: the pairs [CLS] a [SEP] b [SEP]
 *    (types 0 / 1) cut to a max_len by tokenizers' longest_first (the
 *    untruncated pairs equal transformers.js's), compared with
 *    sq_tokenize_pairs, the cross-encoder path.
 * Also: the truncated single sequence, the ids without the specials,
 * invalid UTF-8 (= its U+FFFD text's golden), 4 threads, the decode round
 * trip; then every text and pair again through the tokenizer's .sqm form
 * (the encoder writer's tokenizer section, tokenizer.vocab / .merges /
 * .added, read back by sq_sqm_tokenizer_load).
 * Every run also proves the check can fail: wrong variants (no lstrip on
 * the added tokens, no post-processor, the earlier pair truncation) must
 * give mismatches. --wrong runs only those and exits 1 when they mismatch.
 * Exit 77 (skip) without the shared data. */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container.h"
#include "encoder_sqm_write.h"
#include "golden_ids.h"
#include "hf_tokenizer.h"
#include "seq_classify.h"
#include "sentences.h"
#include "sqm_tokenizer.h"
#include "tokenizer.h"
#include "unicode_nfkc.h"
#include "unicode_props.h"

#ifndef TK_SOURCE_DIR
#error "TK_SOURCE_DIR must name tests/tokenizer"
#endif

#define MAX_REPORTED 8
#define TRUNC_LEN 8

static bool same(const int32_t *a, int64_t na, const int32_t *b, int64_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static void print_ids(const char *label, const int32_t *ids, int64_t n)
{
    printf("    %s (%lld):", label, (long long)n);
    for (int64_t i = 0; i < n && i < 60; i++)
        printf(" %d", ids[i]);
    printf("%s\n", n > 60 ? " ..." : "");
}

static const gold *find_source(const gold *g, size_t ng, const char *rel)
{
    for (size_t i = 0; i < ng; i++)
        if (strcmp(g[i].rel, rel) == 0)
            return &g[i];
    return NULL;
}

/* The fixture folder (tokenizer.json from the .zst, tokenizer_config.json)
 * in a fresh temp dir written into dir. */
static int write_fixture(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/squint-mbtok-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char *json = tk_golden_load(TK_SOURCE_DIR "/modernbert-fixture/tokenizer.json.zst");
    size_t clen = 0;
    char *cfg = tk_read_file(TK_SOURCE_DIR "/modernbert-fixture/tokenizer_config.json", &clen);
    char path[4200];
    int rc = -1;
    if (json && cfg) {
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        FILE *f = fopen(path, "wb");
        bool ok = f && fwrite(json, 1, strlen(json), f) == strlen(json);
        ok = f && fclose(f) == 0 && ok;
        snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
        f = ok ? fopen(path, "wb") : NULL;
        ok = f && fwrite(cfg, 1, clen, f) == clen;
        ok = f && fclose(f) == 0 && ok;
        rc = ok ? 0 : -1;
    }
    free(json);
    free(cfg);
    return rc;
}

static void remove_fixture(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    rmdir(dir);
}

/* NFC(text) as UTF-8 (invalid bytes as U+FFFD), malloc'd. */
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

/* decode(ids without [CLS] / [SEP]), special tokens as their text, == NFC(text)?
 * (Not asked of texts holding [MASK]: its lstrip drops whitespace.) */
static bool round_trip(const sq_tokenizer *t, const char *s, size_t len, const int32_t *ids,
                       int64_t n)
{
    if (memmem(s, len, "[MASK]", 6))
        return true;
    size_t want_n = 0, at = 0;
    char *want = nfc_utf8(s, len, &want_n);
    bool ok = want != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        size_t l;
        const char *p = sq_tokenizer_decode_piece(t, i ? ids[i - 1] : -1, ids[i], &l);
        if (sq_tokenizer_is_special(t, ids[i]))
            l = strlen(p = sq_tokenizer_token(t, ids[i]));
        ok = at + l <= want_n && memcmp(want + at, p, l) == 0;
        at += l;
    }
    ok = ok && at == want_n;
    free(want);
    return ok;
}

/* One text against its golden (with specials): the full encode, the ids
 * without specials, the truncated encode. Mismatching checks are counted. */
static int check_text(const sq_tokenizer *t, const char *s, size_t len, const int32_t *want,
                      int64_t wn, bool post, bool *rt_ok)
{
    int32_t *got = malloc((size_t)(wn + 8) * sizeof *got);
    if (!got)
        return 1;
    int bad = 0;
    int64_t n;
    if (post) {
        n = sq_tokenizer_encode(t, s, len, (int)wn + 8, got);
    } else { /* wrong variant: no post-processor */
        n = sq_tokenizer_tokenize(t, s, len, got, wn + 8);
    }
    bad += !same(got, n, want, wn);
    if (post && wn >= 2) {
        int64_t k = sq_tokenizer_tokenize(t, s, len, got, wn + 8);
        bad += !same(got, k, want + 1, wn - 2);
        if (rt_ok)
            *rt_ok = k < 0 || round_trip(t, s, len, got, k);
        int32_t tr[TRUNC_LEN], wtr[TRUNC_LEN];
        int m = sq_tokenizer_encode(t, s, len, TRUNC_LEN, tr);
        int64_t wm = wn <= TRUNC_LEN ? wn : TRUNC_LEN;
        memcpy(wtr, want, (size_t)wm * sizeof *wtr);
        wtr[wm - 1] = want[wn - 1]; /* HF keeps [SEP] after the cut content */
        bad += !same(tr, m, wtr, wm);
    }
    free(got);
    return bad;
}

static long check_singles(const sq_tokenizer *t, gold *g, size_t ng, bool post, bool verbose,
                          long *texts, long *rt_bad)
{
    long total = 0;
    for (size_t i = 0; i < ng; i++) {
        long mm = 0, rt = 0;
        for (size_t k = 0; k < g[i].s.n; k++) {
            bool rt_ok = true;
            int bad = check_text(t, g[i].s.s[k], g[i].s.len[k], g[i].ids[k], g[i].n[k], post,
                                 &rt_ok);
            if (bad && verbose && total + mm < MAX_REPORTED) {
                printf("  MISMATCH %s text %zu: \"%.*s\"\n", g[i].rel, k + 1,
                       (int)(g[i].s.len[k] < 200 ? g[i].s.len[k] : 200), g[i].s.s[k]);
                print_ids("expected", g[i].ids[k], g[i].n[k]);
                int32_t *got = malloc((size_t)(g[i].n[k] + 64) * sizeof *got);
                if (got) {
                    int n = sq_tokenizer_encode(t, g[i].s.s[k], g[i].s.len[k],
                                                (int)g[i].n[k] + 64, got);
                    print_ids("actual  ", got, n);
                    free(got);
                }
            }
            if (!rt_ok && verbose && rt < 3)
                printf("  ROUND TRIP %s text %zu\n", g[i].rel, k + 1);
            mm += bad != 0;
            rt += !rt_ok;
        }
        if (verbose)
            printf("  %-42s %6zu texts, %ld mismatches, %ld round-trip failures\n", g[i].rel,
                   g[i].s.n, mm, rt);
        if (texts)
            *texts += (long)g[i].s.n;
        if (rt_bad)
            *rt_bad += rt;
        total += mm;
    }
    return total;
}

static long check_threads(const sq_tokenizer *t, gold *g, size_t ng)
{
    long mm = 0;
    for (size_t i = 0; i < ng; i++) {
        const long n_s = (long)g[i].s.n;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : mm) num_threads(4)
        for (long k = 0; k < n_s; k++)
            mm += check_text(t, g[i].s.s[k], g[i].s.len[k], g[i].ids[k], g[i].n[k], true, NULL) != 0;
    }
    return mm;
}

/* Invalid UTF-8 gives the ids of its text with each maximal ill-formed
 * subpart as U+FFFD (what squint's other tokenizers do), whose golden is
 * in modernbert_edge_strings.json. */
static long check_invalid(const sq_tokenizer *t, const gold *edge)
{
    static const struct {
        const char *bytes, *lossy;
    } cases[] = {
        {"\xff", "\xef\xbf\xbd"},
        {"\xe2\x82", "\xef\xbf\xbd"},
        {"\xf0\x9f\x98", "\xef\xbf\xbd"},
        {"a\xed" "b", "a\xef\xbf\xbd" "b"},
        {"a\x80" "b", "a\xef\xbf\xbd" "b"},
        {"\xc0\xaf\xfe", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
    };
    long bad = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t k = 0;
        while (k < edge->s.n && strcmp(edge->s.s[k], cases[c].lossy) != 0)
            k++;
        if (k == edge->s.n) {
            printf("  invalid UTF-8 case %zu: its U+FFFD text is not an edge string\n", c);
            bad++;
            continue;
        }
        if (check_text(t, cases[c].bytes, strlen(cases[c].bytes), edge->ids[k], edge->n[k], true,
                       NULL) != 0) {
            printf("  MISMATCH invalid UTF-8 case %zu\n", c);
            bad++;
        }
    }
    return bad;
}

/* ---- pairs ---- */

typedef struct pair_gold {
    const char *a, *b;
    size_t alen, blen;
    int max_len, n0;
    int32_t *ids;
    int64_t n;
} pair_gold;

/* The old sq_pair_truncate (the document cut first, the odd token to a): a
 * wrong variant kept to show the pair check can fail. */
static void old_truncate(int64_t na, int64_t nb, int64_t budget, int64_t *ka, int64_t *kb)
{
    if (na + nb <= budget) {
        *ka = na;
        *kb = nb;
        return;
    }
    int64_t half = budget / 2, b_floor = nb < half ? nb : half;
    *kb = budget - na > b_floor ? budget - na : b_floor;
    *ka = budget - *kb < na ? budget - *kb : na;
}

/* The pairs as js/gen_modernbert_golden.mjs makes them, with their golden
 * lines; NULL (printed) on a mismatch of counts or a malformed line. */
static pair_gold *load_pairs(const gold *g, size_t ng, size_t *np)
{
    static const int stsb_lens[] = {6, 8, 9, 12, 16, 17, 24, 33, 8192};
    static const int sci_lens[] = {32, 33, 64, 127, 256, 8192};
    const gold *dev = find_source(g, ng, "stsb-glue/dev.tsv");
    const gold *q = find_source(g, ng, "scifact/beir-format/queries.jsonl");
    const gold *c = find_source(g, ng, "scifact/beir-format/corpus.jsonl");
    const gold *e = find_source(g, ng, "squint:modernbert_edge_strings.json");
    if (!dev || !q || !c || !e || q->s.n < 300 || c->s.n < 600) {
        printf("ERROR the golden file lacks a pair source\n");
        return NULL;
    }
    size_t n = dev->s.n / 2 + 300 + e->s.n, k = 0;
    pair_gold *p = calloc(n, sizeof *p);
    if (!p)
        return NULL;
    for (size_t i = 0; 2 * i + 1 < dev->s.n; i++, k++)
        p[k] = (pair_gold){dev->s.s[2 * i], dev->s.s[2 * i + 1], dev->s.len[2 * i],
                           dev->s.len[2 * i + 1], stsb_lens[i % 9], 0, NULL, 0};
    for (size_t i = 0; i < 300; i++, k++)
        p[k] = (pair_gold){q->s.s[i], c->s.s[2 * i + 1], q->s.len[i], c->s.len[2 * i + 1],
                           sci_lens[i % 6], 0, NULL, 0};
    for (size_t i = 0; i < e->s.n; i++, k++) {
        size_t j = (7 * i + 3) % e->s.n;
        p[k] = (pair_gold){e->s.s[i], e->s.s[j], e->s.len[i], e->s.len[j], 5 + (int)(i % 20), 0,
                           NULL, 0};
    }
    char *text = tk_golden_load(TK_SOURCE_DIR "/golden/modernbert-pairs.ids.zst");
    if (!text) {
        free(p);
        return NULL;
    }
    char *at = text;
    size_t got = 0;
    while (*at) {
        char *nl = strchr(at, '\n');
        if (!nl)
            break;
        if (*at == '#') {
            printf("%.*s\n", (int)(nl - at), at);
        } else {
            int ml, n0, used;
            if (got >= n || sscanf(at, "%d %d %n", &ml, &n0, &used) != 2 || ml != p[got].max_len ||
                (p[got].n = tk_golden_parse_ids(at + used, nl, &p[got].ids)) < 0) {
                printf("ERROR pair golden line %zu is malformed or does not match pair %zu\n",
                       got + 1, got + 1);
                break;
            }
            p[got++].n0 = n0;
        }
        at = nl + 1;
    }
    free(text);
    if (got != n) {
        printf("ERROR pair golden: %zu pairs, the sources make %zu\n", got, n);
        for (size_t i = 0; i < got; i++)
            free(p[i].ids);
        free(p);
        return NULL;
    }
    *np = n;
    return p;
}

/* Every pair through sq_tokenize_pairs (old: rebuilt with the old
 * truncation instead). Returns the mismatches. */
static long check_pairs(sq_tokenizer *t, pair_gold *p, size_t np, bool old, bool verbose)
{
    sq_embed_model m;
    memset(&m, 0, sizeof m);
    m.tok = t;
    long mm = 0;
    for (size_t i = 0; i < np; i++) {
        sq_token_seqs s;
        sq_err err = {0};
        if (sq_tokenize_pairs(&m, &p[i].a, &p[i].alen, &p[i].b, &p[i].blen, 1, p[i].max_len, &s,
                              &err) != 0) {
            printf("  pair %zu: %s\n", i + 1, err.msg);
            mm++;
            continue;
        }
        const int64_t n = s.offsets[1];
        int32_t *ids = s.ids;
        if (old) { /* rebuild [CLS] a' [SEP] b' [SEP] from the untruncated parts */
            int32_t *a = malloc((p[i].alen + 8) * sizeof *a), *b = malloc((p[i].blen + 8) * sizeof *b);
            int64_t na = sq_tokenizer_tokenize(t, p[i].a, p[i].alen, a, (int64_t)p[i].alen + 8);
            int64_t nb = sq_tokenizer_tokenize(t, p[i].b, p[i].blen, b, (int64_t)p[i].blen + 8);
            int64_t ka = 0, kb = 0, w = 0;
            if (na >= 0 && nb >= 0)
                old_truncate(na, nb, p[i].max_len - 3, &ka, &kb);
            int32_t *o = malloc((size_t)(ka + kb + 3) * sizeof *o);
            bool ok = a && b && o && na >= 0 && nb >= 0;
            if (ok) {
                o[w++] = sq_tokenizer_cls_id(t);
                memcpy(o + w, a, (size_t)ka * sizeof *a), w += ka;
                o[w++] = sq_tokenizer_sep_id(t);
                memcpy(o + w, b, (size_t)kb * sizeof *b), w += kb;
                o[w++] = sq_tokenizer_sep_id(t);
                ok = same(o, w, p[i].ids, p[i].n);
            }
            free(a);
            free(b);
            free(o);
            mm += !ok;
            sq_token_seqs_free(&s);
            continue;
        }
        bool ok = same(ids, n, p[i].ids, p[i].n);
        for (int64_t k = 0; ok && k < n; k++)
            ok = s.types[k] == (k < p[i].n0 ? 0 : 1);
        if (!ok && verbose && mm < MAX_REPORTED) {
            printf("  MISMATCH pair %zu (max_len %d)\n", i + 1, p[i].max_len);
            print_ids("expected", p[i].ids, p[i].n);
            print_ids("actual  ", ids, n);
        }
        mm += !ok;
        sq_token_seqs_free(&s);
    }
    return mm;
}

/* The spec's .sqm form (SQM.md 2.4 hf-bytelevel: the encoder writer's
 * tokenizer section and the rows the writer stores) written to a file and
 * read back through the .sqm tokenizer reader. */
static sq_tokenizer *via_sqm(const sq_wordpiece_spec *spec, sq_err *err)
{
    char file[] = "/tmp/squint-mbtok-sqm-XXXXXX";
    int fd = mkstemp(file);
    if (fd < 0) {
        sq_err_set(err, "no temp file");
        return NULL;
    }
    close(fd);
    sq_strbuf sb = {0};
    sq_enc_sqm_tokenizer_yaml(&sb, spec);
    size_t vb = 0;
    for (int32_t i = 0; i < spec->vocab_size; i++)
        vb += strlen(spec->vocab[i]) + 1;
    char *vocab = malloc(vb);
    int32_t *added = malloc(((size_t)spec->n_added + 1) * 3 * sizeof *added);
    sq_container_writer *w = sq_container_writer_new(SQ_KIND_SQM);
    sq_tokenizer *t = NULL;
    if (!vocab || !added || !w || sb.failed) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    for (int32_t i = 0, o = 0; i < spec->vocab_size; i++) {
        size_t l = strlen(spec->vocab[i]) + 1;
        memcpy(vocab + o, spec->vocab[i], l);
        o += (int)l;
    }
    for (int32_t r = 0; r < spec->n_added; r++) {
        added[3 * r] = spec->added[r].id;
        added[3 * r + 1] = spec->added[r].normalized;
        added[3 * r + 2] = spec->added[r].special;
    }
    uint64_t dv = vb, dm[2] = {(uint64_t)spec->n_merges, 2}, da[2] = {(uint64_t)spec->n_added, 3};
    if (sq_container_writer_set_metadata(w, sb.s, sb.len, err) != 0 ||
        sq_container_writer_add_tensor(w, "tokenizer.vocab", SQ_CDT_U8, 1, &dv, vocab, vb, err) ||
        sq_container_writer_add_tensor(w, "tokenizer.merges", SQ_CDT_I32, 2, dm, spec->merges,
                                       dm[0] * 8, err) ||
        sq_container_writer_add_tensor(w, "tokenizer.added", SQ_CDT_I32, 2, da, added, da[0] * 12,
                                       err) ||
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
    free(added);
    free(sb.s);
    remove(file);
    return t;
}

/* The tokenizer of dir with every added token's lstrip cleared (wrong). */
static sq_tokenizer *load_no_lstrip(const char *dir, sq_err *err)
{
    sq_wordpiece_spec spec;
    if (sq_wordpiece_spec_load_dir(dir, &spec, err) != 0)
        return NULL;
    for (int32_t i = 0; i < spec.n_added; i++)
        spec.added[i].lstrip = false;
    sq_tokenizer *t = sq_tokenizer_new(&spec, err);
    sq_wordpiece_spec_free(&spec);
    return t;
}

/* The wrong variants: each must mismatch somewhere. Returns how many did. */
static int run_wrong(const char *dir, sq_tokenizer *t, gold *g, size_t ng, pair_gold *p,
                     size_t np)
{
    sq_err err = {0};
    sq_tokenizer *nl = load_no_lstrip(dir, &err);
    long a = nl ? check_singles(nl, g, ng, true, false, NULL, NULL) : -1;
    sq_tokenizer_free(nl);
    long b = check_singles(t, g, ng, false, false, NULL, NULL);
    long c = check_pairs(t, p, np, true, false);
    printf("wrong variants: no lstrip on [MASK] %ld texts mismatch, no post-processor %ld texts, "
           "the earlier pair truncation %ld pairs\n",
           a, b, c);
    return (a > 0) + (b > 0) + (c > 0);
}

int main(int argc, char **argv)
{
    const bool wrong_only = argc > 1 && strcmp(argv[1], "--wrong") == 0;
    const char *data = getenv("SQUINT_SHARED_DATA");
    struct stat st;
    if (!data || stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("SKIPPED: ModernBERT tokenizer parity needs the shared data directory; "
               "SQUINT_SHARED_DATA=%s is not a directory\n",
               data ? data : "(unset)");
        return 77;
    }
    char *text = tk_golden_load(TK_SOURCE_DIR "/golden/modernbert.ids.zst");
    if (!text)
        return 1;
    if (text[0] == '#') {
        const char *nl = strchr(text, '\n');
        printf("%.*s\n", nl ? (int)(nl - text) : 0, text);
    }
    gold *g;
    size_t ng, np = 0;
    int rc = tk_golden_parse(text, data, TK_SOURCE_DIR, &g, &ng);
    free(text);
    if (rc != 0)
        return 1;
    pair_gold *p = load_pairs(g, ng, &np);
    char dir[64];
    if (!p || write_fixture(dir, sizeof dir) != 0) {
        printf("ERROR cannot read the pair golden or write the fixture folder\n");
        return 1;
    }
    sq_err err = {0};
    sq_wordpiece_spec spec;
    sq_tokenizer *t = NULL;
    if (sq_wordpiece_spec_load_dir(dir, &spec, &err) != 0 || !(t = sq_tokenizer_new(&spec, &err))) {
        printf("ERROR %s\n", err.msg);
        remove_fixture(dir);
        return 1;
    }
    bool ok;
    if (wrong_only) {
        ok = run_wrong(dir, t, g, ng, p, np) == 0;
    } else {
        const bool ids_ok = sq_tokenizer_kind_of(t) == SQ_TOKENIZER_BYTELEVEL &&
                            sq_tokenizer_vocab_size(t) == 50368 &&
                            sq_tokenizer_unk_id(t) == 50280 && sq_tokenizer_cls_id(t) == 50281 &&
                            sq_tokenizer_sep_id(t) == 50282 && sq_tokenizer_pad_id(t) == 50283 &&
                            sq_tokenizer_mask_id(t) == 50284 &&
                            sq_tokenizer_model_max_length(t) == 8192 &&
                            !sq_tokenizer_pair_double_sep(t) && sq_tokenizer_is_special(t, 50284);
        printf("fixture folder: byte-level kind, 50368 ids, [UNK] [CLS] [SEP] [PAD] [MASK] = "
               "50280..50284, model_max_length 8192, BERT pairs: %s\n",
               ids_ok ? "yes" : "NO");
        long texts = 0, rt_bad = 0;
        long mm = check_singles(t, g, ng, true, true, &texts, &rt_bad);
        const gold *edge = find_source(g, ng, "squint:modernbert_edge_strings.json");
        long inv = edge ? check_invalid(t, edge) : 1;
        long tmm = check_threads(t, g, ng);
        long pmm = check_pairs(t, p, np, false, true);
        printf("  %-42s %6ld texts, %ld mismatches, %ld round-trip failures\n", "total", texts, mm,
               rt_bad);
        printf("  %-42s %6ld texts, %ld mismatches\n", "again from 4 threads", texts, tmm);
        printf("  %-42s %6d cases, %ld mismatches\n", "invalid UTF-8", 6, inv);
        printf("  %-42s %6zu pairs, %ld mismatches\n", "pairs (longest_first)", np, pmm);
        sq_tokenizer *ts = via_sqm(&spec, &err);
        long smm = -1, spmm = -1;
        if (!ts) {
            printf("ERROR the .sqm form: %s\n", err.msg);
        } else {
            smm = check_singles(ts, g, ng, true, false, NULL, NULL);
            spmm = check_pairs(ts, p, np, false, false);
            printf("  %-42s %6ld texts, %ld mismatches; %zu pairs, %ld mismatches\n",
                   "again: the .sqm form", texts, smm, np, spmm);
        }
        sq_tokenizer_free(ts);
        int wrong = run_wrong(dir, t, g, ng, p, np);
        ok = ids_ok && mm == 0 && rt_bad == 0 && inv == 0 && tmm == 0 && pmm == 0 &&
             smm == 0 && spmm == 0 && texts >= 10000 && np >= 1000 && wrong == 3;
        printf("%ld texts and %zu pairs compared with transformers.js / tokenizers (ModernBERT-"
               "shaped fixture): %ld + %ld mismatches, 3 wrong variants caught: %s: %s\n",
               texts, np, mm, pmm, wrong == 3 ? "yes" : "NO", ok ? "all ids identical" : "FAILED");
    }
    sq_tokenizer_free(t);
    sq_wordpiece_spec_free(&spec);
    remove_fixture(dir);
    for (size_t i = 0; i < np; i++)
        free(p[i].ids);
    free(p);
    tk_golden_free(g, ng);
    return ok ? 0 : 1;
}

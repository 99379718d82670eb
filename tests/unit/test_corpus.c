/* Calibration corpus readers (text, JSONL, QASPER), containers (tar.gz, zip,
 * zst, gz), refusals, chaining with hashes, deterministic sampling, the real
 * QASPER subset ($SQUINT_SHARED_DATA) and the bundled corpus. */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include <zstd.h>

#include "corpus.h"
#include "test_util.h"

static char *dir;
static void setup(void) { dir = tu_mkdtemp(); }
static void teardown(void)
{
    tu_rmtree(dir);
    free(dir);
}

/* ---- helpers ---- */

static char *join(const char *d, const char *name)
{
    size_t n = strlen(d) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", d, name);
    return p;
}

typedef struct collected {
    size_t n;
    char *text[64]; /* first 64 samples */
    int rc;         /* 0 on success, -1 on error */
    sq_err err;
} collected;

/* Read every sample of `paths` into c (keeps the first 64). */
static void collect_many(const char *const *paths, size_t n_paths, const sq_corpus_opts *o,
                         collected *c)
{
    memset(c, 0, sizeof *c);
    sq_corpus *cp = sq_corpus_open_many(paths, n_paths, o, &c->err);
    if (!cp) {
        c->rc = -1;
        return;
    }
    const char *t;
    size_t len;
    int r;
    while ((r = sq_corpus_next(cp, &t, &len, &c->err)) == 1) {
        ck_assert_uint_eq(strlen(t), len);
        if (c->n < 64)
            c->text[c->n] = strdup(t);
        c->n++;
    }
    c->rc = r;
    sq_corpus_close(cp);
}

static void collect(const char *path, const sq_corpus_opts *o, collected *c)
{
    collect_many(&path, 1, o, c);
}

static void collected_free(collected *c)
{
    for (size_t i = 0; i < c->n && i < 64; i++)
        free(c->text[i]);
    c->n = 0;
}

static void expect_texts(collected *c, const char *const *want, size_t n)
{
    ck_assert_msg(c->rc == 0, "unexpected error: %s", c->err.msg);
    ck_assert_uint_eq(c->n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(c->text[i], want[i]);
}

static void expect_error(collected *c, const char *needle)
{
    ck_assert_int_eq(c->rc, -1);
    ck_assert_msg(strstr(c->err.msg, needle), "error \"%s\" lacks \"%s\"", c->err.msg, needle);
    collected_free(c); /* samples read before the error */
}

typedef struct member {
    const char *name;
    const char *data; /* NULL: a directory entry */
} member;

/* Write an archive with libarchive: format "tar" or "zip", gzip filter or not. */
static char *write_archive(const char *name, int zip, int gzip, const member *m, size_t n)
{
    char *path = join(dir, name);
    struct archive *a = archive_write_new();
    if (zip)
        archive_write_set_format_zip(a);
    else
        archive_write_set_format_pax_restricted(a);
    if (gzip)
        archive_write_add_filter_gzip(a);
    ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, m[i].name);
        archive_entry_set_mtime(e, 1700000000, 0);
        if (m[i].data) {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, 0644);
            archive_entry_set_size(e, (la_int64_t)strlen(m[i].data));
        } else {
            archive_entry_set_filetype(e, AE_IFDIR);
            archive_entry_set_perm(e, 0755);
        }
        ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
        if (m[i].data)
            ck_assert_int_eq(archive_write_data(a, m[i].data, strlen(m[i].data)),
                             (la_ssize_t)strlen(m[i].data));
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    return path;
}

/* Compress len bytes with libzstd into dir/name (cut to `keep` bytes if nonzero). */
static char *write_zst_bytes(const char *name, const char *s, size_t len, size_t keep)
{
    size_t bound = ZSTD_compressBound(len);
    char *buf = malloc(bound);
    size_t n = ZSTD_compress(buf, bound, s, len, 3);
    ck_assert(!ZSTD_isError(n));
    if (keep && keep < n)
        n = keep;
    char *p = tu_write(dir, name, buf, n);
    free(buf);
    return p;
}

static char *write_zst(const char *name, const char *s, size_t keep)
{
    return write_zst_bytes(name, s, strlen(s), keep);
}

static char *read_bytes(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)sz, fp), (size_t)sz);
    fclose(fp);
    *n = (size_t)sz;
    return b;
}

/* ---- plain text ---- */

START_TEST(text_lines)
{
    char *p = tu_write_str(dir, "c.txt", "\xEF\xBB\xBF" "first\r\n\r\n  \t \nsecond line\n\nthird");
    collected c;
    collect(p, NULL, &c);
    const char *want[] = {"first", "second line", "third"};
    expect_texts(&c, want, 3);
    collected_free(&c);

    /* Format text forced on a .jsonl name: lines as they are. */
    char *q = tu_write_str(dir, "c.jsonl", "{\"text\":\"a\"}\n");
    sq_corpus_opts o = {.format = SQ_CORPUS_TEXT};
    collect(q, &o, &c);
    const char *want2[] = {"{\"text\":\"a\"}"};
    expect_texts(&c, want2, 1);
    collected_free(&c);
    free(p);
    free(q);
}
END_TEST

START_TEST(text_refusals)
{
    collected c;
    char *p = tu_write(dir, "nul.txt", "ok\nbad\0line\n", 12);
    collect(p, NULL, &c);
    expect_error(&c, "nul.txt:2: NUL byte");
    free(p);

    p = tu_write_str(dir, "utf8.txt", "ok\nok\nbad \xC3\x28 here\n");
    collect(p, NULL, &c);
    expect_error(&c, "utf8.txt:3: invalid UTF-8 at column 5");
    free(p);

    p = tu_write_str(dir, "surrogate.txt", "\xED\xA0\x80\n");
    collect(p, NULL, &c);
    expect_error(&c, "surrogate.txt:1: invalid UTF-8");
    free(p);

    /* Valid multi-byte text passes. */
    p = tu_write_str(dir, "ok.txt", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n");
    collect(p, NULL, &c);
    const char *want[] = {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"};
    expect_texts(&c, want, 1);
    collected_free(&c);
    free(p);

    /* Line bound: exactly max_line is fine, one more byte is refused. */
    sq_corpus_opts o = {.max_line = 8};
    p = tu_write_str(dir, "long.txt", "12345678\r\nabc\n123456789\n");
    collect(p, &o, &c);
    expect_error(&c, "long.txt:3: line longer than 8 bytes");
    free(p);
    p = tu_write_str(dir, "long2.txt", "12345678\n12345678901234567890");
    collect(p, &o, &c);
    expect_error(&c, "long2.txt:2: line longer than 8 bytes");
    free(p);

    /* A long line under the default bound crosses many buffer refills. */
    size_t big = (size_t)1 << 20;
    char *s = malloc(big + 3);
    memset(s, 'x', big);
    memcpy(s + big, "\ny", 3);
    p = tu_write(dir, "big.txt", s, big + 2);
    collect(p, NULL, &c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_uint_eq(strlen(c.text[0]), big);
    ck_assert_str_eq(c.text[1], "y");
    collected_free(&c);
    free(s);
    free(p);

    collect("/nonexistent/corpus.txt", NULL, &c);
    expect_error(&c, "/nonexistent/corpus.txt: cannot open");
}
END_TEST

/* ---- JSONL ---- */

START_TEST(jsonl_fields)
{
    collected c;
    char *p = tu_write_str(dir, "corpus.jsonl",
                           "{\"text\":\"one\",\"id\":1}\n\n{\"text\":\"two \\u00e9\"}\r\n"
                           "{\"text\":\"  \"}\n{\"text\":\"three\"}");
    collect(p, NULL, &c);
    const char *want[] = {"one", "two \xC3\xA9", "three"};
    expect_texts(&c, want, 3);
    collected_free(&c);
    free(p);

    p = tu_write_str(dir, "nested.ndjson",
                     "{\"doc\":{\"body\":{\"t\":\"deep\"}}}\n{\"doc\":{\"body\":{\"t\":\"er\"}}}\n");
    sq_corpus_opts o = {.field = "doc.body.t"};
    collect(p, &o, &c);
    const char *want2[] = {"deep", "er"};
    expect_texts(&c, want2, 2);
    collected_free(&c);

    /* Where the last sample came from. */
    sq_err err;
    sq_corpus *cp = sq_corpus_open(p, &o, &err);
    ck_assert_ptr_nonnull(cp);
    const char *t;
    size_t len;
    ck_assert_int_eq(sq_corpus_next(cp, &t, &len, &err), 1);
    ck_assert_int_eq(sq_corpus_next(cp, &t, &len, &err), 1);
    ck_assert_ptr_nonnull(strstr(sq_corpus_where(cp), "nested.ndjson:2"));
    ck_assert_int_eq(sq_corpus_next(cp, &t, &len, &err), 0);
    sq_corpus_close(cp);
    free(p);
}
END_TEST

START_TEST(jsonl_refusals)
{
    collected c;
    char *p = tu_write_str(dir, "corpus.jsonl", "{\"text\":\"a\"}\n{\"text\":\"b\"}\n{\"txt\":\"c\"}\n");
    collect(p, NULL, &c);
    ck_assert_uint_eq(c.n, 2);
    expect_error(&c, "corpus.jsonl:3: field \"text\" is missing or not a string");
    free(p);

    p = tu_write_str(dir, "num.jsonl", "{\"text\":5}\n");
    collect(p, NULL, &c);
    expect_error(&c, "num.jsonl:1: field \"text\" is missing or not a string");
    free(p);

    p = tu_write_str(dir, "bad.jsonl", "{\"text\":\"a\"}\n{\"text\": oops}\n");
    collect(p, NULL, &c);
    expect_error(&c, "bad.jsonl:2: not valid JSON");
    free(p);

    p = tu_write_str(dir, "arr.jsonl", "[\"text\"]\n");
    collect(p, NULL, &c);
    expect_error(&c, "arr.jsonl:1: not a JSON object");
    free(p);

    p = tu_write_str(dir, "esc.jsonl", "{\"text\":\"a\\u0000b\"}\n");
    collect(p, NULL, &c);
    expect_error(&c, "esc.jsonl:1: not valid JSON");
    free(p);

    p = tu_write(dir, "nul.jsonl", "{\"text\":\"a\"}\n{\"text\":\"\0\"}\n", 25);
    collect(p, NULL, &c);
    expect_error(&c, "nul.jsonl:2: NUL byte");
    free(p);

    p = tu_write_str(dir, "x.jsonl", "{\"text\":\"a\"}\n");
    sq_corpus_opts o = {.field = "a..b"};
    collect(p, &o, &c);
    expect_error(&c, "invalid JSON field path \"a..b\"");
    free(p);
}
END_TEST

/* ---- QASPER ---- */

START_TEST(qasper_parts_list)
{
    unsigned m;
    sq_err err;
    ck_assert_int_eq(sq_qasper_parts_parse("abstract", &m, &err), 0);
    ck_assert_uint_eq(m, SQ_QASPER_ABSTRACT);
    ck_assert_int_eq(sq_qasper_parts_parse(" title , evidence,questions", &m, &err), 0);
    ck_assert_uint_eq(m, SQ_QASPER_TITLE | SQ_QASPER_EVIDENCE | SQ_QASPER_QUESTIONS);
    ck_assert_int_eq(sq_qasper_parts_parse("all", &m, &err), 0);
    ck_assert_uint_eq(m, SQ_QASPER_ALL);
    ck_assert_int_eq(sq_qasper_parts_parse("abstract,figures", &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown part \"figures\""));
    ck_assert_int_eq(sq_qasper_parts_parse("abstract,,title", &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty entry"));
    ck_assert_int_eq(sq_qasper_parts_parse("", &m, &err), -1);

    sq_corpus_format f;
    ck_assert_int_eq(sq_corpus_parse_format("qasper", &f, &err), 0);
    ck_assert_int_eq(f, SQ_CORPUS_QASPER);
    ck_assert_int_eq(sq_corpus_parse_format("csv", &f, &err), -1);
    ck_assert_str_eq(sq_corpus_format_name(SQ_CORPUS_JSONL), "jsonl");

    /* Opening validates the list too. */
    char *p = tu_write_str(dir, "x.txt", "a\n");
    sq_corpus_opts o = {.qasper_parts = "abstracts"};
    ck_assert_ptr_null(sq_corpus_open(p, &o, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown part \"abstracts\""));
    free(p);
}
END_TEST

static const char *qasper_doc =
    "{\n"
    "  \"p1\": {\n"
    "    \"title\": \"T1\", \"abstract\": \"A1\",\n"
    "    \"full_text\": [{\"section_name\": \"Intro\", \"paragraphs\": [\"P1a\", \"\", \"P1b\"]},\n"
    "                  {\"section_name\": \"End\", \"paragraphs\": [\"P1c\"]}],\n"
    "    \"qas\": [{\"question\": \"Q1?\", \"answers\": [\n"
    "        {\"answer\": {\"evidence\": [\"P1a\", \"P1b\"], \"highlighted_evidence\": [\"x\"]}},\n"
    "        {\"answer\": {\"evidence\": [\"P1a\"]}}]},\n"
    "              {\"question\": \"Q2?\", \"answers\": [{\"answer\": {\"evidence\": []}}]}]\n"
    "  },\n"
    "  \"p2\": {\"title\": \"T2\", \"abstract\": \"A2\", \"full_text\": [],\n"
    "         \"qas\": [{\"question\": \"Q3?\", \"answers\": [{\"answer\": {\"evidence\": [\"P1b\", \"E2\"]}}]}]}\n"
    "}\n";

START_TEST(qasper_document)
{
    collected c;
    char *p = tu_write_str(dir, "papers.json", qasper_doc);
    sq_corpus_opts o = {.qasper_parts = "all"};
    collect(p, &o, &c);
    /* Per paper: title, abstract, paragraphs, then each question and its new evidence. */
    const char *want[] = {"T1", "A1", "P1a", "P1b", "P1c", "Q1?", "P1a", "P1b", "Q2?",
                          "T2", "A2", "Q3?", "E2"};
    expect_texts(&c, want, 13);
    collected_free(&c);

    o.qasper_parts = "evidence";
    collect(p, &o, &c);
    const char *want2[] = {"P1a", "P1b", "E2"};
    expect_texts(&c, want2, 3);
    collected_free(&c);

    /* Default parts: no titles. */
    collect(p, NULL, &c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_uint_eq(c.n, 11);
    ck_assert_str_eq(c.text[0], "A1");
    collected_free(&c);

    /* The same document under another name, format forced: detected as a document. */
    char *q = tu_write_str(dir, "papers.dat", qasper_doc);
    o = (sq_corpus_opts){.format = SQ_CORPUS_QASPER, .qasper_parts = "questions"};
    collect(q, &o, &c);
    const char *want3[] = {"Q1?", "Q2?", "Q3?"};
    expect_texts(&c, want3, 3);
    collected_free(&c);
    free(q);

    /* A paper map per line (.jsonl). */
    q = tu_write_str(dir, "map.jsonl",
                     "{\"p1\":{\"title\":\"T1\",\"abstract\":\"A1\",\"full_text\":[],\"qas\":[]}}\n"
                     "{\"p2\":{\"title\":\"T2\",\"abstract\":\"A2\",\"full_text\":[],\"qas\":[]},"
                     "\"p3\":{\"title\":\"T3\",\"abstract\":\"A3\",\"full_text\":[],\"qas\":[]}}\n");
    o = (sq_corpus_opts){.qasper_parts = "title"};
    collect(q, &o, &c);
    const char *want4[] = {"T1", "T2", "T3"};
    expect_texts(&c, want4, 3);
    collected_free(&c);
    free(q);

    /* Schema errors name the paper and the path. */
    q = tu_write_str(dir, "bad.json",
                     "{\"p9\": {\"title\": \"T\", \"abstract\": \"A\", \"full_text\": [],"
                     " \"qas\": [{\"question\": \"Q\", \"answers\": [{\"answer\": {}}]}]}}");
    o = (sq_corpus_opts){.qasper_parts = "evidence"};
    collect(q, &o, &c);
    expect_error(&c, "bad.json: paper \"p9\": field \"qas[0].answers[0].answer.evidence\" is "
                     "missing or not an array");
    o.qasper_parts = "title,questions"; /* fields of other parts are not needed */
    collect(q, &o, &c);
    const char *want5[] = {"T", "Q"};
    expect_texts(&c, want5, 2);
    collected_free(&c);
    free(q);

    q = tu_write_str(dir, "broken.json", "{\"p1\": {\"title\": \"T\",\n \"abstract\": }}");
    collect(q, NULL, &c);
    expect_error(&c, "broken.json:2: not valid JSON");
    free(q);
    free(p);
}
END_TEST

START_TEST(qasper_jsonl_layouts)
{
    collected c;
    char *papers = tu_write_str(dir, "papers.jsonl",
                                "{\"paper_id\":\"1\",\"title\":\"T1\",\"abstract\":\"A1\"}\n"
                                "{\"paper_id\":\"2\",\"title\":\"T2\",\"abstract\":\"A2\"}\n");
    char *qas = tu_write_str(dir, "qas.jsonl",
                             "{\"paper_id\":\"1\",\"question\":\"Q1\",\"answers\":[\"x\"],"
                             "\"evidence\":[\"E1\",\"E2\"]}\n"
                             "{\"paper_id\":\"1\",\"question\":\"Q2\",\"answers\":[],"
                             "\"evidence\":[\"E2\",\"E3\"]}\n"
                             "{\"paper_id\":\"1\",\"question\":\"Q3\",\"evidence\":[]}\n");
    char *paras = tu_write_str(dir, "paras.jsonl",
                               "{\"paper_id\":\"1\",\"paper_title\":\"T1\",\"abstract\":\"A1\","
                               "\"section_name\":\"S\",\"text\":\"P1\"}\n"
                               "{\"paper_id\":\"1\",\"paper_title\":\"T1\",\"abstract\":\"A1\","
                               "\"section_name\":\"S\",\"text\":\"P2\"}\n"
                               "{\"paper_id\":\"2\",\"paper_title\":\"T2\",\"abstract\":\"A2\","
                               "\"section_name\":\"S\",\"text\":\"P3\"}\n");
    sq_corpus_opts all = {.qasper_parts = "all"};
    collect(papers, &all, &c);
    const char *w1[] = {"T1", "A1", "T2", "A2"};
    expect_texts(&c, w1, 4);
    collected_free(&c);

    collect(qas, &all, &c);
    const char *w2[] = {"Q1", "E1", "E2", "Q2", "E3", "Q3"};
    expect_texts(&c, w2, 6);
    collected_free(&c);

    collect(paras, &all, &c);
    const char *w3[] = {"T1", "A1", "P1", "P2", "T2", "A2", "P3"};
    expect_texts(&c, w3, 7);
    collected_free(&c);

    /* Explicit jsonl reads the paragraph file's "text" field only. */
    sq_corpus_opts j = {.format = SQ_CORPUS_JSONL};
    collect(paras, &j, &c);
    const char *w4[] = {"P1", "P2", "P3"};
    expect_texts(&c, w4, 3);
    collected_free(&c);

    /* A later line missing a field its layout needs. */
    char *bad = tu_write_str(dir, "badqas.jsonl",
                             "{\"question\":\"Q1\",\"evidence\":[]}\n{\"evidence\":[]}\n");
    collect(bad, &all, &c);
    expect_error(&c, "badqas.jsonl:2: field \"question\" is missing or not a string");
    char *none = tu_write_str(dir, "other.jsonl", "{\"foo\":1}\n");
    sq_corpus_opts qf = {.format = SQ_CORPUS_QASPER};
    collect(none, &qf, &c);
    expect_error(&c, "other.jsonl:1: not a QASPER layout");
    free(papers);
    free(qas);
    free(paras);
    free(bad);
    free(none);
}
END_TEST

/* Counts computed independently (python json over the same files). */
START_TEST(qasper_real_subset)
{
    const char *root = getenv("SQUINT_SHARED_DATA");
    char base[4096];
    snprintf(base, sizeof base, "%s/qasper-subset", root ? root : "");
    struct stat st;
    if (!root || stat(base, &st) != 0) {
        fprintf(stderr, "SKIP qasper_real_subset: $SQUINT_SHARED_DATA/qasper-subset not found\n");
        return;
    }
    struct {
        const char *file, *parts;
        sq_corpus_format format;
        size_t want;
        const char *first_prefix;
    } cases[] = {
        {"papers.jsonl", "abstract", 0, 100, "Recognizing affective events"},
        {"papers.jsonl", "title", 0, 100, "Minimally Supervised Learning"},
        {"papers.jsonl", NULL, 0, 100, "Recognizing affective events"},
        {"papers.jsonl", "questions,evidence,paragraphs", 0, 0, NULL},
        {"qasper_eval_qas.jsonl", "questions", 0, 420, "What is the seed lexicon?"},
        {"qasper_eval_qas.jsonl", "evidence", 0, 666, "The seed lexicon consists"},
        {"qasper_eval_qas.jsonl", NULL, 0, 420 + 666, "What is the seed lexicon?"},
        {"paragraphs-partial.jsonl", "paragraphs", 0, 133, "Affective events BIBREF0"},
        {"paragraphs-partial.jsonl", "title,abstract", 0, 4, "Minimally Supervised"},
        {"paragraphs-partial.jsonl", NULL, SQ_CORPUS_JSONL, 133, "Affective events BIBREF0"},
        {"allenai-fixture/qasper_sample_tiny.json", "all", 0, 1 + 1 + 6 + 1 + 1, "Minimally"},
        {"allenai-fixture/qasper_sample_tiny.json", "paragraphs", 0, 6, "A short paragraph"},
        {"allenai-fixture/qasper_sample_small.json", "paragraphs", 0, 5, "A short paragraph"},
        {"allenai-fixture/qasper_sample_small.json", "questions", 0, 4, "What is the seed"},
        {"allenai-fixture/qasper_sample_small.json", "evidence", 0, 1, "Method paragraph"},
        {"allenai-fixture/qasper_sample_small.json", "abstract", 0, 1, "This is the abstract"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", base, cases[i].file);
        sq_corpus_opts o = {.format = cases[i].format, .qasper_parts = cases[i].parts};
        collected c;
        collect(path, &o, &c);
        ck_assert_msg(c.rc == 0, "%s: %s", path, c.err.msg);
        ck_assert_msg(c.n == cases[i].want, "%s parts %s: %zu samples, want %zu", cases[i].file,
                      cases[i].parts ? cases[i].parts : "(default)", c.n, cases[i].want);
        if (cases[i].first_prefix)
            ck_assert_msg(strncmp(c.text[0], cases[i].first_prefix,
                                  strlen(cases[i].first_prefix)) == 0,
                          "%s: first sample \"%.40s\"", cases[i].file, c.text[0]);
        collected_free(&c);
    }

    /* Chained, with hashes of the raw bytes. */
    char p1[4300], p2[4300];
    snprintf(p1, sizeof p1, "%s/papers.jsonl", base);
    snprintf(p2, sizeof p2, "%s/qasper_eval_qas.jsonl", base);
    const char *paths[] = {p1, p2};
    sq_corpus_opts o = {.qasper_parts = "abstract,questions"};
    collected c;
    collect_many(paths, 2, &o, &c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_uint_eq(c.n, 520);
    collected_free(&c);

    sq_corpus_samples s;
    sq_err err;
    ck_assert_int_eq(sq_corpus_sample(paths, 2, &o, 100, 42, &s, &err), 0);
    ck_assert_uint_eq(s.count, 100);
    ck_assert_uint_eq(s.n_seen, 520);
    ck_assert_uint_eq(s.n_files, 2);
    ck_assert_uint_eq(s.files[0].size, 110535);
    ck_assert_uint_eq(s.files[1].size, 460430);
    size_t n;
    char *b = read_bytes(p1, &n);
    ck_assert_uint_eq(s.files[0].xxh64, XXH64(b, n, 0));
    free(b);
    sq_corpus_samples_free(&s);
}
END_TEST

/* ---- containers ---- */

START_TEST(archives)
{
    const member m[] = {
        {"docs/", NULL},
        {"docs/a.txt", "alpha\nbeta\n"},
        {"docs/b.jsonl", "{\"text\":\"gamma\"}\n"},
        {"docs/c.json", "{\"p\":{\"title\":\"t\",\"abstract\":\"delta\",\"full_text\":[],\"qas\":[]}}"},
        {"docs/d.txt", "epsilon"},
    };
    const char *want[] = {"alpha", "beta", "gamma", "delta", "epsilon"};
    const char *names[] = {"corpus.tar.gz", "corpus.zip", "corpus.tar", "corpus.tgz"};
    for (int k = 0; k < 4; k++) {
        char *p = write_archive(names[k], k == 1, k == 0 || k == 3, m, 5);
        collected c;
        collect(p, NULL, &c);
        expect_texts(&c, want, 5);
        collected_free(&c);

        /* Errors inside a member name the archive and the member. */
        const member bad[] = {{"x/ok.txt", "fine\n"}, {"x/bad.jsonl", "{\"text\":\"a\"}\n{}\n"}};
        char badname[64];
        snprintf(badname, sizeof badname, "bad-%s", names[k]);
        char *q = write_archive(badname, k == 1, k == 0 || k == 3, bad, 2);
        collect(q, NULL, &c);
        char needle[128];
        snprintf(needle, sizeof needle, "%s:x/bad.jsonl:2: field \"text\"", badname);
        expect_error(&c, needle);
        free(p);
        free(q);
    }

    /* Nested compression is refused. */
    const member nested[] = {{"inner.jsonl.gz", "x"}};
    char *p = write_archive("nested.tar", 0, 0, nested, 1);
    collected c;
    collect(p, NULL, &c);
    expect_error(&c, "nested.tar:inner.jsonl.gz: compressed or archive members");
    free(p);

    /* An archive without members has no samples. */
    p = write_archive("empty.tar.gz", 0, 1, m, 1);
    collect(p, NULL, &c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_uint_eq(c.n, 0);
    sq_corpus_samples s;
    sq_err err;
    const char *one[] = {p};
    ck_assert_int_eq(sq_corpus_sample(one, 1, NULL, 10, 1, &s, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no samples in corpus"));
    ck_assert_ptr_nonnull(strstr(err.msg, "empty.tar.gz"));
    free(p);
}
END_TEST

START_TEST(compressed_streams)
{
    const char *jsonl = "{\"text\":\"zeta\"}\n{\"text\":\"eta\"}\n";
    char *p = write_zst("c.jsonl.zst", jsonl, 0);
    collected c;
    collect(p, NULL, &c);
    const char *want[] = {"zeta", "eta"};
    expect_texts(&c, want, 2);
    collected_free(&c);
    free(p);

    /* Single gzip stream (libarchive raw writer). */
    char *g = join(dir, "c.txt.gz");
    struct archive *a = archive_write_new();
    archive_write_set_format_raw(a);
    archive_write_add_filter_gzip(a);
    ck_assert_int_eq(archive_write_open_filename(a, g), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_filetype(e, AE_IFREG);
    ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
    archive_write_data(a, "theta\niota\n", 11);
    archive_entry_free(e);
    archive_write_close(a);
    archive_write_free(a);
    collect(g, NULL, &c);
    const char *want2[] = {"theta", "iota"};
    expect_texts(&c, want2, 2);
    collected_free(&c);

    /* Truncated zstd frames: cut mid-block and just before the end. */
    size_t big = 200000;
    char *text = malloc(big + 1);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < big; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: text that does not shrink much */
        text[i] = (i % 61 == 60) ? '\n' : (char)('a' + x % 26);
    }
    text[big] = '\0';
    char *full = write_zst("full.txt.zst", text, 0);
    size_t zn;
    char *zb = read_bytes(full, &zn);
    ck_assert_uint_gt(zn, 1000);
    size_t cuts[] = {zn / 2, zn - 3};
    for (int k = 0; k < 2; k++) {
        p = tu_write(dir, "trunc.txt.zst", zb, cuts[k]);
        collect(p, NULL, &c);
        expect_error(&c, "trunc.txt.zst");
        free(p);
    }
    collect(full, NULL, &c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_uint_eq(c.n, big / 61 + 1); /* the last line has no newline */
    collected_free(&c);
    free(zb);
    free(full);
    free(text);

    /* Truncated gzip. */
    size_t n;
    char *gz = read_bytes(g, &n);
    p = tu_write(dir, "trunc.txt.gz", gz, n - 6);
    collect(p, NULL, &c);
    expect_error(&c, "trunc.txt.gz");
    free(p);
    free(gz);
    free(g);

    /* Not compressed at all, despite the name. */
    p = tu_write_str(dir, "plain.txt.zst", "hello\n");
    collect(p, NULL, &c);
    expect_error(&c, "plain.txt.zst: ");
    free(p);

    /* Binary garbage in a zst stream is refused as text. */
    p = write_zst_bytes("bin.txt.zst", "ok\n\x01\x00\x02\n", 7, 0);
    collect(p, NULL, &c);
    expect_error(&c, "bin.txt.zst:2: NUL byte");
    free(p);
}
END_TEST

START_TEST(corrupt_archives)
{
    const member m[] = {{"a.txt", "alpha\nbeta\n"}, {"b.txt", "gamma\n"}};
    char *p = write_archive("good.tar.gz", 0, 1, m, 2);
    size_t n;
    char *b = read_bytes(p, &n);
    collected c;

    /* Garbage in the middle of the deflate data. */
    for (size_t i = 20; i < n - 10; i++)
        b[i] ^= 0x5A;
    char *q = tu_write(dir, "flipped.tar.gz", b, n);
    collect(q, NULL, &c);
    expect_error(&c, "flipped.tar.gz");
    free(q);

    /* Random bytes under an archive name. */
    q = tu_write_str(dir, "junk.zip", "this is not a zip file at all, just words\n");
    collect(q, NULL, &c);
    expect_error(&c, "junk.zip");
    free(q);

    /* A tar cut in the middle of a member. */
    char *t = write_archive("good.tar", 0, 0, m, 2);
    char *tb = read_bytes(t, &n);
    q = tu_write(dir, "cut.tar", tb, 512 + 5);
    collect(q, NULL, &c);
    expect_error(&c, "cut.tar");
    free(q);
    free(tb);
    free(t);
    free(b);
    free(p);
}
END_TEST

/* ---- chaining and sampling ---- */

static char *numbered_corpus(const char *name, int from, int count)
{
    size_t cap = (size_t)count * 16 + 1, used = 0;
    char *s = malloc(cap);
    for (int i = 0; i < count; i++)
        used += (size_t)snprintf(s + used, cap - used, "s%d\n", from + i);
    char *p = tu_write(dir, name, s, used);
    free(s);
    return p;
}

START_TEST(chain_and_hashes)
{
    char *a = numbered_corpus("a.txt", 0, 3);
    char *b = tu_write_str(dir, "b.jsonl", "{\"text\":\"j0\"}\n");
    char *c3 = numbered_corpus("c.txt", 3, 2);
    const char *paths[] = {a, b, c3};
    collected c;
    collect_many(paths, 3, NULL, &c);
    const char *want[] = {"s0", "s1", "s2", "j0", "s3", "s4"};
    expect_texts(&c, want, 6);
    collected_free(&c);

    sq_err err;
    sq_corpus *cp = sq_corpus_open_many(paths, 3, NULL, &err);
    ck_assert_ptr_nonnull(cp);
    ck_assert_uint_eq(sq_corpus_n_files(cp), 3);
    const sq_corpus_file_info *f = sq_corpus_files(cp);
    for (int i = 0; i < 3; i++) {
        size_t n;
        char *bytes = read_bytes(paths[i], &n);
        ck_assert_str_eq(f[i].path, paths[i]);
        ck_assert_uint_eq(f[i].size, n);
        ck_assert_uint_eq(f[i].xxh64, XXH64(bytes, n, 0));
        free(bytes);
    }
    sq_corpus_close(cp);

    /* A missing file fails at open, before any sample. */
    const char *bad[] = {a, "/nonexistent.txt"};
    ck_assert_ptr_null(sq_corpus_open_many(bad, 2, NULL, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent.txt: cannot open"));
    free(a);
    free(b);
    free(c3);
}
END_TEST

START_TEST(sampling_deterministic)
{
    char *a = numbered_corpus("a.txt", 0, 600);
    char *b = numbered_corpus("b.txt", 600, 400);
    const char *paths[] = {a, b};
    sq_corpus_samples s1, s2, s3;
    sq_err err;
    ck_assert_int_eq(sq_corpus_sample(paths, 2, NULL, 50, 7, &s1, &err), 0);
    ck_assert_int_eq(sq_corpus_sample(paths, 2, NULL, 50, 7, &s2, &err), 0);
    ck_assert_int_eq(sq_corpus_sample(paths, 2, NULL, 50, 8, &s3, &err), 0);
    ck_assert_uint_eq(s1.count, 50);
    ck_assert_uint_eq(s1.n_seen, 1000);
    int differ = 0, from_b = 0;
    for (size_t i = 0; i < 50; i++) {
        ck_assert_str_eq(s1.text[i], s2.text[i]);
        ck_assert_uint_eq(s1.index[i], s2.index[i]);
        if (i > 0)
            ck_assert_uint_gt(s1.index[i], s1.index[i - 1]); /* corpus order, no repeats */
        char want[32];
        snprintf(want, sizeof want, "s%llu", (unsigned long long)s1.index[i]);
        ck_assert_str_eq(s1.text[i], want);
        ck_assert_uint_eq(s1.len[i], strlen(want));
        differ += s1.index[i] != s3.index[i];
        from_b += s1.index[i] >= 600;
    }
    ck_assert_int_gt(differ, 0);
    ck_assert_int_gt(from_b, 0); /* later files are reachable */
    ck_assert_int_lt(from_b, 50);
    sq_corpus_samples_free(&s1);
    sq_corpus_samples_free(&s2);
    sq_corpus_samples_free(&s3);

    /* More than the corpus holds, or 0: everything, in order. */
    size_t asks[] = {0, 1000, 5000};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(sq_corpus_sample(paths, 2, NULL, asks[k], 1, &s1, &err), 0);
        ck_assert_uint_eq(s1.count, 1000);
        for (size_t i = 0; i < 1000; i++)
            ck_assert_uint_eq(s1.index[i], i);
        ck_assert_str_eq(s1.text[999], "s999");
        sq_corpus_samples_free(&s1);
    }

    /* Uniformity, roughly: over many seeds each half of the corpus gets about
     * half of the picks. */
    size_t first_half = 0, total = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        ck_assert_int_eq(sq_corpus_sample(paths, 2, NULL, 20, seed, &s1, &err), 0);
        for (size_t i = 0; i < s1.count; i++)
            first_half += s1.index[i] < 500;
        total += s1.count;
        sq_corpus_samples_free(&s1);
    }
    ck_assert_uint_gt(first_half, total * 4 / 10);
    ck_assert_uint_lt(first_half, total * 6 / 10);

    /* No samples at all. */
    char *e = tu_write_str(dir, "empty.txt", "\n  \n");
    const char *ep[] = {e, a};
    ck_assert_int_eq(sq_corpus_sample(ep, 1, NULL, 10, 1, &s1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no samples in corpus"));
    ck_assert_ptr_nonnull(strstr(err.msg, "empty.txt"));
    ck_assert_uint_eq(s1.count, 0);
    /* Errors propagate from the sampler. */
    char *bad = tu_write_str(dir, "bad.jsonl", "{}\n");
    const char *bp[] = {a, bad};
    ck_assert_int_eq(sq_corpus_sample(bp, 2, NULL, 10, 1, &s1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad.jsonl:1: field \"text\""));
    free(bad);
    free(e);
    free(a);
    free(b);
}
END_TEST

/* ---- the bundled corpus ---- */

START_TEST(bundled_corpus)
{
#ifdef SQ_TEST_BUNDLED_CORPUS
    const char *path = SQ_TEST_BUNDLED_CORPUS;
    collected c;
    collect(path, NULL, &c);
    ck_assert_msg(c.rc == 0, "%s", c.err.msg);
    ck_assert_uint_eq(c.n, 1119);
    ck_assert(strncmp(c.text[0], "Recognizing affective events", 28) == 0);
    ck_assert_str_eq(c.text[1], "What is the seed lexicon?");
    collected_free(&c);
    sq_corpus_samples s;
    sq_err err;
    ck_assert_int_eq(sq_corpus_sample(&path, 1, NULL, 128, 0, &s, &err), 0);
    ck_assert_uint_eq(s.count, 128);
    ck_assert_uint_eq(s.n_seen, 1119);
    sq_corpus_samples_free(&s);
#else
    fprintf(stderr, "SKIP bundled_corpus: built without SQ_TEST_BUNDLED_CORPUS\n");
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("corpus");
    TCase *tc = tcase_create("corpus");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, text_lines);
    tcase_add_test(tc, text_refusals);
    tcase_add_test(tc, jsonl_fields);
    tcase_add_test(tc, jsonl_refusals);
    tcase_add_test(tc, qasper_parts_list);
    tcase_add_test(tc, qasper_document);
    tcase_add_test(tc, qasper_jsonl_layouts);
    tcase_add_test(tc, qasper_real_subset);
    tcase_add_test(tc, archives);
    tcase_add_test(tc, compressed_streams);
    tcase_add_test(tc, corrupt_archives);
    tcase_add_test(tc, chain_and_hashes);
    tcase_add_test(tc, sampling_deterministic);
    tcase_add_test(tc, bundled_corpus);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

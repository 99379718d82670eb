/* QASPER corpus format (Dasigi et al., NAACL 2021). Layouts:
 *   document   the original JSON schema: {paper_id: {title, abstract,
 *              full_text: [{section_name, paragraphs: [str]}],
 *              qas: [{question, answers: [{answer: {evidence: [str], ...}}]}]}}
 *              pretty-printed (read whole, bounded) or one such map per line;
 *   papers     JSONL {paper_id, title, abstract};
 *   qas        JSONL {question, evidence: [str], ...};
 *   paragraphs JSONL {paper_id, section_name, text, paper_title?, abstract?}.
 * Fields a requested part needs must be present with the right type; others
 * are not looked at, so a file is only as strict as the parts asked for. */
#include "corpus.h"
#include "json_util.h"
#include "corpus_reader.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum { L_NONE, L_DOCMAP, L_PAPERS, L_QAS, L_PARAGRAPHS };

typedef struct piece {
    const char *s;
    size_t n;
} piece;

typedef struct qasper_reader {
    sq_corpus_reader base;
    sq_line_source *ls;
    unsigned parts;
    int document;      /* the stream is one JSON document */
    int done;          /* document read and exhausted */
    int layout;
    json_t *cur;       /* the current line or document; owns queued texts */
    void *iter;        /* next paper of a paper map */
    const char *paper; /* id of the paper being emitted (paper maps) */
    piece *queue;
    size_t q_head, q_len, q_cap;
    sq_hash_set evidence_seen; /* xxh64 of evidence texts already emitted */
    sq_hash_set papers_seen;   /* paragraph layout: papers whose title/abstract went out */
    char where[1400];
} qasper_reader;

static int json_has(json_t *o, const char *k) { return json_object_get(o, k) != NULL; }

int sq_corpus_qasper_jsonl_layout(json_t *o)
{
    if (!json_is_object(o))
        return L_NONE;
    if (json_is_string(json_object_get(o, "question")) && json_has(o, "evidence"))
        return L_QAS;
    if (json_is_string(json_object_get(o, "text")) && json_has(o, "section_name") &&
        json_has(o, "paper_id"))
        return L_PARAGRAPHS;
    if (json_has(o, "paper_id") && json_is_string(json_object_get(o, "title")) &&
        json_is_string(json_object_get(o, "abstract")) && !json_has(o, "text"))
        return L_PAPERS;
    /* A paper map on one line: the first value is a paper object. */
    void *it = json_object_iter(o);
    json_t *first = it ? json_object_iter_value(it) : NULL;
    if (json_is_object(first) && (json_has(first, "full_text") || json_has(first, "qas")))
        return L_DOCMAP;
    return L_NONE;
}

static const char *ctx_name(qasper_reader *q, char *buf, size_t size)
{
    if (q->paper)
        snprintf(buf, size, "%s: paper \"%s\"", q->ls->name, q->paper);
    else
        snprintf(buf, size, "%s:%llu", q->ls->name, (unsigned long long)q->ls->line_no);
    return buf;
}

static int push(qasper_reader *q, json_t *v, sq_err *err)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (sq_corpus_blank(s, n))
        return 0;
    if (q->q_len == q->q_cap) {
        size_t nc = q->q_cap ? q->q_cap * 2 : 64;
        piece *nq = realloc(q->queue, nc * sizeof *nq);
        if (!nq)
            return sq_err_set(err, "%s: out of memory", q->ls->name);
        q->queue = nq;
        q->q_cap = nc;
    }
    q->queue[q->q_len++] = (piece){s, n};
    return 0;
}

/* A required string member; `what` names the JSON path in messages. */
static int want_str(qasper_reader *q, json_t *o, const char *key, const char *what, json_t **out,
                    sq_err *err)
{
    json_t *v = json_object_get(o, key);
    *out = v;
    if (!json_is_string(v)) {
        char b[1200];
        return sq_err_set(err, "%s: field \"%s\" is missing or not a string",
                          ctx_name(q, b, sizeof b), what);
    }
    return 0;
}

static int want_array(qasper_reader *q, json_t *o, const char *key, const char *what, json_t **out,
                      sq_err *err)
{
    json_t *v = json_object_get(o, key);
    *out = v;
    if (!json_is_array(v)) {
        char b[1200];
        return sq_err_set(err, "%s: field \"%s\" is missing or not an array",
                          ctx_name(q, b, sizeof b), what);
    }
    return 0;
}

static int push_str_member(qasper_reader *q, json_t *o, const char *key, sq_err *err)
{
    json_t *v;
    if (want_str(q, o, key, key, &v, err) != 0)
        return -1;
    return push(q, v, err);
}

/* Evidence strings of one question, new ones only. */
static int push_evidence(qasper_reader *q, json_t *arr, const char *what, sq_err *err)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        if (!json_is_string(e)) {
            char b[1200];
            return sq_err_set(err, "%s: %s[%zu] is not a string", ctx_name(q, b, sizeof b), what,
                              i);
        }
        int added = sq_hash_set_add(&q->evidence_seen,
                                    XXH64(json_string_value(e), json_string_length(e), 0));
        if (added < 0)
            return sq_err_set(err, "%s: out of memory", q->ls->name);
        if (added && push(q, e, err) != 0)
            return -1;
    }
    return 0;
}

/* All requested parts of one original-schema paper object. */
static int push_paper(qasper_reader *q, json_t *paper, sq_err *err)
{
    char b[1200], what[160];
    if (!json_is_object(paper))
        return sq_err_set(err, "%s: not a JSON object", ctx_name(q, b, sizeof b));
    if ((q->parts & SQ_QASPER_TITLE) && push_str_member(q, paper, "title", err) != 0)
        return -1;
    if ((q->parts & SQ_QASPER_ABSTRACT) && push_str_member(q, paper, "abstract", err) != 0)
        return -1;
    json_t *arr, *sec, *v;
    size_t i, k;
    if (q->parts & SQ_QASPER_PARAGRAPHS) {
        if (want_array(q, paper, "full_text", "full_text", &arr, err) != 0)
            return -1;
        json_array_foreach(arr, i, sec) {
            json_t *paras;
            snprintf(what, sizeof what, "full_text[%zu].paragraphs", i);
            if (!json_is_object(sec) || want_array(q, sec, "paragraphs", what, &paras, err) != 0)
                return json_is_object(sec)
                           ? -1
                           : sq_err_set(err, "%s: full_text[%zu] is not an object",
                                        ctx_name(q, b, sizeof b), i);
            json_array_foreach(paras, k, v) {
                if (!json_is_string(v))
                    return sq_err_set(err, "%s: %s[%zu] is not a string",
                                      ctx_name(q, b, sizeof b), what, k);
                if (push(q, v, err) != 0)
                    return -1;
            }
        }
    }
    if (!(q->parts & (SQ_QASPER_QUESTIONS | SQ_QASPER_EVIDENCE)))
        return 0;
    json_t *qa, *answers, *ans;
    if (want_array(q, paper, "qas", "qas", &arr, err) != 0)
        return -1;
    json_array_foreach(arr, i, qa) {
        if (!json_is_object(qa))
            return sq_err_set(err, "%s: qas[%zu] is not an object", ctx_name(q, b, sizeof b), i);
        if (q->parts & SQ_QASPER_QUESTIONS) {
            snprintf(what, sizeof what, "qas[%zu].question", i);
            if (want_str(q, qa, "question", what, &v, err) != 0 || push(q, v, err) != 0)
                return -1;
        }
        if (!(q->parts & SQ_QASPER_EVIDENCE))
            continue;
        snprintf(what, sizeof what, "qas[%zu].answers", i);
        if (want_array(q, qa, "answers", what, &answers, err) != 0)
            return -1;
        json_array_foreach(answers, k, ans) {
            json_t *a = json_is_object(ans) ? json_object_get(ans, "answer") : NULL;
            json_t *ev;
            snprintf(what, sizeof what, "qas[%zu].answers[%zu].answer.evidence", i, k);
            if (!json_is_object(a))
                return sq_err_set(err, "%s: qas[%zu].answers[%zu].answer is missing or not an "
                                  "object", ctx_name(q, b, sizeof b), i, k);
            if (want_array(q, a, "evidence", what, &ev, err) != 0 ||
                push_evidence(q, ev, what, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* Queue the next paper of the current paper map; 0 when the map is done. */
static int next_paper(qasper_reader *q, sq_err *err)
{
    while (q->iter) {
        q->paper = json_object_iter_key(q->iter);
        json_t *paper = json_object_iter_value(q->iter);
        q->iter = json_object_iter_next(q->cur, q->iter);
        if (push_paper(q, paper, err) != 0)
            return -1;
        if (q->q_len > 0)
            return 1;
    }
    return 0;
}

static int push_jsonl_record(qasper_reader *q, json_t *o, sq_err *err)
{
    char b[1200];
    json_t *v;
    switch (q->layout) {
    case L_PAPERS:
        if ((q->parts & SQ_QASPER_TITLE) && push_str_member(q, o, "title", err) != 0)
            return -1;
        if ((q->parts & SQ_QASPER_ABSTRACT) && push_str_member(q, o, "abstract", err) != 0)
            return -1;
        return 0;
    case L_QAS:
        if ((q->parts & SQ_QASPER_QUESTIONS) && push_str_member(q, o, "question", err) != 0)
            return -1;
        if (q->parts & SQ_QASPER_EVIDENCE) {
            if (want_array(q, o, "evidence", "evidence", &v, err) != 0)
                return -1;
            return push_evidence(q, v, "evidence", err);
        }
        return 0;
    case L_PARAGRAPHS: {
        if (q->parts & (SQ_QASPER_TITLE | SQ_QASPER_ABSTRACT)) {
            /* Title and abstract repeat on every paragraph line: once per paper. */
            if (want_str(q, o, "paper_id", "paper_id", &v, err) != 0)
                return -1;
            int first = sq_hash_set_add(&q->papers_seen,
                                        XXH64(json_string_value(v), json_string_length(v), 0));
            if (first < 0)
                return sq_err_set(err, "%s: out of memory", q->ls->name);
            json_t *t = json_object_get(o, "paper_title");
            if (!t)
                t = json_object_get(o, "title");
            json_t *a = json_object_get(o, "abstract");
            if ((t && !json_is_string(t)) || (a && !json_is_string(a)))
                return sq_err_set(err, "%s: title or abstract is not a string",
                                  ctx_name(q, b, sizeof b));
            if (first && t && (q->parts & SQ_QASPER_TITLE) && push(q, t, err) != 0)
                return -1;
            if (first && a && (q->parts & SQ_QASPER_ABSTRACT) && push(q, a, err) != 0)
                return -1;
        }
        if ((q->parts & SQ_QASPER_PARAGRAPHS) && push_str_member(q, o, "text", err) != 0)
            return -1;
        return 0;
    }
    case L_DOCMAP:
        q->iter = json_object_iter(o);
        return next_paper(q, err) < 0 ? -1 : 0;
    }
    return sq_err_set(err, "%s: internal error: unknown QASPER layout", ctx_name(q, b, sizeof b));
}

/* Read and queue the next JSONL record. Returns 1, 0 at end, -1. */
static int next_line(qasper_reader *q, sq_err *err)
{
    const char *line;
    size_t n;
    int rc;
    while ((rc = sq_line_next(q->ls, &line, &n, err)) == 1) {
        if (sq_corpus_blank(line, n))
            continue;
        unsigned long long no = (unsigned long long)q->ls->line_no;
        json_decref(q->cur);
        q->iter = NULL;
        q->paper = NULL;
        json_error_t je;
        q->cur = json_loadb(line, n, SQ_JSON_FLAGS, &je);
        if (!q->cur) {
            if (q->layout == L_NONE) {
                /* Not one object per line: a pretty-printed QASPER document. */
                sq_line_push_back(q->ls);
                q->document = 1;
                return 0;
            }
            return sq_err_set(err, "%s:%llu: not valid JSON: %s (column %d)", q->ls->name, no,
                              je.text, je.column);
        }
        if (!json_is_object(q->cur))
            return sq_err_set(err, "%s:%llu: not a JSON object", q->ls->name, no);
        if (q->layout == L_NONE) {
            q->layout = sq_corpus_qasper_jsonl_layout(q->cur);
            if (q->layout == L_NONE)
                return sq_err_set(err, "%s:%llu: not a QASPER layout (expected a paper map, or "
                                  "objects with title+abstract, question+evidence, or "
                                  "section_name+text)", q->ls->name, no);
        }
        if (push_jsonl_record(q, q->cur, err) != 0)
            return -1;
        if (q->q_len > 0)
            return 1;
    }
    return rc;
}

static int load_document(qasper_reader *q, sq_err *err)
{
    char *buf;
    size_t n;
    if (sq_line_read_rest(q->ls, SQ_CORPUS_MAX_JSON_DOC, &buf, &n, err) != 0)
        return -1;
    json_error_t je;
    json_decref(q->cur);
    q->cur = json_loadb(buf, n, SQ_JSON_FLAGS, &je);
    free(buf);
    if (!q->cur)
        return sq_err_set(err, "%s:%d: not valid JSON: %s (column %d)", q->ls->name, je.line,
                          je.text, je.column);
    if (!json_is_object(q->cur))
        return sq_err_set(err, "%s: not a QASPER document (top level is not an object keyed by "
                          "paper id)", q->ls->name);
    q->layout = L_DOCMAP;
    q->iter = json_object_iter(q->cur);
    return 0;
}

static int fill_queue(qasper_reader *q, sq_err *err)
{
    q->q_head = q->q_len = 0;
    if (q->iter) {
        int r = next_paper(q, err);
        if (r != 0)
            return r;
    }
    if (q->document) {
        if (q->done)
            return 0;
        q->done = 1;
        if (load_document(q, err) != 0)
            return -1;
        return next_paper(q, err);
    }
    int r = next_line(q, err);
    if (r == 0 && q->document) /* switched to document mode on the first line */
        return fill_queue(q, err);
    return r;
}

static int qasper_next(sq_corpus_reader *r, const char **text, size_t *len, sq_err *err)
{
    qasper_reader *q = (qasper_reader *)r;
    if (q->q_head == q->q_len) {
        int rc = fill_queue(q, err);
        if (rc <= 0)
            return rc;
    }
    piece p = q->queue[q->q_head++];
    *text = p.s;
    *len = p.n;
    return 1;
}

static const char *qasper_where(sq_corpus_reader *r)
{
    qasper_reader *q = (qasper_reader *)r;
    return ctx_name(q, q->where, sizeof q->where);
}

static void qasper_free(sq_corpus_reader *r)
{
    qasper_reader *q = (qasper_reader *)r;
    json_decref(q->cur);
    free(q->queue);
    sq_hash_set_free(&q->evidence_seen);
    sq_hash_set_free(&q->papers_seen);
    free(q);
}

sq_corpus_reader *sq_corpus_qasper_reader(sq_line_source *ls, unsigned parts, int document,
                                          sq_err *err)
{
    qasper_reader *q = calloc(1, sizeof *q);
    if (!q) {
        sq_err_set(err, "%s: out of memory", ls->name);
        return NULL;
    }
    q->base.next = qasper_next;
    q->base.where = qasper_where;
    q->base.free = qasper_free;
    q->ls = ls;
    q->parts = parts;
    q->document = document;
    return &q->base;
}

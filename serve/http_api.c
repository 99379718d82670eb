/* Request parsing and response bodies of squint serve (http_api.h). */
#include "http_api.h"
#include "json_util.h"

#include "rank_order.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG(...) (snprintf(msg, msgn, __VA_ARGS__), 400)

static void json_str(const char *s, sq_strbuf *sb);

static int get_bool(json_t *root, const char *key, int *out, char *msg, size_t msgn)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return MSG("\"%s\" must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

int sq_api_load_object(const char *body, size_t len, void **doc, char *msg, size_t msgn)
{
    json_error_t je;
    /* jansson refuses invalid UTF-8 and \u0000 in strings */
    json_t *root = json_loadb(body, len, SQ_JSON_FLAGS, &je);
    if (!root)
        return MSG("the body is not JSON: %s (line %d, column %d)", je.text, je.line, je.column);
    *doc = root;
    if (!json_is_object(root))
        return MSG("the body must be a JSON object");
    return 0;
}

/* Room for n texts in req. */
static int alloc_texts(sq_embed_request *req, size_t n, char *msg, size_t msgn)
{
    req->texts = malloc(n * sizeof *req->texts);
    req->lens = malloc(n * sizeof *req->lens);
    if (!req->texts || !req->lens)
        return MSG("out of memory for %zu inputs", n);
    return 0;
}

int sq_api_parse_embed(sq_api_kind k, const char *body, size_t len, int dim, int64_t max_inputs,
                       sq_embed_request *req, char *msg, size_t msgn)
{
    memset(req, 0, sizeof *req);
    req->normalize = -1;
    if (sq_api_load_object(body, len, &req->doc, msg, msgn))
        return 400;
    json_t *root = req->doc;
    const char *field = k == SQ_API_OPENAI ? "input" : "inputs";
    json_t *in = json_object_get(root, field);
    if (!in)
        return MSG("missing \"%s\"", field);
    size_t n = json_is_array(in) ? json_array_size(in) : 1;
    if (!json_is_string(in) && !json_is_array(in))
        return MSG("\"%s\" must be a string or an array of strings", field);
    if (json_is_array(in) && n == 0)
        return MSG("\"%s\" is an empty array", field);
    if ((int64_t)n > max_inputs) {
        snprintf(msg, msgn, "%zu inputs in one request; the limit is %lld (--max-inputs)", n,
                 (long long)max_inputs);
        return 413;
    }
    if (alloc_texts(req, n, msg, msgn))
        return 400;
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_is_array(in) ? json_array_get(in, i) : in;
        if (!json_is_string(t)) {
            if (json_is_integer(t) || json_is_array(t))
                return MSG("\"%s\"[%zu]: token-id input is not supported; send text", field, i);
            return MSG("\"%s\"[%zu] is not a string", field, i);
        }
        req->texts[i] = json_string_value(t);
        req->lens[i] = json_string_length(t);
    }
    req->n = (int64_t)n;
    /* Matryoshka (OpenAI's and TEI's "dimensions"): the first N values,
     * normalized again when the embeddings are (pooling.h sq_truncate_dims) */
    json_t *d = json_object_get(root, "dimensions");
    if (d && !json_is_null(d)) {
        if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > dim)
            return MSG("\"dimensions\" must be an integer in [1, %d] (this model's width)", dim);
        req->dimensions = (int)json_integer_value(d);
    }
    /* squint's "precision" (sentence-transformers' name): byte codes for a
     * vector store (emb_precision.h) */
    json_t *pr = json_object_get(root, "precision");
    if (pr && !json_is_null(pr) &&
        (!json_is_string(pr) || sq_emb_precision_parse(json_string_value(pr), &req->precision) != 0))
        return MSG("\"precision\" must be one of %s", sq_emb_precision_names());
    if (k == SQ_API_OPENAI) {
        json_t *f = json_object_get(root, "encoding_format");
        if (f && !json_is_null(f)) {
            const char *s = json_string_value(f);
            if (!s || (strcmp(s, "float") && strcmp(s, "base64")))
                return MSG("\"encoding_format\" must be \"float\" or \"base64\"");
            req->base64 = !strcmp(s, "base64");
        }
        json_t *m = json_object_get(root, "model");
        if (m && !json_is_null(m) && !json_is_string(m))
            return MSG("\"model\" must be a string");
    } else {
        int truncate = 1;
        if (get_bool(root, "normalize", &req->normalize, msg, msgn) ||
            get_bool(root, "truncate", &truncate, msg, msgn))
            return 400;
        if (!truncate)
            return MSG("\"truncate\": false is not supported: squint truncates every input to "
                       "the model's limit, as sentence-transformers does");
        if (req->normalize < 0)
            req->normalize = 1; /* TEI's default */
    }
    return 0;
}

int sq_api_parse_rerank(const char *body, size_t len, int64_t max_inputs, sq_embed_request *req,
                        char *msg, size_t msgn)
{
    memset(req, 0, sizeof *req);
    req->normalize = 1; /* cosine */
    if (sq_api_load_object(body, len, &req->doc, msg, msgn))
        return 400;
    json_t *root = req->doc;
    json_t *q = json_object_get(root, "query"), *t = json_object_get(root, "texts");
    if (!json_is_string(q))
        return MSG("\"query\" must be a string");
    if (!json_is_array(t) || json_array_size(t) == 0)
        return MSG("\"texts\" must be a non-empty array of strings");
    json_t *in = json_object_get(root, "instruction");
    if (in && !json_is_null(in)) {
        if (!json_is_string(in))
            return MSG("\"instruction\" must be a string");
        req->instruction = json_string_value(in);
    }
    size_t n = json_array_size(t);
    if ((int64_t)n + 1 > max_inputs) {
        snprintf(msg, msgn, "%zu texts and a query in one request; the limit is %lld inputs "
                            "(--max-inputs)", n, (long long)max_inputs);
        return 413;
    }
    if (alloc_texts(req, n + 1, msg, msgn))
        return 400;
    req->texts[0] = json_string_value(q);
    req->lens[0] = json_string_length(q);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(t, i);
        if (!json_is_string(v))
            return MSG("\"texts\"[%zu] is not a string", i);
        req->texts[i + 1] = json_string_value(v);
        req->lens[i + 1] = json_string_length(v);
    }
    req->n = (int64_t)n + 1;
    return 0;
}

void sq_api_rerank_response(const double *scores, const int64_t *order, int64_t n,
                            sq_strbuf *sb)
{
    sq_sb_printf(sb, "[");
    for (int64_t i = 0; i < n; i++) {
        double v = scores[order[i]];
        if (v == v)
            sq_sb_printf(sb, "%s{\"index\":%lld,\"score\":%.9g}", i ? "," : "",
                         (long long)order[i], v);
        else /* a zero vector: no cosine */
            sq_sb_printf(sb, "%s{\"index\":%lld,\"score\":null}", i ? "," : "",
                         (long long)order[i]);
    }
    sq_sb_printf(sb, "]");
}

void sq_api_classify_response(const double *probs, int64_t n, int classes,
                              const char *const *labels, sq_strbuf *sb)
{
    int64_t *order = malloc((size_t)classes * sizeof *order);
    sq_sb_printf(sb, "[");
    for (int64_t i = 0; i < n && order; i++) {
        const double *p = probs + (size_t)i * classes;
        if (sq_rank_scores(p, classes, order) != 0) {
            free(order);
            order = NULL;
            break;
        }
        sq_sb_printf(sb, "%s[", i ? "," : "");
        for (int c = 0; c < classes; c++) {
            sq_sb_printf(sb, "%s{\"label\":", c ? "," : "");
            json_str(labels[order[c]], sb);
            sq_sb_printf(sb, ",\"score\":%.9g}", p[order[c]]);
        }
        sq_sb_printf(sb, "]");
    }
    sq_sb_printf(sb, "]");
    if (!order)
        sb->failed = true;
    free(order);
}

void sq_api_request_free(sq_embed_request *req)
{
    free(req->texts);
    free(req->lens);
    json_decref((json_t *)req->doc);
    memset(req, 0, sizeof *req);
}

void sq_api_base64(const unsigned char *p, size_t n, sq_strbuf *sb)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char out[4 * 256 + 1];
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? a[v & 63] : '=';
        if (o >= sizeof out - 5) {
            out[o] = '\0';
            sq_sb_printf(sb, "%s", out);
            o = 0;
        }
    }
    out[o] = '\0';
    sq_sb_printf(sb, "%s", out);
}

static void float_row(const float *v, int dim, sq_strbuf *sb)
{
    sq_sb_printf(sb, "[");
    for (int j = 0; j < dim; j++)
        sq_sb_printf(sb, j ? ",%.9g" : "%.9g", (double)v[j]);
    sq_sb_printf(sb, "]");
}

/* A JSON string literal of s (the model name, a label). */
static void json_str(const char *s, sq_strbuf *sb)
{
    json_t *a = json_pack("[s]", s);
    char *e = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (e && strlen(e) >= 2) {
        e[strlen(e) - 1] = '\0';
        sq_sb_printf(sb, "%s", e + 1);
    } else {
        sq_sb_printf(sb, "\"\"");
    }
    free(e);
}

/* Row i as JSON: floats, or the precision's integer codes. */
static void any_row(const sq_embed_request *req, const float *emb, int dim, const uint8_t *codes,
                    int width, int64_t i, sq_strbuf *sb)
{
    if (req->precision == SQ_PREC_FLOAT32) {
        float_row(emb + (size_t)i * dim, dim, sb);
        return;
    }
    const bool sgn = sq_emb_precision_signed(req->precision);
    const uint8_t *r = codes + (size_t)i * width;
    sq_sb_printf(sb, "[");
    for (int c = 0; c < width; c++)
        sq_sb_printf(sb, c ? ",%d" : "%d", sgn ? (int)(int8_t)r[c] : (int)r[c]);
    sq_sb_printf(sb, "]");
}

void sq_api_embed_response(sq_api_kind k, const sq_embed_request *req, const float *emb, int dim,
                           const uint8_t *codes, int width, int64_t tokens, const char *model,
                           sq_strbuf *sb)
{
    if (k == SQ_API_TEI) {
        sq_sb_printf(sb, "[");
        for (int64_t i = 0; i < req->n; i++) {
            if (i)
                sq_sb_printf(sb, ",");
            any_row(req, emb, dim, codes, width, i, sb);
        }
        sq_sb_printf(sb, "]");
        return;
    }
    sq_sb_printf(sb, "{\"object\":\"list\",\"data\":[");
    for (int64_t i = 0; i < req->n; i++) {
        sq_sb_printf(sb, "%s{\"object\":\"embedding\",\"index\":%lld,\"embedding\":", i ? "," : "",
                     (long long)i);
        const bool f = req->precision == SQ_PREC_FLOAT32;
        if (req->base64) { /* float32 little-endian (the array as x86-64 holds it), or the codes */
            sq_sb_printf(sb, "\"");
            sq_api_base64(f ? (const unsigned char *)(emb + (size_t)i * dim)
                            : codes + (size_t)i * width,
                          f ? (size_t)dim * sizeof(float) : (size_t)width, sb);
            sq_sb_printf(sb, "\"");
        } else {
            any_row(req, emb, dim, codes, width, i, sb);
        }
        sq_sb_printf(sb, "}");
    }
    sq_sb_printf(sb, "],\"model\":");
    json_str(model, sb);
    sq_sb_printf(sb, ",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", (long long)tokens,
                 (long long)tokens);
}

void sq_api_error(sq_api_kind k, int status, const char *msg, sq_strbuf *sb)
{
    json_t *o;
    if (k == SQ_API_TEI) {
        const char *type = status == 413 || status == 400 ? "Validation"
                           : status == 503              ? "Overloaded"
                           : status == 401              ? "Unauthorized"
                                                         : "Backend";
        o = json_pack("{s:s,s:s}", "error", msg, "error_type", type);
    } else {
        const char *type = status == 401   ? "authentication_error"
                           : status == 503 ? "server_overloaded"
                           : status >= 500 ? "server_error"
                                           : "invalid_request_error";
        o = json_pack("{s:{s:s,s:s,s:n,s:n}}", "error", "message", msg, "type", type, "param",
                      "code");
    }
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    sq_sb_printf(sb, "%s", s ? s : "{\"error\":\"out of memory\"}");
    free(s);
    json_decref(o);
}

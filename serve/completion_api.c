/* Completion request parsing and bodies (completion_api.h). Every field is
 * checked for its type and range; a body the checks pass is safe to run. */
#include "completion_api.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "http_api.h"
#include "utf8_text.h"

#define MSG(...) (snprintf(msg, msgn, __VA_ARGS__), 400)

/* present: the key is there and not null */
static json_t *field(json_t *root, const char *key)
{
    json_t *v = json_object_get(root, key);
    return v && !json_is_null(v) ? v : NULL;
}

static int get_number(json_t *root, const char *key, double lo, bool lo_open, double hi,
                      double *out, char *msg, size_t msgn)
{
    json_t *v = field(root, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return MSG("\"%s\" must be a number", key);
    double x = json_number_value(v);
    if (!isfinite(x) || (lo_open ? x <= lo : x < lo) || x > hi)
        return MSG("\"%s\" is %g; it must be in %s%g, %g]", key, x, lo_open ? "(" : "[", lo, hi);
    *out = x;
    return 0;
}

/* The OpenAI fields squint does not implement: refused unless they hold
 * the default. */
static int unsupported(json_t *root, char *msg, size_t msgn)
{
    static const char *const one[] = {"n", "best_of"};
    for (int i = 0; i < 2; i++) {
        json_t *v = field(root, one[i]);
        if (v && (!json_is_integer(v) || json_integer_value(v) != 1))
            return MSG("\"%s\" must be 1: squint returns one choice", one[i]);
    }
    static const char *const zero[] = {"presence_penalty", "frequency_penalty"};
    for (int i = 0; i < 2; i++) {
        json_t *v = field(root, zero[i]);
        if (v && (!json_is_number(v) || json_number_value(v) != 0))
            return MSG("\"%s\" is not supported (it must be 0 or absent)", zero[i]);
    }
    json_t *v = field(root, "echo");
    if (v && !json_is_false(v))
        return MSG("\"echo\" is not supported (it must be false or absent)");
    if (field(root, "logprobs"))
        return MSG("\"logprobs\" is not supported (it must be null or absent)");
    v = field(root, "suffix");
    if (v && !(json_is_string(v) && json_string_length(v) == 0))
        return MSG("\"suffix\" is not supported (it must be null or absent)");
    v = field(root, "logit_bias");
    if (v && !(json_is_object(v) && json_object_size(v) == 0))
        return MSG("\"logit_bias\" is not supported (it must be null, {} or absent)");
    v = field(root, "model");
    if (v && !json_is_string(v))
        return MSG("\"model\" must be a string");
    return 0;
}

static int get_stops(json_t *root, sq_cmpl_request *req, char *msg, size_t msgn)
{
    json_t *v = field(root, "stop");
    if (!v)
        return 0;
    if (!json_is_string(v) && !json_is_array(v))
        return MSG("\"stop\" must be a string or an array of up to %d strings", SQ_STOP_MAX);
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (n > SQ_STOP_MAX)
        return MSG("\"stop\" has %zu strings; at most %d", n, SQ_STOP_MAX);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(s))
            return MSG("\"stop\"[%zu] is not a string", i);
        size_t l = json_string_length(s);
        if (l == 0 || l > SQ_CMPL_STOP_BYTES)
            return MSG("\"stop\"[%zu] is %zu bytes; a stop string has 1 to %d", i, l,
                       SQ_CMPL_STOP_BYTES);
        req->stops[req->n_stops] = json_string_value(s);
        req->stop_lens[req->n_stops++] = l;
    }
    return 0;
}

int sq_api_parse_completion(const char *body, size_t len, int context, sq_cmpl_request *req,
                            char *msg, size_t msgn)
{
    memset(req, 0, sizeof *req);
    req->max_tokens = SQ_CMPL_DEFAULT_MAX_TOKENS;
    req->top_p = 1.0;
    const int st = sq_api_load_object(body, len, &req->doc, msg, msgn);
    if (st)
        return st;
    json_t *root = req->doc;
    json_t *p = json_object_get(root, "prompt");
    if (!p)
        return MSG("missing \"prompt\"");
    if (json_is_array(p))
        return MSG("\"prompt\" must be one string (arrays of prompts or of token ids are not "
                   "supported)");
    if (!json_is_string(p))
        return MSG("\"prompt\" must be a string");
    req->prompt = json_string_value(p);
    req->prompt_len = json_string_length(p);
    json_t *v = field(root, "max_tokens");
    if (v) {
        if (!json_is_integer(v))
            return MSG("\"max_tokens\" must be an integer");
        json_int_t m = json_integer_value(v);
        if (m < 0)
            return MSG("\"max_tokens\" is %lld; it must be >= 0", (long long)m);
        if (m > context)
            return MSG("\"max_tokens\" is %lld; the model's context is %d tokens (the prompt "
                       "included)", (long long)m, context);
        req->max_tokens = m;
    }
    if (get_number(root, "temperature", 0, false, SQ_CMPL_MAX_TEMPERATURE, &req->temperature,
                   msg, msgn) ||
        get_number(root, "top_p", 0, true, 1, &req->top_p, msg, msgn))
        return 400;
    if ((v = field(root, "seed"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return MSG("\"seed\" must be an integer >= 0");
        req->has_seed = true;
        req->seed = (uint64_t)json_integer_value(v);
    }
    if ((v = field(root, "stream"))) {
        if (!json_is_boolean(v))
            return MSG("\"stream\" must be true or false");
        req->stream = json_is_true(v);
    }
    if (get_stops(root, req, msg, msgn) || unsupported(root, msg, msgn))
        return 400;
    return 0;
}

void sq_cmpl_request_free(sq_cmpl_request *req)
{
    json_decref((json_t *)req->doc);
    memset(req, 0, sizeof *req);
}

static void head(const sq_cmpl_meta *m, sq_strbuf *sb)
{
    sq_sb_printf(sb, "{\"id\":\"cmpl-%llu\",\"object\":\"text_completion\",\"created\":%lld,"
                     "\"model\":", (unsigned long long)m->id, (long long)m->created);
    sq_json_text(sb, m->model, strlen(m->model));
}

static void choice(const char *text, size_t n, const char *finish, sq_strbuf *sb)
{
    sq_sb_printf(sb, ",\"choices\":[{\"index\":0,\"text\":");
    sq_json_text(sb, text, n);
    sq_sb_printf(sb, ",\"logprobs\":null,\"finish_reason\":");
    if (finish)
        sq_sb_printf(sb, "\"%s\"}]", finish);
    else
        sq_sb_printf(sb, "null}]");
}

static void usage(int64_t prompt, int64_t completion, sq_strbuf *sb)
{
    sq_sb_printf(sb, ",\"usage\":{\"prompt_tokens\":%lld,\"completion_tokens\":%lld,"
                     "\"total_tokens\":%lld}", (long long)prompt, (long long)completion,
                 (long long)(prompt + completion));
}

void sq_api_completion_response(const sq_cmpl_meta *m, const char *text, size_t n,
                                const char *finish, int64_t prompt_tokens,
                                int64_t completion_tokens, sq_strbuf *sb)
{
    head(m, sb);
    choice(text, n, finish, sb);
    usage(prompt_tokens, completion_tokens, sb);
    sq_sb_printf(sb, "}");
}

void sq_api_completion_chunk(const sq_cmpl_meta *m, const char *text, size_t n,
                             const char *finish, int64_t prompt_tokens,
                             int64_t completion_tokens, sq_strbuf *sb)
{
    sq_sb_printf(sb, "data: ");
    head(m, sb);
    choice(text, n, finish, sb);
    if (finish)
        usage(prompt_tokens, completion_tokens, sb);
    sq_sb_printf(sb, "}\n\n");
}

#include "lm_judge.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char judge_prefix[] =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
    "<|im_end|>\n<|im_start|>user\n";
static const char judge_suffix[] = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
static const char doc_head[] = "\n<Document>: ";

/* The prefill chunk: fixed, so a score's bits never depend on the threads
 * (decoder.h), as the causal embedding path does. */
#define JUDGE_PREFILL_ROWS 64

/* The ids of a fixed string, all of it (its special tokens included; a
 * token stands for at least one byte, so the string's length bounds them). */
static int fixed_ids(const sq_tokenizer *t, const char *s, int32_t **ids, int *n, sq_err *err)
{
    const size_t len = strlen(s);
    if (!(*ids = malloc((len + 1) * sizeof **ids)))
        return sq_err_set(err, "out of memory");
    int64_t k = sq_tokenizer_tokenize(t, s, len, *ids, (int64_t)len + 1);
    if (k < 0 || k > (int64_t)len)
        return sq_err_set(err, "out of memory");
    *n = (int)k;
    return 0;
}

/* A token the prompt needs, as one id. */
static int need_token(const sq_llama_model *lm, const char *tok, int32_t *id, sq_err *err)
{
    *id = sq_tokenizer_lookup(lm->tok, tok, strlen(tok));
    if (*id < 0)
        return sq_err_set(err, "%s: the tokenizer has no token \"%s\"; a causal LM reranks "
                               "as Qwen3-Reranker does, with ChatML prompts and the answer "
                               "tokens \"yes\" and \"no\"",
                          lm->tokenizer_path ? lm->tokenizer_path : "model", tok);
    return 0;
}

int sq_lm_judge_init(sq_lm_judge *j, const sq_llama_model *lm, const char *instruction,
                     int max_seq, sq_err *err)
{
    memset(j, 0, sizeof *j);
    j->lm = lm;
    const int ctx = lm->dec.cfg.max_pos;
    int32_t chat;
    if (lm->dec.no_head)
        return sq_err_set(err, "the model has no LM head (a causal embedding model): it cannot "
                               "judge yes / no");
    if (!lm->has_template)
        return sq_err_set(err, "%s: a causal LM reranks with its tokenizer.json (ChatML "
                               "prompts); a llama2.c tokenizer has none",
                          lm->tokenizer_path ? lm->tokenizer_path : "model");
    if (need_token(lm, "<|im_start|>", &chat, err) != 0 ||
        need_token(lm, "<|im_end|>", &chat, err) != 0 ||
        need_token(lm, "yes", &j->yes, err) != 0 || need_token(lm, "no", &j->no, err) != 0)
        return -1;
    if (j->yes >= lm->dec.cfg.vocab || j->no >= lm->dec.cfg.vocab)
        return sq_err_set(err, "%s: the answer tokens (ids %d, %d) are past the model's %d "
                               "rows", lm->tokenizer_path, (int)j->yes, (int)j->no,
                          lm->dec.cfg.vocab);
    if (!instruction)
        instruction = SQ_LM_JUDGE_INSTRUCTION;
    const size_t hl = strlen(instruction) + 32;
    if (!(j->head = malloc(hl)) || !(j->instruction = strdup(instruction))) {
        sq_lm_judge_free(j);
        return sq_err_set(err, "out of memory");
    }
    snprintf(j->head, hl, "<Instruct>: %s\n<Query>: ", instruction);
    if (fixed_ids(lm->tok, judge_prefix, &j->prefix, &j->n_prefix, err) != 0 ||
        fixed_ids(lm->tok, judge_suffix, &j->suffix, &j->n_suffix, err) != 0) {
        sq_lm_judge_free(j);
        return -1;
    }
    const int fixed = j->n_prefix + j->n_suffix;
    if (max_seq <= 0)
        max_seq = ctx < SQ_LM_JUDGE_MAX_SEQ ? ctx : SQ_LM_JUDGE_MAX_SEQ;
    if (max_seq > ctx || max_seq <= fixed) {
        if (max_seq > ctx)
            sq_err_set(err, "max sequence length %d is past the model's %d positions", max_seq,
                       ctx);
        else
            sq_err_set(err, "max sequence length %d leaves no room for the pair: the judge's "
                            "fixed prompt is %d tokens", max_seq, fixed);
        sq_lm_judge_free(j);
        return -1;
    }
    j->max_seq = max_seq;
    return 0;
}

void sq_lm_judge_free(sq_lm_judge *j)
{
    free(j->prefix);
    free(j->suffix);
    free(j->head);
    free(j->instruction);
    memset(j, 0, sizeof *j);
}

int sq_lm_judge_prompt(const sq_lm_judge *j, const char *query, size_t qlen, const char *doc,
                       size_t dlen, int32_t **ids, sq_err *err)
{
    *ids = NULL;
    const size_t hl = strlen(j->head), dh = sizeof doc_head - 1;
    const size_t len = hl + qlen + dh + dlen;
    char *text = malloc(len + 1);
    const int body = j->max_seq - j->n_prefix - j->n_suffix;
    int32_t *out = malloc((size_t)j->max_seq * sizeof *out);
    if (!text || !out) {
        free(text), free(out);
        return sq_err_set(err, "out of memory");
    }
    memcpy(text, j->head, hl);
    memcpy(text + hl, query, qlen);
    memcpy(text + hl + qlen, doc_head, dh);
    memcpy(text + hl + qlen + dh, doc, dlen);
    text[len] = 0;
    memcpy(out, j->prefix, (size_t)j->n_prefix * sizeof *out);
    int64_t k = sq_tokenizer_tokenize(j->lm->tok, text, len, out + j->n_prefix, body);
    free(text);
    if (k < 0) {
        free(out);
        return sq_err_set(err, "out of memory");
    }
    if (k > body) /* the pair cut at its end, as Hugging Face truncates one text */
        k = body;
    memcpy(out + j->n_prefix + k, j->suffix, (size_t)j->n_suffix * sizeof *out);
    *ids = out;
    return j->n_prefix + (int)k + j->n_suffix;
}

int sq_lm_judge_score(const sq_lm_judge *j, const char *const *q, const size_t *qlen,
                      const char *const *d, const size_t *dlen, int64_t n, double *scores,
                      float *logits, void (*progress)(void *, int64_t, int64_t),
                      void *progress_ctx, sq_err *err)
{
    const sq_decoder *dec = &j->lm->dec;
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, dec, JUDGE_PREFILL_ROWS, j->max_seq, err) != 0)
        return -1;
    float *row = malloc((size_t)dec->cfg.vocab * sizeof *row);
    int rc = row ? 0 : sq_err_set(err, "out of memory");
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        int32_t *ids;
        const int len = sq_lm_judge_prompt(j, q[i], qlen[i], d[i], dlen[i], &ids, err);
        if (len < 0) {
            rc = -1;
            break;
        }
        rc = sq_decoder_forward(dec, &st, ids, len, 0, row, false, err);
        free(ids);
        if (rc != 0) {
            sq_err_prefix(err, "pair %lld", (long long)i);
            break;
        }
        const float z = row[j->yes] - row[j->no];
        if (logits)
            logits[i] = z;
        scores[i] = 1.0 / (1.0 + exp(-(double)z));
        if (progress)
            progress(progress_ctx, i + 1, n);
    }
    free(row);
    sq_decoder_state_free(&st);
    return rc;
}

/* A causal LM as a relevance judge, the way Qwen3-Reranker is run: each
 * (query, document) pair becomes one ChatML prompt that asks whether the
 * document meets the query, and the pair's score is the probability of the
 * next token "yes" against "no",
 *     score = softmax(logit_no, logit_yes)[yes] = sigmoid(logit_yes - logit_no).
 * The prompt is Qwen3-Reranker's (its model card's usage code):
 *   <|im_start|>system\nJudge whether the Document meets the requirements
 *   based on the Query and the Instruct provided. Note that the answer can
 *   only be "yes" or "no".<|im_end|>\n<|im_start|>user\n
 *   <Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}
 *   <|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n
 * The three parts are tokenized apart, as the card's code does (the special
 * tokens split the text anyway, so the ids are those of the whole string),
 * and only the middle one is cut, at its end, when the prompt is longer
 * than max_seq. Each pair runs alone from position 0 (the card pads on the
 * left; with RoPE the padded run gives the same logits). Nothing in a
 * Qwen3-Reranker folder tells it from any other Qwen3 causal LM, so any
 * causal LM whose tokenizer has the ChatML tokens and the single tokens
 * "yes" and "no" can be a judge; whether its answers mean anything is the
 * model's training. */
#ifndef SQ_LM_JUDGE_H
#define SQ_LM_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "llama_model.h"

/* Qwen3-Reranker's default instruction (its model card). */
#define SQ_LM_JUDGE_INSTRUCTION \
    "Given a web search query, retrieve relevant passages that answer the query"
/* The default prompt length cap: the card's max_length. */
#define SQ_LM_JUDGE_MAX_SEQ 8192

typedef struct sq_lm_judge {
    const sq_llama_model *lm;
    int32_t yes, no;          /* the answer tokens' ids */
    int32_t *prefix, *suffix; /* the prompt's fixed ids around the pair */
    int n_prefix, n_suffix;
    char *instruction;        /* the <Instruct> line's text */
    char *head;               /* "<Instruct>: {instruction}\n<Query>: " */
    int max_seq;              /* whole prompt, in tokens */
} sq_lm_judge;

/* Ready lm as a judge. instruction NULL: SQ_LM_JUDGE_INSTRUCTION. max_seq 0:
 * min(SQ_LM_JUDGE_MAX_SEQ, the model's positions); else at most the model's
 * positions, with room for the fixed prompt and a token of the pair. -1
 * with err naming what the model or its tokenizer lacks. */
int sq_lm_judge_init(sq_lm_judge *j, const sq_llama_model *lm, const char *instruction,
                     int max_seq, sq_err *err);
void sq_lm_judge_free(sq_lm_judge *j);

/* The prompt ids of one pair into *ids (malloc'd; free it): the count. -1
 * with err on allocation failure. */
int sq_lm_judge_prompt(const sq_lm_judge *j, const char *query, size_t qlen, const char *doc,
                       size_t dlen, int32_t **ids, sq_err *err);

/* Score n pairs: scores[i] = sigmoid(logits[i]), logits[i] = logit_yes -
 * logit_no (logits may be NULL). The same bits at any thread count.
 * progress (may be NULL) after each pair. */
int sq_lm_judge_score(const sq_lm_judge *j, const char *const *q, const size_t *qlen,
                      const char *const *d, const size_t *dlen, int64_t n, double *scores,
                      float *logits, void (*progress)(void *, int64_t, int64_t),
                      void *progress_ctx, sq_err *err);

#endif

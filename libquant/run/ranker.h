/* What scores (query, document) pairs, whichever kind of model it is:
 *   an embedding model (bi-encoder): the cosine of the two embeddings, each
 *     distinct text (by pointer) embedded once;
 *   a cross-encoder (a sequence classifier with one label): the logit of
 *     [CLS] query [SEP] document [SEP] through the model's activation
 *     (seq_classify.h);
 *   a causal LM that is not an embedding model: a yes/no judge, the way
 *     Qwen3-Reranker runs (lm_judge.h).
 * One place for the choice: squint rerank, embed-run's pair evaluation and
 * libsquint's squint_score_pairs all score through here. */
#ifndef SQ_RANKER_H
#define SQ_RANKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed_model.h"
#include "embedder.h"
#include "llama_model.h"
#include "lm_judge.h"

typedef enum sq_ranker_kind {
    SQ_RANKER_EMBEDDING = 0,
    SQ_RANKER_CROSS_ENCODER = 1,
    SQ_RANKER_JUDGE = 2,
} sq_ranker_kind;

typedef struct sq_ranker {
    sq_ranker_kind kind;
    sq_embed_model em; /* an embedding model or a cross-encoder */
    sq_llama_model lm; /* a judge's LM */
    sq_lm_judge j;     /* the judge with the instruction and max_seq given at open */
} sq_ranker;

/* Whether path is a causal LM that is not an embedding model: it ranks only
 * as a judge (and most such files are opened to generate). */
bool sq_ranker_is_lm(const char *path);

/* Open the model at arg (a .sqm, a checkpoint folder or archive) as what it
 * is. instruction, max_seq: a judge's defaults (NULL, 0: Qwen3-Reranker's;
 * lm_judge.h); an instruction for a model that is no judge is refused. A
 * sequence classifier with more than one label opens (its pairs are refused
 * when scored). -1 with err naming arg and the problem. */
int sq_ranker_open(const char *arg, const char *instruction, int max_seq, sq_ranker *r,
                   sq_err *err);
void sq_ranker_close(sq_ranker *r);

/* Whether each score comes with a logit (cross-encoders and judges). */
bool sq_ranker_has_logit(const sq_ranker *r);

/* Score n pairs (a[i], b[i]) into scores[n] and, when the ranker has one,
 * logits[n] (may be NULL). o: batch, max_seq (0: the model's, a judge's:
 * the open's), progress (encoders). instruction: a judge's for this call
 * (NULL: the open's); refused for other models. Only reads r: calls may run
 * at once from several threads. The same bits at any thread count. */
int sq_ranker_score(const sq_ranker *r, const char *instruction, const char *const *a,
                    const size_t *alen, const char *const *b, const size_t *blen, int64_t n,
                    const sq_embed_opts *o, double *scores, float *logits, sq_err *err);

/* The encoder half of sq_ranker_score for an open embedding model or
 * cross-encoder m (cross-encoders with one label only). */
int sq_score_pairs(const sq_embed_model *m, const char *const *a, const size_t *alen,
                   const char *const *b, const size_t *blen, int64_t n, const sq_embed_opts *o,
                   double *scores, float *logits, sq_err *err);

#endif

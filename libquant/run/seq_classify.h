/* Sequence classifiers (BertForSequenceClassification): cross-encoders that
 * score a query/document pair, and text classifiers. The encoder runs the
 * sequence with token types, pools [CLS] through the pooler (the tanh head)
 * and its score linear gives num_labels logits; the score is the logits
 * through the model's activation (hf_config.h sq_score_act). */
#ifndef SQ_SEQ_CLASSIFY_H
#define SQ_SEQ_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embedder.h"

/* Shortest truncation length a pair takes: [CLS] a [SEP] b [SEP] with one
 * token of each. */
#define SQ_PAIR_MIN_SEQ 5

/* Token counts of a pair cut to a budget of B content tokens (B = max_seq -
 * 3, or 4 with RoBERTa's two separators) as Hugging Face tokenizers'
 * longest_first does: the longer text is cut first, down to what the shorter
 * leaves (at least half); when both are longer than half, each keeps B / 2
 * and b, or a when a is the longer, the odd token. */
void sq_pair_truncate(int64_t na, int64_t nb, int64_t budget, int64_t *keep_a, int64_t *keep_b);

/* Tokenize n pairs (a[i], b[i]) as [CLS] a [SEP] b [SEP] with token types 0
 * for [CLS] a [SEP] and 1 for b [SEP] (BERT's pair template), each cut to
 * max_seq tokens by sq_pair_truncate. Parallel, deterministic. The model's
 * vocabulary must have [CLS] and [SEP]. */
int sq_tokenize_pairs(const sq_embed_model *m, const char *const *a, const size_t *alen,
                      const char *const *b, const size_t *blen, int64_t n, int max_seq,
                      sq_token_seqs *out, sq_err *err);

/* Is m a sequence classifier (a cross-encoder or text classifier)? */
bool sq_model_is_classifier(const sq_embed_model *m);

/* The logits of n pairs (b == NULL: of n single texts) into logits
 * [n][num_labels], in input order. o->max_seq is the truncation length;
 * pooling and normalization are the classifier's (o's are ignored). */
int sq_classify_texts(sq_embed_model *m, const char *const *a, const size_t *alen,
                      const char *const *b, const size_t *blen, int64_t n,
                      const sq_embed_opts *o, float *logits, sq_err *err);

/* Scores from logits: out [n][L] = act(logits) (softmax across a row for
 * SQ_SCORE_SOFTMAX; elementwise otherwise), computed in double. */
void sq_scores_from_logits(sq_score_act act, int L, const float *logits, int64_t n, double *out);

#endif

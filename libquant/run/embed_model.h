/* A runnable embedding model: encoder + tokenizer + pooling, opened from a
 * MODEL argument: a Hugging Face checkpoint directory (or an archive of one)
 * for the fp32 encoder, or a packed .sqm, whose weights are used in place
 * from the mapped file. */
#ifndef SQ_EMBED_MODEL_H
#define SQ_EMBED_MODEL_H

#include <stdbool.h>

#include "checkpoint_dir.h"
#include "container.h"
#include "encoder.h"
#include "hf_config.h"
#include "hf_template.h"
#include "llama_model.h"
#include "tokenizer.h"

typedef struct sq_embed_model {
    bool is_sqm;
    sq_checkpoint_dir ckpt;   /* checkpoints */
    char *model_dir;          /* checkpoints: where config.json and the weights are (the
                                 sentence-transformers Transformer module's folder) */
    sq_container sqm;         /* .sqm files: kept open (the weights live in it) */
    sq_encoder enc;
    sq_tokenizer *tok;
    sq_wordpiece_spec tok_spec; /* kept: quantize writes it into the .sqm */
    sq_pooling_config pool;
    int max_seq; /* default truncation length: min(max positions, tokenizer limit) */
    char **labels; /* a sequence classifier's class names [enc.cfg.num_labels]; else NULL */
    /* A causal embedding model (Qwen3-Embedding: a causal LM folder whose
     * sentence-transformers Pooling module pools the last token, or its
     * .sqm): its decoder runs each text instead of the encoder, whose cfg
     * then only describes the model's interface (hidden = the decoder's
     * width, max_pos its context, no layers). NULL for an encoder. */
    sq_llama_model *lm;
    sq_hf_single_template lm_wrap; /* the special tokens around each text (its
                                      tokenizer.json post-processor) */
} sq_embed_model;

int sq_embed_model_open(const char *arg, sq_embed_model *m, sq_err *err);
/* Whether m was opened from a packed .sqm (an encoder's, or a causal
 * embedding model's), not from a checkpoint. */
bool sq_embed_model_is_packed(const sq_embed_model *m);
void sq_embed_model_close(sq_embed_model *m);

/* Commands that use sentence embeddings refuse a sequence classifier (a
 * cross-encoder's pooled vector is no embedding): -1 with err naming arg and
 * what to use instead. */
int sq_embed_model_require_embeddings(const sq_embed_model *m, const char *arg, sq_err *err);

/* Would `embed` run the open .sqm container c? The same loads as
 * sq_embed_model_open (encoder with every consistency check, tokenizer,
 * pooling), then freed; c stays open. 0, or -1 with err naming the file,
 * the problem and, in err->subject, the tensor when there is one. */
int sq_sqm_check_runnable(const sq_container *c, sq_err *err);

#endif

/* Hugging Face model configuration: config.json of a BERT-family encoder and
 * the sentence-transformers pooling description (modules.json,
 * 1_Pooling/config.json, Normalize module). */
#ifndef SQ_HF_CONFIG_H
#define SQ_HF_CONFIG_H

#include <stdbool.h>

#include "sq_error.h"

/* Hard limits on shapes we accept from a config file. */
#define SQ_MAX_HIDDEN 16384
#define SQ_MAX_LAYERS 256
#define SQ_MAX_FFN 65536
#define SQ_MAX_POSITIONS 65536
#define SQ_MAX_VOCAB (1 << 22)

typedef struct sq_bert_config {
    int vocab_size;
    int hidden;
    int layers;
    int heads;
    int ffn;
    int max_pos;
    int type_vocab;
    int pad_token_id;
    double ln_eps;
} sq_bert_config;

typedef enum sq_pooling { SQ_POOL_CLS = 0, SQ_POOL_MEAN = 1 } sq_pooling;

typedef struct sq_pooling_config {
    sq_pooling pooling;
    bool normalize;
    bool from_sentence_transformers; /* false: no modules.json, defaults used */
} sq_pooling_config;

int sq_bert_config_load(const char *path, sq_bert_config *cfg, sq_err *err);
/* Reads modules.json and the pooling module's config.json under dir. Without
 * modules.json: CLS pooling, no normalization. */
int sq_pooling_config_load_dir(const char *dir, sq_pooling_config *pc, sq_err *err);

const char *sq_pooling_name(sq_pooling p);
int sq_pooling_parse(const char *s, sq_pooling *out);

#endif

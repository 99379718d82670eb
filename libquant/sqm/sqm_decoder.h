/* A causal LM (SQM.md section 10) from an open, checksum-verified .sqm: the
 * metadata and the schema proven, then the values (finite norms and
 * embeddings, every linear's panels against its wsum and scales, the
 * activation settings one with the metadata), the classifier and the
 * tokenizer. The one loader: `generate`, `serve` and `verify` all run it,
 * so verify accepts exactly what they accept. */
#ifndef SQ_SQM_DECODER_H
#define SQ_SQM_DECODER_H

#include "container.h"
#include "decoder_model.h"
#include "tokenizer.h"

/* d's weights are views into c's mapping (d->borrowed); *tok is the BPE
 * tokenizer (free with sq_tokenizer_free). -1 with err naming the file (and
 * the tensor in err->subject when one is at fault); d and *tok then hold
 * nothing. */
int sq_sqm_load_decoder(const sq_container *c, sq_decoder *d, sq_tokenizer **tok, sq_err *err);

#endif

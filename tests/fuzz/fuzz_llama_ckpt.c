/* Fuzz the llama2.c checkpoint reader (libquant/model/llama_ckpt.c): header ranges,
 * the size the header implies, non-finite weights; a checkpoint it accepts
 * is built into the decoder and runs a 3-token prefill and a decode step
 * (ids taken from the input), whose logits must be finite or the reader let
 * something through. */
#include <math.h>
#include <stdlib.h>

#include "decoder.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = fuzz_write("model.bin", data, size);
    sq_llama_ckpt ck;
    sq_err err;
    if (sq_llama_ckpt_load(path, &ck, &err) == 0) {
        sq_decoder d;
        if (sq_decoder_from_llama(&ck, &d, &err) == 0) {
            sq_decoder_state st;
            if (sq_decoder_state_init(&st, &d, 2, 8, &err) == 0) {
                const int V = d.cfg.vocab;
                float *logits = malloc((size_t)V * sizeof *logits);
                int32_t ids[4];
                for (int i = 0; i < 4; i++)
                    ids[i] = (int32_t)(size > (size_t)i ? data[size - 1 - i] : 0) % V;
                int n = st.max_pos < 3 ? st.max_pos : 3;
                if (!logits || sq_decoder_forward(&d, &st, ids, n, 0, logits, false, &err) != 0)
                    abort();
                if (n < st.max_pos && sq_decoder_forward(&d, &st, ids + 3, 1, n, logits, false,
                                                         &err) != 0)
                    abort();
                if (sq_decoder_forward(&d, &st, ids, 1, st.max_pos, logits, false, &err) == 0)
                    abort(); /* beyond the cache */
                free(logits);
                sq_decoder_state_free(&st);
            }
            sq_decoder_free(&d);
        }
    }
    free(path);
    return 0;
}

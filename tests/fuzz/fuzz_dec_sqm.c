/* Fuzz the decoder .sqm loader (libquant/sqm/sqm_decoder.c through
 * libquant/run/llama_model.h: metadata, the BPE tokenizer section, every tensor's
 * dtype, shape and value rules, the attention precision); checksums are
 * repaired first, or almost every mutation would stop at verification. A
 * file it accepts must run: a 3-token prefill and a decode step with ids
 * taken from the input, at the file's attention precision (its KV cache
 * included), must succeed, and a position beyond the cache must be refused;
 * the tokenizer must encode a fixed text to ids inside the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "container_fixup.h"
#include "decoder.h"
#include "fuzz_util.h"
#include "llama_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = container_fixed_copy(data, size);
    char *path = fuzz_write("model.sqm", copy, size);
    free(copy);
    sq_llama_model m;
    sq_err err;
    if (sq_llama_model_open(path, NULL, &m, &err) == 0) {
        const sq_decoder *d = &m.dec;
        const int V = d->cfg.vocab;
        int32_t *ids = NULL;
        static const char text[] = "a cat, the hat \xc3\xa9 \xe2\x82\xac!";
        int64_t n = sq_tokenizer_encode_all(m.tok, text, strlen(text), true, false, &ids);
        for (int64_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= V)
                abort();
        free(ids);
        sq_decoder_state st;
        if (sq_decoder_state_init(&st, d, 2, 8, &err) == 0) {
            float *logits = malloc((size_t)V * sizeof *logits);
            int32_t in[4];
            for (int i = 0; i < 4; i++)
                in[i] = (int32_t)(size > (size_t)i ? data[size - 1 - i] : 0) % V;
            const int k = st.max_pos < 3 ? st.max_pos : 3;
            if (!logits || sq_decoder_forward(d, &st, in, k, 0, logits, false, &err) != 0)
                abort();
            if (k < st.max_pos && sq_decoder_forward(d, &st, in + 3, 1, k, logits, false, &err) != 0)
                abort();
            if (sq_decoder_forward(d, &st, in, 1, st.max_pos, logits, false, &err) == 0)
                abort(); /* beyond the cache */
            free(logits);
            sq_decoder_state_free(&st);
        }
        sq_llama_model_close(&m);
    }
    free(path);
    return 0;
}

/* Test helper: the token ids of a text (BOS + llama2.c encoding) and the
 * decoder's logits for every position, for the PyTorch oracle.
 *   dec_logits MODEL TOKENIZER TEXT IDS_OUT LOGITS_OUT [ROWS]
 * IDS_OUT: the ids, one line, space-separated; LOGITS_OUT: raw little-endian
 * float32 [n][vocab]; ROWS: rows per prefill step (default 64). TOKENIZER
 * "-": the model's own (an HF folder's tokenizer.json, a .sqm's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_model.h"

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: dec_logits MODEL TOKENIZER TEXT IDS_OUT LOGITS_OUT [ROWS]\n");
        return 2;
    }
    sq_err err;
    sq_llama_model m;
    if (sq_llama_model_open(argv[1], strcmp(argv[2], "-") ? argv[2] : NULL, &m, &err) != 0) {
        fprintf(stderr, "dec_logits: %s\n", err.msg);
        return 2;
    }
    int32_t *ids;
    int64_t n = sq_tokenizer_encode_all(m.tok, argv[3], strlen(argv[3]), true, false, &ids);
    if (n < 1 || n > m.dec.cfg.max_pos)
        return 2;
    sq_decoder_state st;
    if (sq_decoder_state_init(&st, &m.dec, argc > 6 ? atoi(argv[6]) : 64, 0, &err) != 0)
        return 2;
    float *logits = malloc((size_t)n * m.dec.cfg.vocab * sizeof(float));
    if (!logits || sq_decoder_forward(&m.dec, &st, ids, (int)n, 0, logits, true, &err) != 0) {
        fprintf(stderr, "dec_logits: %s\n", err.msg);
        return 2;
    }
    FILE *f = fopen(argv[4], "w"), *g = fopen(argv[5], "wb");
    if (!f || !g)
        return 2;
    for (int64_t i = 0; i < n; i++)
        fprintf(f, i ? " %d" : "%d", (int)ids[i]);
    fputc('\n', f);
    fwrite(logits, sizeof(float), (size_t)n * m.dec.cfg.vocab, g);
    if (fclose(f) != 0 || fclose(g) != 0)
        return 2;
    free(logits);
    free(ids);
    sq_decoder_state_free(&st);
    sq_llama_model_close(&m);
    return 0;
}

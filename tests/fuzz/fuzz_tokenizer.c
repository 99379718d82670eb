/* Fuzz the tokenizer file loaders and then the tokenizer built from them.
 * Input: a mode byte, then NUL-separated parts:
 *   mode % 3 == 0: tokenizer.json \0 text
 *   mode % 3 == 1: vocab.txt \0 text
 *   mode % 3 == 2: vocab.txt \0 tokenizer_config.json \0 text
 * A loaded spec is turned into a tokenizer, which tokenizes a fixed string
 * (every pipeline stage: accents, CJK, punctuation, added tokens) and the
 * fuzzed text; every id it returns must be inside the vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "hf_tokenizer.h"
#include "tokenizer.h"

static const char k_fixed[] = "[CLS] Héllo, WORLD!! naïve café 東京 ΣΊΣΥΦΟΣ İstanbul\t\x01 "
                              "unaffable [MASK] don't 123.45 \xff\xfe [SEP]";

static void run(const sq_tokenizer *t, const char *text, size_t len)
{
    int32_t ids[64];
    int64_t n = sq_tokenizer_tokenize(t, text, len, ids, 64);
    int32_t vocab = sq_tokenizer_vocab_size(t);
    for (int64_t i = 0; i < n && i < 64; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            abort();
    int m = sq_tokenizer_encode(t, text, len, 16, ids);
    if (m > 16)
        abort();
    for (int i = 0; i < m; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            abort();
    for (int i = 0; i < m; i++) {
        const char *tok = sq_tokenizer_token(t, ids[i]);
        if (!tok || sq_tokenizer_lookup(t, tok, strlen(tok)) != ids[i])
            abort(); /* tokens are unique, so lookup inverts token() */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    const uint8_t *part[3];
    size_t len[3];
    size_t n = fuzz_split(data + 1, size - 1, mode == 2 ? 3 : 2, part, len);

    sq_wordpiece_spec spec;
    sq_err err;
    int rc;
    char *path;
    if (mode == 0) {
        path = fuzz_write("tokenizer.json", part[0], len[0]);
        rc = sq_wordpiece_spec_load_tokenizer_json(path, &spec, &err);
    } else {
        path = fuzz_write("vocab.txt", part[0], len[0]);
        rc = sq_wordpiece_spec_load_vocab_txt(path, &spec, &err);
        if (rc == 0 && mode == 2 && n > 1) {
            char *cfg = fuzz_write("tokenizer_config.json", part[1], len[1]);
            rc = sq_wordpiece_spec_apply_config(cfg, &spec, &err);
            free(cfg);
        }
    }
    free(path);
    if (rc == 0) {
        sq_tokenizer *t = sq_tokenizer_new(&spec, &err);
        if (t) {
            run(t, k_fixed, sizeof k_fixed - 1);
            size_t ti = n - 1; /* the text is the last part */
            if (n > (mode == 2 ? 2u : 1u))
                run(t, (const char *)part[ti], len[ti]);
            sq_tokenizer_free(t);
        }
    }
    sq_wordpiece_spec_free(&spec);
    return 0;
}

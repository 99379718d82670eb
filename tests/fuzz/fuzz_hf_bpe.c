/* Fuzz the tokenizer.json reader and the HF kind of the BPE encoder
 * (tokenizers/tokenizer_hf_json.c, tokenizer_bpe.c). Input: a little-endian
 * uint16 text length L, L bytes of text (fewer if the input ends), then the
 * tokenizer.json bytes. A tokenizer it accepts encodes the text and a fixed
 * string: ids in range, BOS first and EOS last, the same ids as the naive
 * quadratic rank-based encoder (tests/decoder/bpe_naive.c), and the ids
 * decode. */
#include <stdlib.h>
#include <string.h>

#include "bpe_naive.h"
#include "fuzz_util.h"

static const char k_fixed[] = "Once upon a time, h\xc3\xa9llo \xf0\x9f\x98\x80 \xff\x80 <0x41>  end\n";

static void run(const sq_bpe *t, const char *text, size_t len)
{
    int32_t *ids;
    int64_t n = sq_bpe_encode(t, text, len, true, true, &ids);
    if (n < 2 || (size_t)n > 3 * len + 6 || ids[0] != sq_bpe_bos(t) || ids[n - 1] != sq_bpe_eos(t))
        abort();
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= sq_bpe_vocab_size(t))
            abort();
    int32_t *ref = malloc((3 * len + 6) * sizeof *ref);
    int64_t m = bpe_naive_encode_hf(t, text, len, ref);
    if (m != n - 1 || memcmp(ref, ids, (size_t)m * sizeof *ids) != 0)
        abort(); /* the heap and the quadratic scan disagree */
    size_t dl;
    char *s = sq_bpe_decode(t, -1, ids, n, &dl);
    if (!s)
        abort();
    free(s);
    free(ref);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t L = data[0] | (size_t)data[1] << 8;
    if (L > size - 2)
        L = size - 2;
    const char *text = (const char *)data + 2;
    sq_err err;
    /* BOS / EOS 1 and 2 when the vocabulary has them (else the reader refuses) */
    sq_bpe *t = sq_bpe_parse_hf_json((const char *)data + 2 + L, size - 2 - L, "tokenizer.json",
                                     1, 2, &err);
    if (t) {
        run(t, text, L);
        run(t, k_fixed, sizeof k_fixed - 1);
        sq_bpe_free(t);
    }
    return 0;
}

/* Fuzz the Hugging Face Unigram kind (tokenizers/hf_unigram_json.c,
 * tokenizer_hf_unigram.c, precompiled_norm.c). Input: a mode byte, a
 * little-endian uint16 text length L, L bytes of text (fewer if the input
 * ends), then the rest: mode even, a tokenizer.json (read, built, the text
 * and a fixed string encoded: ids in range, small cap = full count with the
 * same prefix, added tokens decode to nothing); mode odd, a raw charsmap
 * blob (accepted or not; applied to both texts: valid UTF-8 out). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "hf_tokenizer.h"
#include "json_util.h"
#include "precompiled_norm.h"
#include "tokenizer.h"
#include "unicode_props.h"

static const char k_fixed[] = "Hello  w\xc3\xb6rld\t\n\xef\xbc\xa1\xef\xac\x81 e\xcc\x81 \xf0\x9f\x98\x80"
                              " \xff\x80 <mask> <s>x</s>  \xe2\x96\x81 \xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88";

static void run(const sq_tokenizer *t, const char *text, size_t len)
{
    int32_t *ids;
    int64_t n = sq_tokenizer_encode_all(t, text, len, true, true, &ids);
    if (n < 2)
        abort();
    int32_t small[2];
    int64_t ns = sq_tokenizer_tokenize(t, text, len, small, 2);
    if (ns != n - 2 || (ns > 0 && small[0] != ids[1]))
        abort();
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= sq_tokenizer_vocab_size(t))
            abort();
        size_t l;
        const char *p = sq_tokenizer_decode_piece(t, i ? ids[i - 1] : -1, ids[i], &l);
        if (!p || (sq_tokenizer_is_special(t, ids[i]) && l != 0))
            abort();
    }
    free(ids);
}

static void norm(const sq_pcnorm *p, const char *text, size_t len)
{
    /* the normalizer takes valid UTF-8: replace the rest */
    char *v = malloc(3 * len + 1);
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += sq_utf8_decode((const uint8_t *)text + i, len - i, &cp);
        w += (size_t)sq_utf8_encode(cp, (uint8_t *)v + w);
    }
    char *out;
    size_t n;
    if (sq_pcnorm_apply(p, v, w, &out, &n) != 0 || !sq_utf8_valid((const uint8_t *)out, n))
        abort();
    free(out);
    free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int mode = data[0] & 1;
    size_t L = data[1] | (size_t)data[2] << 8;
    if (L > size - 3)
        L = size - 3;
    const char *text = (const char *)data + 3;
    const uint8_t *rest = data + 3 + L;
    size_t rn = size - 3 - L;
    sq_err err;
    if (mode == 1) {
        sq_pcnorm *p = sq_pcnorm_new(rest, rn, "charsmap", &err);
        if (p) {
            norm(p, text, L);
            norm(p, k_fixed, sizeof k_fixed - 1);
            sq_pcnorm_free(p);
        }
        return 0;
    }
    json_t *root = sq_json_parse_object((const char *)rest, rn, "tokenizer.json", &err);
    if (!root)
        return 0;
    sq_wordpiece_spec spec;
    if (sq_hf_unigram_spec_from_json(root, "tokenizer.json", &spec, &err) == 0) {
        sq_tokenizer *t = sq_tokenizer_new(&spec, &err);
        if (t) {
            run(t, text, L);
            run(t, k_fixed, sizeof k_fixed - 1);
            sq_tokenizer_free(t);
        }
        sq_wordpiece_spec_free(&spec);
    }
    json_decref(root);
    return 0;
}

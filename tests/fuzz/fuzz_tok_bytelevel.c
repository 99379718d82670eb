/* Fuzz the byte-level BPE reader and encoder (tokenizers/
 * tokenizer_bytelevel_json.c, tokenizer_bytelevel.c, pretok_regex.c, NFC).
 * Input: a little-endian uint16 text length L, L bytes of text (fewer if the
 * input ends), then the tokenizer.json bytes. A tokenizer it accepts encodes
 * the text and a fixed string: ids in range, at most 3 per input byte, and
 * every id decodes (special ones to nothing). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tokenizer_bytelevel.h"

static const char k_fixed[] = "Once upon a time, h\xc3\xa9llo e\xcc\x81 \xf0\x9f\x98\x80 \xff\x80 "
                              "DON'T 123  \r\n\t<|im_end|> end\n";

static void run(const sq_bl *t, const char *text, size_t len)
{
    int32_t *ids;
    int64_t n = sq_bl_encode(t, text, len, true, true, &ids);
    if (n < 0 || (size_t)n > 3 * len + 8)
        abort();
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= sq_bl_vocab_size(t))
            abort();
        size_t l;
        const char *p = sq_bl_decode_piece(t, ids[i], &l);
        if (!p || (sq_bl_is_special(t, ids[i]) && l != 0))
            abort();
    }
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
    sq_bl *t = sq_bl_parse_json((const char *)data + 2 + L, size - 2 - L, "tokenizer.json", -1,
                                -1, &err);
    if (t) {
        run(t, text, L);
        run(t, k_fixed, sizeof k_fixed - 1);
        sq_bl_free(t);
    }
    return 0;
}

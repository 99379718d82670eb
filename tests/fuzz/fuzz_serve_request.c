/* Fuzz squint serve's request bodies (serve/http_api.h): both endpoint
 * kinds parse the same bytes; an accepted request must be well formed (n
 * texts in range, each a string of its stated length) and its response
 * body, built on zero embeddings, must be valid JSON. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "http_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { DIM = 8, MAX_INPUTS = 64 };
    static const float zeros[MAX_INPUTS * DIM];
    for (int k = 0; k < 2; k++) {
        sq_embed_request req;
        char msg[256];
        int st = sq_api_parse_embed((sq_api_kind)k, (const char *)data, size, DIM, MAX_INPUTS,
                                    &req, msg, sizeof msg);
        sq_strbuf sb = {0};
        if (k == 1) { /* /rerank's body too, scored by index */
            sq_embed_request rr;
            if (sq_api_parse_rerank((const char *)data, size, MAX_INPUTS, &rr, msg, sizeof msg) == 0) {
                if (rr.n < 2 || rr.n > MAX_INPUTS)
                    abort();
                double scores[MAX_INPUTS];
                int64_t order[MAX_INPUTS];
                for (int64_t i = 0; i + 1 < rr.n; i++)
                    scores[i] = (double)((i * 7) % 5), order[i] = rr.n - 2 - i;
                sq_api_rerank_response(scores, order, rr.n - 1, &sb);
                json_error_t je;
                json_t *j = sb.failed ? NULL : json_loadb(sb.s, sb.len, 0, &je);
                if (!sb.failed && !j)
                    abort();
                json_decref(j);
                sq_sb_free(&sb);
                sb = (sq_strbuf){0};
            }
            sq_api_request_free(&rr);
        }
        if (st == 0) {
            if (req.n < 1 || req.n > MAX_INPUTS)
                abort();
            for (int64_t i = 0; i < req.n; i++)
                if (strlen(req.texts[i]) > req.lens[i])
                    abort();
            /* rows of the requested width and precision (codes of a fixed pattern) */
            const int dims = req.dimensions ? req.dimensions : DIM;
            if (dims < 1 || dims > DIM)
                abort();
            uint8_t codes[MAX_INPUTS * DIM];
            for (size_t i = 0; i < sizeof codes; i++)
                codes[i] = (uint8_t)(i * 37);
            sq_api_embed_response((sq_api_kind)k, &req, zeros, dims, codes,
                                  sq_emb_precision_width(req.precision, dims), 7, "fuzz", &sb);
        } else {
            if ((st != 400 && st != 413) || !msg[0])
                abort();
            sq_api_error((sq_api_kind)k, st, msg, &sb);
        }
        json_error_t je;
        json_t *j = sb.failed ? NULL : json_loadb(sb.s, sb.len, 0, &je);
        if (!sb.failed && !j)
            abort(); /* our own output must parse */
        json_decref(j);
        sq_sb_free(&sb);
        sq_api_request_free(&req);
    }
    return 0;
}

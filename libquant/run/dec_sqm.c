#include "dec_sqm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "sqm_decoder.h"
#include "sqm_model.h"
#include "sqm_schema.h"

bool sq_dec_sqm_is_decoder(const char *path)
{
    if (!sq_sqm_sniff(path))
        return false;
    sq_container c;
    sq_err e;
    if (sq_container_open(path, SQ_KIND_SQM, &c, &e) != 0)
        return false;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    bool dec = sq_sqm_read_meta(&c, &ctx, &info, &e) == 0 && ctx.decoder;
    sq_container_close(&c);
    return dec;
}

int sq_dec_sqm_open(const char *path, sq_llama_model *m, sq_err *err)
{
    memset(m, 0, sizeof *m);
    sq_container *c = calloc(1, sizeof *c);
    if (!c)
        return sq_err_set(err, "out of memory");
    if (sq_container_open(path, SQ_KIND_SQM, c, err) != 0) {
        free(c);
        return -1;
    }
    m->sqm = c;
    if (sq_container_verify(c, err) != 0 || sq_sqm_load_decoder(c, &m->dec, &m->tok, err) != 0)
        goto fail;
    sq_sqm_schema_ctx ctx;
    sq_sqm_info info;
    if (sq_sqm_read_meta(c, &ctx, &info, err) != 0)
        goto fail;
    m->has_template = ctx.dec_has_wrap; /* SQM.md 10.5 */
    m->tmpl = ctx.dec_wrap;
    if (ctx.dec_embedding) { /* SQM.md 10.8 */
        m->emb.on = true;
        m->emb.normalize = info.pool.normalize;
        m->emb.max_seq = info.max_seq;
        m->emb.wrap = ctx.dec_wrap;
    }
    if (!(m->tokenizer_path = strdup(path))) {
        sq_err_set(err, "out of memory");
        goto fail;
    }
    return 0;
fail:
    sq_llama_model_close(m);
    return -1;
}

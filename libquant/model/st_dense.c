/* sentence-transformers Dense modules as the encoder head (st_dense.h). */
#include "st_dense.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_util.h"
#include "safetensors.h"

/* Tensor `name` of exactly [d0] or [d0, d1] as a malloc'd f32 array. */
static float *read_tensor(const sq_safetensors *st, const char *name, int64_t d0, int64_t d1,
                          sq_err *err)
{
    const sq_st_tensor *t = sq_safetensors_find(st, name);
    if (!t) {
        sq_err_set(err, "%s: missing tensor \"%s\"", st->mf.path, name);
        return NULL;
    }
    if (t->ndim != (d1 ? 2 : 1) || t->shape[0] != d0 || (d1 && t->shape[1] != d1)) {
        if (d1)
            sq_err_set(err, "%s: tensor \"%s\" must be [%lld, %lld]", st->mf.path, name,
                       (long long)d0, (long long)d1);
        else
            sq_err_set(err, "%s: tensor \"%s\" must be [%lld]", st->mf.path, name, (long long)d0);
        return NULL;
    }
    float *v = malloc((size_t)t->numel * sizeof *v + 64);
    if (!v) {
        sq_err_set(err, "out of memory");
        return NULL;
    }
    if (sq_safetensors_read_f32(st, t, v, err) != 0) {
        free(v);
        return NULL;
    }
    return v;
}

int sq_st_dense_load(const char *dir, const sq_pooling_config *pc, sq_encoder *enc, sq_err *err)
{
    const int H = enc->cfg.hidden;
    char *mdir = sq_path_join(dir, pc->dense_path);
    char *cfg_path = mdir ? sq_path_join(mdir, "config.json") : NULL;
    char *w_path = mdir ? sq_path_join(mdir, "model.safetensors") : NULL;
    json_t *root = NULL;
    sq_safetensors st = {0};
    bool st_open = false;
    float *w = NULL, *b = NULL;
    int rc = -1;
    if (!cfg_path || !w_path) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    if (!(root = sq_json_load_object(cfg_path, err)))
        goto out;
    int64_t in, out_f;
    bool bias;
    const char *act;
    if (sq_json_int(root, "in_features", 1, 1 << 20, false, 0, &in, cfg_path, err) != 0 ||
        sq_json_int(root, "out_features", 1, 1 << 20, false, 0, &out_f, cfg_path, err) != 0 ||
        sq_json_bool(root, "bias", true, true, &bias, cfg_path, err) != 0 ||
        sq_json_str(root, "activation_function", true, &act, cfg_path, err) != 0)
        goto out;
    if (in != H || out_f != H) {
        sq_err_set(err, "%s: a Dense module from %lld to %lld features; squint runs square Dense "
                        "modules of the encoder's width (%d) only",
                   cfg_path, (long long)in, (long long)out_f, H);
        goto out;
    }
    const char *last = act ? strrchr(act, '.') : NULL;
    last = last ? last + 1 : act ? act : "Tanh"; /* sentence-transformers' default */
    sq_head_kind kind;
    if (!strcmp(last, "Tanh"))
        kind = SQ_HEAD_TANH;
    else if (!strcmp(last, "Identity"))
        kind = SQ_HEAD_IDENTITY;
    else {
        sq_err_set(err, "%s: activation_function \"%s\" is not supported (Tanh or Identity)",
                   cfg_path, act);
        goto out;
    }
    if (!sq_file_exists(w_path)) {
        sq_err_set(err, "%s: no model.safetensors in the Dense module (squint does not read "
                        "pytorch_model.bin: save the model with safetensors)",
                   mdir);
        goto out;
    }
    if (sq_safetensors_open(w_path, &st, err) != 0)
        goto out;
    st_open = true;
    if (!(w = read_tensor(&st, "linear.weight", H, H, err)))
        goto out;
    if (bias) {
        if (!(b = read_tensor(&st, "linear.bias", H, 0, err)))
            goto out;
    } else if (!(b = calloc((size_t)H, sizeof *b))) {
        sq_err_set(err, "out of memory");
        goto out;
    }
    sq_linear_free(&enc->head);
    enc->head = (sq_linear){.in = H, .out = H, .qtype = SQ_QT_F32, .w = w, .b = b};
    enc->cfg.head = kind;
    w = b = NULL;
    rc = 0;
out:
    free(w);
    free(b);
    if (st_open)
        sq_safetensors_close(&st);
    json_decref(root);
    free(cfg_path);
    free(w_path);
    free(mdir);
    return rc;
}

/* The one tokenizer interface (tokenizer.h): a kind and its implementation. */
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "tokenizer_bpe.h"
#include "tokenizer_bytelevel.h"
#include "tokenizer_hf_json.h"
#include "tokenizer_hf_unigram.h"
#include "tokenizer_unigram.h"
#include "tokenizer_wordpiece.h"

struct sq_tokenizer {
    sq_tokenizer_kind kind;
    sq_wordpiece *wp;
    sq_unigram *uni;
    sq_bpe *bpe;
    sq_bl *bl;
    sq_hfu *hfu;
    int32_t n;
    int32_t unk_id, cls_id, sep_id, pad_id, mask_id, bos_id, eos_id, model_max_length;
    bool pair_double_sep;
    size_t max_piece; /* sq_tokenizer_max_piece_bytes */
};

static sq_tokenizer *alloc_tokenizer(sq_tokenizer_kind kind, sq_err *err)
{
    sq_tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        sq_err_set(err, "tokenizer: out of memory");
        return NULL;
    }
    t->kind = kind;
    t->unk_id = t->cls_id = t->sep_id = t->pad_id = t->mask_id = t->bos_id = t->eos_id = -1;
    return t;
}

static sq_tokenizer *new_unigram(const sq_wordpiece_spec *spec, sq_err *err)
{
    if (!spec->scores) {
        sq_err_set(err, "tokenizer: a unigram vocabulary needs its piece scores");
        return NULL;
    }
    sq_tokenizer *t = alloc_tokenizer(SQ_TOKENIZER_UNIGRAM, err);
    if (!t)
        return NULL;
    t->uni = sq_unigram_new_f64((const char *const *)spec->vocab, spec->scores, spec->vocab_size,
                                err);
    if (!t->uni) {
        free(t);
        return NULL;
    }
    t->n = sq_unigram_vocab_size(t->uni);
    t->unk_id = 0;
    t->model_max_length = spec->model_max_length;
    return t;
}

static sq_tokenizer *new_hf_unigram(const sq_wordpiece_spec *spec, sq_err *err)
{
    sq_hfu *u = sq_hfu_new(spec, "tokenizer", err);
    if (!u)
        return NULL;
    sq_tokenizer *t = alloc_tokenizer(SQ_TOKENIZER_HF_UNIGRAM, err);
    if (!t) {
        sq_hfu_free(u);
        return NULL;
    }
    t->hfu = u;
    t->n = sq_hfu_vocab_size(u);
    const int32_t ids[5] = {spec->unk_id, spec->cls_id, spec->sep_id, spec->pad_id, spec->mask_id};
    for (int k = 0; k < 5; k++)
        if (ids[k] < -1 || ids[k] >= t->n) {
            sq_err_set(err, "tokenizer: special id %d is outside the vocabulary", ids[k]);
            sq_tokenizer_free(t);
            return NULL;
        }
    if (spec->cls_id < 0 || spec->sep_id < 0) {
        sq_err_set(err, "tokenizer: an HF Unigram tokenizer needs its <s> and </s> ids");
        sq_tokenizer_free(t);
        return NULL;
    }
    t->unk_id = spec->unk_id;
    t->cls_id = t->bos_id = spec->cls_id;
    t->sep_id = t->eos_id = spec->sep_id;
    t->pad_id = spec->pad_id;
    t->mask_id = spec->mask_id;
    t->model_max_length = spec->model_max_length > 0 ? spec->model_max_length : 0;
    t->pair_double_sep = spec->pair_double_sep;
    /* max_piece 0: a run of unknown characters fuses into one token */
    return t;
}

/* An encoder's byte-level BPE (ModernBERT): the byte-level kind with the
 * post-processor's [CLS] / [SEP] as its BOS / EOS. */
static sq_tokenizer *new_hf_bytelevel(const sq_wordpiece_spec *spec, sq_err *err)
{
    const int32_t ids[5] = {spec->unk_id, spec->cls_id, spec->sep_id, spec->pad_id, spec->mask_id};
    for (int k = 0; k < 5; k++)
        if (ids[k] < -1 || ids[k] >= spec->vocab_size) {
            sq_err_set(err, "tokenizer: special id %d is outside the vocabulary of %d", ids[k],
                       spec->vocab_size);
            return NULL;
        }
    if (spec->cls_id < 0 || spec->sep_id < 0) {
        sq_err_set(err, "tokenizer: an encoder's byte-level tokenizer needs its [CLS] and [SEP] "
                        "ids");
        return NULL;
    }
    sq_bl_added *added = malloc(((size_t)spec->n_added + 1) * sizeof *added);
    if (!added) {
        sq_err_set(err, "tokenizer: out of memory");
        return NULL;
    }
    for (int32_t i = 0; i < spec->n_added; i++) {
        const sq_added_token *a = &spec->added[i];
        added[i] = (sq_bl_added){a->id, a->normalized, a->special, a->lstrip, a->rstrip};
    }
    const sq_bl_spec bs = {(const char *const *)spec->vocab, spec->vocab_size, spec->merges,
                           spec->n_merges, spec->bl_nfc, (sq_pretok_pattern)spec->bl_pattern,
                           spec->bl_add_prefix_space, spec->bl_ignore_merges, added,
                           spec->n_added, spec->cls_id, spec->sep_id};
    sq_bl *b = sq_bl_new(&bs, "tokenizer", err);
    free(added);
    sq_tokenizer *t = sq_tokenizer_from_bl(b, err);
    if (!t)
        return NULL;
    t->unk_id = spec->unk_id;
    t->cls_id = spec->cls_id;
    t->sep_id = spec->sep_id;
    t->pad_id = spec->pad_id;
    t->mask_id = spec->mask_id;
    t->model_max_length = spec->model_max_length > 0 ? spec->model_max_length : 0;
    t->pair_double_sep = spec->pair_double_sep;
    return t;
}

sq_tokenizer *sq_tokenizer_new(const sq_wordpiece_spec *spec, sq_err *err)
{
    if (spec && spec->type == SQ_TOK_HF_BYTELEVEL)
        return new_hf_bytelevel(spec, err);
    if (spec && spec->type == SQ_TOK_UNIGRAM)
        return new_unigram(spec, err);
    if (spec && spec->type == SQ_TOK_HF_UNIGRAM)
        return new_hf_unigram(spec, err);
    sq_wordpiece *wp = sq_wordpiece_new(spec, err); /* checks the spec's ids against the vocab */
    if (!wp)
        return NULL;
    sq_tokenizer *t = alloc_tokenizer(SQ_TOKENIZER_WORDPIECE, err);
    if (!t) {
        sq_wordpiece_free(wp);
        return NULL;
    }
    t->wp = wp;
    t->n = sq_wordpiece_vocab_size(wp);
    t->unk_id = spec->unk_id;
    t->cls_id = t->bos_id = spec->cls_id;
    t->sep_id = t->eos_id = spec->sep_id;
    t->pad_id = spec->pad_id;
    t->mask_id = spec->mask_id;
    t->model_max_length = spec->model_max_length > 0 ? spec->model_max_length : 0;
    t->pair_double_sep = spec->pair_double_sep;
    return t;
}

sq_tokenizer *sq_tokenizer_load_dir(const char *dir, sq_err *err)
{
    sq_wordpiece_spec spec;
    if (sq_wordpiece_spec_load_dir(dir, &spec, err) != 0)
        return NULL;
    sq_tokenizer *t = sq_tokenizer_new(&spec, err);
    sq_wordpiece_spec_free(&spec);
    if (!t)
        sq_err_prefix(err, "%s", dir);
    return t;
}

sq_tokenizer *sq_tokenizer_from_bpe(sq_bpe *b, sq_err *err)
{
    if (!b) {
        sq_err_set(err, "tokenizer: no BPE tokenizer");
        return NULL;
    }
    sq_tokenizer *t = alloc_tokenizer(SQ_TOKENIZER_BPE, err);
    if (!t) {
        sq_bpe_free(b);
        return NULL;
    }
    t->bpe = b;
    t->n = sq_bpe_vocab_size(b);
    t->bos_id = sq_bpe_bos(b);
    t->eos_id = sq_bpe_eos(b);
    /* A character the vocabulary cannot piece becomes one token per byte
     * (llama2.c; an HF tokenizer with byte_fallback), so a token stands for
     * at most its longest raw piece's bytes ("\u2581" counts 3 for its one
     * space: a looser bound, still a bound). An HF tokenizer without
     * byte_fallback may fuse any run of unknown characters into one <unk>:
     * no bound. */
    bool bounded = true;
    if (sq_bpe_is_hf(b)) {
        sq_bpe_hf h;
        sq_bpe_hf_settings(b, &h);
        t->unk_id = h.unk;
        bounded = h.byte_fallback;
    } else {
        t->unk_id = SQ_BPE_UNK;
    }
    for (int32_t i = 0; bounded && i < t->n; i++) {
        size_t l;
        if (sq_bpe_token(b, i, &l) && l > t->max_piece)
            t->max_piece = l;
    }
    if (bounded && t->max_piece < 4) /* <unk> for a whole character: up to 4 bytes */
        t->max_piece = 4;
    return t;
}

sq_tokenizer *sq_tokenizer_from_bl(sq_bl *b, sq_err *err)
{
    if (!b)
        return NULL;
    sq_tokenizer *t = alloc_tokenizer(SQ_TOKENIZER_BYTELEVEL, err);
    if (!t) {
        sq_bl_free(b);
        return NULL;
    }
    t->bl = b;
    t->n = sq_bl_vocab_size(b);
    t->bos_id = sq_bl_bos(b);
    t->eos_id = sq_bl_eos(b);
    t->max_piece = sq_bl_max_piece_bytes(b); /* every byte has its piece: bounded */
    return t;
}

sq_tokenizer *sq_tokenizer_load_bpe_file(const char *path, int32_t bos, int32_t eos, sq_err *err)
{
    size_t n = strlen(path);
    bool json = n >= 5 && strcmp(path + n - 5, ".json") == 0;
    if (!json) {
        sq_bpe *b = sq_bpe_load(path, err);
        return b ? sq_tokenizer_from_bpe(b, err) : NULL;
    }
    json_t *root = sq_json_load_object(path, err);
    if (!root)
        return NULL;
    sq_tokenizer *t = NULL;
    if (sq_bl_json_is_bytelevel(root)) {
        t = sq_tokenizer_from_bl(sq_bl_from_json_tree(root, path, bos, eos, err), err);
    } else {
        sq_bpe *b = sq_bpe_from_hf_json_tree(root, path, bos, eos, err);
        t = b ? sq_tokenizer_from_bpe(b, err) : NULL;
    }
    json_decref(root);
    return t;
}

void sq_tokenizer_free(sq_tokenizer *t)
{
    if (!t)
        return;
    sq_wordpiece_free(t->wp);
    sq_unigram_free(t->uni);
    sq_bpe_free(t->bpe);
    sq_bl_free(t->bl);
    sq_hfu_free(t->hfu);
    free(t);
}

sq_tokenizer_kind sq_tokenizer_kind_of(const sq_tokenizer *t) { return t->kind; }
const sq_bpe *sq_tokenizer_bpe(const sq_tokenizer *t) { return t->bpe; }
const sq_bl *sq_tokenizer_bl(const sq_tokenizer *t) { return t->bl; }

/* The BPE kind encodes into a buffer of its own; copy up to cap of it. */
static int64_t bpe_tokenize(const sq_bpe *b, const char *text, size_t len, bool bos,
                            int32_t *ids, int64_t cap)
{
    int32_t *all = NULL;
    int64_t n = sq_bpe_encode(b, text, len, bos, false, &all);
    if (n < 0)
        return -1;
    if (ids && cap > 0 && n > 0)
        memcpy(ids, all, (size_t)(n < cap ? n : cap) * sizeof *ids);
    free(all);
    return n;
}

static int64_t bl_tokenize(const sq_bl *b, const char *text, size_t len, bool bos, int32_t *ids,
                           int64_t cap)
{
    int32_t *all = NULL;
    int64_t n = sq_bl_encode(b, text, len, bos, false, &all);
    if (n < 0)
        return -1;
    if (ids && cap > 0 && n > 0)
        memcpy(ids, all, (size_t)(n < cap ? n : cap) * sizeof *ids);
    free(all);
    return n;
}

int64_t sq_tokenizer_tokenize(const sq_tokenizer *t, const char *text, size_t len,
                              int32_t *ids, int64_t cap)
{
    switch (t->kind) {
    case SQ_TOKENIZER_WORDPIECE:
        return sq_wordpiece_tokenize(t->wp, text, len, ids, cap);
    case SQ_TOKENIZER_UNIGRAM:
        return sq_unigram_tokenize(t->uni, text, len, ids, cap);
    case SQ_TOKENIZER_BPE:
        return bpe_tokenize(t->bpe, text, len, false, ids, cap);
    case SQ_TOKENIZER_BYTELEVEL:
        return bl_tokenize(t->bl, text, len, false, ids, cap);
    case SQ_TOKENIZER_HF_UNIGRAM:
        return sq_hfu_tokenize(t->hfu, text, len, ids, cap);
    }
    return -1;
}

int sq_tokenizer_encode(const sq_tokenizer *t, const char *text, size_t len, int max_len,
                        int32_t *ids)
{
    /* an encoder's byte-level tokenizer has [CLS] / [SEP]; a causal LM's none */
    const bool wrap = t->kind == SQ_TOKENIZER_WORDPIECE || t->kind == SQ_TOKENIZER_HF_UNIGRAM ||
                      (t->kind == SQ_TOKENIZER_BYTELEVEL && t->cls_id >= 0);
    if (!wrap) { /* no [CLS]/[SEP]: the first max_len ids */
        if (max_len < 1)
            return -1;
        int64_t n = t->kind == SQ_TOKENIZER_UNIGRAM
                        ? sq_unigram_tokenize(t->uni, text, len, ids, max_len)
                    : t->kind == SQ_TOKENIZER_BYTELEVEL
                        ? bl_tokenize(t->bl, text, len, t->bos_id >= 0, ids, max_len)
                        : bpe_tokenize(t->bpe, text, len, t->bos_id >= 0, ids, max_len);
        return n < 0 ? -1 : (int)(n < max_len ? n : max_len);
    }
    if (max_len < 2 || t->cls_id < 0 || t->sep_id < 0)
        return -1;
    int64_t n = sq_tokenizer_tokenize(t, text, len, ids + 1, max_len - 2);
    if (n < 0)
        return -1;
    int w = n < max_len - 2 ? (int)n : max_len - 2;
    ids[0] = t->cls_id;
    ids[w + 1] = t->sep_id;
    return w + 2;
}

int64_t sq_tokenizer_encode_all(const sq_tokenizer *t, const char *text, size_t len, bool bos,
                                bool eos, int32_t **ids)
{
    *ids = NULL;
    if (t->kind == SQ_TOKENIZER_BPE)
        return sq_bpe_encode(t->bpe, text, len, bos, eos, ids);
    if (t->kind == SQ_TOKENIZER_BYTELEVEL)
        return sq_bl_encode(t->bl, text, len, bos, eos, ids);
    if (len > ((size_t)1 << 28))
        return -1;
    int64_t n = sq_tokenizer_tokenize(t, text, len, NULL, 0);
    if (n < 0)
        return -1;
    bool b = bos && t->bos_id >= 0, e = eos && t->eos_id >= 0;
    int32_t *out = malloc((size_t)(n + b + e + 1) * sizeof *out);
    if (!out)
        return -1;
    int64_t got = sq_tokenizer_tokenize(t, text, len, out + b, n);
    if (got != n) {
        free(out);
        return -1;
    }
    if (b)
        out[0] = t->bos_id;
    if (e)
        out[b + n] = t->eos_id;
    *ids = out;
    return n + b + e;
}

const char *sq_tokenizer_decode_piece(const sq_tokenizer *t, int32_t prev, int32_t id,
                                      size_t *len)
{
    if (t->kind == SQ_TOKENIZER_BPE)
        return sq_bpe_decode_piece(t->bpe, prev, id, len);
    if (t->kind == SQ_TOKENIZER_BYTELEVEL)
        return sq_bl_decode_piece(t->bl, id, len);
    if (t->kind == SQ_TOKENIZER_HF_UNIGRAM)
        /* the Metaspace decoder drops the space of a text's first piece:
         * here the piece at the start or right after <s> (HF counts the first
         * piece left after skipping special tokens: "<mask>x" decodes to "x"
         * there, " x" here) */
        return sq_hfu_decode_piece(t->hfu, id, prev < 0 || prev == t->cls_id, len);
    const char *s = sq_tokenizer_is_special(t, id) ? NULL : sq_tokenizer_token(t, id);
    *len = s ? strlen(s) : 0;
    return s ? s : "";
}

int32_t sq_tokenizer_vocab_size(const sq_tokenizer *t) { return t->n; }
int32_t sq_tokenizer_pad_id(const sq_tokenizer *t) { return t->pad_id; }
int32_t sq_tokenizer_unk_id(const sq_tokenizer *t) { return t->unk_id; }
int32_t sq_tokenizer_cls_id(const sq_tokenizer *t) { return t->cls_id; }
int32_t sq_tokenizer_sep_id(const sq_tokenizer *t) { return t->sep_id; }
int32_t sq_tokenizer_mask_id(const sq_tokenizer *t) { return t->mask_id; }
int32_t sq_tokenizer_bos_id(const sq_tokenizer *t) { return t->bos_id; }
int32_t sq_tokenizer_eos_id(const sq_tokenizer *t) { return t->eos_id; }
int32_t sq_tokenizer_model_max_length(const sq_tokenizer *t) { return t->model_max_length; }
bool sq_tokenizer_pair_double_sep(const sq_tokenizer *t) { return t->pair_double_sep; }
size_t sq_tokenizer_max_piece_bytes(const sq_tokenizer *t) { return t->max_piece; }

bool sq_tokenizer_is_special(const sq_tokenizer *t, int32_t id)
{
    if (t->kind == SQ_TOKENIZER_BPE)
        return sq_bpe_is_special(t->bpe, id);
    if (t->kind == SQ_TOKENIZER_BYTELEVEL)
        return sq_bl_is_special(t->bl, id);
    if (t->kind == SQ_TOKENIZER_HF_UNIGRAM)
        return sq_hfu_is_added(t->hfu, id);
    return id >= 0 && (id == t->cls_id || id == t->sep_id || id == t->pad_id ||
                       id == t->mask_id);
}

const char *sq_tokenizer_token(const sq_tokenizer *t, int32_t id)
{
    size_t n;
    switch (t->kind) {
    case SQ_TOKENIZER_WORDPIECE:
        return sq_wordpiece_token(t->wp, id);
    case SQ_TOKENIZER_UNIGRAM:
        return sq_unigram_piece(t->uni, id);
    case SQ_TOKENIZER_BPE:
        return sq_bpe_token(t->bpe, id, &n);
    case SQ_TOKENIZER_BYTELEVEL:
        return sq_bl_token(t->bl, id);
    case SQ_TOKENIZER_HF_UNIGRAM:
        return sq_hfu_piece(t->hfu, id);
    }
    return NULL;
}

int32_t sq_tokenizer_lookup(const sq_tokenizer *t, const char *token, size_t len)
{
    switch (t->kind) {
    case SQ_TOKENIZER_WORDPIECE:
        return sq_wordpiece_lookup(t->wp, token, len);
    case SQ_TOKENIZER_BPE:
        return sq_bpe_lookup(t->bpe, token, len);
    case SQ_TOKENIZER_BYTELEVEL:
        return sq_bl_lookup(t->bl, token, len);
    case SQ_TOKENIZER_HF_UNIGRAM:
        return sq_hfu_lookup(t->hfu, token, len);
    case SQ_TOKENIZER_UNIGRAM:
        /* rare (tools only): a scan; the last duplicate wins as in matching */
        for (int32_t id = t->n - 1; id >= 0; id--) {
            const char *p = sq_unigram_piece(t->uni, id);
            if (p && strlen(p) == len && memcmp(p, token, len) == 0)
                return id;
        }
        return -1;
    }
    return -1;
}

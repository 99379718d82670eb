#include "use_vocab.h"
#include "json_util.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

static void free_pieces(char **pieces, int32_t n)
{
    if (!pieces)
        return;
    for (int32_t i = 0; i < n; i++)
        free(pieces[i]);
    free(pieces);
}

int sq_use_vocab_load_f64(const char *path, char ***pieces_out, double **scores_out, int32_t *n_out,
                          sq_err *err)
{
    *pieces_out = NULL;
    *scores_out = NULL;
    *n_out = 0;
    char *buf;
    size_t len;
    if (sq_read_regular_file(path, SQ_USE_VOCAB_MAX_FILE, &buf, &len, err) != 0)
        return -1;
    json_error_t je;
    /* No JSON_ALLOW_NUL: a piece with U+0000 could not be a C string. */
    json_t *root = json_loadb(buf, len, SQ_JSON_FLAGS, &je);
    free(buf);
    if (!root)
        return sq_err_set(err, "%s: invalid JSON at line %d, column %d: %s", path, je.line,
                          je.column, je.text);
    int rc = -1;
    char **pieces = NULL;
    double *scores = NULL;
    size_t n = 0;
    if (!json_is_array(root)) {
        sq_err_set(err, "%s: top-level JSON value is not an array of [piece, score] pairs", path);
        goto out;
    }
    n = json_array_size(root);
    if (n == 0 || n > SQ_USE_VOCAB_MAX_ENTRIES) {
        sq_err_set(err, "%s: %zu entries; expected 1 to %d", path, n, SQ_USE_VOCAB_MAX_ENTRIES);
        n = 0;
        goto out;
    }
    pieces = calloc(n, sizeof *pieces);
    scores = malloc(n * sizeof *scores);
    if (!pieces || !scores) {
        sq_err_set(err, "%s: out of memory", path);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(root, i);
        if (!json_is_array(e) || json_array_size(e) != 2) {
            sq_err_set(err, "%s: entry %zu: not a [piece, score] pair", path, i);
            goto out;
        }
        json_t *p = json_array_get(e, 0), *s = json_array_get(e, 1);
        if (!json_is_string(p)) {
            sq_err_set(err, "%s: entry %zu: piece is not a string", path, i);
            goto out;
        }
        size_t pl = json_string_length(p);
        if (pl == 0) {
            sq_err_set(err, "%s: entry %zu: piece is empty", path, i);
            goto out;
        }
        if (pl > SQ_USE_VOCAB_MAX_PIECE) {
            sq_err_set(err, "%s: entry %zu: piece is longer than %d bytes", path, i,
                       SQ_USE_VOCAB_MAX_PIECE);
            goto out;
        }
        if (json_is_null(s)) {
            scores[i] = 0.0; /* the JS tokenizer adds null as 0 */
        } else if (json_is_number(s)) {
            scores[i] = json_number_value(s);
            if (!isfinite(scores[i])) {
                sq_err_set(err, "%s: entry %zu: score is not finite", path, i);
                goto out;
            }
        } else {
            sq_err_set(err, "%s: entry %zu: score is not a number", path, i);
            goto out;
        }
        pieces[i] = malloc(pl + 1);
        if (!pieces[i]) {
            sq_err_set(err, "%s: out of memory", path);
            goto out;
        }
        memcpy(pieces[i], json_string_value(p), pl + 1);
    }
    rc = 0;
out:
    json_decref(root);
    if (rc != 0) {
        free_pieces(pieces, (int32_t)n);
        free(scores);
        return -1;
    }
    *pieces_out = pieces;
    *scores_out = scores;
    *n_out = (int32_t)n;
    return 0;
}

void sq_use_vocab_free_f64(char **pieces, double *scores, int32_t n)
{
    free_pieces(pieces, n);
    free(scores);
}

int sq_use_vocab_load(const char *path, char ***pieces, float **scores, int32_t *n, sq_err *err)
{
    double *d;
    *scores = NULL;
    if (sq_use_vocab_load_f64(path, pieces, &d, n, err) != 0)
        return -1;
    float *f = malloc((size_t)*n * sizeof *f);
    if (!f) {
        sq_use_vocab_free_f64(*pieces, d, *n);
        *pieces = NULL;
        *n = 0;
        return sq_err_set(err, "%s: out of memory", path);
    }
    for (int32_t i = 0; i < *n; i++) {
        if (fabs(d[i]) > FLT_MAX) {
            sq_use_vocab_free_f64(*pieces, d, *n);
            free(f);
            *pieces = NULL;
            int32_t bad = i;
            *n = 0;
            return sq_err_set(err, "%s: entry %d: score does not fit a float", path, (int)bad);
        }
        f[i] = (float)d[i];
    }
    free(d);
    *scores = f;
    return 0;
}

void sq_use_vocab_free(char **pieces, float *scores, int32_t n)
{
    free_pieces(pieces, n);
    free(scores);
}

/* Rank the lines of standard input (documents) for a query with libsquint and
 * write one JSON object per document, best first:
 * {"rank":1,"index":3,"score":0.8125[,"logit":1.46]}, the output of
 * `squint rerank MODEL --query QUERY --docs - [--instruction TEXT]`, byte for
 * byte, for any model that ranks: an embedding model (cosine), a
 * cross-encoder or a causal LM judge (Qwen3-Reranker). Uses only <squint.h>.
 *
 *   cc rerank.c $(pkg-config --cflags --libs squint) -o rerank
 *   ./rerank model.sqm "what causes tides" < candidates.txt
 *
 * Every line is a document (a trailing '\r' dropped); ties keep input order,
 * a NaN score (a zero embedding) ranks last and prints as null. */
#include <math.h>
#include <squint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double *sort_scores;

/* Highest score first, NaN last, ties by the lower index. */
static int by_score(const void *x, const void *y)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    double a = sort_scores[i], b = sort_scores[j];
    if (isnan(a) != isnan(b))
        return isnan(a) ? 1 : -1;
    if (!isnan(a) && a != b)
        return a > b ? -1 : 1;
    return (i > j) - (i < j);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL QUERY [INSTRUCTION] < documents.txt > ranked.jsonl\n",
                argv[0]);
        return 2;
    }
    squint_error err;
    squint_model *m = squint_model_open(argv[1], &err);
    if (!m) {
        fprintf(stderr, "rerank: %s\n", err.message);
        return 2;
    }
    char **docs = NULL, *line = NULL;
    size_t n = 0, cap = 0, lcap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &lcap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (n == cap) {
            char **grown = realloc(docs, (cap = cap ? 2 * cap : 64) * sizeof *docs);
            if (!grown) {
                rc = 1;
                break;
            }
            docs = grown;
        }
        if (!(docs[n] = strdup(line))) {
            rc = 1;
            break;
        }
        n++;
    }
    free(line);
    const char **queries = malloc((n ? n : 1) * sizeof *queries);
    double *scores = malloc((n ? n : 1) * sizeof *scores);
    float *logits = malloc((n ? n : 1) * sizeof *logits);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (rc || !queries || !scores || !logits || !order) {
        fprintf(stderr, "rerank: out of memory\n");
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) /* one pointer: an embedding model embeds the query once */
        queries[i] = argv[2];
    squint_score_options o;
    squint_score_options_init(&o);
    if (argc == 4)
        o.instruction = argv[3];
    if (squint_score_pairs(m, queries, NULL, (const char *const *)docs, NULL, n, &o, scores,
                           logits, &err) != SQUINT_OK) {
        fprintf(stderr, "rerank: %s (%s)\n", err.message, squint_status_name(err.code));
        rc = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_scores = scores;
    qsort(order, n, sizeof *order, by_score);
    const int has_logit = squint_model_kind_of(m) != SQUINT_KIND_EMBEDDING;
    for (size_t r = 0; r < n; r++) {
        size_t i = order[r];
        printf("{\"rank\":%zu,\"index\":%zu", r + 1, i);
        if (isnan(scores[i]))
            printf(",\"score\":null");
        else
            printf(",\"score\":%.9g", scores[i]);
        if (has_logit)
            printf(",\"logit\":%.9g", (double)logits[i]);
        fputs("}\n", stdout);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        rc = 1;
out:
    for (size_t i = 0; i < n; i++)
        free(docs[i]);
    free(docs), free(queries), free(scores), free(logits), free(order);
    squint_model_close(m);
    return rc;
}

/* Embed the lines of standard input with libsquint and write one JSON object
 * per line, {"index":I,"embedding":[...]}: the output of
 * `squint embed MODEL --input -`, byte for byte. Uses only <squint.h>.
 *
 *   cc embed.c $(pkg-config --cflags --libs squint) -o embed
 *   printf 'a sentence\nanother one\n' | ./embed model.sqm [THREADS]
 *
 * Lines are embedded in chunks of CHUNK as they arrive, so memory stays
 * bounded whatever the input size; a trailing '\r' is dropped (CRLF input),
 * an empty line is embedded as the empty text. */
#include <squint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK = 256 };

static int flush_chunk(const squint_model *m, const squint_embed_options *o, char **lines,
                       size_t *lens, size_t n, long long first, float *out)
{
    squint_error err;
    if (squint_embed(m, (const char *const *)lines, lens, n, o, out, &err) != SQUINT_OK) {
        fprintf(stderr, "embed: line %lld..%lld: %s (%s)\n", first + 1, first + (long long)n,
                err.message, squint_status_name(err.code));
        return -1;
    }
    int dim = squint_model_dim(m);
    for (size_t i = 0; i < n; i++) {
        printf("{\"index\":%lld,\"embedding\":[", first + (long long)i);
        for (int c = 0; c < dim; c++)
            printf(c ? ",%.9g" : "%.9g", (double)out[i * (size_t)dim + c]);
        fputs("]}\n", stdout);
    }
    return ferror(stdout) ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODEL [THREADS] < lines.txt > embeddings.jsonl\n", argv[0]);
        return 2;
    }
    squint_error err;
    squint_model *m = squint_model_open(argv[1], &err);
    if (!m) {
        fprintf(stderr, "embed: %s\n", err.message);
        return 2;
    }
    squint_embed_options o;
    squint_embed_options_init(&o);
    if (argc == 3)
        o.threads = atoi(argv[2]);
    char *lines[CHUNK];
    size_t lens[CHUNK];
    float *out = malloc((size_t)CHUNK * (size_t)squint_model_dim(m) * sizeof *out);
    size_t n = 0;
    long long done = 0;
    int rc = out ? 0 : 1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (rc == 0 && (len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (!(lines[n] = malloc((size_t)len + 1))) {
            rc = 1;
            break;
        }
        memcpy(lines[n], line, (size_t)len + 1);
        lens[n++] = (size_t)len;
        if (n == CHUNK) {
            rc = flush_chunk(m, &o, lines, lens, n, done, out) ? 1 : 0;
            while (n)
                free(lines[--n]);
            done += CHUNK;
        }
    }
    if (rc == 0 && n)
        rc = flush_chunk(m, &o, lines, lens, n, done, out) ? 1 : 0;
    while (n)
        free(lines[--n]);
    free(line);
    free(out);
    squint_model_close(m);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}

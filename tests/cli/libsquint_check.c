/* Checks of the public API (include/squint.h) on a model given on the command
 * line: error codes and messages, option checks, the empty call, and one
 * model shared by 4 threads at once (each its own OpenMP team, 1 or 2
 * workers) giving the bytes of a single-threaded call.
 * usage: libsquint_check MODEL.sqm CHECKPOINT_DIR */
#include <pthread.h>
#include <squint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (cond) {                                                                      \
            printf("ok   - " __VA_ARGS__);                                               \
        } else {                                                                         \
            printf("FAIL - " __VA_ARGS__);                                               \
            fails++;                                                                     \
        }                                                                                \
        printf("\n");                                                                    \
    } while (0)

static const char *texts[] = {
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "Héllo wörld — naïve café, ＦＵＬＬＷＩＤＴＨ text and 漢字.",
    "Short.",
    "A much longer sentence that keeps going for a while so that its token count is clearly "
    "larger than the others, with numbers 12345 and punctuation!?",
};
enum { N = sizeof texts / sizeof texts[0], THREADS = 4, ROUNDS = 3 };

typedef struct job {
    const squint_model *m;
    int workers;
    float *out;
    squint_status st;
} job;

static void *run(void *arg)
{
    job *j = arg;
    squint_embed_options o;
    squint_embed_options_init(&o);
    o.threads = j->workers;
    squint_error err;
    for (int r = 0; r < ROUNDS && (j->st = squint_embed(j->m, texts, NULL, N, &o, j->out, &err)) == SQUINT_OK; r++)
        ;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: libsquint_check MODEL.sqm CHECKPOINT_DIR\n");
        return 2;
    }
    squint_error err;
    CHECK(squint_model_open("/nonexistent/model.sqm", &err) == NULL && err.code == SQUINT_ERR_MODEL &&
              strstr(err.message, "/nonexistent/model.sqm"),
          "a missing model: SQUINT_ERR_MODEL naming the path (%s)", err.message);
    CHECK(squint_model_open(NULL, &err) == NULL && err.code == SQUINT_ERR_ARGUMENT, "NULL path");
    CHECK(strcmp(squint_status_name(SQUINT_ERR_CPU), "cpu") == 0 && squint_version()[0],
          "status names, version %s", squint_version());

    squint_model *m = squint_model_open(argv[1], &err);
    if (!m) {
        printf("FAIL - open %s: %s\n", argv[1], err.message);
        return 1;
    }
    int dim = squint_model_dim(m);
    CHECK(dim > 0 && squint_model_max_seq(m) >= 3 && squint_model_is_quantized(m) == 1,
          "dim %d, max_seq %d, quantized", dim, squint_model_max_seq(m));
    float *ref = calloc((size_t)N * dim, sizeof *ref);
    CHECK(squint_embed(m, texts, NULL, N, NULL, ref, &err) == SQUINT_OK && err.message[0] == '\0',
          "embed %d texts with the defaults", N);
    CHECK(memcmp(ref, ref + dim, (size_t)dim * sizeof *ref) != 0, "different texts, different rows");
    CHECK(squint_embed(m, texts, NULL, 0, NULL, NULL, &err) == SQUINT_OK, "n = 0 is a no-op");

    const char *bad[] = {"ok", "bad \xff byte"};
    CHECK(squint_embed(m, bad, NULL, 2, NULL, ref, &err) == SQUINT_ERR_INPUT &&
              strstr(err.message, "text 1") && strstr(err.message, "UTF-8"),
          "invalid UTF-8 refused: %s", err.message);
    size_t lens[] = {2, 3};
    const char *nul[] = {"ok", "a\0b"};
    CHECK(squint_embed(m, nul, lens, 2, NULL, ref, &err) == SQUINT_OK, "explicit lengths");
    squint_embed_options o;
    squint_embed_options_init(&o);
    o.max_seq = 1 << 20;
    CHECK(squint_embed(m, texts, NULL, N, &o, ref, &err) == SQUINT_ERR_ARGUMENT &&
              strstr(err.message, "max_seq"),
          "max_seq out of range: %s", err.message);
    squint_embed_options_init(&o);
    o.normalize = 7;
    CHECK(squint_embed(m, texts, NULL, N, &o, ref, &err) == SQUINT_ERR_ARGUMENT, "normalize 7");
    squint_embed_options_init(&o);
    o.pooling = (squint_pooling)9;
    CHECK(squint_embed(m, texts, NULL, N, &o, ref, &err) == SQUINT_ERR_ARGUMENT, "pooling 9");
    CHECK(squint_embed(NULL, texts, NULL, N, NULL, ref, &err) == SQUINT_ERR_ARGUMENT, "NULL model");
    const char *with_null[] = {"a", NULL};
    CHECK(squint_embed(m, with_null, NULL, 2, NULL, ref, &err) == SQUINT_ERR_ARGUMENT, "NULL text");

    /* Matryoshka and vector-store codes: their arguments checked */
    CHECK(squint_embed_dims(m, texts, NULL, N, NULL, 0, ref, &err) == SQUINT_ERR_ARGUMENT,
          "dimensions 0 refused");
    CHECK(squint_embed_dims(m, texts, NULL, N, NULL, dim + 1, ref, &err) == SQUINT_ERR_ARGUMENT,
          "dimensions over the width refused");
    CHECK(squint_embed_codes(m, texts, NULL, N, NULL, 0, SQUINT_PRECISION_BINARY, NULL, NULL,
                             &err) == SQUINT_ERR_ARGUMENT,
          "codes into a NULL out refused: %s", err.message);
    CHECK(squint_embed_codes(m, texts, NULL, N, NULL, 0, SQUINT_PRECISION_INT8, NULL, ref, &err) ==
              SQUINT_ERR_ARGUMENT,
          "int8 codes without ranges refused");
    CHECK(squint_precision_row_bytes(SQUINT_PRECISION_BINARY, 12) == 2 &&
              squint_precision_row_bytes(SQUINT_PRECISION_FLOAT32, 12) == 48 &&
              squint_precision_row_bytes((squint_precision)9, 12) == -1,
          "row bytes");
    unsigned char bits[64 * 16];
    CHECK(dim <= 512 && squint_embed_codes(m, texts, NULL, 2, NULL, 0, SQUINT_PRECISION_UBINARY,
                                           NULL, bits, &err) == SQUINT_OK,
          "ubinary codes");

    /* Unnormalized vs normalized: options reach the runtime. */
    squint_embed_options_init(&o);
    o.normalize = 0;
    float *raw = calloc((size_t)N * dim, sizeof *raw);
    squint_embed(m, texts, NULL, N, &o, raw, &err);
    double norm = 0;
    for (int c = 0; c < dim; c++)
        norm += (double)raw[c] * raw[c];
    CHECK(norm > 1.0001 || norm < 0.9999, "normalize = 0 gives a raw vector (|v|^2 = %g)", norm);

    /* The reference, single-threaded. */
    squint_embed_options_init(&o);
    o.threads = 1;
    squint_embed(m, texts, NULL, N, &o, ref, &err);
    job jobs[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (job){.m = m, .workers = 1 + t % 2, .out = calloc((size_t)N * dim, sizeof(float))};
        pthread_create(&th[t], NULL, run, &jobs[t]);
    }
    int same = 1;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        same &= jobs[t].st == SQUINT_OK && memcmp(jobs[t].out, ref, (size_t)N * dim * sizeof *ref) == 0;
        free(jobs[t].out);
    }
    CHECK(same, "%d threads x %d rounds on one model (1 and 2 workers each): the bytes of 1 thread",
          THREADS, ROUNDS);
    squint_model_close(m);

    squint_model *f = squint_model_open(argv[2], &err);
    CHECK(f && squint_model_is_quantized(f) == 0 && squint_model_dim(f) == dim,
          "a checkpoint directory opens as fp32 (%s)", f ? "ok" : err.message);
    if (f)
        CHECK(squint_embed(f, texts, NULL, N, NULL, raw, &err) == SQUINT_OK, "fp32 embed");
    squint_model_close(f);
    squint_model_close(NULL);
    free(ref);
    free(raw);
    printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}

/* squint tokenize: the ids a model sees for each text, from a checkpoint
 * directory or from the tokenizer inside a .sqm. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_dir.h"
#include "dec_sqm.h"
#include "llama_model.h"
#include "cli.h"
#include "container.h"
#include "fileio.h"
#include "sqm_model.h"
#include "sqm_tokenizer.h"
#include "text_input.h"

static const char *const help =
    "usage: squint tokenize MODEL|FILE.sqm --input FILE [options]\n"
    "\n"
    "Print, one JSON line per input text, the token ids the model sees (with its special\n"
    "tokens, e.g. BERT's [CLS] ... [SEP]; truncated to --max-seq) and the token strings.\n"
    "MODEL is a checkpoint directory, archive or TensorFlow.js export; a .sqm uses the\n"
    "tokenizer stored in the file. A causal LM (llama2.c checkpoint, Hugging Face Llama\n"
    "folder or decoder .sqm) gives BOS + the text's BPE ids, as generate and perplexity see\n"
    "them.\n"
    "\n"
    "options:\n"
    "  --input FILE     texts, one per line, or JSONL (see --field); '-' = stdin\n"
    "  --field PATH     JSONL field holding the text\n"
    "  --max-seq N      truncate to N ids, special tokens included (default 512)\n"
    "  --ids-only       print only {\"ids\": [...]}\n"
    "\n"
    "example:\n"
    "  squint tokenize bge-small.sqm --input texts.txt\n";

/* One JSON string of n bytes (control characters and quotes escaped). */
static void put_json_bytes(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* A causal LM's view: BOS + the BPE ids (tokenizers/tokenizer_bpe.h), cut at max_seq. */
static int tokenize_decoder(const char *model, const sq_texts *texts, const char *input,
                            long max_seq, int ids_only)
{
    sq_err err = {0};
    sq_llama_model m;
    if (sq_llama_model_open(model, NULL, &m, &err) != 0)
        return cli_fail("tokenize", &err);
    int rc = SQ_EXIT_OK;
    for (int64_t i = 0; i < texts->n; i++) {
        int32_t *ids = NULL;
        int64_t n = sq_tokenizer_encode_all(m.tok, texts->text[i], texts->len[i], true, false, &ids);
        if (n < 0) {
            sq_err_set(&err, "%s: text %lld could not be tokenized", input, (long long)i);
            rc = cli_fail("tokenize", &err);
            break;
        }
        if (n > max_seq)
            n = max_seq;
        fputs("{\"ids\":[", stdout);
        for (int64_t k = 0; k < n; k++)
            printf(k ? ",%d" : "%d", ids[k]);
        fputs("]", stdout);
        if (!ids_only) {
            fputs(",\"tokens\":[", stdout);
            for (int64_t k = 0; k < n; k++) {
                const char *t = sq_tokenizer_token(m.tok, ids[k]);
                size_t len = t ? strlen(t) : 0;
                if (k)
                    putchar(',');
                put_json_bytes(t ? t : "", t ? len : 0);
            }
            putchar(']');
        }
        fputs("}\n", stdout);
        free(ids);
    }
    sq_llama_model_close(&m);
    return rc;
}

static sq_tokenizer *open_tokenizer(const char *arg, sq_err *err)
{
    if (!sq_dir_exists(arg) && sq_sqm_sniff(arg)) {
        sq_container c;
        if (sq_container_open(arg, SQ_KIND_SQM, &c, err) != 0)
            return NULL;
        sq_tokenizer *t = sq_sqm_tokenizer_load(&c, err);
        sq_container_close(&c);
        return t;
    }
    sq_checkpoint_dir cd;
    if (sq_checkpoint_open(arg, &cd, err) != 0)
        return NULL;
    sq_tokenizer *t = sq_tokenizer_load_dir(cd.dir, err);
    sq_checkpoint_close(&cd);
    return t;
}

int cmd_tokenize(int argc, char **argv)
{
    static const struct option opts[] = {{"input", required_argument, 0, 'i'},
                                         {"field", required_argument, 0, 'f'},
                                         {"max-seq", required_argument, 0, 'm'},
                                         {"ids-only", no_argument, 0, 'x'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *input = NULL, *field = NULL;
    long max_seq = 512;
    int ids_only = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': input = optarg; break;
        case 'f': field = optarg; break;
        case 'm':
            if (!cli_parse_int(optarg, 2, 1 << 20, &max_seq))
                return cli_usage_error("tokenize", "--max-seq must be an integer >= 2");
            break;
        case 'x': ids_only = 1; break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("tokenize", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("tokenize", "expected exactly one MODEL argument");
    if (!input)
        return cli_usage_error("tokenize", "--input is required");
    sq_err err = {0};
    sq_texts texts;
    if (sq_texts_read(input, field, &texts, &err) != 0)
        return cli_fail("tokenize", &err);
    if (sq_llama_is_checkpoint(argv[optind]) || sq_dec_sqm_is_decoder(argv[optind])) {
        int rc = tokenize_decoder(argv[optind], &texts, input, max_seq, ids_only);
        sq_texts_free(&texts);
        return rc;
    }
    sq_tokenizer *t = open_tokenizer(argv[optind], &err);
    if (!t) {
        sq_texts_free(&texts);
        return cli_fail("tokenize", &err);
    }
    int32_t *ids = malloc((size_t)max_seq * sizeof *ids);
    int rc = SQ_EXIT_OK;
    if (!ids)
        rc = cli_fail("tokenize", (sq_err_set(&err, "out of memory"), &err));
    for (int64_t i = 0; ids && i < texts.n; i++) {
        int n = sq_tokenizer_encode(t, texts.text[i], texts.len[i], (int)max_seq, ids);
        if (n < 0) {
            sq_err_set(&err, "%s: text %lld could not be tokenized", input, (long long)i);
            rc = cli_fail("tokenize", &err);
            break;
        }
        fputs("{\"ids\":[", stdout);
        for (int k = 0; k < n; k++)
            printf(k ? ",%d" : "%d", ids[k]);
        fputs("]", stdout);
        if (!ids_only) {
            fputs(",\"tokens\":[", stdout);
            for (int k = 0; k < n; k++) {
                const char *s = sq_tokenizer_token(t, ids[k]);
                if (k)
                    putchar(',');
                put_json_bytes(s ? s : "", s ? strlen(s) : 0);
            }
            putchar(']');
        }
        fputs("}\n", stdout);
    }
    /* A write error on stdout is reported by main (finish_stdout). */
    free(ids);
    sq_tokenizer_free(t);
    sq_texts_free(&texts);
    return rc;
}

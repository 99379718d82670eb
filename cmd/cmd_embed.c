/* squint embed: sentence embeddings with the fp32 reference encoder. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "embed_output.h"
#include "embedder.h"
#include "text_input.h"
#include "threads.h"

static const char *const help =
    "usage: squint embed MODEL --input FILE [options]\n"
    "\n"
    "Compute sentence embeddings with squint's encoder.\n"
    "MODEL is a Hugging Face BERT checkpoint directory (config.json, model.safetensors,\n"
    "tokenizer files, optional sentence-transformers modules.json) or a .tar/.tar.gz/.zip of\n"
    "one, run in fp32; or a packed .sqm from `squint quantize`, run by the int8/int4 runtime\n"
    "with the tokenizer and pooling stored in the file.\n"
    "\n"
    "options:\n"
    "  --input FILE          texts: one per line, or JSONL (see --field); '-' = stdin\n"
    "  --field PATH          JSONL field holding the text (dotted path; default 'text' for .jsonl)\n"
    "  --output FILE         .jsonl, .npy or .f32 (default: JSONL on stdout)\n"
    "  --format F            jsonl, npy or f32, overriding the --output extension\n"
    "  --batch N             sequences per forward pass (default 32)\n"
    "  --max-seq N           truncate to N tokens, special tokens included (default: model limit)\n"
    "  --threads N           worker threads (default: $OMP_NUM_THREADS, else the CPUs this process may run on)\n"
    "  --pooling cls|mean    override the model's pooling\n"
    "  --normalize           L2-normalize embeddings (default: as the model says)\n"
    "  --no-normalize        do not normalize\n"
    "  --tokens-output FILE  also write the token ids fed to the encoder (JSONL)\n"
    "  --hidden-output FILE  also write the last hidden state rows (.npy [tokens, hidden])\n"
    "  --quiet               no progress line\n"
    "\n"
    "Inputs are sorted by length into batches; outputs keep the input order.\n"
    "example:\n"
    "  squint embed bge-small/ --input texts.txt --output emb.npy\n";

int cmd_embed(int argc, char **argv)
{
    enum { O_FIELD = 256, O_MAXSEQ, O_POOL, O_NORM, O_NONORM, O_TOK, O_HID, O_QUIET, O_FORMAT };
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},   {"output", required_argument, 0, 'o'},
        {"field", required_argument, 0, O_FIELD}, {"batch", required_argument, 0, 'b'},
        {"max-seq", required_argument, 0, O_MAXSEQ}, {"threads", required_argument, 0, 't'},
        {"pooling", required_argument, 0, O_POOL}, {"normalize", no_argument, 0, O_NORM},
        {"no-normalize", no_argument, 0, O_NONORM}, {"tokens-output", required_argument, 0, O_TOK},
        {"hidden-output", required_argument, 0, O_HID}, {"quiet", no_argument, 0, O_QUIET}, {"format", required_argument, 0, O_FORMAT},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *input = NULL, *output = "-", *format = NULL, *field = NULL, *tok_out = NULL, *hid_out = NULL;
    long batch = 32, max_seq = 0, threads = 0;
    int norm = -1, quiet = 0;
    const char *pool_s = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "i:o:b:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'i': input = optarg; break;
        case 'o': output = optarg; break;
        case O_FIELD: field = optarg; break;
        case 'b':
            if (!cli_parse_int(optarg, 1, 4096, &batch))
                return cli_usage_error("embed", "--batch must be an integer in [1, 4096]");
            break;
        case O_MAXSEQ:
            if (!cli_parse_int(optarg, 3, 65536, &max_seq))
                return cli_usage_error("embed", "--max-seq must be an integer in [3, 65536]");
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, 1024, &threads))
                return cli_usage_error("embed", "--threads must be an integer in [1, 1024]");
            break;
        case O_POOL: pool_s = optarg; break;
        case O_NORM: norm = 1; break;
        case O_NONORM: norm = 0; break;
        case O_TOK: tok_out = optarg; break;
        case O_HID: hid_out = optarg; break;
        case O_QUIET: quiet = 1; break;
        case O_FORMAT: format = optarg; break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("embed", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("embed", "expected exactly one MODEL argument");
    if (!input)
        return cli_usage_error("embed", "--input is required");
    sq_pooling pooling = SQ_POOL_CLS;
    if (pool_s && sq_pooling_parse(pool_s, &pooling) != 0)
        return cli_usage_error("embed", "--pooling must be cls or mean");

    sq_threads_init((int)threads);
    sq_err err = {0};
    sq_texts texts;
    if (sq_texts_read(input, field, &texts, &err) != 0)
        return cli_fail("embed", &err);
    sq_embed_model m;
    if (sq_embed_model_open(argv[optind], &m, &err) != 0) {
        sq_texts_free(&texts);
        return cli_fail("embed", &err);
    }
    if (max_seq > m.enc.cfg.max_pos) {
        fprintf(stderr, "squint embed: error: --max-seq %ld exceeds the model's %d positions\n",
                max_seq, m.enc.cfg.max_pos);
        sq_embed_model_close(&m);
        sq_texts_free(&texts);
        return SQ_EXIT_BADINPUT;
    }
    cli_progress prog;
    cli_progress_init(&prog, "embed");
    if (quiet)
        prog.enabled = false;
    sq_embed_opts o = {
        .batch = (int)batch,
        .max_seq = max_seq ? (int)max_seq : m.max_seq,
        .pooling = pool_s ? pooling : m.pool.pooling,
        .normalize = norm >= 0 ? norm == 1 : m.pool.normalize,
        .keep_tokens = tok_out != NULL,
        .keep_hidden = hid_out != NULL,
        .progress = cli_progress_update,
        .progress_ctx = &prog,
    };
    sq_embed_result res;
    int rc = SQ_EXIT_OK;
    if (sq_embed_texts(&m, (const char *const *)texts.text, texts.len, texts.n, &o, &res, &err) != 0) {
        cli_progress_finish(&prog);
        rc = cli_fail("embed", &err);
    } else {
        cli_progress_finish(&prog);
        if ((tok_out && write_tokens_jsonl(tok_out, &res, &err) != 0) ||
            (hid_out && write_hidden_npy(hid_out, &res, &err) != 0) ||
            write_embeddings(output, format, &res, &err) != 0)
            rc = cli_fail("embed", &err);
        sq_embed_result_free(&res);
    }
    sq_embed_model_close(&m);
    sq_texts_free(&texts);
    return rc;
}

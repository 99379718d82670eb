/* squint embed: sentence embeddings with the fp32 reference encoder. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "embed_output.h"
#include "emb_precision.h"
#include "embedder.h"
#include "text_stream.h"
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
    "  --id-field PATH       JSONL field (string or integer) copied to each output line as \"id\"\n"
    "  --prefix TEXT         put TEXT before every input (bge's query instruction, e5's \"query: \")\n"
    "  --prompt NAME         the prefix named NAME in the checkpoint's\n"
    "                        config_sentence_transformers.json \"prompts\" (e.g. query)\n"
    "  --output FILE         .jsonl, .npy or .f32 (default: JSONL on stdout; '-' takes jsonl or f32)\n"
    "  --format F            jsonl, npy or f32, overriding the --output extension\n"
    "  --batch N             sequences per forward pass (default 32)\n"
    "  --max-seq N           truncate to N tokens, special tokens included (default: model limit)\n"
    "  --threads N           worker threads (default: $OMP_NUM_THREADS, else the CPUs this process\n"
    "                        may run on, at most its cgroup CPU quota)\n"
    "  --pooling cls|mean|last  override the model's pooling\n"
    "  --normalize           L2-normalize embeddings (default: as the model says)\n"
    "  --no-normalize        do not normalize\n"
    "  --dimensions N        Matryoshka: keep the first N values of each embedding, then\n"
    "                        normalize as above (1 .. the model's width; default: all)\n"
    "  --precision P         float32 (default), int8, uint8, binary or ubinary: embeddings for\n"
    "                        vector stores, as sentence-transformers' quantize_embeddings makes\n"
    "                        them (.npy of int8 / uint8, or JSONL of integers)\n"
    "  --ranges F.npy        int8 / uint8: the [2, dim] float32 per-dimension min and max rows\n"
    "  --ranges-from FILE    int8 / uint8: take them from these texts' embeddings (read as\n"
    "                        --input, embedded with the same options)\n"
    "  --ranges-out F.npy    write the ranges used (to reuse with --ranges)\n"
    "  --tokens-output FILE  also write the token ids fed to the encoder (JSONL)\n"
    "  --hidden-output FILE  also write the last hidden state rows (.npy [tokens, hidden])\n"
    "  --chunk N             texts read ahead and embedded together (default 1024): memory\n"
    "                        follows the chunk, not the input\n"
    "  --quiet               no progress line\n"
    "\n"
    "Input is read as a stream: each chunk is sorted by length into batches and written, in\n"
    "input order, as soon as it is done (a pipe fed line by line gets each answer at once).\n"
    "Empty input gives empty output and exit 0. int8/int4 results do not depend on the\n"
    "chunking; fp32 ones may differ in the last bit with the texts that share a batch.\n"
    "example:\n"
    "  squint embed bge-small/ --input texts.txt --output emb.npy\n";

/* --ranges-from TEXTS: the min and max of every dimension over the texts'
 * embeddings, made as the input's are (o, the prompt). */
static int ranges_of(sq_embed_model *m, const sq_embed_opts *o, const char *path,
                     const char *field, const char *prompt, int dim, float *ranges, sq_err *err)
{
    sq_text_stream in;
    if (sq_text_stream_open(path, field, NULL, &in, err) != 0)
        return -1;
    sq_text_chunk chunk = {0};
    sq_embed_result res = {0};
    int64_t total = 0, n;
    int rc = -1;
    sq_emb_ranges_init(ranges, dim);
    while ((n = sq_text_stream_next(&in, 1024, &chunk, err)) > 0) {
        if (prompt && sq_text_chunk_prefix(&chunk, prompt) != 0) {
            sq_err_set(err, "out of memory");
            goto out;
        }
        if (sq_embed_texts(m, (const char *const *)chunk.text, chunk.len, n, o, &res, err) != 0)
            goto out;
        sq_emb_ranges_add(ranges, res.emb, n, dim);
        sq_embed_result_free(&res);
        total += n;
    }
    if (n < 0)
        goto out;
    if (total == 0) {
        sq_err_set(err, "%s: no texts to take the ranges from", path);
        goto out;
    }
    rc = 0;
out:
    sq_embed_result_free(&res);
    sq_text_chunk_free(&chunk);
    sq_text_stream_close(&in);
    return rc;
}

/* --ranges-out F.npy: the ranges as [2, dim] float32, through the embeddings'
 * writer (two rows of dim floats, atomically). */
static int write_ranges(const char *path, const float *ranges, int dim, sq_err *err)
{
    embed_writer w;
    if (embed_writer_open(&w, path, "npy", dim, err) != 0)
        return -1;
    if (embed_writer_rows(&w, ranges, 2, 0, NULL, err) != 0) {
        embed_writer_abort(&w);
        return -1;
    }
    return embed_writer_finish(&w, err);
}

int cmd_embed(int argc, char **argv)
{
    enum { O_FIELD = 256, O_MAXSEQ, O_POOL, O_NORM, O_NONORM, O_TOK, O_HID, O_QUIET, O_FORMAT, O_ID, O_CHUNK, O_PROMPT, O_PREFIX, O_DIMS, O_PREC, O_RANGES, O_RANGES_FROM, O_RANGES_OUT };
    static const struct option opts[] = {
        {"input", required_argument, 0, 'i'},   {"output", required_argument, 0, 'o'},
        {"field", required_argument, 0, O_FIELD}, {"batch", required_argument, 0, 'b'},
        {"max-seq", required_argument, 0, O_MAXSEQ}, {"threads", required_argument, 0, 't'},
        {"pooling", required_argument, 0, O_POOL}, {"normalize", no_argument, 0, O_NORM},
        {"no-normalize", no_argument, 0, O_NONORM}, {"tokens-output", required_argument, 0, O_TOK},
        {"hidden-output", required_argument, 0, O_HID}, {"quiet", no_argument, 0, O_QUIET}, {"format", required_argument, 0, O_FORMAT},
        {"id-field", required_argument, 0, O_ID}, {"chunk", required_argument, 0, O_CHUNK},
        {"prompt", required_argument, 0, O_PROMPT}, {"prefix", required_argument, 0, O_PREFIX},
        {"dimensions", required_argument, 0, O_DIMS}, {"precision", required_argument, 0, O_PREC},
        {"ranges", required_argument, 0, O_RANGES}, {"ranges-from", required_argument, 0, O_RANGES_FROM},
        {"ranges-out", required_argument, 0, O_RANGES_OUT},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *input = NULL, *output = "-", *format = NULL, *field = NULL, *tok_out = NULL, *hid_out = NULL;
    const char *id_field = NULL, *prompt = NULL, *prefix = NULL;
    const char *prec_s = NULL, *ranges_path = NULL, *ranges_from = NULL, *ranges_out = NULL;
    long batch = 32, max_seq = 0, threads = 0, chunk_size = 1024, dims = 0;
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
            if (!cli_parse_int(optarg, 1, SQ_BATCH_MAX, &batch))
                return cli_usage_error("embed", "--batch must be an integer in [1, 4096]");
            break;
        case O_MAXSEQ:
            if (!cli_parse_int(optarg, 3, 65536, &max_seq))
                return cli_usage_error("embed", "--max-seq must be an integer in [3, 65536]");
            break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads))
                return cli_usage_error("embed", "--threads must be an integer in [1, 1024]");
            break;
        case O_POOL: pool_s = optarg; break;
        case O_NORM: norm = 1; break;
        case O_NONORM: norm = 0; break;
        case O_TOK: tok_out = optarg; break;
        case O_HID: hid_out = optarg; break;
        case O_QUIET: quiet = 1; break;
        case O_FORMAT: format = optarg; break;
        case O_ID: id_field = optarg; break;
        case O_PROMPT: prompt = optarg; break;
        case O_PREFIX: prefix = optarg; break;
        case O_PREC: prec_s = optarg; break;
        case O_RANGES: ranges_path = optarg; break;
        case O_RANGES_FROM: ranges_from = optarg; break;
        case O_RANGES_OUT: ranges_out = optarg; break;
        case O_DIMS:
            if (!cli_parse_int(optarg, 1, 65536, &dims))
                return cli_usage_error("embed", "--dimensions must be a positive integer");
            break;
        case O_CHUNK:
            if (!cli_parse_int(optarg, 1, 1 << 20, &chunk_size))
                return cli_usage_error("embed", "--chunk must be an integer in [1, 1048576]");
            break;
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
    sq_emb_precision prec = SQ_PREC_FLOAT32;
    if (prec_s && sq_emb_precision_parse(prec_s, &prec) != 0)
        return cli_usage_error("embed", "--precision must be one of %s", sq_emb_precision_names());
    if (sq_emb_precision_needs_ranges(prec) && !ranges_path == !ranges_from)
        return cli_usage_error("embed", "--precision %s needs calibration ranges: give --ranges "
                               "F.npy or --ranges-from TEXTS (one of them)", prec_s);
    if (ranges_from && strcmp(ranges_from, "-") == 0 && strcmp(input, "-") == 0)
        return cli_usage_error("embed", "--ranges-from - and --input - would both read standard "
                               "input: give the calibration texts as a file");
    if (!sq_emb_precision_needs_ranges(prec) && (ranges_path || ranges_from || ranges_out))
        return cli_usage_error("embed", "--ranges, --ranges-from and --ranges-out apply to "
                               "--precision int8 or uint8");

    sq_threads_init((int)threads);
    sq_err err = {0};
    sq_text_stream in;
    if (sq_text_stream_open(input, field, id_field, &in, &err) != 0)
        return cli_fail("embed", &err);
    sq_embed_model m;
    if (sq_embed_model_open(argv[optind], &m, &err) != 0) {
        sq_text_stream_close(&in);
        return cli_fail("embed", &err);
    }
    if (sq_embed_model_require_embeddings(&m, argv[optind], &err) != 0) {
        sq_embed_model_close(&m);
        sq_text_stream_close(&in);
        return cli_fail("embed", &err);
    }
    int rc = SQ_EXIT_OK;
    if (dims > m.enc.cfg.hidden) {
        fprintf(stderr, "squint embed: error: --dimensions %ld exceeds the model's embedding "
                        "width %d\n", dims, m.enc.cfg.hidden);
        sq_embed_model_close(&m);
        sq_text_stream_close(&in);
        return SQ_EXIT_BADINPUT;
    }
    if (max_seq > sq_bert_max_tokens(&m.enc.cfg)) {
        fprintf(stderr, "squint embed: error: --max-seq %ld exceeds the model's %d positions\n",
                max_seq, sq_bert_max_tokens(&m.enc.cfg));
        sq_embed_model_close(&m);
        sq_text_stream_close(&in);
        return SQ_EXIT_BADINPUT;
    }
    char *prompt_text = NULL;
    if (prompt || prefix) {
        if (prompt && prefix) {
            rc = cli_usage_error("embed", "give --prompt or --prefix, not both");
            goto early;
        }
        if (prompt && (sq_embed_model_is_packed(&m) ? sq_err_set(&err, "%s: a .sqm carries no sentence-transformers "
                                                   "prompts: give the text with --prefix",
                                             argv[optind])
                                : sq_st_prompt_load(m.ckpt.dir, prompt, &prompt_text, &err)) != 0) {
            rc = cli_fail("embed", &err);
            goto early;
        }
        if (!prompt_text && !(prompt_text = strdup(prefix))) {
            rc = cli_fail("embed", &err);
            goto early;
        }
    }
    const int H = m.enc.cfg.hidden;
    cli_progress prog;
    cli_progress_init(&prog, "embed");
    if (quiet)
        prog.enabled = false;
    sq_embed_opts o = {
        .batch = (int)batch,
        .max_seq = max_seq ? (int)max_seq : m.max_seq,
        .pooling = pool_s ? pooling : m.pool.pooling,
        .normalize = norm >= 0 ? norm == 1 : m.pool.normalize,
        .dimensions = (int)dims,
        .keep_tokens = tok_out != NULL,
        .keep_hidden = hid_out != NULL,
    };
    /* Read a chunk, embed it, write it, in input order: memory follows the
     * chunk, and each chunk reaches the output as soon as it is done. */
    embed_writer out = {0}, tok = {0}, hid = {0};
    sq_text_chunk chunk = {0};
    sq_embed_result res = {0};
    const int D = dims ? (int)dims : H; /* the embedding's width */
    float *ranges = NULL;
    uint8_t *codes = NULL;
    if (sq_emb_precision_needs_ranges(prec)) {
        if (!(ranges = malloc((size_t)2 * D * sizeof *ranges))) {
            sq_err_set(&err, "out of memory");
            goto fail;
        }
        if ((ranges_path ? sq_emb_ranges_load(ranges_path, D, ranges, &err)
                         : ranges_of(&m, &o, ranges_from, field, prompt_text, D, ranges, &err)) != 0 ||
            (ranges_out && write_ranges(ranges_out, ranges, D, &err) != 0))
            goto fail;
    }
    if ((prec != SQ_PREC_FLOAT32
             ? embed_writer_open_codes(&out, output, format, prec, sq_emb_precision_width(prec, D),
                                       &err)
             : embed_writer_open(&out, output, format, D, &err)) != 0 ||
        (tok_out && embed_writer_open(&tok, tok_out, "jsonl", 0, &err) != 0) ||
        (hid_out && embed_writer_open(&hid, hid_out, "npy", H, &err) != 0))
        goto fail;
    for (;;) {
        int64_t n = sq_text_stream_next(&in, chunk_size, &chunk, &err);
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        int64_t first = out.rows;
        if (prompt_text && sq_text_chunk_prefix(&chunk, prompt_text) != 0) {
            sq_err_set(&err, "out of memory");
            goto fail;
        }
        if (sq_embed_texts(&m, (const char *const *)chunk.text, chunk.len, n, &o, &res, &err) != 0)
            goto fail;
        int wrc;
        if (prec != SQ_PREC_FLOAT32) {
            uint8_t *cb = realloc(codes, (size_t)n * sq_emb_precision_width(prec, D));
            if (!cb) {
                sq_err_set(&err, "out of memory");
                goto fail;
            }
            codes = cb;
            sq_emb_quantize(prec, res.emb, n, D, ranges, codes);
            wrc = embed_writer_codes(&out, codes, n, first, chunk.id_json, &err);
        } else {
            wrc = embed_writer_rows(&out, res.emb, n, first, chunk.id_json, &err);
        }
        if (wrc != 0 ||
            (tok_out && embed_writer_tokens(&tok, res.offsets, res.ids, n, first, chunk.id_json,
                                            &err) != 0) ||
            (hid_out && embed_writer_rows(&hid, res.hidden, res.offsets[n], 0, NULL, &err) != 0))
            goto fail;
        sq_embed_result_free(&res);
        cli_progress_update(&prog, out.rows, -1);
    }
    cli_progress_finish(&prog);
    /* Side files first: the embeddings are the result, committed last. */
    if ((tok_out && embed_writer_finish(&tok, &err) != 0) ||
        (hid_out && embed_writer_finish(&hid, &err) != 0) || embed_writer_finish(&out, &err) != 0)
        goto fail;
    goto done;
fail:
    cli_progress_finish(&prog);
    rc = cli_fail("embed", &err);
    embed_writer_abort(&out);
    embed_writer_abort(&tok);
    embed_writer_abort(&hid);
done:
    free(ranges);
    free(codes);
    sq_embed_result_free(&res);
    sq_text_chunk_free(&chunk);
early:
    free(prompt_text);
    sq_embed_model_close(&m);
    sq_text_stream_close(&in);
    return rc;
}

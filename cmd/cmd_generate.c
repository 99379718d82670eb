/* squint generate: continue a prompt with a causal LM, streamed. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "generate.h"
#include "threads.h"

static const char *const help =
    "usage: squint generate MODEL [--prompt TEXT] [options]\n"
    "\n"
    "Continue a prompt with a causal language model (Llama family), writing each token to\n"
    "standard output as soon as it is produced. MODEL is a llama2.c checkpoint (.bin, the\n"
    "legacy float32 export) or a Hugging Face LlamaForCausalLM folder, run in fp32, or a\n"
    "decoder .sqm from `squint quantize` (int8 / int4-g128).\n"
    "\n"
    "options:\n"
    "  --prompt TEXT       the text to continue (default: empty, generation starts from BOS)\n"
    "  --max-tokens N      tokens to generate at most (default 256)\n"
    "  --temperature T     0 = greedy (the default); > 0 samples from softmax(logits / T)\n"
    "  --top-p P           nucleus sampling mass in (0, 1] (default 0.9; 1 = off)\n"
    "  --seed S            the sampling seed, an unsigned 64-bit integer (default 0): the same\n"
    "                      seed gives the same text\n"
    "  --tokenizer FILE    llama2.c tokenizer (default: tokenizer.bin, then tok512.bin, next\n"
    "                      to MODEL, the first with the model's vocabulary size)\n"
    "  --ids               write the generated token ids (one line) instead of the text\n"
    "  --draft DRAFT       assisted generation: DRAFT (a smaller or quantized model with the\n"
    "                      same tokenizer, any MODEL kind) proposes tokens that MODEL checks\n"
    "                      in one forward; greedy output is the same as without it\n"
    "  --draft-tokens K    tokens the draft proposes per check, 1..15 (default 4)\n"
    "  --draft-tokenizer FILE\n"
    "                      DRAFT's llama2.c tokenizer, as --tokenizer is MODEL's (default:\n"
    "                      the one next to DRAFT); it must be the same tokenizer\n"
    "  --threads N         worker threads (default: $OMP_NUM_THREADS, else the CPUs available)\n"
    "  --quiet             no statistics on standard error\n"
    "\n"
    "The prompt is encoded as llama2.c does (BOS, a dummy-prefix space, byte fallback) and run\n"
    "in one batched prefill; each further token is one forward with the KV cache. Generation\n"
    "stops at EOS or BOS (llama2.c's models end a text with BOS), after N tokens, or when the\n"
    "context is full. Statistics on standard error: prompt and generated tokens, the time to\n"
    "the first token (TTFT: the prefill and the first sample) and the milliseconds per\n"
    "further output token; with --draft also the checks, the proposals kept (acceptance\n"
    "rate) and the tokens per check of MODEL. With --draft and --temperature > 0 the text\n"
    "follows MODEL's distribution (speculative sampling) but the draws differ from a run\n"
    "without the draft.\n\n"
    "examples:\n"
    "  squint generate stories260K.bin --prompt 'Once upon a time' --max-tokens 64\n"
    "  squint generate stories260K.bin --draft s4.sqm --draft-tokens 4 --max-tokens 256\n";

typedef struct out_ctx {
    bool ids;
    int n;
    int write_errno; /* the failed write's errno (0: none) */
} out_ctx;

static int emit_token(void *vctx, int32_t id, const char *piece, size_t len)
{
    out_ctx *o = vctx;
    if (o->ids)
        printf(o->n ? " %d" : "%d", (int)id);
    else
        fwrite(piece, 1, len, stdout);
    o->n++;
    /* A failed write (a closed pipe, a full disk) ends generation. */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        o->write_errno = errno ? errno : EIO;
        return 1;
    }
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    enum { O_MAX = 256, O_TEMP, O_TOPP, O_SEED, O_TOK, O_IDS, O_QUIET, O_DRAFT, O_DRAFT_K, O_DRAFT_TOK };
    static const struct option opts[] = {
        {"prompt", required_argument, 0, 'p'},       {"max-tokens", required_argument, 0, O_MAX},
        {"temperature", required_argument, 0, O_TEMP}, {"top-p", required_argument, 0, O_TOPP},
        {"seed", required_argument, 0, O_SEED},      {"tokenizer", required_argument, 0, O_TOK},
        {"ids", no_argument, 0, O_IDS},              {"threads", required_argument, 0, 't'},
        {"quiet", no_argument, 0, O_QUIET},          {"help", no_argument, 0, 'h'},
        {"draft", required_argument, 0, O_DRAFT},    {"draft-tokens", required_argument, 0, O_DRAFT_K},
        {"draft-tokenizer", required_argument, 0, O_DRAFT_TOK},
        {0, 0, 0, 0}};
    const char *prompt = "", *tokenizer = NULL, *draft_path = NULL, *draft_tok = NULL;
    long max_tokens = 256, threads = 0, draft_tokens = 4;
    double temperature = 0.0, top_p = 0.9;
    unsigned long long seed = 0;
    bool ids = false, quiet = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "p:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': prompt = optarg; break;
        case O_MAX:
            if (!cli_parse_int(optarg, 0, 1 << 20, &max_tokens))
                return cli_usage_error("generate", "--max-tokens must be an integer in [0, 1048576]");
            break;
        case O_TEMP:
            if (!cli_parse_double(optarg, 0.0, 100.0, &temperature))
                return cli_usage_error("generate", "--temperature must be a number in [0, 100]");
            break;
        case O_TOPP:
            if (!cli_parse_double(optarg, 0.0, 1.0, &top_p) || top_p <= 0.0)
                return cli_usage_error("generate", "--top-p must be a number in (0, 1]");
            break;
        case O_SEED: {
            char *end;
            errno = 0;
            seed = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return cli_usage_error("generate", "--seed must be an unsigned 64-bit integer");
            break;
        }
        case O_TOK: tokenizer = optarg; break;
        case O_IDS: ids = true; break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads))
                return cli_usage_error("generate", "--threads must be an integer in [1, 1024]");
            break;
        case O_QUIET: quiet = true; break;
        case O_DRAFT: draft_path = optarg; break;
        case O_DRAFT_TOK: draft_tok = optarg; break;
        case O_DRAFT_K:
            if (!cli_parse_int(optarg, 1, SQ_GEN_MAX_DRAFT, &draft_tokens))
                return cli_usage_error("generate", "--draft-tokens must be an integer in [1, 15]");
            break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("generate", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("generate", "expected exactly one MODEL argument");
    const int n_threads = sq_threads_init((int)threads);
    sq_err err = {0};
    sq_llama_model m;
    if (sq_llama_model_open(argv[optind], tokenizer, &m, &err) != 0)
        return cli_fail("generate", &err);
    sq_llama_model dm;
    if (draft_tok && !draft_path) {
        sq_llama_model_close(&m);
        return cli_usage_error("generate", "--draft-tokenizer applies to a --draft model");
    }
    if (draft_path) {
        if (sq_llama_draft_open(draft_path, draft_tok, &dm, &err) != 0) {
            sq_llama_model_close(&m);
            return cli_fail("generate", &err);
        }
        if (sq_gen_check_draft(&m, &dm, &err) != 0) {
            sq_err_prefix(&err, "%s cannot draft for %s", draft_path, argv[optind]);
            sq_llama_model_close(&dm);
            sq_llama_model_close(&m);
            return cli_fail("generate", &err);
        }
    }
    int32_t *pids = NULL;
    int64_t np = sq_tokenizer_encode_all(m.tok, prompt, strlen(prompt), true, false, &pids);
    if (np < 0) {
        sq_llama_model_close(&m);
        sq_err_set(&err, "out of memory encoding the prompt");
        return cli_fail("generate", &err);
    }
    if (np >= m.dec.cfg.max_pos) {
        sq_err_set(&err, "the prompt is %lld tokens; %s has a context of %d", (long long)np,
                   argv[optind], m.dec.cfg.max_pos);
        free(pids);
        if (draft_path)
            sq_llama_model_close(&dm);
        sq_llama_model_close(&m);
        return cli_fail("generate", &err);
    }
    sq_gen_opts o = {.max_tokens = (int)max_tokens, .temperature = (float)temperature,
                     .top_p = (float)top_p, .seed = seed, .draft = draft_path ? &dm : NULL,
                     .draft_tokens = (int)draft_tokens};
    out_ctx oc = {.ids = ids};
    sq_gen_stats stats;
    int rc = sq_generate(&m, pids, (int)np, &o, emit_token, &oc, &stats, &err);
    free(pids);
    if (draft_path)
        sq_llama_model_close(&dm);
    sq_llama_model_close(&m);
    if (rc != 0)
        return cli_fail("generate", &err);
    if (stats.stop == SQ_GEN_STOP_CALLER) { /* the text could not be written */
        fprintf(stderr, "squint generate: error: writing standard output: %s\n",
                strerror(oc.write_errno));
        return SQ_EXIT_BADINPUT;
    }
    fputc('\n', stdout);
    fflush(stdout);
    if (!quiet) {
        const double tpot = stats.generated > 1 ? stats.decode_s * 1e3 / (stats.generated - 1) : 0.0;
        fprintf(stderr,
                "squint generate: %d prompt tokens, %d generated (stop: %s); TTFT %.3f ms, "
                "%.3f ms per output token (%.0f tokens/s), %d thread%s\n",
                stats.prompt_tokens, stats.generated, sq_gen_stop_name(stats.stop),
                stats.ttft_s * 1e3, tpot, tpot > 0 ? 1e3 / tpot : 0.0, n_threads,
                n_threads == 1 ? "" : "s");
        if (draft_path)
            fprintf(stderr,
                    "squint generate: assisted by %s: %d checks of up to %ld drafted tokens, "
                    "%lld of %lld kept (acceptance %.1f%%), %.2f tokens per check\n",
                    draft_path, stats.verify_passes, draft_tokens, (long long)stats.accepted,
                    (long long)stats.drafted,
                    stats.drafted ? 100.0 * stats.accepted / stats.drafted : 0.0,
                    stats.verify_passes ? (double)(stats.generated - 1) / stats.verify_passes
                                        : 0.0);
    }
    return SQ_EXIT_OK;
}

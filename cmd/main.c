/* squint: git-style dispatcher. `squint <command> [args]`; each command
 * lives in its own cmd_*.c file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "fileio.h"
#include "squint_version.h"

static const sq_command commands[] = {
    {"embed", "sentence embeddings from a checkpoint (fp32) or a .sqm (int8/int4)", cmd_embed},
    {"calibrate", "activation statistics on a corpus (.sqc)", cmd_calibrate},
    {"quantize", "SmoothQuant + int8/int4 weights -> packed .sqm", cmd_quantize},
    {"inspect", "what is inside a .sqc or .sqm file", cmd_inspect},
    {"verify", "check a squint file's checksums and model consistency", cmd_verify},
    {"diff", "what changed between two squint files (exit 1 if they differ)", cmd_diff},
    {"embed-run", "run a .sqm and measure it against fp32, with gates", cmd_embed_run},
    {"train-head", "train a classification head (logistic regression) on embeddings", cmd_train_head},
    {"classify", "label texts with a model and a head from train-head (JSONL)", cmd_classify},
    {"tokenize", "the token ids a checkpoint or .sqm produces for each text", cmd_tokenize},
    {"bench", "throughput and latency of the encoder", cmd_bench},
    {"tune", "search instances x threads x batch for throughput or latency (tune file)", cmd_tune},
    {"rerank", "order documents for a query (bi-encoder cosine or cross-encoder score)", cmd_rerank},
    {"generate", "continue a prompt with a causal LM (llama2.c, HF Llama folder, .sqm), streamed",
     cmd_generate},
    {"perplexity", "token-level perplexity of a causal LM over a text file", cmd_perplexity},
    {"serve", "HTTP server: /v1/embeddings, /embed, /rerank, /v1/completions, /metrics", cmd_serve},
};
static const int n_commands = sizeof commands / sizeof commands[0];

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: squint <command> [options]\n"
            "\n"
            "squint turns fp32 transformer checkpoints into fast int8/int4 CPU models.\n"
            "\n"
            "commands:\n");
    for (int i = 0; i < n_commands; i++)
        fprintf(fp, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp, "  %-10s %s\n", "help", "this text, or 'squint help <command>'");
    fprintf(fp, "  %-10s %s\n", "version", "print the version");
    fprintf(fp, "\n'squint <command> --help' describes a command.\n");
}

/* Output written to stdout is the result of inspect, verify, diff, tokenize
 * and the JSONL of embed: if it could not all be written (a full disk,
 * /dev/full), the command failed, whatever it returned. */
static int finish_stdout(const char *name, int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        if (rc == SQ_EXIT_BADINPUT)
            return rc; /* the command has said what went wrong */
        fprintf(stderr, "squint %s: error: writing standard output: %s\n", name,
                errno ? strerror(errno) : "write error");
        return SQ_EXIT_BADINPUT;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return SQ_EXIT_BADINPUT;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        if (argc >= 3) {
            for (int i = 0; i < n_commands; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    char *sub[] = {(char *)commands[i].name, "--help", NULL};
                    return commands[i].run(2, sub);
                }
            fprintf(stderr, "squint: unknown command '%s'\n", argv[2]);
            return SQ_EXIT_BADINPUT;
        }
        usage(stdout);
        return SQ_EXIT_OK;
    }
    if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0) {
        printf("squint %s\n", SQUINT_VERSION);
        return SQ_EXIT_OK;
    }
    sq_inputs_guard_begin(); /* no command may overwrite one of its inputs */
    sq_cleanup_install_signals(); /* no temporary file or folder outlives a signal */
    for (int i = 0; i < n_commands; i++)
        if (strcmp(name, commands[i].name) == 0)
            return finish_stdout(name, commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "squint: unknown command '%s'\n\n", name);
    usage(stderr);
    return SQ_EXIT_BADINPUT;
}

/* Shared helpers of the subcommands: the command table, argument parsing,
 * error printing and the terminal progress line. */
#ifndef SQ_CLI_H
#define SQ_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "sq_error.h"

/* Exit codes shared by every command (SQ_EXIT_OK, SQ_EXIT_FAIL,
 * SQ_EXIT_BADINPUT) are in sq_error.h. */

typedef struct sq_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} sq_command;

int cmd_embed(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_embed_run(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_rerank(int argc, char **argv);
int cmd_train_head(int argc, char **argv);
int cmd_classify(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Print "squint CMD: message" to stderr; returns SQ_EXIT_BADINPUT. */
int cli_fail(const char *cmd, const sq_err *err);
int cli_usage_error(const char *cmd, const char *fmt, ...) SQ_PRINTF(2, 3);
/* Strict integer parse of an option value in [lo, hi]. */
bool cli_parse_int(const char *s, long lo, long hi, long *out);
/* Strict parse of a finite number in [lo, hi]. */
bool cli_parse_double(const char *s, double lo, double hi, double *out);

/* A progress line on stderr, drawn only when stderr is a terminal. */
typedef struct cli_progress {
    const char *label;
    double t0;
    double last_draw;
    bool enabled;
} cli_progress;

void cli_progress_init(cli_progress *p, const char *label);
void cli_progress_update(void *p, int64_t done, int64_t total); /* sq_embed_opts-compatible; total < 0: unknown */
void cli_progress_finish(cli_progress *p);
double cli_now(void);

#endif

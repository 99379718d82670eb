/* squint verify: is a squint file intact and, for a model, self-consistent?
 * Exit 0 when it is, 1 naming the damaged part, 2 when it is not a readable
 * squint file. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "container.h"
#include "sqm_verify.h"

static const char *const help =
    "usage: squint verify FILE [--json]\n"
    "\n"
    "Check a squint file (.sqc statistics or .sqm model, plain or zstd): the header,\n"
    "metadata and directory checksums, every tensor's xxh64, the padding and the\n"
    "whole-file checksum; for a model also that the metadata is a squint-model\n"
    "document, and then everything `squint embed` checks when it loads the file:\n"
    "every tensor the config implies with its dtype and shape (the schema: every\n"
    "linear's companions scale, wsum, bias, act_scale; optional smooth and\n"
    "act_zero), finite values, panel values in range, wsum equal to the panels'\n"
    "sums, the int32 bounds, the tokenizer (formats/SQM.md, \"What the loader\n"
    "proves\"); then that the metadata's `linears` list matches the weights.\n"
    "Checksums can be recomputed by anyone; these checks cannot be forged past.\n"
    "\n"
    "Prints 'FILE: OK (N tensors, SIZE bytes, KIND)' and exits 0; exits 1 naming the\n"
    "damaged tensor (or metadata, directory, header, trailer, padding, file size);\n"
    "exits 2 when FILE cannot be read or is not a squint file.\n"
    "\n"
    "options:\n"
    "  --json   machine-readable result\n"
    "\n"
    "example:\n"
    "  squint verify bge-small.sqm\n";

/* ---- the command ---- */

/* The error message without the "PATH: " that container messages start with. */
static const char *without_path(const char *msg, const char *path)
{
    size_t n = strlen(path);
    return strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

static int print_result(const char *path, const sq_verify_report *r, bool json)
{
    sq_container c;
    sq_err err;
    size_t n_tensors = 0;
    const char *kind = "";
    char kb[8];
    bool compressed = false;
    if (r->status == SQ_EXIT_OK && sq_container_open(path, 0, &c, &err) == 0) {
        n_tensors = c.n_tensors;
        kind = sq_kind_describe(c.kind, kb);
        compressed = c.compressed;
        sq_container_close(&c);
    }
    struct stat st;
    long long size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    const char *msg = without_path(r->err.msg, path);
    if (json) {
        json_t *o = json_pack("{s:s,s:s}", "file", path, "status",
                              r->status == SQ_EXIT_OK     ? "ok"
                              : r->status == SQ_EXIT_FAIL ? "damaged"
                                                          : "error");
        if (r->status == SQ_EXIT_OK) {
            json_object_set_new(o, "kind", json_string(kind));
            json_object_set_new(o, "tensors", json_integer((json_int_t)n_tensors));
            json_object_set_new(o, "size", json_integer(size));
            json_object_set_new(o, "compressed", json_boolean(compressed));
        } else {
            if (r->status == SQ_EXIT_FAIL)
                json_object_set_new(o, "damaged", json_string(r->part));
            if (r->tensor[0])
                json_object_set_new(o, "tensor", json_string(r->tensor));
            json_object_set_new(o, "message", json_string(msg));
        }
        json_dumpf(o, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(o);
    } else if (r->status == SQ_EXIT_OK) {
        printf("%s: OK (%zu tensors, %lld bytes, %s%s)\n", path, n_tensors, size, kind,
               compressed ? ", zstd" : "");
    } else if (r->status == SQ_EXIT_FAIL) {
        char lead[SQ_CONTAINER_MAX_NAME + 16]; /* the message may name the tensor too */
        snprintf(lead, sizeof lead, "tensor \"%s\": ", r->tensor);
        if (r->tensor[0] && !strncmp(msg, lead, strlen(lead)))
            msg += strlen(lead);
        if (r->tensor[0])
            printf("%s: DAMAGED tensor \"%s\": %s\n", path, r->tensor, msg);
        else
            printf("%s: DAMAGED %s: %s\n", path, r->part, msg);
    } else {
        fprintf(stderr, "squint verify: error: %s\n", r->err.msg);
    }
    return r->status;
}

int cmd_verify(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool json = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("verify", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("verify", "expected exactly one FILE argument");
    sq_verify_report r;
    sq_verify_file(argv[optind], &r);
    return print_result(argv[optind], &r, json);
}

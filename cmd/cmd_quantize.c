/* squint quantize: fp32 checkpoint + calibration + recipe -> packed .sqm. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "cli.h"
#include "embedder.h"
#include "data_dir.h"
#include "file_hash.h"
#include "head.h"
#include "quantizer.h"
#include "threads.h"


static const char *const help =
    "usage: squint quantize MODEL [--calib X.sqc] [--recipe R.yaml] -o OUT.sqm [options]\n"
    "\n"
    "Quantize a Hugging Face BERT checkpoint: SmoothQuant on the inputs the recipe names,\n"
    "int8 per-channel or int4 group-128 weights packed into VNNI-4 panels, static\n"
    "activation scales from the calibration statistics, all written to one .sqm file\n"
    "that also carries the tokenizer, pooling and provenance.\n"
    "\n"
    "options:\n"
    "  --calib FILE.sqc   statistics from `squint calibrate` (default: calibrate on the\n"
    "                     bundled corpus first, 256 samples)\n"
    "  --dynamic-acts     causal LMs: int8 activations quantized per row at run time\n"
    "                     (per token; no static range, act_scale 0 in the file)\n"
    "  --recipe FILE      YAML recipe (recipes/README.md; default: int8, SmoothQuant 0.5\n"
    "                     on the LayerNorm outputs, percentile 99.99)\n"
    "  -o, --output FILE  the .sqm to write\n"
    "  --corpus FILE      replay these corpus files instead of the ones the statistics\n"
    "                     record (repeatable)\n"
    "  --head FILE        store this classification head (from `squint train-head`, JSON or\n"
    "                     safetensors) in the .sqm: `classify` and `serve` then need no --head\n"
    "  --int4-search      weighted-MSE scale search for int4-g128 groups\n"
    "  --compress[=L]     zstd-compress the file (level L, default 19); read transparently\n"
    "  --strict           an override that matches no linear is an error\n"
    "  --dry-run          print the plan (every linear and its type) and write nothing\n"
    "  --json             print a machine-readable summary on stdout\n"
    "  --threads T        worker threads (default: $OMP_NUM_THREADS, else the CPUs this process\n"
    "                     may run on, at most its cgroup CPU quota)\n"
    "\n"
    "exit codes: 0 ok, 1 a --strict check failed, 2 bad input\n"
    "\n"
    "example:\n"
    "  squint quantize bge-small/ --calib bge-small.sqc --recipe recipes/bge-small-en-v1.5.yaml -o bge-small.sqm\n";

static void log_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static void print_json(const sq_quantize_report *rep, const char *out, bool dry)
{
    json_t *root = json_object(), *arr = json_array();
    for (int i = 0; i < rep->n_linears; i++) {
        const sq_linear_report *l = &rep->linears[i];
        if (l->n == 0)
            continue; /* the layer has no such linear */
        json_t *o = json_pack("{s:s,s:s,s:[i,i],s:b,s:I,s:I}", "name", l->name, "type",
                              sq_qtype_get(l->qtype)->name, "shape", l->n, l->k, "smooth",
                              l->smooth, "bytes_fp32", (json_int_t)l->bytes_fp32, "bytes_packed",
                              (json_int_t)l->bytes_packed);
        if (l->smooth)
            json_object_set_new(o, "alpha", l->alpha >= 0 ? json_real(l->alpha) : json_string("auto"));
        if (!dry && l->qtype != SQ_QT_F32) {
            json_object_set_new(o, "act_amax", json_real(l->act_amax));
            json_object_set_new(o, "err", num_or_null(l->err));
            json_object_set_new(o, "err_nosmooth", num_or_null(l->err_nosmooth));
            json_object_set_new(o, "outlier_channels", json_integer(l->n_outliers));
        }
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "output", dry ? json_null() : json_string(out));
    json_object_set_new(root, "dry_run", json_boolean(dry));
    json_object_set_new(root, "bytes_in", json_integer((json_int_t)rep->bytes_in));
    json_object_set_new(root, "bytes_out", json_integer((json_int_t)rep->bytes_out));
    json_object_set_new(root, "ratio", rep->bytes_in && !dry ? json_real((double)rep->bytes_out / rep->bytes_in) : json_null());
    json_object_set_new(root, "linears", arr);
    json_dumpf(root, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    printf("\n");
    json_decref(root);
}

/* A causal LM (a llama2.c checkpoint or HF Llama folder): quantize/quantizer.h sq_dec_quantize. */
static int quantize_decoder(const char *model_arg, const char *calib, const sq_quantize_opts *qo,
                            int dynamic, const char *out)
{
    sq_err err = {0};
    if (!calib)
        return cli_usage_error("quantize", "%s is a causal LM: give its statistics with --calib "
                               "(squint calibrate %s --corpus TEXT -o X.sqc)", model_arg, model_arg);
    sq_llama_model m;
    if (sq_llama_model_open(model_arg, NULL, &m, &err) != 0)
        return cli_fail("quantize", &err);
    sq_calib_stats st;
    if (sq_calib_stats_load(calib, &st, &err) != 0) {
        sq_llama_model_close(&m);
        return cli_fail("quantize", &err);
    }
    sq_quantize_report rep;
    int rc = sq_dec_quantize(&m, model_arg, &st, calib, qo, dynamic != 0, out, &rep, &err);
    sq_calib_stats_free(&st);
    sq_llama_model_close(&m);
    if (rc != 0)
        return cli_fail("quantize", &err);
    if (!qo->dry_run)
        fprintf(stderr, "squint quantize: wrote %s: %llu bytes (%.1f%% of the %llu-byte checkpoint and tokenizer)\n",
                out, (unsigned long long)rep.bytes_out,
                rep.bytes_in ? 100.0 * rep.bytes_out / rep.bytes_in : 0.0,
                (unsigned long long)rep.bytes_in);
    sq_quantize_report_free(&rep);
    return SQ_EXIT_OK;
}

int cmd_quantize(int argc, char **argv)
{
    enum { O_DYNAMIC = 512 };
    enum { O_CALIB = 256, O_RECIPE, O_CORPUS, O_SEARCH, O_COMPRESS, O_STRICT, O_DRY, O_JSON,
           O_HEAD };
    static const struct option opts[] = {
        {"calib", required_argument, 0, O_CALIB},   {"recipe", required_argument, 0, O_RECIPE},
        {"output", required_argument, 0, 'o'},      {"corpus", required_argument, 0, O_CORPUS},
        {"int4-search", no_argument, 0, O_SEARCH},  {"compress", optional_argument, 0, O_COMPRESS},
        {"strict", no_argument, 0, O_STRICT},       {"dry-run", no_argument, 0, O_DRY},
        {"json", no_argument, 0, O_JSON},           {"threads", required_argument, 0, 't'},
        {"head", required_argument, 0, O_HEAD},     {"dynamic-acts", no_argument, 0, O_DYNAMIC},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    const char *calib = NULL, *recipe_path = NULL, *out = NULL, *head_path = NULL;
    const char **corpus = calloc((size_t)argc + 1, sizeof *corpus);
    size_t n_corpus = 0;
    long threads = 0, lvl;
    int zstd_level = 0, strict = 0, dry = 0, json = 0, search = 0, dynamic = 0;
    int rc = SQ_EXIT_BADINPUT;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:t:h", opts, NULL)) != -1) {
        switch (c) {
        case O_CALIB: calib = optarg; break;
        case O_RECIPE: recipe_path = optarg; break;
        case 'o': out = optarg; break;
        case O_CORPUS: corpus[n_corpus++] = optarg; break;
        case O_HEAD: head_path = optarg; break;
        case O_SEARCH: search = 1; break;
        case O_DYNAMIC: dynamic = 1; break;
        case O_COMPRESS:
            if (!optarg)
                zstd_level = 19;
            else if (cli_parse_int(optarg, 1, 22, &lvl))
                zstd_level = (int)lvl;
            else {
                rc = cli_usage_error("quantize", "--compress level must be in [1, 22]");
                goto done;
            }
            break;
        case O_STRICT: strict = 1; break;
        case O_DRY: dry = 1; break;
        case O_JSON: json = 1; break;
        case 't':
            if (!cli_parse_int(optarg, 1, SQ_THREADS_MAX, &threads)) {
                rc = cli_usage_error("quantize", "--threads must be an integer in [1, 1024]");
                goto done;
            }
            break;
        case 'h': fputs(help, stdout); rc = SQ_EXIT_OK; goto done;
        default: rc = cli_usage_error("quantize", "invalid option"); goto done;
        }
    }
    if (optind != argc - 1) {
        rc = cli_usage_error("quantize", "expected exactly one MODEL argument");
        goto done;
    }
    if (!out && !dry) {
        rc = cli_usage_error("quantize", "-o OUT.sqm is required (or --dry-run)");
        goto done;
    }
    sq_threads_init((int)threads);
    const char *model_arg = argv[optind];
    char bundled_buf[4096];
    const char *bundled = NULL;
    sq_err err = {0};
    sq_recipe recipe;
    if ((recipe_path ? sq_recipe_load_file(recipe_path, &recipe, &err)
                     : sq_recipe_default(&recipe)) != 0) {
        rc = cli_fail("quantize", &err);
        goto done;
    }
    if (sq_llama_is_checkpoint(model_arg)) {
        sq_quantize_opts qo = {.recipe = &recipe, .strict = strict, .int4_search = search,
                               .corpus = corpus, .n_corpus = n_corpus, .batch = 16,
                               .capture_rows = 512, .zstd_level = zstd_level, .dry_run = dry,
                               .log = json ? NULL : log_line};
        rc = quantize_decoder(model_arg, calib, &qo, dynamic, out);
        sq_recipe_free(&recipe);
        goto done;
    }
    if (dynamic) {
        sq_recipe_free(&recipe);
        rc = cli_usage_error("quantize", "--dynamic-acts is for causal LMs");
        goto done;
    }
    sq_embed_model m;
    if (sq_embed_model_open(model_arg, &m, &err) != 0) {
        sq_recipe_free(&recipe);
        rc = cli_fail("quantize", &err);
        goto done;
    }
    sq_calib_stats st;
    int have_st = 0;
    sq_head head = {0};
    sq_sqm_class_head ch = {0};
    if (m.is_sqm) {
        sq_err_set(&err, "%s is already a packed model: quantize the fp32 checkpoint", model_arg);
        goto fail;
    }
    /* The head is checked against the model before any calibration. */
    if (head_path && sq_embed_model_require_embeddings(&m, model_arg, &err) != 0)
        goto fail;
    if (head_path) {
        uint64_t hsize;
        if (sq_head_for_model(model_arg, NULL, head_path, m.enc.cfg.hidden, &head, &err) != 0 ||
            sq_hash_file(head_path, &hsize, &ch.xxh64, &err) != 0)
            goto fail;
        ch.classes = head.classes;
        ch.dim = head.dim;
        ch.labels = head.labels;
        ch.W = head.W;
        ch.b = head.b;
        ch.normalized = head.normalized;
        ch.source = (char *)head_path;
        ch.has_xxh64 = true;
    }
    if (calib) {
        if (sq_calib_stats_load(calib, &st, &err) != 0)
            goto fail;
        have_st = 1;
        bundled = cli_bundled_corpus(st.corpus_pair_field != NULL, bundled_buf,
                                     sizeof bundled_buf);
    } else if (!dry) {
        sq_calibrate_opts co = {.samples = 256, .batch = 16, .max_seq = m.max_seq};
        sq_calibrate_pick_corpus(&m, &co);
        bundled = co.bundled_corpus = cli_bundled_corpus(co.corpus_opts.pair_field != NULL,
                                                         bundled_buf, sizeof bundled_buf);
        fprintf(stderr, "squint quantize: no --calib: calibrating on the bundled corpus%s "
                        "(256 samples)\n",
                co.corpus_opts.pair_field ? " of query/document pairs" : "");
        sq_scale_params_default(&co.scale, SQ_CALIB_PERCENTILE);
        const sq_calib_target ct = sq_calib_target_encoder(&m);
        if (sq_calibrate(&ct, model_arg, &co, &st, &err) != 0)
            goto fail;
        have_st = 1;
    } else {
        memset(&st, 0, sizeof st); /* a dry run needs no statistics */
    }
    sq_quantize_opts qo = {.recipe = &recipe, .strict = strict, .int4_search = search,
                           .bundled_corpus = bundled, .corpus = corpus, .n_corpus = n_corpus,
                           .batch = 16, .capture_rows = 512, .zstd_level = zstd_level,
                           .dry_run = dry, .log = json ? NULL : log_line,
                           .class_head = head_path ? &ch : NULL};
    sq_quantize_report rep;
    if (dry && !have_st) {
        /* A plan needs no statistics: fake the identity check away. */
        st.cfg = m.enc.cfg;
        sq_model_digest md;
        if (sq_model_digest_dir(m.model_dir, &md, &err) != 0)
            goto fail;
        st.model_digest = md.combined;
        sq_model_digest_free(&md);
    }
    if (sq_quantize_model(&m, model_arg, &st, calib, &qo, out, &rep, &err) != 0) {
        rc = strstr(err.msg, "matches no linear") ? SQ_EXIT_FAIL : SQ_EXIT_BADINPUT;
        fprintf(stderr, "squint quantize: error: %s\n", err.msg);
    } else {
        if (json) {
            print_json(&rep, out, dry);
        } else if (dry) {
            const sq_bert_config *mc = &m.enc.cfg;
            const char *emb = sq_qtype_get(recipe.weight_type)->name;
            printf("plan for %s:\n", model_arg);
            printf("  %-22s [%5d x %5d]  %s%s\n", "embeddings.word", mc->vocab_size, mc->embed_dim,
                   emb, recipe.weight_type == SQ_QT_F32 ? "" : " (per-row scales)");
            if (mc->positions != SQ_POS_ROTARY) /* rotary: no table */
                printf("  %-22s [%5d x %5d]  fp32\n", "embeddings.position", mc->max_pos,
                       mc->embed_dim);
            if (mc->type_vocab > 0)
                printf("  %-22s [%5d x %5d]  fp32\n", "embeddings.token_type", mc->type_vocab,
                       mc->embed_dim);
            if (mc->rel_buckets > 0)
                printf("  %-22s [%5d x %5d]  fp32\n", "relative_bias", mc->rel_buckets, mc->heads);
            int ln_floats = mc->emb_ln ? 2 * mc->embed_dim : 0;
            for (int l = 0; l < mc->layers; l++)
                ln_floats += 2 * (sq_ln_attn_dim(mc, l) + mc->hidden);
            printf("  %-22s [%5d]          fp32\n", "LayerNorms", ln_floats);
            if (mc->head != SQ_HEAD_NONE)
                printf("  %-22s [%5d x %5d]  fp32\n", "head", mc->hidden, mc->hidden);
            printf("  %-22s [%5d]          u8 (token strings)\n", "tokenizer.vocab", m.tok_spec.vocab_size);
            if (head_path)
                printf("  %-22s [%5d x %5d]  f64 (%s)\n", "class_head", head.classes, head.dim,
                       head_path);
            for (int i = 0; i < rep.n_linears; i++) {
                const sq_linear_report *l = &rep.linears[i];
                if (l->n == 0)
                    continue;
                printf("  %-22s [%5d x %5d]  %-9s", l->name, l->n, l->k, sq_qtype_get(l->qtype)->name);
                if (l->smooth) {
                    if (l->alpha >= 0)
                        printf("  smoothquant alpha %.2f", (double)l->alpha);
                    else
                        printf("  smoothquant alpha auto");
                }
                printf("\n");
            }
        } else {
            fprintf(stderr, "squint quantize: wrote %s: %llu bytes (%.1f%% of the %llu-byte checkpoint)\n",
                    out, (unsigned long long)rep.bytes_out,
                    rep.bytes_in ? 100.0 * rep.bytes_out / rep.bytes_in : 0.0,
                    (unsigned long long)rep.bytes_in);
        }
        sq_quantize_report_free(&rep);
        rc = SQ_EXIT_OK;
    }
    goto cleanup;
fail:
    rc = cli_fail("quantize", &err);
cleanup:
    if (have_st)
        sq_calib_stats_free(&st);
    sq_head_free(&head);
    sq_embed_model_close(&m);
    sq_recipe_free(&recipe);
done:
    free(corpus);
    return rc;
}

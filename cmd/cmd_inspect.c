/* squint inspect: what is inside a squint file (.sqc statistics for now). */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_stats.h"
#include "cli.h"
#include "container.h"
#include "inspect_sqm.h"

static const char *const help =
    "usage: squint inspect FILE [--top K] [--json] [--method M] [--tensors]\n"
    "\n"
    "Show what a squint file holds. For calibration statistics (.sqc): provenance,\n"
    "the activation range of every linear input per layer with the clip value (amax)\n"
    "of the observer method, the attention-probability range, and the hidden channels\n"
    "with the largest max|x| (the outliers SmoothQuant targets). For models (.sqm):\n"
    "metadata summary, bytes per qtype, every linear's type, shape, activation scale\n"
    "and SmoothQuant alpha, and the checksum status (exit 1 when damaged).\n"
    "\n"
    "options:\n"
    "  --top K      outlier channels to list (default 8)\n"
    "  --method M   clip method for the amax column (default: the file's observer)\n"
    "  --json       machine-readable output\n"
    "  --tensors    models: list every tensor (name, dtype, shape, bytes, xxh64)\n"
    "\n"
    "example:\n"
    "  squint inspect bge-small.sqc --top 5\n";

/* Outlier score of hidden channel c: the largest, over layers, of its max|x|
 * relative to the median channel's, on the LayerNorm outputs (the QKV and
 * FFN-up inputs) where trained BERTs carry their outliers. */
static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float *outlier_scores(const sq_calib_stats *st)
{
    const int H = st->cfg.hidden;
    float *score = calloc((size_t)H, sizeof *score), *tmp = malloc((size_t)H * sizeof *tmp);
    if (!score || !tmp) {
        free(score);
        free(tmp);
        return NULL;
    }
    static const sq_linear_kind kinds[2] = {SQ_LIN_QKV, SQ_LIN_FFN_UP};
    for (int l = 0; l < st->cfg.layers; l++)
        for (int k = 0; k < 2; k++) {
            const sq_act_stats *a = sq_calib_stats_at(st, l, kinds[k]);
            if (a->channels != H)
                continue; /* a narrower layer input (before a widening layer) */
            memcpy(tmp, a->ch_max_abs, (size_t)H * sizeof *tmp);
            qsort(tmp, (size_t)H, sizeof *tmp, cmp_float);
            float med = tmp[H / 2] > 0 ? tmp[H / 2] : 1e-30f;
            for (int c = 0; c < H; c++) {
                float r = a->ch_max_abs[c] / med;
                if (r > score[c])
                    score[c] = r;
            }
        }
    free(tmp);
    return score;
}

static int top_by_score(const float *score, int n, int k, int *idx)
{
    if (k > n)
        k = n;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int c = 0; c < n; c++) {
            int used = 0;
            for (int j = 0; j < i; j++)
                used |= idx[j] == c;
            if (!used && (best < 0 || score[c] > score[best]))
                best = c;
        }
        idx[i] = best;
    }
    return k;
}

static int inspect_sqc(const char *path, int top, const char *method, int json)
{
    sq_err err = {0};
    sq_calib_stats st;
    if (sq_calib_stats_load(path, &st, &err) != 0)
        return cli_fail("inspect", &err);
    sq_scale_params sp = st.scale;
    if (method && sq_scale_params_parse(method, &sp, &err) != 0) {
        sq_calib_stats_free(&st);
        return cli_usage_error("inspect", "--method: %s", err.msg);
    }
    if (st.decoder) { /* the widths the summary shows, from the causal LM's shape */
        st.cfg.layers = st.dec.n_layers;
        st.cfg.hidden = st.dec.dim;
        st.cfg.heads = st.dec.n_heads;
        st.cfg.ffn = st.dec.hidden;
    }
    const sq_bert_config *c = &st.cfg;
    float *score = outlier_scores(&st);
    int *idx = malloc((size_t)(top > 0 ? top : 1) * sizeof *idx);
    if (!score || !idx) {
        free(score);
        free(idx);
        sq_calib_stats_free(&st);
        fprintf(stderr, "squint inspect: out of memory\n");
        return SQ_EXIT_BADINPUT;
    }
    int ntop = top_by_score(score, c->hidden, top, idx);
    json_t *root = json_object(), *layers = json_array(), *outl = json_array();
    if (!json) {
        printf("%s: squint calibration statistics (format %d)\n", path, SQ_SQC_FORMAT_VERSION);
        printf("model:    %s (digest %016" PRIx64 "), %s%d layers x %d hidden, %d heads, ffn %d\n",
               st.model_source ? st.model_source : "?", st.model_digest,
               st.decoder ? "causal LM (llama), " : "", c->layers, c->hidden, c->heads, c->ffn);
        printf("corpus:   %s, %d file(s)", st.corpus_bundled ? "bundled QASPER subset" : "user",
               st.n_corpus_files);
        for (int i = 0; i < st.n_corpus_files; i++)
            printf("%s %s", i ? "," : ":", st.corpus_files[i].name);
        printf("\nsampling: %" PRIu64 " texts -> %" PRIu64 " sequences, %" PRIu64
               " tokens (samples %" PRIu64 ", seed %" PRIu64 ", max-seq %d%s), %d run(s), %s\n",
               st.n_texts, st.n_sequences, st.n_tokens, st.samples_requested, st.seed, st.max_seq,
               st.windows ? ", windows" : "", st.runs, st.date ? st.date : "");
        printf("observer: %s", sq_calib_method_name(sp.method));
        if (sp.method == SQ_CALIB_PERCENTILE)
            printf(" %.6g", sp.percentile);
        printf("\n\n%-6s %-9s %8s %12s %12s %12s %10s  %s\n", "layer", "input", "channels",
               "min", "max", "amax", "max/med", "top channels (max|x|)");
    }
    for (int l = 0; l < c->layers; l++)
        for (int k = 0; k < SQ_LIN_KINDS; k++) {
            const sq_act_stats *a = sq_calib_stats_at(&st, l, (sq_linear_kind)k);
            if (a->channels == 0)
                continue; /* the layer has no such linear */
            float amax = 0;
            if (a->rows > 0 && sq_select_amax(&a->hist, &sp, &amax, &err) != 0)
                amax = 0;
            int ti[3];
            int nt = sq_act_stats_top_channels(a, 3, ti);
            float *tmp = malloc((size_t)a->channels * sizeof *tmp);
            float med = 0;
            if (tmp) {
                memcpy(tmp, a->ch_max_abs, (size_t)a->channels * sizeof *tmp);
                qsort(tmp, (size_t)a->channels, sizeof *tmp, cmp_float);
                med = tmp[a->channels / 2];
                free(tmp);
            }
            float ratio = med > 0 ? a->ch_max_abs[ti[0]] / med : 0;
            if (json) {
                json_t *tops = json_array();
                for (int i = 0; i < nt; i++)
                    json_array_append_new(tops, json_pack("{s:i,s:f}", "channel", ti[i], "max_abs",
                                                          (double)a->ch_max_abs[ti[i]]));
                json_array_append_new(
                    layers, json_pack("{s:i,s:s,s:i,s:I,s:f,s:f,s:f,s:f,s:o}", "layer", l, "input",
                                      sq_linear_kind_name((sq_linear_kind)k), "channels",
                                      a->channels, "rows", (json_int_t)a->rows, "min",
                                      (double)a->min, "max", (double)a->max, "amax", (double)amax,
                                      "max_over_median", (double)ratio, "top_channels", tops));
            } else {
                printf("%-6d %-9s %8d %12.5g %12.5g %12.5g %10.1f ", l,
                       sq_linear_kind_name((sq_linear_kind)k), a->channels, (double)a->min,
                       (double)a->max, (double)amax, (double)ratio);
                for (int i = 0; i < nt; i++)
                    printf(" %d (%.3g)", ti[i], (double)a->ch_max_abs[ti[i]]);
                printf("\n");
            }
        }
    if (!json) {
        printf("\nattention probabilities:");
        for (int l = 0; l < c->layers; l++)
            printf(" L%d [%.3g, %.3g]", l, (double)st.attn_pmin[l], (double)st.attn_pmax[l]);
        printf("\n\noutlier hidden channels (largest max|x| / median over layers, LayerNorm outputs):\n");
        for (int i = 0; i < ntop; i++)
            printf("  channel %5d  %8.1fx\n", idx[i], (double)score[idx[i]]);
    } else {
        for (int i = 0; i < ntop; i++)
            json_array_append_new(outl, json_pack("{s:i,s:f}", "channel", idx[i], "score",
                                                  (double)score[idx[i]]));
        json_t *attn = json_array();
        for (int l = 0; l < c->layers; l++)
            json_array_append_new(attn, json_pack("[f,f]", (double)st.attn_pmin[l],
                                                  (double)st.attn_pmax[l]));
        json_object_set_new(root, "file", json_string(path));
        json_object_set_new(root, "kind", json_string("statistics"));
        char dg[17];
        snprintf(dg, sizeof dg, "%016" PRIx64, st.model_digest);
        json_object_set_new(root, "model_digest", json_string(dg));
        json_object_set_new(root, "observer", json_string(sq_calib_method_name(sp.method)));
        json_object_set_new(root, "sequences", json_integer((json_int_t)st.n_sequences));
        json_object_set_new(root, "tokens", json_integer((json_int_t)st.n_tokens));
        json_object_set_new(root, "layers", layers);
        json_object_set_new(root, "attention_probs", attn);
        json_object_set_new(root, "outlier_channels", outl);
        layers = outl = NULL;
        json_dumpf(root, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        printf("\n");
    }
    json_decref(layers);
    json_decref(outl);
    json_decref(root);
    free(score);
    free(idx);
    sq_calib_stats_free(&st);
    return SQ_EXIT_OK;
}

int cmd_inspect(int argc, char **argv)
{
    static const struct option opts[] = {{"top", required_argument, 0, 'k'},
                                         {"json", no_argument, 0, 'j'},
                                         {"tensors", no_argument, 0, 't'},
                                         {"method", required_argument, 0, 'm'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    long top = 8;
    int json = 0, tensors = 0;
    const char *method = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            if (!cli_parse_int(optarg, 1, 100000, &top))
                return cli_usage_error("inspect", "--top must be an integer in [1, 100000]");
            break;
        case 'j': json = 1; break;
        case 't': tensors = 1; break;
        case 'm': method = optarg; break;
        case 'h': fputs(help, stdout); return SQ_EXIT_OK;
        default: return cli_usage_error("inspect", "invalid option");
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("inspect", "expected exactly one FILE argument");
    const char *path = argv[optind];
    sq_container cont;
    sq_err err = {0};
    if (sq_container_open(path, 0, &cont, &err) != 0)
        return cli_fail("inspect", &err);
    uint32_t kind = cont.kind;
    sq_container_close(&cont);
    if (kind == SQ_KIND_SQC)
        return inspect_sqc(path, (int)top, method, json);
    if (kind == SQ_KIND_SQM)
        return inspect_sqm(path, json, tensors);
    char kb[8];
    fprintf(stderr, "squint inspect: error: %s: %s files are not supported yet\n", path,
            sq_kind_describe(kind, kb));
    return SQ_EXIT_BADINPUT;
}

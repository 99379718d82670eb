/* Fuzz the Hugging Face config readers. The input is up to three files
 * separated by NUL bytes: config.json, modules.json, 1_Pooling/config.json
 * (a missing part means the file is absent, exercising the defaults). */
#include <stdlib.h>
#include <sys/stat.h>

#include "fuzz_util.h"
#include "hf_config.h"

static void put(const char *rel, const uint8_t *p, size_t n, int present)
{
    if (present)
        free(fuzz_write(rel, p, n));
    else
        fuzz_remove(rel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        char *d = fuzz_path("1_Pooling");
        mkdir(d, 0700);
        free(d);
        ready = 1;
    }
    const uint8_t *part[3];
    size_t len[3];
    size_t n = fuzz_split(data, size, 3, part, len);
    put("config.json", part[0], len[0], 1);
    put("modules.json", n > 1 ? part[1] : NULL, n > 1 ? len[1] : 0, n > 1);
    put("1_Pooling/config.json", n > 2 ? part[2] : NULL, n > 2 ? len[2] : 0, n > 2);

    sq_err err;
    sq_bert_config cfg;
    char *cfg_path = fuzz_path("config.json");
    if (sq_bert_config_load(cfg_path, &cfg, &err) == 0 && cfg.num_labels > 0) {
        char **labels;
        if (sq_config_labels_load(cfg_path, cfg.num_labels, &labels, &err) == 0)
            sq_labels_free(labels, cfg.num_labels);
    }
    free(cfg_path);

    sq_pooling_config pc;
    if (sq_pooling_config_load_dir(fuzz_tmpdir(), &pc, &err) == 0)
        sq_pooling_name(pc.pooling);

    /* The pooling name parser takes user text too (--pooling). */
    char name[16];
    size_t k = len[0] < sizeof name - 1 ? len[0] : sizeof name - 1;
    for (size_t i = 0; i < k; i++)
        name[i] = part[0][i] ? (char)part[0][i] : '?';
    name[k] = 0;
    sq_pooling p;
    sq_pooling_parse(name, &p);
    return 0;
}

/* Fuzz the recipe parser, then what quantize does with a recipe: resolve
 * linears, check overrides, and the canonical YAML, which must load back to
 * an equal recipe (recipe.h promises the round trip). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sq_recipe r;
    sq_err err;
    if (sq_recipe_load_buffer((const char *)data, size, "fuzz.yaml", &r, &err) != 0) {
        sq_recipe_free(&r);
        return 0;
    }
    static const char *const names[] = {"layer.0.qkv", "layer.1.attn_out", "layer.11.ffn_up",
                                        "layer.3.ffn_down", "layer.x.qkv"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        sq_resolved_linear out;
        sq_recipe_resolve(&r, names[i], &out, &err);
    }
    sq_recipe_check_overrides_layers(&r, 12, false, NULL, NULL, &err);
    sq_recipe_check_overrides_layers(&r, 2, true, NULL, NULL, &err);
    sq_pooling_config pc = {SQ_POOL_CLS, false, false};
    sq_recipe_apply_pooling(&r, &pc);

    char *yaml = sq_recipe_to_yaml(&r);
    if (yaml) {
        sq_recipe back;
        if (sq_recipe_load_buffer(yaml, strlen(yaml), "canonical.yaml", &back, &err) != 0) {
            fprintf(stderr, "canonical YAML does not load: %s\n%s", err.msg, yaml);
            abort();
        }
        if (!sq_recipe_equal(&r, &back)) {
            fprintf(stderr, "canonical YAML loads to a different recipe:\n%s", yaml);
            abort();
        }
        sq_recipe_free(&back);
        free(yaml);
    }
    sq_recipe_free(&r);
    return 0;
}

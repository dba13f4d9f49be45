/* fuzz_model.c — libFuzzer: a Hugging Face config.json through
 * model_load_json, then every layer priced under a few layouts, so the cost
 * model meets whatever sizes the parser lets through. */
#include <math.h>

#include "sim/io/config.h"
#include "fuzz.h"
#include "models/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct model m;
    struct mp_error err = { 0 };
    int rc = model_load_json(&m, text, "fuzz.json", &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    if (rc == MP_OK) {
        static const struct cost_params layouts[] = {
            { .seq_len = 1, .micro_batch = 1, .tp = 1 },
            { .seq_len = 4096, .micro_batch = 2, .tp = 8, .sp = true,
              .recompute = RECOMPUTE_SELECTIVE, .weight_bits = 8 },
            { .seq_len = 131072, .micro_batch = 1, .tp = 3, .recompute = RECOMPUTE_FULL },
        };
        for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
            for (int l = 0; l < m.n_layers; l++) {
                struct layer_cost c;
                model_layer_cost(&m, l, &layouts[i], &c);
                if (isnan(c.flops_f) || c.act_bytes < 0) abort();
            }
        if (isnan(model_params(&m))) abort();
        model_release(&m);
    }
    free(text);
    return 0;
}

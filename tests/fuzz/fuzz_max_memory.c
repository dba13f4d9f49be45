/* fuzz_max_memory.c — libFuzzer: Accelerate-style max_memory strings
 * (`--max-memory`, device_map.max_memory) parsed and, when they parse, fed
 * to the placement of a small Llama under the policy the first byte picks.
 * Invariants: a parse error is MP_ERR_INPUT with a message; a parsed dict is
 * in Accelerate's order (GPUs ascending, cpu, disk) with sizes >= 0; a
 * placement puts every byte of the model on exactly one device. */
#include <math.h>

#include "sim/serve/device_map.h"
#include "fuzz.h"

static const char tiny[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, "
    "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_hidden_layers\": 6, "
    "\"vocab_size\": 100, \"tie_word_embeddings\": true}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct model m;
    static struct hf_tree t;
    static int ready;
    struct mp_error err = { 0 };
    if (!ready) {
        struct hf_dtype dt = { .quant = HF_QUANT_NONE, .weight_bits = 16 };
        if (model_load_json(&m, tiny, "tiny", &err) || hf_tree_build(&t, &m, &dt, &err)) abort();
        ready = 1;
    }
    if (size < 1) return 0;
    enum dm_policy pol = (enum dm_policy)(data[0] % 4);
    char *text = fuzz_text(data + 1, size - 1);
    struct dm_params p = { .policy = pol, .memory_what = "fuzz", .disk_capacity = 1e6 };
    int rc = dm_memory_parse(text, "fuzz", &p.memory, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    if (rc == MP_OK) {
        for (int i = 0; i < p.memory.n; i++) {
            if (!(p.memory.bytes[i] >= 0)) abort();
            if (i && p.memory.device[i - 1] >= 0 && p.memory.device[i] >= 0 &&
                p.memory.device[i - 1] >= p.memory.device[i]) abort();
            if (i && p.memory.device[i - 1] < 0 && p.memory.device[i] >= 0) abort();
        }
        struct dm_result r;
        rc = dm_place(&r, &t, m.n_layers, &p, &err);
        if (rc != MP_OK && rc != MP_ERR_INPUT && rc != MP_ERR_INFEASIBLE) abort();
        if (rc != MP_ERR_INPUT) {
            double sum = 0;
            for (int i = 0; i < r.n_dev; i++) sum += r.dev[i].weights;
            if (sum != t.mod[0].size) abort();
        }
        dm_release(&r);
    }
    free(text);
    return 0;
}

/* fuzz_routing.c — libFuzzer: a routing trace (experts.trace: one row of
 * expert loads per MoE layer) through the expert-parallel plan of a small
 * MoE model (Mixtral's shape: 8 experts, top-2) on the textbook system. Any
 * input must end in a plan or one input error naming experts.trace; a plan's
 * times must be durations. */
#include <string.h>

#include "fuzz.h"
#include "hardware/system.h"
#include "sim/strategy/experts.h"

static struct model m;
static struct system sys;
static bool ready;

/* One routed expert's kernels for `tokens` tokens: its gate/up and down
 * GEMMs at the chip's peak (price.c prices them kernel by kernel; the
 * reader, not the price, is under test here). */
static mp_time expert_time(void *ctx, double tokens, int pass)
{
    (void)ctx, (void)pass;
    double flops = 6.0 * tokens * m.hidden * m.moe_intermediate;
    return chip_op_time(&sys.chip, flops, 0, 16);
}

static void setup(void)
{
    char path[1024];
    struct mp_error err;
    snprintf(path, sizeof path, "%s/models/mixtral-8x7b.json", mp_data_dir());
    struct chip_catalog cat;
    if (model_load(&m, path, &err) || chip_catalog_load_default(&cat, &err)) abort();
    if (system_load(&sys, "textbook", 0, 8, &cat, &err)) abort();
    chip_catalog_release(&cat);
    ready = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready) setup();
    int group[2] = { 0, 1 };
    struct ep_input in = {
        .model = &m, .sys = &sys, .group = group, .ep = 2, .microbatches = 2,
        .tokens_per_rank = 512, .routing = EP_TRACE, .trace = fuzz_file(data, size, ".csv"),
        .a2a = EP_A2A_AUTO, .act_bits = 16, .dispatch_bits = 16, .weight_bits = 16, .seed = 1,
        .expert_time = expert_time,
    };
    struct ep_plan p;
    struct mp_error err = { 0 };
    int rc = experts_plan_build(&p, &in, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !strstr(err.msg, "experts.trace") ||
                        strchr(err.msg, '\n')))
        abort();
    if (rc == MP_OK) {
        for (int mb = 0; mb < 2; mb++)
            for (int l = 0; l < m.n_layers; l++)
                for (int role = 0; role < N_EP_ROLES; role++) {
                    mp_time t = experts_time(&p, mb, l, role);
                    if (t < 0 || t > MP_TIME_HUGE) abort();
                }
        experts_plan_release(&p);
    }
    return 0;
}

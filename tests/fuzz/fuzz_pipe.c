/* fuzz_pipe.c — libFuzzer: the scenario-to-report pipe. The input is a
 * scenario; whatever it says, the model is synthetic, the system textbook,
 * and the layout capped (pp ≤ 8, vpp ≤ 4, dp and tp ≤ 4, ≤ 32 microbatches)
 * so one input runs in milliseconds. Times, sizes, the schedule, recompute
 * and ZeRO stay the fuzzer's. A run must end in MP_OK, MP_ERR_INPUT or
 * MP_ERR_INFEASIBLE, and every report must write. */
#include <string.h>

#include "sim/io/config.h"
#include "fuzz.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"

static int cap(int v, int hi) { return v > hi ? hi : v; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    if (config_load(&cfg, fuzz_file(data, size, ".ini"), &err) != MP_OK) return 0;
    cfg.model.kind = MODEL_SYNTHETIC;
    strcpy(cfg.hardware.system, "textbook");
    cfg.hardware.nodes = 0;
    cfg.parallel.pp = cap(cfg.parallel.pp, 8);
    cfg.parallel.vpp = cap(cfg.parallel.vpp, 4);
    cfg.parallel.dp = cap(cfg.parallel.dp, 4);
    cfg.parallel.tp = cap(cfg.parallel.tp, 4);
    cfg.parallel.ep = cap(cfg.parallel.ep, 4);
    cfg.training.micro_batch = cap(cfg.training.micro_batch, 4);
    cfg.training.global_batch =
        cap(cfg.training.global_batch, 32 * cfg.training.micro_batch * cfg.parallel.dp);
    cfg.inference.present = false;
    struct sim s;
    struct sim_options opts = { .record_memory = true };
    int rc = sim_run(&s, &cfg, &opts, &err);
    if (rc != MP_OK && rc != MP_ERR_INPUT && rc != MP_ERR_INFEASIBLE) abort();
    if (rc != MP_OK && !err.msg[0]) abort();
    if (rc == MP_OK) {
        FILE *null = fopen("/dev/null", "w");
        if (!null) abort();
        report_text(null, &s);
        report_json(null, &s);
        report_timeline_csv(null, &s);
        report_chrome_trace(null, &s);
        fclose(null);
    }
    sim_release(&s);
    return 0;
}

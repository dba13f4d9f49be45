/* accel.h — a scenario's model on a machine the way Hugging Face Accelerate
 * places and runs it: `from_pretrained(device_map=...)` (device_map.h) and
 * then `model.generate()` on that placement, beside the same model on the
 * same GPUs as a real pipeline (serve.h).
 *
 * How Accelerate runs a placed model (dispatch_model, AlignDevicesHook;
 * transformers 4.x generate):
 *   - one module after another, in model order; a forward is a chain, so no
 *     GPU works while another does (no microbatches, no pipelining);
 *   - where consecutive modules sit on different GPUs, the hook moves the
 *     hidden states (tokens × hidden × activation bytes) over the system's
 *     route between the two chips (on GeForce cards, through host memory);
 *   - a module on `cpu` keeps its weights in host memory; its hook copies
 *     them to the main device (the first GPU of the map) before every
 *     forward and drops them after, and the module computes there: one
 *     host-link copy of its bytes per forward (link_latency + bytes /
 *     link_bw of the system's [host] tier), not overlapped with compute;
 *   - a module on `disk` is read from the offload folder's memory-mapped
 *     files first (bytes / disk_bw, the page cache assumed too small to keep
 *     them: that is why they are on disk), then copied as a cpu one;
 *   - generate() runs one forward over the prompt (TTFT) and one per further
 *     output token; only the last position's logits are computed, and the
 *     top module's hook moves them back to the input's device (vocab × 2
 *     bytes per sequence).
 * Compute is priced by serving's price path (serve_stage_time, one model
 * layer at a time on the executing GPU), so a change to chip pricing moves
 * both sides of the comparison alike. Python and hook overheads per module
 * are not modelled (no component measurement in calibration.md). */
#ifndef MPSIM_ACCEL_H
#define MPSIM_ACCEL_H

#include <stdbool.h>
#include <stdio.h>

#include "device_map.h"
#include "hardware/system.h"
#include "hf_modules.h"
#include "models/model.h"
#include "sim/io/config.h"

/* A scenario's device map. */
struct accel_setup {
    struct config cfg;
    struct chip_catalog cat;
    struct system sys;
    struct model model;
    struct hf_dtype dtype;
    struct hf_tree tree;
    struct dm_params params;
    struct dm_result map;
    bool has_cat, has_sys, has_model, has_tree, has_map;
    int gpus;                 /* chips of one node: Accelerate's visible GPUs */
    char model_path[1024];
    /* Issue 16: accel_generate estimates its work (forwards × modules, the
     * rows it records) and refuses past the budget (sim/io/budget.h) unless
     * the caller sets `force` (--force) after accel_setup; `budget_events`
     * > 0 sets a smaller one (the value fuzzer). */
    bool force;
    double budget_events;
};

/* Load model and system of `cfg` (device_map.* keys, model.weight_bits) and
 * place the model. MP_ERR_INPUT for bad keys (a max_memory entry naming a
 * GPU the system lacks, a bad size, a disk entry with a balanced policy);
 * MP_ERR_INFEASIBLE when the model fits nowhere. `memory_what` names the
 * max_memory source in messages ("--max-memory" or the key). Always call
 * accel_setup_release. */
int accel_setup(struct accel_setup *a, const struct config *cfg, const char *memory_what,
                struct mp_error *err);
void accel_setup_release(struct accel_setup *a);

/* The map for people: the model and machine, the budgets, print(model.
 * hf_device_map), and a row per device (modules, weights, budget, reserve). */
void accel_map_text(FILE *f, const struct accel_setup *a);

/* The same as JSON; "device_map" is a list of [module, device] in model
 * order (device: a GPU id, "cpu" or "disk"). */
void accel_map_json(FILE *f, const struct accel_setup *a);

/* The map's members into a cJSON object (for the run report). */
struct cJSON;
void accel_map_json_into(struct cJSON *o, const struct accel_setup *a);

/* One generate() call, timed the Accelerate way. */
struct accel_gen {
    int prompt, output, batch, requests, calls; /* calls = ceil(requests / batch) */
    mp_time prefill;          /* the prompt's forward: time to first token */
    mp_time decode;           /* the other output - 1 forwards together */
    mp_time call;             /* prefill + decode: one generate() */
    mp_time total;            /* calls one after another */
    double tokens_per_s;      /* output tokens of every request / total */
    double ttft_p50_all_s;    /* median time to first token when every request
                                 arrives at once and waits for the calls before it */
    double decode_tokens_per_s; /* batch / mean decode forward */
    /* Where one call's time goes. */
    mp_time compute_resident; /* layers computing where their weights live */
    mp_time compute_offloaded; /* cpu/disk layers computing on the main GPU */
    mp_time hops;             /* hidden states between GPUs, logits back */
    mp_time stream;           /* host -> GPU copies of cpu/disk weights */
    mp_time disk;             /* disk reads of disk weights */
    mp_time gpu_compute[DM_MAX_GPUS]; /* compute per GPU */
    double stream_bytes_per_forward, disk_bytes_per_forward;
    /* Memory a call needs on each GPU: resident weights + KV/state of the
     * layers computing there + the largest offloaded module in transit. */
    double gpu_need[DM_MAX_GPUS], gpu_kv[DM_MAX_GPUS];
    char kernels[512];        /* which calibration rows priced the kernels */
};

/* A pipeline of the same model on the map's GPUs (inference.placement =
 * even, one stage per GPU), the same requests all arriving at once. */
struct accel_pipe {
    int stages, inflight;
    bool feasible;
    char reason[1024];        /* why not, when infeasible */
    double ttft_p50_s, tpot_p50_s, makespan_s, tokens_per_s;
    int max_inflight;
};

/* One op of the first generate() call, kept when asked for (a timeline). */
struct accel_rec {
    mp_time start, end;
    int chip;                 /* the GPU whose stream it occupies */
    bool comm;                /* comm stream (copies) or compute */
    int forward;              /* 0 the prompt's forward, k the k-th decode step */
    int layer;                /* model layer computed (compute ops), else -1 */
    int mod;                  /* hf_tree module */
    enum { AR_COMPUTE, AR_HOP, AR_HOST, AR_DISK } what;
    double bytes;             /* copies */
};

struct accel_report {
    struct accel_gen gen;
    struct accel_pipe pipe[2]; /* one microbatch in flight; one per stage (or inference.inflight) */
    int n_pipe;
    struct accel_rec *rec;     /* NULL unless recorded; free with accel_report_release */
    size_t n_rec, cap_rec;
};

/* Time generation on the placement for the scenario's inference.prompt_len,
 * output_len, micro_batch (sequences per generate() call) and requests, and
 * run the two pipelines. MP_ERR_INPUT for non-fixed length distributions or
 * a map with no GPU (mpsim prices no CPU compute); MP_ERR_INFEASIBLE when a
 * GPU's weights, KV and offloaded module in transit exceed its memory (the
 * message has the numbers; `rep` is filled as far as it got). */
int accel_generate(struct accel_report *rep, const struct accel_setup *a, struct mp_error *err);
/* The same, keeping every op of the first call in rep->rec when `record`. */
int accel_generate_recorded(struct accel_report *rep, const struct accel_setup *a, bool record,
                            struct mp_error *err);
void accel_report_release(struct accel_report *rep);

/* The first generate() call as the timeline CSV mpsim-view reads (the
 * columns of report_timeline_csv: compute rows of kind prefill/decode per
 * model layer on the GPU computing it, comm rows of kind send (between
 * GPUs), host_copy and disk_read (offloaded weights), weights as memory
 * rows, meta rows) and as a Chrome trace. Need a recorded report. */
void accel_timeline_csv(FILE *f, const struct accel_setup *a, const struct accel_report *rep);
void accel_chrome_trace(FILE *f, const struct accel_setup *a, const struct accel_report *rep);

/* Offload streaming time of one forward: for each cpu module, link latency
 * + bytes / link_bw; disk modules add bytes / disk_bw. Exposed for tests. */
mp_time accel_stream_time(const struct accel_setup *a, double *disk_time_out);

void accel_report_text(FILE *f, const struct accel_setup *a, const struct accel_report *rep);
void accel_report_json(FILE *f, const struct accel_setup *a, const struct accel_report *rep);

#endif

/* serve.h — inference serving through a pipeline of chips: requests arrive,
 * are admitted when their KV cache fits, prefill and decode in microbatches
 * that flow stage to stage, and leave when their last token is out.
 *
 * Design: a discrete-event loop on the event queue (sim/engine/eventq.h) directly,
 * not the task graph. Serving decides at run time what each microbatch holds
 * (who is admitted, how much of a prompt fits the token budget), so the work
 * cannot be laid out as a graph beforehand. The loop keeps the engine's rules:
 * integer picoseconds, events ordered by (time, priority, sequence), one
 * gsl_rng seeded from run.seed, nothing allocated per event.
 *
 * The machine: the stages of `mpsim plan` (or parallel.pp even slices), one
 * chip each, consecutive chips of the system. A stage's compute stream runs one
 * microbatch at a time, first come first served. Hand-offs follow the system's
 * route between consecutive chips: latency + bytes / bandwidth, the link busy
 * for the bytes' serialisation only (latency is propagation, so back-to-back
 * hand-offs overlap their latencies). After the last stage the sampled tokens
 * go back to stage 0 in one hop (the cost of the last hand-off's route with
 * 4 bytes per token); with one stage there is no hop.
 *
 * Microbatches: `inflight` slots (default: one per stage) circulate. A request
 * joins one slot when admitted and stays with it to the end, because its next
 * token needs its previous one. When a slot is back at stage 0 it forms its
 * next pass: every member in decode adds one token; members still in prefill
 * add their prompt (chunked prefill: as much as the token budget leaves;
 * otherwise the whole rest, if it fits the budget or the pass is empty); then
 * free seats (micro_batch) are filled from the waiting queue in arrival order.
 * A slot with nothing to carry waits at stage 0; an arrival wakes it.
 *
 * Memory: on admission a request reserves, on every stage, KV for prompt +
 * output tokens of each full-attention layer and the recurrent state of each
 * linear-attention layer; it frees them when done. Admission is first come
 * first served: when the head of the queue does not fit, everyone waits
 * (no preemption). Free memory per chip = capacity − weights.
 *
 * Costs of one pass on a stage: the kernels its layers run
 * (models/kernels.h kernels_serve_layer), each priced on the chip from
 * hardware/kernels.csv as training's are (hardware/calib.h): the GEMMs over
 * the pass's total tokens (weights streamed at the chip's weights_stream
 * share: decode is bandwidth-bound), norms, rotary, activations and
 * residual adds by their bytes, the decode members' attention as one
 * batched kernel over each one's KV cache beside the prompt chunks'
 * FlashAttention, the linear-attention state read and written, and the LM
 * head and sampling for the requests that emit a token this pass; every
 * kernel adds a CUDA-graph launch (graph_launch), and stage 0 takes at
 * least the host's per-step work (host_step) per pass.
 * A token is emitted when its pass leaves the last stage: TTFT = that time −
 * arrival; TPOT = (done − first token) / (output − 1).
 *
 * Event granularity: the stages form a chain of first-come-first-served
 * servers that no pass can overtake, and only stage 0 (forming a pass) and
 * the last stage (emitting tokens) touch requests, queue or memory. So a
 * pass's whole walk down the chain is computed when it is formed, from each
 * stage's and hop's free time left by the pass before it, and the event loop
 * handles only arrivals, pass ends at the last stage and returns to stage 0;
 * a walk that provably meets no earlier pass costs O(stage classes), not
 * O(stages), and so does one that provably trails the pass before it on
 * every link from some stage on (a convoy: its times there are the earlier
 * passes' plus per-hop-class offsets). The results are those of one event per stage pass and hop,
 * which the loop still runs when passes are recorded (serve_run_recorded),
 * when hand-off routes share links, or after an exact tie it cannot order
 * (serve_fast.c). */
#ifndef MPSIM_SERVE_H
#define MPSIM_SERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hardware/chip.h"
#include "sim/common.h"
#include "sim/io/config.h"
#include "sim/engine/eventq.h"
#include "plan.h"
#include "hardware/system.h"

struct serve_request {
    mp_time arrival, admitted, first_token, done; /* -1 until reached */
    int prompt, output;       /* tokens */
    int prefilled, generated; /* progress */
    int slot;                 /* microbatch slot while admitted, else -1 */
    int chunk;                /* tokens it carries in its slot's current pass */
};

/* One request's share of a pass, for pricing. */
struct serve_item {
    int tokens;   /* tokens processed this pass */
    int past;     /* tokens already in its KV cache */
    bool emits;   /* this pass ends with a sampled token (LM head runs) */
    bool decode;  /* a decode token (reads its KV cache), else prompt tokens (prefill) */
};

struct serve_stage_report {
    int index, chip;
    int layer_first, layer_last; /* model layers (0 embedding, L+1 head) */
    mp_time busy, first_start, last_end;
    uint64_t passes;
    double weights;     /* bytes */
    double free_bytes;  /* capacity − weights: room for KV and state */
    double kv_peak;     /* bytes of KV + state at the peak */
};

struct serve_kv_point { mp_time t; double bytes; };

struct serve_result {
    int stages, slots, micro_batch;
    int requests;            /* generated or read */
    int completed, admitted;
    int max_inflight;        /* admitted and not done, at most */
    int max_waiting;         /* arrived and not admitted, at most */
    uint64_t kv_blocked;     /* admissions refused because memory was full */
    mp_time makespan;        /* last completion, or the horizon when cut */
    double mean_inflight, mean_in_system; /* time averages over the makespan */
    double output_tokens, prompt_tokens;
    double tokens_per_s;     /* output tokens / makespan */
    double requests_per_s;   /* completed / makespan */
    /* Seconds at p50, p90, p99, and the mean, over completed requests. */
    double ttft[4], tpot[4], e2e[4];
    /* Little's law over the arrival window [first, last arrival]: arrival
     * rate, mean end-to-end latency of its requests, mean in system. */
    double little_window_s, little_rate, little_latency_s, little_in_system;
    double kv_peak_bytes;    /* summed over stages */
    double kv_peak_fraction; /* highest stage's peak / its free bytes */
    struct serve_kv_point *kv_log; /* total KV + state in use after each change */
    int n_kv_log, cap_kv_log;
    /* Events of the run at the walk-at-a-time loop's grain: arrivals, pass
     * ends at the last stage, returns to stage 0 and the horizon. The same
     * figure when the per-stage loop runs (it handles more). */
    uint64_t events;
    double sim_wall_s;
    struct serve_stage_report *stage; /* [stages] */
};

/* What a timeline or trace needs, kept only when serve_run_recorded asks
 * for it (the default run records nothing: DESIGN.md §2's "trace records are
 * kept only when an output asks for them"). A pass is recorded once, as it
 * is formed at stage 0 (who is in it); its copy on each stage and its
 * hand-off from each stage (s → s+1, and the last stage's return to stage 0)
 * are three numbers in that stage's arrays, in time order: 20 bytes a copy,
 * so the 59-wafer run's 4.6 M stage passes and 4.6 M hand-offs take 185 MB
 * instead of 333 MB. Plus every change of a stage's KV + state reservation. */
struct serve_pass_rec {
    mp_time start, end;         /* start on stage 0, end on the last stage */
    int slot;
    int prefill, decode;        /* members carrying prompt tokens / one decode token */
    int prefill_tokens;         /* prompt tokens in the pass */
    int emits;                  /* tokens it sends back to stage 0 */
    double tokens;              /* tokens it carries (what its hand-offs move) */
};
struct serve_stage_rec {
    /* The stage's copy of pass pass[i] ran over [start[i], end[i]]. */
    mp_time *start, *end; uint32_t *pass; size_t n, cap;
    /* Its hand-off held the link from hop_start and arrived at hop_end. */
    mp_time *hop_start, *hop_end; uint32_t *hop_pass; size_t n_hop, cap_hop;
};
struct serve_kv_rec {
    mp_time t;
    int stage;
    double delta, in_use;       /* bytes of KV + state on that stage */
};
struct serve_record {
    struct serve_pass_rec *pass; size_t n_pass, cap_pass;
    struct serve_stage_rec *stage;  /* [stages] */
    uint32_t *slot_pass;            /* [slots]: the pass each slot is walking */
    size_t n_copies, n_hops;        /* over all stages */
    struct serve_kv_rec *kv;     size_t n_kv, cap_kv;
};

/* Per layer of a stage, what pricing needs (filled by serve_run). */
struct serve_layer;
struct serve_slot;
struct serve_fast;

struct serve {
    struct config cfg;
    struct plan_run pr;        /* model, chip, placement */
    bool has_plan;
    struct chip_catalog catalog;
    struct system sys;
    bool has_sys;
    int stages, slots;
    int *stage_chip;           /* [stages] */
    struct serve_layer *layers; /* all stages' layers, in order */
    int *layer_off;            /* [stages + 1] into layers */
    mp_time *hop;              /* [stages] latency of hand-off s → s+1 (last: return) */
    double *hop_bw;            /* [stages] slowest link's bytes/s on that route */
    int *hop_route_off, *hop_route;   /* links of each hand-off route */
    struct serve_request *req;
    int n_req;
    struct serve_result res;
    /* Run state (serve.c). */
    struct eventq q;
    struct serve_slot *slot;
    int *members;              /* [slots × micro_batch] request ids */
    int *waiting;              /* FIFO ring of request ids */
    int wait_head, wait_n;
    int *stage_queue;          /* [stages × slots] FIFO ring per stage */
    int *sq_head, *sq_n;
    bool *stage_busy;
    mp_time *link_free;        /* per system link */
    double *kv_used;           /* [stages] */
    int inflight, next_arrival;
    int n_idle;                /* slots idle at stage 0 (wake_idle stops at none) */
    struct serve_record *rec;  /* NULL unless serve_run_recorded(record = true) */
    mp_time now;               /* time of the event being handled */
    struct serve_fast *fast;   /* the walk-at-a-time loop (serve_fast.c); NULL: per-stage events */
    bool clock_overflow;       /* the clock passed SERVE_CLOCK_MAX: the run stopped */
    bool force;                /* run past the work budget (serve_options) */
    double budget_events;      /* serve_options.budget_events */
    struct serve_pricer *pricer; /* calibration, kernel scratch and memo (serve_price.c) */
};

/* Simulate serving the scenario (its [inference] section). `cfg` is copied.
 * MP_ERR_INPUT for bad keys, trace rows or lengths beyond context_len;
 * MP_ERR_INFEASIBLE when the model does not fit (from the plan) or a request
 * could never be admitted. Always call serve_release afterwards. */
int serve_run(struct serve *s, const struct config *cfg, struct mp_error *err);
/* The same, keeping s->rec (passes, hand-offs, KV changes) when `record`,
 * for serve_timeline_csv and serve_chrome_trace. Same results either way. */
int serve_run_recorded(struct serve *s, const struct config *cfg, bool record,
                       struct mp_error *err);
/* The same with options: `record` as above; past the work budget
 * (sim/io/budget.h: the requests' walks estimated before they are drawn, or
 * counted once a trace is read) MP_ERR_INPUT with the estimate unless
 * `force`. serve_run and serve_run_recorded never force. */
struct serve_options {
    bool record, force;
    double budget_events; /* > 0: a smaller budget than the default (the value fuzzer) */
};
int serve_run_opts(struct serve *s, const struct config *cfg, const struct serve_options *o,
                   struct mp_error *err);
void serve_release(struct serve *s);

/* serve_trace.c: the run as a timeline CSV (the format of report.h's
 * report_timeline_csv, which mpsim-view reads) and as a Chrome trace. Need a
 * run recorded with serve_run_recorded.
 * The timeline has meta rows and, by default, one compute row per pass
 * (kind prefill, decode or mixed, the slot as microbatch, from its start on
 * stage 0 to its end on the last stage; meta rows=slots tells the viewer to
 * draw a row per slot). serve_timeline_csv_detail writes every stage's copy
 * instead (one compute row per stage pass, comm rows of kind send for the
 * hand-offs, memory rows for weights and KV): `mpsim run --timeline-detail`. */
void serve_timeline_csv(FILE *f, const struct serve *s);
void serve_timeline_csv_detail(FILE *f, const struct serve *s);
void serve_chrome_trace(FILE *f, const struct serve *s);
/* The timeline's meta rows (key=value text, chip -1 for run-wide), as the
 * two writers put them first; for mpsim-view's in-process loader too. */
void serve_timeline_meta(const struct serve *s, bool detail,
                         void (*meta)(void *ctx, int chip, int stage, const char *kv), void *ctx);
/* A recorded pass's kind ("prefill", "decode" or "mixed") and its label. */
const char *serve_pass_kind(const struct serve_pass_rec *p);
void serve_pass_label(char *buf, size_t size, const struct serve_pass_rec *p);
/* Bytes one recorded hand-off moves: the pass's tokens from stage st, or
 * the tokens it sends back when st is the last stage. */
double serve_record_hop_bytes(const struct serve *s, int st, const struct serve_pass_rec *p);

/* Cross-key checks of [inference] (ranges are in the key table). */
int serve_check_config(const struct config *cfg, struct mp_error *err);

/* Compute time of one pass on `stage` for `n` items (pricing above). */
mp_time serve_stage_time(const struct serve *s, int stage, const struct serve_item *items,
                         int n);

/* Hand-off of `tokens` tokens' activations from `stage` to stage + 1 on idle
 * links; for the last stage, the return of `tokens` sampled tokens to stage 0. */
mp_time serve_hop_time(const struct serve *s, int stage, int tokens);

/* The summary for people, and the JSON object of DESIGN.md §4 (step_time_s =
 * makespan, tokens_per_s = output tokens/s, ttft_p50_s, ttft_p99_s,
 * tpot_p50_s, requests_completed, max_inflight, stages[...]) plus serving
 * extras (latency quantiles, KV over time, Little's law figures). */
void serve_report_text(FILE *f, const struct serve *s);
void serve_report_json(FILE *f, const struct serve *s);

#endif

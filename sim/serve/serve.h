/* serve.h — inference serving on a cluster: requests arrive, a router sends
 * each to a replica, each replica's scheduler batches them into steps that
 * flow through its pipeline stages, KV lives in paged blocks (or a
 * reservation), and requests leave when their last token is out.
 *
 * Design: a discrete-event loop on the event queue (sim/engine/eventq.h) directly,
 * not the task graph. Serving decides at run time what each microbatch holds
 * (who is admitted, how much of a prompt fits the token budget), so the work
 * cannot be laid out as a graph beforehand. The loop keeps the engine's rules:
 * integer picoseconds, events ordered by (time, priority, sequence), one
 * gsl_rng seeded from run.seed, nothing allocated per event.
 *
 * The machine (serve_layout.c): `inference.replicas` copies of the model
 * (with `inference.disaggregate`, a prefill pool and a decode pool of their
 * own). A replica is `parallel.pp` stages (or the stages of `mpsim plan`),
 * each stage a group of max(tp, ep) chips on consecutive chips of one node
 * where it fits: a tensor-parallel group of `parallel.tp` (the group is one
 * lane, DESIGN.md §2: its chip 0 runs the pass, the others are symmetric),
 * or with `parallel.ep` an expert-parallel group whose attention is
 * data-parallel over ep / tp ranks. A stage's compute stream runs one
 * microbatch at a time, first come first served. Hand-offs follow the
 * system's route between consecutive stages' lanes: latency + bytes /
 * bandwidth, the link busy for the bytes' serialisation only (latency is
 * propagation, so back-to-back hand-offs overlap their latencies). After the
 * last stage the sampled tokens go back to stage 0 in one hop (the cost of
 * the last hand-off's route with 4 bytes per token); with one stage there is
 * no hop.
 *
 * Microbatches: `inflight` slots per replica (default: one per stage;
 * vLLM's virtual engines) circulate. A request joins one slot when admitted
 * and stays with it until it ends or is preempted, because its next token
 * needs its previous one. When a slot is back at stage 0 the replica's
 * scheduler (serve_sched.c, a registry) forms its next pass from its
 * members and the replica's waiting queue: micro_batch (max_num_seqs)
 * requests, token_budget (max_num_batched_tokens) tokens. A slot with
 * nothing to carry waits at stage 0; an arrival wakes it.
 *
 * Memory (serve_kv.c). kv_cache = reserve (the wafer article's rule): on
 * admission a request reserves, on every stage, KV for prompt + output
 * tokens of each full-attention layer and the recurrent state of each
 * linear-attention layer; free memory per chip = capacity − weights;
 * admission waits when the head of the queue does not fit. kv_cache = paged
 * (vLLM): each slot has a pool of blocks of block_size tokens sized from
 * gpu_memory_utilization × capacity − weights − activations (divided among
 * the replica's slots, as vLLM V0 gives each virtual engine its cache);
 * blocks are taken as tokens are produced; when a step's tokens do not fit,
 * running requests are preempted (recompute: their KV dropped and prefilled
 * again later; swap: copied to host memory over the [host] link and back).
 * With prefix caching the blocks of shared prefixes stay cached (a radix tree
 * of prefixes, LRU eviction of unreferenced leaves) and skip their prefill.
 *
 * Costs of one pass on a stage, on one chip of the stage's group: the
 * kernels its shard of the layers runs (models/kernels.h
 * kernels_serve_layer with the group's tp: QKV and MLP-up split by columns,
 * attention-out and MLP-down by rows, heads and the vocabulary-parallel LM
 * head by tp), each priced on the chip from hardware/kernels.csv as
 * training's are (hardware/calib.h): the GEMMs over the pass's total tokens
 * (weights streamed at the chip's weights_stream share: decode is
 * bandwidth-bound), norms, rotary, activations and residual adds by their
 * bytes, the decode members' attention as one batched kernel over each
 * one's KV cache beside the prompt chunks' FlashAttention, the
 * linear-attention state read and written, and the LM head and sampling for
 * the requests that emit a token this pass; every kernel adds a CUDA-graph
 * launch (graph_launch), and each replica's first stage takes at least the
 * host's per-step work (host_step) per pass. MoE: the experts a pass
 * reaches under uniform routing; with ep > 1 the chip's own experts for the
 * assignments it receives, as grouped GEMMs (kernels_serve_experts).
 * Then the group's collectives (serve_layout.c): with tp > 1 two all-reduces
 * of the tokens' activations per decoder layer (attention and MLP outputs),
 * one after the vocabulary-parallel embedding and an all-gather of the
 * logits, priced on the fabric as training prices them (collective_time);
 * with ep > 1 a dispatch and a combine all-to-all per MoE layer
 * (experts_a2a_time). A token is emitted when its pass leaves the last
 * stage: TTFT = that time − arrival; TPOT = (done − first token) /
 * (output − 1).
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
 * passes' plus per-hop-class offsets). The results are those of one event
 * per stage pass and hop, which the loop still runs when passes are
 * recorded (serve_run_recorded), when hand-off routes share links, after an
 * exact tie it cannot order (serve_fast.c), and for every layout but one
 * replica of whole-layer stages with reserved KV and the vllm scheduler
 * (serve_fast_applies). */
#ifndef MPSIM_SERVE_H
#define MPSIM_SERVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_rng.h>

#include "hardware/chip.h"
#include "sim/common.h"
#include "sim/io/config.h"
#include "sim/engine/eventq.h"
#include "plan.h"
#include "hardware/system.h"

struct serve_request {
    mp_time arrival, admitted, first_token, done; /* -1 until reached (admitted: the first time) */
    mp_time last_emit;        /* when its latest tokens came out (inter-token latency) */
    int prompt, output;       /* tokens */
    int kv;                   /* tokens whose KV is computed and held */
    int generated;            /* output tokens so far */
    int slot;                 /* microbatch slot while admitted, else -1 */
    int chunk;                /* tokens it carries in its slot's current pass */
    int replica;              /* where the router sent it; -1 before it arrives */
    int blocks;               /* paged: blocks of its own it holds */
    int shared;               /* paged: blocks of cached prefixes it holds */
    int node;                 /* prefix-tree node its prompt continues (-1: none) */
    int own_node;             /* prefix-tree node of its own tokens, when a later turn continues it */
    int prefix;               /* leading prompt tokens shared with others (the node's end) */
    int next;                 /* the session's next turn, -1 */
    int session, turn;        /* -1, 0 when not a session */
    int prio;                 /* priority class: 0 is the highest */
    int preempted;            /* times it was preempted */
    int spec_steps, spec_tokens; /* speculative decode steps and the tokens they gave */
    double spec_carry;        /* spec_draw = expected: fraction of a token carried */
    bool swapped;             /* its KV is on the host (preemption = swap) */
    bool pending;             /* a later turn whose arrival waits for the previous one */
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
    int replica, pool;           /* replica of the stage; pool 0, or 1 = decode */
    int layer_first, layer_last; /* model layers (0 embedding, L+1 head) */
    mp_time busy, first_start, last_end;
    uint64_t passes;
    double weights;     /* bytes per chip */
    double free_bytes;  /* reserve: capacity − weights; paged: the KV pool's bytes */
    double kv_peak;     /* bytes of KV + state at the peak */
};

/* Per replica: where requests went and how they fared. */
struct serve_replica_report {
    int pool, chips, routed, completed;
    int slo_met;                         /* of its completed requests, those meeting the SLO */
    double ttft[4], tpot[4], e2e[4];     /* p50, p90, p99, mean (seconds) */
    double output_tokens, tokens_per_s;
    double little_rate, little_latency_s, little_in_system; /* over the arrival window */
    uint64_t preemptions;
    int64_t blocks;                      /* paged: KV blocks of the replica (all slots) */
    double kv_peak_fraction;
};

/* A distribution folded from many values: p50, p90, p99, mean. */
struct serve_dist4 { double q[4]; uint64_t n; };

struct serve_kv_point { mp_time t; double bytes; };

struct serve_result {
    int stages, slots, micro_batch;
    int replicas, pools;
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
    struct serve_dist4 itl;          /* gaps between a request's token deliveries */
    struct serve_dist4 sched_delay;  /* arrival to first admission */
    struct serve_dist4 batch;        /* requests in a pass (at stage 0) */
    struct serve_dist4 step_tokens;  /* tokens in a pass (at stage 0) */
    /* Little's law over the arrival window [first, last arrival]: arrival
     * rate, mean end-to-end latency of its requests, mean in system. */
    double little_window_s, little_rate, little_latency_s, little_in_system;
    double kv_peak_bytes;    /* summed over stages */
    double kv_peak_fraction; /* highest stage's peak / its free bytes */
    struct serve_kv_point *kv_log; /* total KV + state in use after each change */
    int n_kv_log, cap_kv_log;
    /* Paged KV and preemption. */
    int64_t blocks_per_replica;      /* paged: blocks of one replica (pool 0) */
    uint64_t preemptions, swaps_out, swaps_in;
    double recomputed_tokens;        /* tokens prefilled again after preemption */
    double swap_bytes;               /* KV bytes moved to and from the host, per chip summed */
    /* Prefix caching: prompt tokens looked up, found cached (not prefilled),
     * and requests that found any. */
    double prefix_query_tokens, prefix_hit_tokens;
    int prefix_hit_requests, prefix_lookups;
    /* Disaggregation: KV sent from prefill to decode replicas. */
    double kv_transfer_bytes;
    struct serve_dist4 kv_transfer;  /* seconds from prefill end to KV arrival */
    /* Speculative decoding: decode steps of speculating requests and the
     * tokens they gave. */
    uint64_t spec_steps;
    double spec_tokens;
    /* Goodput: completed requests meeting every SLO that is set. */
    int slo_met;
    double goodput_rps;
    /* TP collectives of one pass on a replica's stages: counted at the
     * first pass (serve_layout.c): all-reduces per pass, their bytes per
     * token. */
    int tp_allreduces_per_pass;
    /* Events of the run at the walk-at-a-time loop's grain: arrivals, pass
     * ends at the last stage, returns to stage 0 and the horizon. The same
     * figure when the per-stage loop runs (it handles more). */
    uint64_t events;
    double sim_wall_s;
    struct serve_stage_report *stage; /* [stages] */
    struct serve_replica_report *rep; /* [replicas] */
};

/* What a timeline or trace needs, kept only when serve_run_recorded asks
 * for it (the default run records nothing: DESIGN.md §2's "trace records are
 * kept only when an output asks for them"). A pass is recorded once, as it
 * is formed at its replica's stage 0 (who is in it); its copy on each stage
 * and its hand-off from each stage (s → s+1, and the last stage's return to
 * stage 0) are three numbers in that stage's arrays, in time order: 20 bytes
 * a copy, so the 59-wafer run's 4.6 M stage passes and 4.6 M hand-offs take
 * 185 MB instead of 333 MB. Plus every change of a stage's KV + state. */
struct serve_pass_rec {
    mp_time start, end;         /* start on stage 0, end on the last stage (of its replica) */
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

/* Private to the folder (serve_impl.h). */
struct serve_layer;
struct serve_slot;
struct serve_fast;
struct serve_scheduler;
struct serve_pool;
struct serve_replica;
struct serve_kvpool;
struct serve_prefix_tree;
struct serve_priced;
struct serve_hist;
struct serve_spec;

struct serve {
    struct config cfg;
    struct plan_run pr;        /* model, chip, placement (of pool 0) */
    bool has_plan;
    struct chip_catalog catalog;
    struct system sys;
    bool has_sys;
    int stages, slots;         /* over every replica (global stage and slot numbers) */
    int *stage_chip;           /* [stages] the lane chip of each stage */
    struct serve_layer *layers; /* all priced stages' layers, in order */
    int *layer_off;            /* [priced stages + 1] into layers */
    struct serve_priced *priced; /* [n_priced]: layers and shard of each priced stage; NULL: s->pr.plan, tp 1 */
    int n_priced;
    mp_time *hop;              /* [stages] latency of hand-off s → s+1 (last: return) */
    double *hop_bw;            /* [stages] slowest link's bytes/s on that route */
    int *hop_route_off, *hop_route;   /* links of each hand-off route */
    struct serve_request *req;
    int n_req;
    struct serve_result res;
    /* Layout (serve_layout.c). */
    struct serve_pool *pool;   /* [n_pools] */
    int n_pools;
    struct serve_replica *rep; /* [replicas] */
    int replicas;
    int *stage_rep, *slot_rep; /* [stages], [slots]: replica of each */
    /* Run state (serve.c). */
    struct eventq q;
    struct serve_slot *slot;
    int *members;              /* [slots × micro_batch] request ids */
    int *stage_queue;          /* [stages × slots per replica] FIFO ring per stage */
    int *sq_head, *sq_n;
    bool *stage_busy;
    mp_time *link_free;        /* per system link */
    double *kv_used;           /* [stages] bytes of KV + state in use per chip */
    struct serve_kvpool *kvp;  /* [slots] paged: each slot's block pool */
    struct serve_prefix_tree *tree; /* prefix caching: the prefixes requests share */
    int inflight, next_arrival;
    uint64_t route_seq;        /* arrivals routed so far (round_robin) */
    struct serve_hist *hist;   /* ITL, batch, tokens per step, sched delay */
    struct serve_spec *spec;   /* speculative decoding: the draft's pricing, or NULL */
    struct serve_record *rec;  /* NULL unless serve_run_recorded(record = true) */
    mp_time now;               /* time of the event being handled */
    struct serve_fast *fast;   /* the walk-at-a-time loop (serve_fast.c); NULL: per-stage events */
    bool per_stage;            /* this run forces per-stage events (the rerun after a tie) */
    bool clock_overflow;       /* the clock passed SERVE_CLOCK_MAX: the run stopped */
    bool force;                /* run past the work budget (serve_options) */
    double budget_events;      /* serve_options.budget_events */
    gsl_rng *rng;              /* the run's draws during serving (speculation, think times) */
    struct serve_pricer *pricer; /* calibration, kernel scratch and memo (serve_price.c) */
    const struct serve_scheduler *sched; /* inference.scheduler's entry (serve_sched.c) */
    /* What a pass runs, resolved once: the scheduler's former for this run
     * (serve_scheduler_form), and whether serve_emit takes its plain loop. */
    void (*form)(struct serve *s, int k);
    bool emit_plain;
    bool windowed;             /* the model has an attention window (serve_price_windowed) */
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
 * its replica's stage 0 to its end on the last stage; meta rows=slots tells
 * the viewer to draw a row per slot). serve_timeline_csv_detail writes every
 * stage's copy instead (one compute row per stage pass, comm rows of kind
 * send for the hand-offs, memory rows for weights and KV, each chip's
 * replica as a meta row): `mpsim run --timeline-detail`. The trace has a
 * process per chip, named and sorted by replica. */
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
 * the tokens it sends back when st is the last stage of its replica. */
double serve_record_hop_bytes(const struct serve *s, int st, const struct serve_pass_rec *p);

/* Cross-key checks of [inference] (ranges are in the key table). */
int serve_check_config(const struct config *cfg, struct mp_error *err);

/* Compute time of one pass on priced stage `stage` (with one pool, the
 * replica's stage index) for `n` items (pricing above), on one chip of the
 * stage's group, without its collectives. */
mp_time serve_stage_time(const struct serve *s, int stage, const struct serve_item *items,
                         int n);

/* Hand-off of `tokens` tokens' activations from global stage `stage` to
 * stage + 1 on idle links; for a replica's last stage, the return of
 * `tokens` sampled tokens to its stage 0. */
mp_time serve_hop_time(const struct serve *s, int stage, int tokens);

/* The summary for people, and the JSON object of DESIGN.md §4 (step_time_s =
 * makespan, tokens_per_s = output tokens/s, ttft_p50_s, ttft_p99_s,
 * tpot_p50_s, requests_completed, max_inflight, stages[...]) plus serving
 * extras (latency quantiles, ITL, KV over time, Little's law figures,
 * preemptions, prefix cache, goodput, replicas[...]). */
void serve_report_text(FILE *f, const struct serve *s);
void serve_report_json(FILE *f, const struct serve *s);

/* `--slo ttft=500ms,tpot=50ms`: set inference.slo_ttft / slo_tpot / slo_e2e
 * from a comma list of metric=duration. MP_ERR_INPUT naming `flag` for an
 * unknown metric (with the known ones) or a bad duration. */
int serve_parse_slo(struct config *cfg, const char *text, const char *flag,
                    struct mp_error *err);

/* Chips the run's layout uses (every replica of every pool). */
int serve_chips(const struct serve *s);

/* Registries (serve_sched.c, serve_router.c): names and one line each, for
 * `mpsim list schedulers|routers`; NULL past the last. */
const char *serve_scheduler_name(int i, const char **summary);
const char *serve_router_name(int i, const char **summary);

#endif

/* config.h — a scenario: the INI file plus `--set` overrides, checked and
 * completed with defaults into one typed struct.
 *
 * Every parameter has one dotted name ("parallel.pp"), used alike by the INI
 * file ([parallel] pp = 4), by `--set parallel.pp=4`, by sweeps' `--vary` and
 * as a sweep CSV column. The names live in one table (config_keys), which also
 * carries each key's type, default and one-line documentation, so `--help`,
 * error messages and did-you-mean all come from the same place. */
#ifndef MPSIM_CONFIG_H
#define MPSIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/common.h"

enum model_kind { MODEL_TRANSFORMER, MODEL_SYNTHETIC };
enum recompute_kind { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL };
/* [inference] choices, in the key table's order (sim/serve/serve.h). */
enum serve_arrivals { ARRIVALS_POISSON, ARRIVALS_TRACE, ARRIVALS_GAMMA };
enum serve_dist { DIST_FIXED, DIST_UNIFORM, DIST_LOGNORMAL, DIST_EMPIRICAL };
enum serve_placement { PLACEMENT_PLAN, PLACEMENT_EVEN };
/* Issue 19 (branch serving): KV cache, preemption, speculative decoding. */
enum serve_kv_cache { KV_PAGED, KV_RESERVE };
enum serve_preemption { PREEMPT_RECOMPUTE, PREEMPT_SWAP };
enum serve_speculative { SPEC_NONE, SPEC_DRAFT, SPEC_MTP };
enum serve_spec_draw { SPEC_DRAW_BERNOULLI, SPEC_DRAW_EXPECTED };
/* Training recipes (issue 14; docs/recipes.md), in the key table's order. */
enum attention_kind { ATTENTION_FLASH, ATTENTION_UNFUSED };
enum precision_kind { PRECISION_FP32, PRECISION_BF16 };
enum recipe_kind { RECIPE_NONE, RECIPE_MEGATRON_2022, RECIPE_MEGATRON_CORE };

#define CONFIG_STR 512
/* Room for the line of each key (struct config key_line); more keys than
 * this is an assertion in config_defaults and config_load. */
#define CONFIG_KEY_LINES 512

/* Parallel degrees are capped so products of them stay far inside int. */
#define CONFIG_DEGREE_MAX 1e6
/* The most chips one layout may use (tp × pp × dp) and stage passes one
 * step may have (pp × vpp × microbatches), config_check.c (issue 8). */
#define CONFIG_CHIPS_MAX 16777216
#define CONFIG_STAGE_PASSES_MAX 8388608

/* A memory amount written either as a plain number, counting one
 * microbatch's stashed activations (M_B), or as a size with a unit (bytes):
 * "8" or "40GB". Which one depends on what the number is compared with, so
 * both forms are kept as written and the user of the key converts. */
struct config_mem_amount {
    double value;
    bool bytes;   /* value is in bytes (written with a unit), else in M_B */
};

/* Context parallelism (parallel.cp_kind, sim/strategy/context.h), in the
 * key table's order. */
enum cp_kind { CP_RING, CP_ULYSSES, CP_HYBRID };

/* A comma list of whole numbers ("7,8,8,7"), or none (n = 0, written as
 * the key's word for it, "even"). At most CONFIG_LIST_MAX entries. */
#define CONFIG_LIST_MAX 256
struct config_int_list {
    int n;
    int v[CONFIG_LIST_MAX];
};

struct config {
    char path[CONFIG_STR]; /* the scenario file, "" when built from defaults */
    char dir[CONFIG_STR];  /* its folder: relative paths resolve here first */
    char name[128];        /* the scenario's file name without folder and .ini */

    struct {
        char config[CONFIG_STR]; /* preset name or path to a HF config.json */
        int kind;                /* enum model_kind */
        int seq_len;             /* tokens per sequence */
        int weight_bits, activation_bits, kv_bits;
        int compute_bits;        /* GEMM precision: 16, or 8 (FP8 GEMMs) */
        /* issue 15: the architecture row (models/arch_table.c) to read the
         * config by, whatever its model_type says; "auto" = by model_type. */
        char family[64];
    } model;

    /* A model given by its times alone, so textbook cases run exactly.
     * Times are of one microbatch on one pipeline stage (split over vpp chunks). */
    struct {
        mp_time forward, backward_input, backward_weight;
        mp_time hop;          /* delay of each stage-to-stage hand-off */
        mp_time forward_backward; /* DualPipe's overlapped F&B op; 0 = F + B + W */
        double activation;    /* bytes one forward stashes on a stage (M_B) */
        double activation_w;  /* of those, bytes only W needs (M_W, freed by W) */
        double weights;       /* bytes of weights per stage (static) */
    } synthetic;

    struct {
        char system[CONFIG_STR]; /* preset name or path to a system .ini */
        int nodes;               /* 0 = as many as the layout needs */
    } hardware;

    struct {
        int tp, pp, dp, ep, vpp;
        bool sp;
        bool tsp;           /* TP and SP folded on one axis of degree tp (cases.md §2) */
        bool tp_overlap;    /* backward TP all-reduce overlaps the weight-grad GEMMs */
        bool tp_comm_overlap; /* SP forward: all-gather / reduce-scatter under the GEMMs */
        /* Context parallelism (branch context, issue 17): the sequence split
         * over cp ranks (sim/strategy/context.h); chips = tp × cp × pp × dp. */
        int cp;             /* degree */
        int cp_kind;        /* enum cp_kind: ring | ulysses | hybrid */
        int cp_ulysses;     /* hybrid: the all-to-all degree (0 = the CP ranks in one node) */
        /* Decoder layers per pipeline stage (n = 0: even split); with
         * chunks (vpp, V schedules) a stage's layers split over them. */
        struct config_int_list stage_layers;
    } parallel;

    struct {
        int global_batch;   /* sequences per step, over all DP replicas */
        int micro_batch;    /* sequences per microbatch */
        char schedule[64];  /* a registered pipeline schedule name */
        int recompute;      /* enum recompute_kind */
        int zero;           /* ZeRO stage 0..3 */
        bool dp_overlap;    /* gradient buckets sync during the last backward */
        double dp_bucket;   /* bytes of gradients per DP bucket */
        struct config_mem_amount memory_limit; /* zb-auto's activation limit; 0 = pp × M_B */
        int offload;        /* enum offload_kind (sim/strategy/offload.h) */
        /* The software stack (docs/recipes.md). */
        int attention;      /* enum attention_kind: flash | unfused */
        bool dropout;       /* dropout on attention probabilities and hidden states */
        int grad_reduce;    /* enum precision_kind: main gradients and their DP reduction */
        int optimizer_state;/* enum precision_kind: Adam's moments */
        bool overlap_param_gather; /* ZeRO-1/2 weight all-gather under the next forward */
        int recipe;         /* enum recipe_kind: a named stack's defaults */
    } training;

    /* Serving (sim/serve/serve.h). `present` is set when any inference.* key is
     * given (file or --set): `mpsim run` then simulates serving. */
    struct config_inference {
        bool present;
        double rate;          /* Poisson arrivals per second */
        int requests;         /* requests to generate (Poisson) */
        int arrivals;         /* enum serve_arrivals: poisson | trace */
        char trace[CONFIG_STR]; /* CSV: arrival_s, prompt_tokens, output_tokens */
        int prompt_dist, output_dist; /* enum serve_dist: fixed | uniform | lognormal */
        int prompt_len, prompt_min, prompt_max;
        double prompt_sigma;
        int output_len, output_min, output_max;
        double output_sigma;
        int micro_batch;      /* requests per microbatch */
        int inflight;         /* microbatches in flight; 0 = one per stage */
        int token_budget;     /* tokens per microbatch pass */
        bool chunked_prefill;
        int context_len;      /* tokens a request may hold; sizes the plan's KV reserve */
        int concurrency;      /* requests the plan reserves KV for; 0 = auto */
        mp_time horizon;      /* stop serving here; 0 = when every request is done */
        int placement;        /* enum serve_placement: plan | even */
        /* Issue 19 (branch serving; sim/serve/serve.h, docs/serving.md). */
        int replicas;         /* copies of the model, each tp x pp (x ep) chips */
        char router[64];      /* a registered router (serve_router.c) */
        char scheduler[64];   /* a registered scheduler (serve_sched.c) */
        int max_num_seqs;     /* vLLM's name for micro_batch; 0 = micro_batch */
        int max_num_batched_tokens; /* vLLM's name for token_budget; 0 = token_budget */
        int kv_cache;         /* enum serve_kv_cache: paged | reserve */
        int block_size;       /* tokens per KV block (paged) */
        double gpu_memory_utilization; /* share of a chip's memory vLLM may use */
        int preemption;       /* enum serve_preemption: recompute | swap */
        double swap_space;    /* bytes of host memory per chip for swapped KV */
        bool prefix_caching;  /* cache KV blocks by prefix (radix / LRU) */
        int prefix_tokens;    /* shared system prompt: tokens (0 = none) */
        int prefix_groups;    /* distinct system prompts */
        int turns;            /* turns per session (multi-turn) */
        mp_time think_time;   /* mean gap from a turn's last token to the next turn */
        double burstiness;    /* Gamma shape of inter-arrival times (arrivals = gamma) */
        char prompt_file[CONFIG_STR], output_file[CONFIG_STR]; /* empirical length CSVs */
        char priorities[CONFIG_STR]; /* shares of priority classes, "0.2,0.8" */
        int max_waiting_tokens;   /* decode_first: decode steps before new prefills */
        double waiting_served_ratio; /* decode_first: waiting / running to admit */
        mp_time slo_ttft, slo_tpot, slo_e2e; /* goodput SLO; 0 = not asked */
        bool disaggregate;    /* separate prefill and decode pools */
        int prefill_replicas, prefill_tp, prefill_pp; /* 0 tp/pp = parallel.* */
        int decode_replicas, decode_tp, decode_pp;    /* 0 replicas = inference.replicas */
        int speculative;      /* enum serve_speculative: none | draft | mtp */
        char draft_model[CONFIG_STR]; /* draft preset or config.json (speculative = draft) */
        int spec_tokens;      /* k proposed tokens per step */
        double spec_acceptance; /* alpha: each proposal accepted with this probability */
        int spec_draw;        /* enum serve_spec_draw: bernoulli | expected */
    } inference;

    /* Expert parallelism (sim/strategy/experts.h): how tokens pick experts
     * and how the EP group moves them. */
    struct {
        int routing;          /* enum ep_routing: uniform | zipf | dirichlet | trace */
        double skew;          /* Zipf exponent (routing = zipf) */
        double concentration; /* Dirichlet α of every expert (routing = dirichlet) */
        char trace[CONFIG_STR]; /* CSV of expert loads (routing = trace) */
        double capacity_factor; /* tokens an expert takes ÷ its even share; 0 = dropless */
        int redundant;        /* extra copies of the hottest experts */
        int max_nodes;        /* nodes one token may reach; 0 = the model's topk_group */
        int all_to_all;       /* enum ep_a2a: auto | direct | hierarchical */
        int dispatch_bits;    /* bits per element of the dispatch; 0 = activation_bits */
        bool show_ranks;      /* put every EP rank's expert GEMMs on its own chip */
    } experts;

    struct {
        uint64_t seed;
        int fidelity;       /* enum fidelity (collective.h): fast | detailed */
        int collective;     /* enum coll_algo (collective.h): auto | ring | ... */
        bool steady_skip;   /* skip repeating periods of the steady state (engine.h) */
    } run;

    /* Keys given by the scenario or --set (bit i: config_keys[i]), so a
     * recipe (training.recipe) fills only the keys nobody gave. */
    uint64_t key_given[4];
    /* [device_map]: Accelerate's device_map="auto" (sim/serve/device_map.h,
     * sim/serve/accel.h). With a policy, `mpsim run` generates the way
     * Accelerate runs the placed model, beside a real pipeline. */
    struct {
        int policy;         /* enum config_devmap_policy */
        char max_memory[CONFIG_STR]; /* "0=10GiB,cpu=64GiB"; "auto" = Accelerate's defaults */
        int quantization;   /* enum config_devmap_quant */
    } device_map;

    /* Where each key (by its index in config_keys[]) got its value: the
     * scenario's line, 0 its default, -1 the command line (--set, --vary).
     * Messages about a value found wrong later (an unknown schedule or
     * system) name it with config_where or config_key_where. */
    int key_line[CONFIG_KEY_LINES];
};

/* [device_map] choices, in the key table's order. */
enum config_devmap_policy { DEVMAP_NONE, DEVMAP_AUTO, DEVMAP_BALANCED, DEVMAP_BALANCED_LOW_0,
                            DEVMAP_SEQUENTIAL };
enum config_devmap_quant { DEVMAP_QUANT_AUTO, DEVMAP_QUANT_NONE, DEVMAP_QUANT_BNB_8BIT,
                           DEVMAP_QUANT_BNB_4BIT, DEVMAP_QUANT_FP8 };

enum config_type {
    CONFIG_INT,      /* int, decimal */
    CONFIG_U64,      /* uint64_t */
    CONFIG_BOOL,     /* true/false, yes/no, on/off, 1/0 */
    CONFIG_DURATION, /* mp_time; value needs a unit: ns, us, ms, s */
    CONFIG_SIZE,     /* double bytes; B, KB, MB, GB, TB (1000s) or KiB, MiB, GiB, TiB */
    CONFIG_DOUBLE,
    CONFIG_STRING,   /* char[CONFIG_STR] or smaller, see `size` */
    CONFIG_ENUM,     /* int, one of `choices` ("none|selective|full") */
    CONFIG_MEM_AMOUNT, /* struct config_mem_amount: "8" (× M_B, in min..max) or "40GB" */
    CONFIG_INT_LIST, /* struct config_int_list: `fallback`'s word (n = 0) or "7,8,8,7",
                        each entry in min..max */
};

struct config_key {
    const char *name;     /* dotted: "section.key" */
    enum config_type type;
    size_t offset;        /* into struct config */
    size_t size;          /* for strings: buffer size */
    const char *fallback; /* default, as it would be written in the INI */
    const char *choices;  /* CONFIG_ENUM: "a|b|c" in enum order */
    double min, max;      /* numeric range, inclusive (ignored when min > max) */
    const char *doc;      /* one line for --help */
};

/* The table of every key, terminated by an entry with name == NULL. */
extern const struct config_key config_keys[];

/* Look a dotted key up; NULL when unknown. */
const struct config_key *config_find_key(const char *name);

/* Fill every field with its default. */
void config_defaults(struct config *cfg);

/* Read a scenario INI file over the defaults already in `cfg`. Unknown
 * sections or keys, and bad values, are MP_ERR_INPUT with "FILE:LINE: key
 * section.key: expected ..., got '...'" (and a did-you-mean when close). */
int config_load(struct config *cfg, const char *path, struct mp_error *err);

/* Apply one "section.key=value" override (from --set); `where` names its
 * origin for messages ("--set"). */
int config_set(struct config *cfg, const char *assignment, const char *where,
               struct mp_error *err);

/* Set one key from its text value. */
int config_set_key(struct config *cfg, const char *key, const char *value,
                   const char *where, struct mp_error *err);

/* Write a key's current value as it would appear in an INI (for sweep CSVs). */
void config_format_value(const struct config *cfg, const struct config_key *key,
                         char *buf, size_t size);

/* Every key's value within its own range again (fields may have been written
 * directly, not through config_set_key). MP_ERR_INPUT naming the key. */
int config_check_keys(const struct config *cfg, struct mp_error *err);

/* config_check_keys, then the cross-key checks once everything is set
 * (config_check.c): global_batch divisible by micro_batch × dp, products of
 * degrees within bounds, and so on. MP_ERR_INPUT with the numbers. */
int config_check(const struct config *cfg, struct mp_error *err);

/* Find a preset or file: `name` as a path relative to the scenario's folder
 * (or absolute), then <data dir>/<subdir>/<name><ext>, then
 * <data dir>/<subdir>/<name>. Returns 0 and writes `out`, or MP_ERR_INPUT
 * naming where it looked. */
int config_resolve(const struct config *cfg, const char *name, const char *subdir,
                   const char *ext, char *out, size_t size, struct mp_error *err);

/* "FILE:LINE: key K" (from the scenario), "FILE: key K (from the command
 * line)" or "FILE: key K (default)" for a message about key `name`'s
 * value; without a file, no "FILE: ". */
void config_where(const struct config *cfg, const char *name, char *buf, size_t size);

/* config_resolve for the value of key `name` (a CONFIG_STRING key:
 * model.config, hardware.system, experts.trace, inference.trace); a failure
 * is prefixed with config_where, so it names the file, line and key. */
int config_resolve_key(const struct config *cfg, const char *name, const char *subdir,
                       const char *ext, char *out, size_t size, struct mp_error *err);

/* Where key `key` was set, for a message: "FILE:LINE: key KEY" when the
 * scenario file set it, "FILE: key KEY" when a default or --set did (or
 * "scenario: key KEY" without a file). Returns buf. */
const char *config_key_where(const struct config *cfg, const char *key, char *buf, size_t size);

/* ---- training recipes (config_recipe.c, docs/recipes.md) ---------------- */

/* Set a key's value without recording it as given (recipes use it). */
int config_set_key_quiet(struct config *cfg, const char *key, const char *value,
                         struct mp_error *err);

/* Whether the scenario or --set gave `key` (a dotted name). */
bool config_key_given(const struct config *cfg, const char *key);

/* Fill the keys nobody gave from the recipe of training.recipe (nothing for
 * "none"). Called after every key set, so the result does not depend on
 * the order keys are written in. */
void config_recipe_apply(struct config *cfg);

/* A recipe's settings, for docs and `mpsim list recipes`: NULL-terminated
 * key/value pairs of recipe `r` (enum recipe_kind), and its summary. */
const char *const *config_recipe_settings(int r);
const char *config_recipe_summary(int r);

/* Number of microbatches each pipeline sees per step:
 * global_batch / (micro_batch × dp). */
int config_microbatches(const struct config *cfg);

/* Chips of the layout: tp × cp × pp × dp (context parallelism multiplies
 * the count; its ranks share each sequence, not the batch). */
long long config_chips(const struct config *cfg);

#endif

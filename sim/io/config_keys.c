/* config_keys.c — the table of every scenario key: its dotted name, type,
 * field, default, choices, range and one-line documentation. It is data, kept
 * apart from the parser (config.c) so that adding a key is one line here and
 * one field in struct config; `mpsim list keys`, `--help`, error messages
 * and did-you-mean all read it. */
#include <limits.h>
#include <stddef.h>

#include "config.h"

/* Ranges are inclusive; "1, 0" (min > max) means the key has none. */
#define KEY(n, t, field, def, ch, lo, hi, d)                                  \
    { .name = n, .type = t, .offset = offsetof(struct config, field),         \
      .size = sizeof(((struct config *)0)->field), .fallback = def,           \
      .choices = ch, .min = lo, .max = hi, .doc = d }

const struct config_key config_keys[] = {
    KEY("model.config", CONFIG_STRING, model.config, "llama3-8b", NULL, 1, 0,
        "model preset name (models/NAME.json) or path to a Hugging Face config.json"),
    KEY("model.kind", CONFIG_ENUM, model.kind, "transformer", "transformer|synthetic",
        1, 0, "transformer: costs from model.config; synthetic: times from [synthetic]"),
    KEY("model.seq_len", CONFIG_INT, model.seq_len, "2048", NULL, 1, INT_MAX,
        "tokens per sequence"),
    KEY("model.weight_bits", CONFIG_INT, model.weight_bits, "16", NULL, 4, 32,
        "bits per stored weight"),
    KEY("model.activation_bits", CONFIG_INT, model.activation_bits, "16", NULL, 4, 32,
        "bits per activation element"),
    KEY("model.kv_bits", CONFIG_INT, model.kv_bits, "16", NULL, 4, 32,
        "bits per KV-cache element"),
    /* Issue 14 (kernel-level cost model, docs/recipes.md): */
    KEY("model.compute_bits", CONFIG_INT, model.compute_bits, "16", NULL, 8, 16,
        "GEMM precision: 16, or 8 for FP8 GEMMs at the chip's FP8 peak (hardware/kernels.csv "
        "gemm fp8 rows)"),
    /* ---- issue 15 (models): the architecture row ---- */
    KEY("model.family", CONFIG_STRING, model.family, "auto", NULL, 1, 0,
        "architecture row to read model.config by (mpsim model --families lists them); auto "
        "= by the config's model_type"),
    KEY("synthetic.forward", CONFIG_DURATION, synthetic.forward, "1ms", NULL, 1, 0,
        "forward time of one microbatch on one stage"),
    KEY("synthetic.backward_input", CONFIG_DURATION, synthetic.backward_input, "1ms",
        NULL, 1, 0, "input-gradient (B) time of one microbatch on one stage"),
    KEY("synthetic.backward_weight", CONFIG_DURATION, synthetic.backward_weight, "1ms",
        NULL, 1, 0, "weight-gradient (W) time of one microbatch on one stage"),
    KEY("synthetic.hop", CONFIG_DURATION, synthetic.hop, "0", NULL, 1, 0,
        "delay of each stage-to-stage hand-off"),
    KEY("synthetic.forward_backward", CONFIG_DURATION, synthetic.forward_backward, "0", NULL,
        1, 0, "DualPipe's overlapped F&B op (forward of one microbatch hidden behind the "
        "backward of another), split over chunks like the times above; 0 = F + B + W"),
    KEY("synthetic.activation", CONFIG_SIZE, synthetic.activation, "1GiB", NULL,
        1, 0, "bytes one forward stashes on a stage until its backward"),
    KEY("synthetic.activation_w", CONFIG_SIZE, synthetic.activation_w, "0", NULL,
        1, 0, "of those, bytes only the weight gradient needs (freed by W)"),
    KEY("synthetic.weights", CONFIG_SIZE, synthetic.weights, "0", NULL, 1, 0,
        "bytes of weights held by each stage"),
    KEY("hardware.system", CONFIG_STRING, hardware.system, "textbook", NULL, 1, 0,
        "system preset name (hardware/systems/NAME.ini) or path"),
    KEY("hardware.nodes", CONFIG_INT, hardware.nodes, "0", NULL, 0, CONFIG_DEGREE_MAX,
        "number of nodes; 0 = as many as the layout needs"),
    KEY("parallel.tp", CONFIG_INT, parallel.tp, "1", NULL, 1, CONFIG_DEGREE_MAX,
        "tensor-parallel degree"),
    KEY("parallel.pp", CONFIG_INT, parallel.pp, "1", NULL, 1, CONFIG_DEGREE_MAX,
        "pipeline-parallel degree (stages)"),
    KEY("parallel.dp", CONFIG_INT, parallel.dp, "1", NULL, 1, CONFIG_DEGREE_MAX,
        "data-parallel degree (replicas)"),
    KEY("parallel.ep", CONFIG_INT, parallel.ep, "1", NULL, 1, CONFIG_DEGREE_MAX,
        "expert-parallel degree"),
    KEY("parallel.vpp", CONFIG_INT, parallel.vpp, "1", NULL, 1, CONFIG_DEGREE_MAX,
        "virtual pipeline chunks per stage (interleaving)"),
    KEY("parallel.sp", CONFIG_BOOL, parallel.sp, "false", NULL, 1, 0,
        "sequence parallelism alongside tensor parallelism"),
    KEY("parallel.tsp", CONFIG_BOOL, parallel.tsp, "false", NULL, 1, 0,
        "fold tensor and sequence parallelism on one axis of degree parallel.tp (TSP)"),
    KEY("parallel.tp_overlap", CONFIG_BOOL, parallel.tp_overlap, "false", NULL, 1, 0,
        "overlap the backward TP all-reduce with the weight-gradient GEMMs (Megatron)"),
    /* Issue 14 (kernel-level cost model, docs/recipes.md): */
    KEY("parallel.tp_comm_overlap", CONFIG_BOOL, parallel.tp_comm_overlap, "false", NULL, 1, 0,
        "with sequence parallelism, run the forward's all-gather under the column-parallel GEMMs "
        "and its reduce-scatter under the row-parallel GEMM (Megatron-Core --tp-comm-overlap)"),
    /* Context parallelism and uneven stages (branch context, issue 17;
     * sim/strategy/context.h, docs/context_parallel.md). */
    /* 65536: a ring's pass has 2·cp + 4 segments per layer; published runs
     * use tens to hundreds (1M tokens on 1,024 ranks is 1K tokens each). */
    KEY("parallel.cp", CONFIG_INT, parallel.cp, "1", NULL, 1, 65536,
        "context-parallel degree: each sequence split over cp ranks (chips = tp × cp × pp × dp)"),
    KEY("parallel.cp_kind", CONFIG_ENUM, parallel.cp_kind, "ring", "ring|ulysses|hybrid", 1, 0,
        "how CP ranks get the rest of the sequence's keys and values: ring (Megatron-Core's "
        "K/V ring), ulysses (all-to-all to head-sharded, DeepSpeed), hybrid (a2a in a node, ring across)"),
    KEY("parallel.cp_ulysses", CONFIG_INT, parallel.cp_ulysses, "0", NULL, 0, CONFIG_DEGREE_MAX,
        "hybrid CP: the all-to-all degree (a divisor of parallel.cp); 0 = the CP ranks of one node"),
    KEY("parallel.stage_layers", CONFIG_INT_LIST, parallel.stage_layers, "even", NULL, 1, 100000,
        "decoder layers per pipeline stage, a comma list of parallel.pp entries (7,8,8,7); "
        "even = split evenly; with vpp or V schedules a stage's layers split over its chunks"),
    KEY("training.global_batch", CONFIG_INT, training.global_batch, "8", NULL, 1,
        INT_MAX, "sequences per step, over all data-parallel replicas"),
    KEY("training.micro_batch", CONFIG_INT, training.micro_batch, "1", NULL, 1, INT_MAX,
        "sequences per microbatch"),
    KEY("training.schedule", CONFIG_STRING, training.schedule, "1f1b", NULL, 1, 0,
        "pipeline schedule name (mpsim list schedules)"),
    KEY("training.recompute", CONFIG_ENUM, training.recompute, "none",
        "none|selective|full", 1, 0, "activation recomputation"),
    KEY("training.zero", CONFIG_INT, training.zero, "0", NULL, 0, 3,
        "ZeRO stage: 0 none, 1 optimizer, 2 +gradients, 3 +weights sharded"),
    KEY("training.dp_overlap", CONFIG_BOOL, training.dp_overlap, "true", NULL, 1, 0,
        "sync gradient buckets during the last backward instead of after it"),
    KEY("training.dp_bucket", CONFIG_SIZE, training.dp_bucket, "160MB", NULL, 1e3, 1e15,
        "gradient bytes per data-parallel bucket (Megatron: 40M fp32 params)"),
    KEY("training.memory_limit", CONFIG_MEM_AMOUNT, training.memory_limit, "0", NULL, 0,
        CONFIG_DEGREE_MAX, "zb-auto's activation limit per device: a number counts one microbatch's "
        "activations on a stage (M_B; 1F1B holds pp), a size (40GB) is bytes; 0 = pp × M_B"),
    /* [inference]: serving (sim/serve/serve.h, docs/serving.md). Any of these keys
     * makes `mpsim run` simulate serving instead of a training step. */
    /* Issue 14 (kernel-level cost model, docs/recipes.md): */
    KEY("training.attention", CONFIG_ENUM, training.attention, "flash", "flash|unfused", 1, 0,
        "flash: FlashAttention (no s^2 scores in memory); unfused: QK^T, softmax, dropout, AV "
        "through HBM (Megatron 2021-22)"),
    KEY("training.dropout", CONFIG_BOOL, training.dropout, "false", NULL, 1, 0,
        "dropout on attention probabilities and hidden states (GPT-3-era recipes)"),
    KEY("training.grad_reduce", CONFIG_ENUM, training.grad_reduce, "fp32", "fp32|bf16", 1, 0,
        "main gradients and their data-parallel reduction: fp32, or bf16 (Megatron "
        "--grad-reduce-in-bf16)"),
    KEY("training.optimizer_state", CONFIG_ENUM, training.optimizer_state, "fp32", "fp32|bf16",
        1, 0, "Adam's moments: fp32, or bf16 (precision-aware optimizer); master weights stay fp32"),
    KEY("training.overlap_param_gather", CONFIG_BOOL, training.overlap_param_gather, "false",
        NULL, 1, 0, "ZeRO-1/2: gather the updated weights under the next step's forward "
                    "instead of after the optimizer (Megatron --overlap-param-gather)"),
    KEY("training.recipe", CONFIG_ENUM, training.recipe, "none",
        "none|megatron-2022|megatron-core", 1, 0,
        "a software stack's defaults for the keys the scenario leaves out (docs/recipes.md)"),
    KEY("inference.rate", CONFIG_DOUBLE, inference.rate, "5", NULL, 1e-6, 1e12,
        "Poisson arrival rate, requests per second"),
    KEY("inference.requests", CONFIG_INT, inference.requests, "100", NULL, 1, 10000000,
        "requests to generate (Poisson arrivals)"),
    KEY("inference.arrivals", CONFIG_ENUM, inference.arrivals, "poisson", "poisson|trace",
        1, 0, "where requests come from: Poisson at inference.rate, or inference.trace"),
    KEY("inference.trace", CONFIG_STRING, inference.trace, "none", NULL, 1, 0,
        "CSV of requests: arrival_s,prompt_tokens,output_tokens (arrivals = trace)"),
    KEY("inference.prompt_dist", CONFIG_ENUM, inference.prompt_dist, "fixed",
        "fixed|uniform|lognormal", 1, 0,
        "prompt lengths: prompt_len; uniform in [prompt_min, prompt_max]; lognormal "
        "with median prompt_len and prompt_sigma"),
    KEY("inference.prompt_len", CONFIG_INT, inference.prompt_len, "512", NULL, 1, INT_MAX,
        "prompt tokens (fixed), or the lognormal median"),
    KEY("inference.prompt_min", CONFIG_INT, inference.prompt_min, "1", NULL, 1, INT_MAX,
        "shortest prompt (uniform; clamps lognormal)"),
    KEY("inference.prompt_max", CONFIG_INT, inference.prompt_max, "0", NULL, 0, INT_MAX,
        "longest prompt (uniform; clamps lognormal); 0 = context_len - 1"),
    KEY("inference.prompt_sigma", CONFIG_DOUBLE, inference.prompt_sigma, "0.5", NULL, 0, 10,
        "sigma of ln(prompt tokens) (lognormal)"),
    KEY("inference.output_dist", CONFIG_ENUM, inference.output_dist, "fixed",
        "fixed|uniform|lognormal", 1, 0,
        "output lengths, as prompt_dist with the output_* keys"),
    KEY("inference.output_len", CONFIG_INT, inference.output_len, "128", NULL, 1, INT_MAX,
        "output tokens (fixed), or the lognormal median"),
    KEY("inference.output_min", CONFIG_INT, inference.output_min, "1", NULL, 1, INT_MAX,
        "fewest output tokens (uniform; clamps lognormal)"),
    KEY("inference.output_max", CONFIG_INT, inference.output_max, "0", NULL, 0, INT_MAX,
        "most output tokens (uniform; clamps lognormal); 0 = what context_len leaves"),
    KEY("inference.output_sigma", CONFIG_DOUBLE, inference.output_sigma, "0.5", NULL, 0, 10,
        "sigma of ln(output tokens) (lognormal)"),
    KEY("inference.micro_batch", CONFIG_INT, inference.micro_batch, "1", NULL, 1, 1000000,
        "requests per microbatch"),
    KEY("inference.inflight", CONFIG_INT, inference.inflight, "0", NULL, 0, 1000000,
        "microbatches circulating in the pipeline; 0 = one per stage"),
    KEY("inference.token_budget", CONFIG_INT, inference.token_budget, "2048", NULL, 1,
        INT_MAX, "tokens one microbatch may carry through a pass (decode counts 1 each)"),
    KEY("inference.chunked_prefill", CONFIG_BOOL, inference.chunked_prefill, "true", NULL,
        1, 0, "split prompts over passes to stay within token_budget"),
    KEY("inference.context_len", CONFIG_INT, inference.context_len, "8192", NULL, 2,
        INT_MAX, "most tokens (prompt + output) a request holds; sizes the plan's KV reserve"),
    KEY("inference.concurrency", CONFIG_INT, inference.concurrency, "0", NULL, 0, INT_MAX,
        "requests the plan reserves KV/state for at context_len (0 = as many as a chip "
        "holding one layer fits); also a cap on admitted requests when set"),
    KEY("inference.horizon", CONFIG_DURATION, inference.horizon, "0", NULL, 1, 0,
        "stop serving at this simulated time; 0 = when every request is done"),
    KEY("inference.placement", CONFIG_ENUM, inference.placement, "plan", "plan|even", 1, 0,
        "stages: plan = `mpsim plan` by memory; even = parallel.pp equal slices"),
    /* [experts]: expert parallelism (sim/strategy/experts.h, docs/experts.md). */
    KEY("experts.routing", CONFIG_ENUM, experts.routing, "uniform", "uniform|zipf|dirichlet|trace",
        1, 0, "how tokens pick experts, per microbatch and MoE layer (seeded from run.seed)"),
    KEY("experts.skew", CONFIG_DOUBLE, experts.skew, "1", NULL, 0, 10,
        "Zipf exponent of expert popularity (routing = zipf; 0 = uniform)"),
    KEY("experts.concentration", CONFIG_DOUBLE, experts.concentration, "1", NULL, 1e-3, 1e6,
        "Dirichlet concentration of expert popularity (routing = dirichlet; large = even)"),
    KEY("experts.trace", CONFIG_STRING, experts.trace, "none", NULL, 1, 0,
        "CSV of expert loads, one row per MoE layer, one column per expert (routing = trace)"),
    KEY("experts.capacity_factor", CONFIG_DOUBLE, experts.capacity_factor, "0", NULL, 0, 1000,
        "tokens an expert accepts ÷ tokens × top-k / experts; the rest are dropped; 0 = dropless"),
    KEY("experts.redundant", CONFIG_INT, experts.redundant, "0", NULL, 0, CONFIG_DEGREE_MAX,
        "extra copies of the hottest experts, placed on the least-loaded EP ranks"),
    KEY("experts.max_nodes", CONFIG_INT, experts.max_nodes, "0", NULL, 0, CONFIG_DEGREE_MAX,
        "nodes one token's experts may span (node-limited routing); 0 = the model's topk_group"),
    KEY("experts.all_to_all", CONFIG_ENUM, experts.all_to_all, "auto", "auto|direct|hierarchical",
        1, 0, "dispatch/combine path: direct, or across nodes to the same-index GPU then NVLink"),
    KEY("experts.dispatch_bits", CONFIG_INT, experts.dispatch_bits, "0", NULL, 0, 32,
        "bits per element the dispatch sends (DeepSeek-V3: 8); 0 = model.activation_bits"),
    KEY("experts.show_ranks", CONFIG_BOOL, experts.show_ranks, "false", NULL, 1, 0,
        "also put every EP rank's expert GEMMs on its own chip (for the viewer; small groups)"),
    KEY("run.seed", CONFIG_U64, run.seed, "1", NULL, 1, 0,
        "seed of the run's random number generator"),
    KEY("run.fidelity", CONFIG_ENUM, run.fidelity, "fast", "fast|detailed", 1, 0,
        "fast: a collective is one op priced alpha-beta; detailed: its transfers"),
    KEY("run.collective", CONFIG_ENUM, run.collective, "auto",
        "auto|ring|tree|halving_doubling|direct|hierarchical", 1, 0,
        "collective algorithm for TP, DP and TSP collectives"),
    /* [device_map]: Accelerate's placement and generation on it (branch devmap;
     * sim/serve/device_map.h, sim/serve/accel.h). */
    KEY("device_map.policy", CONFIG_ENUM, device_map.policy, "none",
        "none|auto|balanced|balanced_low_0|sequential", 1, 0,
        "Accelerate's device_map policy; any but none makes `mpsim run` generate as "
        "Accelerate runs the placed model, beside a pipeline on the same GPUs"),
    KEY("device_map.max_memory", CONFIG_STRING, device_map.max_memory, "auto", NULL, 1, 0,
        "Accelerate's max_memory: 0=10GiB,1=10GiB,cpu=64GiB (GiB = 2^30, GB = 10^9); "
        "auto = each GPU's memory and cpu = [host] memory"),
    KEY("device_map.quantization", CONFIG_ENUM, device_map.quantization, "auto",
        "auto|none|bnb_8bit|bnb_4bit|fp8", 1, 0,
        "how weights are sized: auto = the model's quantization_config, else "
        "model.weight_bits (none); bnb = bitsandbytes"),
    {.name = NULL},
};

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
    KEY("inference.arrivals", CONFIG_ENUM, inference.arrivals, "poisson", "poisson|trace|gamma",
        1, 0, "where requests come from: Poisson at inference.rate, inference.trace, or "
        "Gamma inter-arrival times at inference.rate with shape inference.burstiness"),
    KEY("inference.trace", CONFIG_STRING, inference.trace, "none", NULL, 1, 0,
        "CSV of requests: arrival_s,prompt_tokens,output_tokens (arrivals = trace)"),
    KEY("inference.prompt_dist", CONFIG_ENUM, inference.prompt_dist, "fixed",
        "fixed|uniform|lognormal|empirical", 1, 0,
        "prompt lengths: prompt_len; uniform in [prompt_min, prompt_max]; lognormal "
        "with median prompt_len and prompt_sigma; empirical: drawn from inference.prompt_file"),
    KEY("inference.prompt_len", CONFIG_INT, inference.prompt_len, "512", NULL, 1, INT_MAX,
        "prompt tokens (fixed), or the lognormal median"),
    KEY("inference.prompt_min", CONFIG_INT, inference.prompt_min, "1", NULL, 1, INT_MAX,
        "shortest prompt (uniform; clamps lognormal)"),
    KEY("inference.prompt_max", CONFIG_INT, inference.prompt_max, "0", NULL, 0, INT_MAX,
        "longest prompt (uniform; clamps lognormal); 0 = context_len - 1"),
    KEY("inference.prompt_sigma", CONFIG_DOUBLE, inference.prompt_sigma, "0.5", NULL, 0, 10,
        "sigma of ln(prompt tokens) (lognormal)"),
    KEY("inference.output_dist", CONFIG_ENUM, inference.output_dist, "fixed",
        "fixed|uniform|lognormal|empirical", 1, 0,
        "output lengths, as prompt_dist with the output_* keys"),
    KEY("inference.output_len", CONFIG_INT, inference.output_len, "128", NULL, 1, INT_MAX,
        "output tokens (fixed), or the lognormal median"),
    KEY("inference.output_min", CONFIG_INT, inference.output_min, "1", NULL, 1, INT_MAX,
        "fewest output tokens (uniform; clamps lognormal)"),
    KEY("inference.output_max", CONFIG_INT, inference.output_max, "0", NULL, 0, INT_MAX,
        "most output tokens (uniform; clamps lognormal); 0 = what context_len leaves"),
    KEY("inference.output_sigma", CONFIG_DOUBLE, inference.output_sigma, "0.5", NULL, 0, 10,
        "sigma of ln(output tokens) (lognormal)"),
    KEY("inference.micro_batch", CONFIG_INT, inference.micro_batch, "256", NULL, 1, 1000000,
        "requests per microbatch (a step's batch: vLLM's max_num_seqs, whose default is 256)"),
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
    /* [inference], issue 19 (branch serving): replicas, routers, schedulers,
     * paged KV, prefix caching, disaggregation, speculative decoding,
     * workloads and SLOs (sim/serve/serve.h, docs/serving.md). */
    KEY("inference.replicas", CONFIG_INT, inference.replicas, "1", NULL, 1, CONFIG_DEGREE_MAX,
        "copies of the model serving behind the router, each tp x pp chips (x ep rules)"),
    KEY("inference.router", CONFIG_STRING, inference.router, "round_robin", NULL, 1, 0,
        "how arrivals are spread over replicas: round_robin | least_outstanding | "
        "prefix_aware (mpsim list routers)"),
    KEY("inference.scheduler", CONFIG_STRING, inference.scheduler, "vllm", NULL, 1, 0,
        "each replica's scheduler: vllm | prefill_first | decode_first | priority "
        "(mpsim list schedulers)"),
    KEY("inference.max_num_seqs", CONFIG_INT, inference.max_num_seqs, "0", NULL, 0, 1000000,
        "vLLM's max_num_seqs: requests per step (per microbatch); 0 = inference.micro_batch"),
    KEY("inference.max_num_batched_tokens", CONFIG_INT, inference.max_num_batched_tokens, "0",
        NULL, 0, INT_MAX, "vLLM's max_num_batched_tokens: tokens per step; 0 = "
        "inference.token_budget"),
    KEY("inference.kv_cache", CONFIG_ENUM, inference.kv_cache, "paged", "paged|reserve", 1, 0,
        "paged: blocks allocated as tokens are produced, preemption when they run out "
        "(vLLM); reserve: prompt + output reserved at admission (the wafer article's rule)"),
    KEY("inference.block_size", CONFIG_INT, inference.block_size, "16", NULL, 1, 1048576,
        "tokens per KV-cache block (vLLM's block_size; 16 on CUDA)"),
    KEY("inference.gpu_memory_utilization", CONFIG_DOUBLE, inference.gpu_memory_utilization,
        "0.9", NULL, 0.01, 1, "share of each chip's memory for weights, activations and the "
        "KV block pool (vLLM's default 0.9)"),
    KEY("inference.preemption", CONFIG_ENUM, inference.preemption, "recompute", "recompute|swap",
        1, 0, "when blocks run out: drop a request's KV and prefill it again later, or "
        "swap it to host memory over the [host] link"),
    KEY("inference.swap_space", CONFIG_SIZE, inference.swap_space, "4GiB", NULL, 0, 1e15,
        "host memory per chip for swapped-out KV (vLLM's swap_space, 4 GiB)"),
    KEY("inference.prefix_caching", CONFIG_BOOL, inference.prefix_caching, "false", NULL, 1, 0,
        "keep KV blocks of shared prefixes (system prompts, earlier turns) in a radix / LRU "
        "cache per replica and skip their prefill"),
    KEY("inference.prefix_tokens", CONFIG_INT, inference.prefix_tokens, "0", NULL, 0, INT_MAX,
        "tokens of a shared system prompt at the start of every prompt (0 = none)"),
    KEY("inference.prefix_groups", CONFIG_INT, inference.prefix_groups, "1", NULL, 1, 1000000,
        "distinct system prompts; each request draws one"),
    KEY("inference.turns", CONFIG_INT, inference.turns, "1", NULL, 1, 100000,
        "turns per session: each next turn's prompt is the history plus a new message"),
    KEY("inference.think_time", CONFIG_DURATION, inference.think_time, "0", NULL, 1, 0,
        "mean time from a turn's last token to the next turn's arrival (exponential)"),
    KEY("inference.burstiness", CONFIG_DOUBLE, inference.burstiness, "1", NULL, 1e-3, 1e3,
        "arrivals = gamma: shape of the Gamma inter-arrival times (1 = Poisson, < 1 "
        "burstier; vLLM benchmark_serving's --burstiness)"),
    KEY("inference.prompt_file", CONFIG_STRING, inference.prompt_file, "none", NULL, 1, 0,
        "CSV of prompt lengths, tokens[,weight] per row (prompt_dist = empirical)"),
    KEY("inference.output_file", CONFIG_STRING, inference.output_file, "none", NULL, 1, 0,
        "CSV of output lengths, tokens[,weight] per row (output_dist = empirical)"),
    KEY("inference.priorities", CONFIG_STRING, inference.priorities, "none", NULL, 1, 0,
        "shares of priority classes 0 (highest), 1, ...: \"0.2,0.8\"; none = one class"),
    KEY("inference.max_waiting_tokens", CONFIG_INT, inference.max_waiting_tokens, "20", NULL, 1,
        1000000, "decode_first: decode steps after which waiting requests are let in "
        "(TGI's max_waiting_tokens)"),
    KEY("inference.waiting_served_ratio", CONFIG_DOUBLE, inference.waiting_served_ratio, "0.3",
        NULL, 0, 1e6, "decode_first: waiting / running requests that let new prefills in "
        "(TGI's waiting_served_ratio)"),
    KEY("inference.slo_ttft", CONFIG_DURATION, inference.slo_ttft, "0", NULL, 1, 0,
        "goodput: time to first token a request must meet (0 = no limit; --slo ttft=)"),
    KEY("inference.slo_tpot", CONFIG_DURATION, inference.slo_tpot, "0", NULL, 1, 0,
        "goodput: time per output token a request must meet (0 = no limit; --slo tpot=)"),
    KEY("inference.slo_e2e", CONFIG_DURATION, inference.slo_e2e, "0", NULL, 1, 0,
        "goodput: end-to-end latency a request must meet (0 = no limit; --slo e2e=)"),
    KEY("inference.disaggregate", CONFIG_BOOL, inference.disaggregate, "false", NULL, 1, 0,
        "separate prefill and decode pools, each request's KV sent between them"),
    KEY("inference.prefill_replicas", CONFIG_INT, inference.prefill_replicas, "1", NULL, 1,
        CONFIG_DEGREE_MAX, "disaggregate: replicas of the prefill pool"),
    KEY("inference.prefill_tp", CONFIG_INT, inference.prefill_tp, "0", NULL, 0,
        CONFIG_DEGREE_MAX, "disaggregate: tensor-parallel degree of a prefill replica (0 = "
        "parallel.tp)"),
    KEY("inference.prefill_pp", CONFIG_INT, inference.prefill_pp, "0", NULL, 0,
        CONFIG_DEGREE_MAX, "disaggregate: pipeline stages of a prefill replica (0 = parallel.pp)"),
    KEY("inference.decode_replicas", CONFIG_INT, inference.decode_replicas, "0", NULL, 0,
        CONFIG_DEGREE_MAX, "disaggregate: replicas of the decode pool (0 = inference.replicas)"),
    KEY("inference.decode_tp", CONFIG_INT, inference.decode_tp, "0", NULL, 0,
        CONFIG_DEGREE_MAX, "disaggregate: tensor-parallel degree of a decode replica (0 = "
        "parallel.tp)"),
    KEY("inference.decode_pp", CONFIG_INT, inference.decode_pp, "0", NULL, 0,
        CONFIG_DEGREE_MAX, "disaggregate: pipeline stages of a decode replica (0 = parallel.pp)"),
    KEY("inference.speculative", CONFIG_ENUM, inference.speculative, "none", "none|draft|mtp",
        1, 0, "speculative decoding: a draft model (inference.draft_model) or the model's "
        "multi-token-prediction modules propose spec_tokens tokens a step"),
    KEY("inference.draft_model", CONFIG_STRING, inference.draft_model, "none", NULL, 1, 0,
        "speculative = draft: the draft's preset name or config.json (same vocabulary)"),
    KEY("inference.spec_tokens", CONFIG_INT, inference.spec_tokens, "3", NULL, 1, 64,
        "speculative: tokens the draft proposes per step (k)"),
    KEY("inference.spec_acceptance", CONFIG_DOUBLE, inference.spec_acceptance, "0.7", NULL, 0,
        1, "speculative: probability each proposed token is accepted (alpha)"),
    KEY("inference.spec_draw", CONFIG_ENUM, inference.spec_draw, "bernoulli",
        "bernoulli|expected", 1, 0, "speculative: accept each proposal by a Bernoulli draw "
        "(run.seed), or emit exactly the expected (1 - a^(k+1)) / (1 - a) tokens a step on average"),
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
    /* Issue 22 (scale): steady-state skipping, offload. */
    KEY("training.offload", CONFIG_ENUM, training.offload, "none",
        "none|optimizer|optimizer+weights|all", 1, 0,
        "state kept in host memory over the system's [host] link (DeepSpeed ZeRO-Offload / "
        "ZeRO-Infinity): optimizer (needs zero >= 1), + weights, + activations (need zero = 3)"),
    KEY("run.steady_skip", CONFIG_BOOL, run.steady_skip, "true", NULL, 1, 0,
        "skip whole periods of a pipeline's steady state once the engine sees its state "
        "repeat (results identical to the full run); false = simulate every op"),
    {.name = NULL},
};
